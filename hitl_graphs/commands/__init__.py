"""The `hitl` commands, one module per group; importing this package registers them all on `app`,
in the order `hitl --help` lists them."""

# ruff: noqa: I001 (the import order is the order of `hitl --help`)
from hitl_graphs.commands import threads
from hitl_graphs.commands import deciding
from hitl_graphs.commands import operations
from hitl_graphs.commands import serving
from hitl_graphs.commands import notifying
from hitl_graphs.commands.deploying import register_ops
from hitl_graphs.commands._base import app

register_ops(app)  # `hitl db migrate`, `hitl worker`

__all__ = ["app", "deciding", "notifying", "operations", "serving", "threads"]
