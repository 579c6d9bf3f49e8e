"""Old home of the `plan-review` demo workflow; it lives in `hitl_graphs.examples.plan_review` now."""

from hitl_graphs.examples.plan_review import *  # noqa: F403
from hitl_graphs.examples.plan_review import __doc__ as _doc  # noqa: F401
