"""The `conversation` workflow: AgentScope's `UserAgent` loop, offline and durable.

A `ScriptedChatModel` plays a code reviewer; each of its answers pauses for your reply.

    hitl run conversation --input '{"task": "Please review: def add(a, b): return a+b"}'
    hitl respond THREAD --text "Focus on type hints"       # the agent answers that
    hitl modify THREAD --patch '{"answer": "..."}'         # take over: your text replaces its answer
    hitl approve THREAD                                    # end the conversation
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage
from langgraph.graph import StateGraph

from hitl_graphs.registry import Workflow
from hitl_graphs.scripted import ScriptedChatModel
from hitl_graphs.templates._steps import short
from hitl_graphs.templates import conversation
from hitl_graphs.templates.conversation import ConversationState, create_conversation_graph


def demo_reply(messages: Sequence[BaseMessage]) -> str:
    """Numbered answers that quote the person's last message."""
    turn = sum(isinstance(m, AIMessage) for m in messages) + 1
    return f"Review {turn}: noted \"{short(messages[-1].text, 80)}\". Consider type hints and a docstring."


def conversation_graph() -> StateGraph[ConversationState]:
    """The demo graph: a scripted reviewer."""
    return create_conversation_graph(ScriptedChatModel(responder=demo_reply),
                                     system_prompt="You are a senior Python developer reviewing code.")


def conversation_workflow() -> Workflow:
    """The built-in `conversation` workflow."""
    return Workflow(
        "conversation",
        conversation_graph,
        description="the agent answers, you reply (hitl respond --text ...), take over (modify) or end (approve)",
        example_input={"task": "Please review this function:\n\ndef add(a, b):\n    return a+b"},
        durability=conversation.DURABILITY,
    )
