"""Old home of the `multi-step` demo workflow; it lives in `hitl_graphs.examples.multi_step` now."""

from hitl_graphs.examples.multi_step import *  # noqa: F403
from hitl_graphs.examples.multi_step import __doc__ as _doc  # noqa: F401
