"""The offline model: a real BaseChatModel whose replies depend only on the conversation."""

from __future__ import annotations

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from hitl_graphs import ScriptedChatModel, tool_call


@tool
def get_balance(account: str) -> str:
    """Balance of an account."""
    return "100"


def test_replies_follow_the_conversation_not_a_counter() -> None:
    model = ScriptedChatModel(script=[tool_call("get_balance", {"account": "A-1"}), "Your balance is 100."])
    assert isinstance(model, BaseChatModel)
    bound = model.bind_tools([get_balance])
    first = bound.invoke([HumanMessage("balance?")])
    assert first.tool_calls[0]["name"] == "get_balance"
    assert first.tool_calls[0]["args"] == {"account": "A-1"}
    again = ScriptedChatModel(script=model.script).invoke([HumanMessage("balance?")])
    assert again.tool_calls[0]["id"] == first.tool_calls[0]["id"]  # a fresh process gets the same call
    conversation = [HumanMessage("balance?"), first, ToolMessage("100", tool_call_id=first.tool_calls[0]["id"])]
    assert bound.invoke(conversation).content == "Your balance is 100."


async def test_async_and_exhaustion() -> None:
    model = ScriptedChatModel(script=["one"])
    assert (await model.ainvoke([HumanMessage("hi")])).content == "one"
    with pytest.raises(ValueError, match="has 1 scripted replies and the conversation already holds 1 AI messages"):
        model.invoke([HumanMessage("hi"), AIMessage("one")])
    assert ScriptedChatModel(script=["one"], default="done").invoke([AIMessage("one")]).content == "done"


def test_responder_function() -> None:
    model = ScriptedChatModel(responder=lambda msgs: f"you said {msgs[-1].content}")
    assert model.invoke([HumanMessage("x")]).content == "you said x"
