"""Old home of `register_builtins`; the demo workflows live in `hitl_graphs.examples` now."""

from __future__ import annotations

from hitl_graphs.examples import register_examples as register_builtins

__all__ = ["register_builtins"]
