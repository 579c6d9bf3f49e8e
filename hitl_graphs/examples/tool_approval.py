"""The `tool-approval` workflow: Haystack's `hitl_intro_example.py`, offline and durable.

Three tools with three policies, as in the seed: the balance tool asks every time
(`AlwaysAskPolicy`), the addition tool never asks (`NeverAskPolicy`), the phone tool asks the
first time only (`AskOncePolicy`). The seed runs four requests on one agent; here one thread
asks all four, and `ScriptedChatModel` plays the model, one tool call per turn:

    get_bank_balance(56789)   -> pauses (always)
    addition(5.5, 3.2)        -> runs unasked (never)
    get_phone_number(Alice)   -> pauses (first time)
    get_phone_number(Alice)   -> runs unasked, if the first was approved (ask once)

then answers from the tool results. The "ask once" memory is the thread's state, so it holds
across `hitl` commands in separate processes.

    hitl run tool-approval
    hitl approve THREAD --review call_balance      # the review key is the tool call id
    hitl approve THREAD --review call_phone_1
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.graph import StateGraph

from hitl_graphs.policies import AlwaysAskPolicy, AskOncePolicy, NeverAskPolicy
from hitl_graphs.registry import Workflow
from hitl_graphs.scripted import ScriptedChatModel, tool_call
from hitl_graphs.templates import tool_approval
from hitl_graphs.templates.tool_approval import ToolApprovalState, create_tool_approval_graph


def get_bank_balance(account_id: str) -> str:
    """Get the bank balance for a given account ID."""
    return f"Balance for account {account_id} is $1,234.56"


def addition(a: float, b: float) -> float:
    """Add two floats together."""
    return a + b


def get_phone_number(name: str) -> str:
    """Get the phone number for a given name."""
    return f"The phone number for {name} is (123) 456-7890"


_CALLS = [
    tool_call("get_bank_balance", {"account_id": "56789"}, id="call_balance"),
    tool_call("addition", {"a": 5.5, "b": 3.2}, id="call_addition"),
    tool_call("get_phone_number", {"name": "Alice"}, id="call_phone_1"),
    tool_call("get_phone_number", {"name": "Alice"}, id="call_phone_2"),
]


def _intro_model(messages: Sequence[BaseMessage]) -> str | AIMessage:
    turn = sum(isinstance(m, AIMessage) for m in messages)
    if turn < len(_CALLS):
        return _CALLS[turn]
    results = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
    return "Here is what I found:\n" + "\n".join(f"- {r}" for r in results)


def intro_graph() -> StateGraph[ToolApprovalState]:
    """The seed's financial assistant with its three tools and policies."""
    return create_tool_approval_graph(
        ScriptedChatModel(responder=_intro_model),
        [get_bank_balance, addition, get_phone_number],
        policies={
            "get_bank_balance": AlwaysAskPolicy(),
            "addition": NeverAskPolicy(),
            "get_phone_number": AskOncePolicy(),
        },
        system_prompt="You are a helpful financial assistant. Use the provided tools when needed.",
    )


def tool_approval_workflow() -> Workflow:
    """The `tool-approval` workflow (offline, scripted model)."""
    return Workflow(
        "tool-approval",
        intro_graph,
        description="an agent's tool calls reviewed per tool: balance always, addition never, phone once",
        example_input={"messages": [{"role": "user", "content": (
            "What's the balance of account 56789? What is 5.5 + 3.2? "
            "What is the phone number of Alice? And once more: Alice's phone number?"
        )}]},
        durability=tool_approval.DURABILITY,
    )
