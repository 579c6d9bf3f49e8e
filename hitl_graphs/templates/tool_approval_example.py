"""Old home of the `tool-approval` demo workflow; it lives in `hitl_graphs.examples.tool_approval` now."""

from hitl_graphs.examples.tool_approval import *  # noqa: F403
from hitl_graphs.examples.tool_approval import __doc__ as _doc  # noqa: F401
