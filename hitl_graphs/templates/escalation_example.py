"""Old home of the `escalation` demo workflow; it lives in `hitl_graphs.examples.escalation` now."""

from hitl_graphs.examples.escalation import *  # noqa: F403
from hitl_graphs.examples.escalation import __doc__ as _doc  # noqa: F401
