"""Old home of the `conversation` demo workflow; it lives in `hitl_graphs.examples.conversation` now."""

from hitl_graphs.examples.conversation import *  # noqa: F403
from hitl_graphs.examples.conversation import __doc__ as _doc  # noqa: F401
