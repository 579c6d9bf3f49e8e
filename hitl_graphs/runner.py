"""Old home of `Runner`: the runtime lives in `hitl_graphs.runtime` now (its docstring maps it).

Example:
    >>> from hitl_graphs.runner import Runner as Old
    >>> from hitl_graphs import Runner
    >>> Old is Runner
    True
"""

from hitl_graphs.runtime.runner import Runner

__all__ = ["Runner"]
