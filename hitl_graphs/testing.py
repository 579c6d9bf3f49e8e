"""Test doubles for your own tests, shipped with the package (as httpx ships `MockTransport`).

- `ScriptedChatModel`: a real LangChain chat model that answers from a script, deterministic
  across processes (the reply depends on the conversation, not on a counter in memory).
- `tool_call`: a script entry asking for one tool call.
- `ScriptedReviewer`: answers reviews from a table (review kind -> decision), where a person
  would sit at the console reviewer.

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> from hitl_graphs.testing import ScriptedChatModel, tool_call
    >>> model = ScriptedChatModel(script=[tool_call("pay", {"amount": 5}, id="c1"), "Paid."])
    >>> model.invoke([HumanMessage("pay 5")]).tool_calls[0]["args"]
    {'amount': 5}
"""

from hitl_graphs.reviewer import ScriptedReviewer
from hitl_graphs.scripted import ScriptedChatModel, tool_call

__all__ = ["ScriptedChatModel", "ScriptedReviewer", "tool_call"]
