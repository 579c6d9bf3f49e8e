"""When this process started using hitl_graphs: the first module the package imports.

The CLI refuses to apply a decision to a review raised after the command started (the person
cannot have seen it); the package's import time is the closest moment to "the command started"
that every platform gives, before LangGraph's imports take their second.
"""

import time

AT = time.time()
