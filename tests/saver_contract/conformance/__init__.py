# Vendored from https://github.com/langchain-ai/langgraph (commit f09cfe8ffc1eeffd68f4b628ed69c30f7cad229f),
# libs/checkpoint-conformance/langgraph/checkpoint/conformance/__init__.py; imports rewritten to this package, nothing else changed.
# MIT License, Copyright (c) 2024 LangChain, Inc.: see tests/saver_contract/LICENSE.
"""langgraph-checkpoint-conformance: conformance test suite for checkpointer implementations."""

from tests.saver_contract.conformance.initializer import checkpointer_test
from tests.saver_contract.conformance.validate import validate

__all__ = [
    "checkpointer_test",
    "validate",
]
