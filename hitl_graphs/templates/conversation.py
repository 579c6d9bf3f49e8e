"""A human conversation turn: the agent answers, then the graph pauses for the person's reply.

AgentScope's `UserAgent` loop (`msg = await agent(msg); msg = await user(msg)` until the person
types "exit") as a durable graph: each pause is a review of kind `reply`, so the person answers
from any process, hours later, and the conversation continues from the checkpoint.

    agent -> human -> agent -> human -> ... -> END

At each pause:

- **Respond** (`hitl respond THREAD --text ...`): the reply goes to the agent, which answers it.
  New instructions redirect the agent; as in AgentScope, there is no separate take-over API:
  the latest message is the agent's directive.
- **Modify** `{"answer": "..."}`: the person takes over the agent's turn: their text replaces the
  agent's last answer in the conversation (marked as theirs), and the pause stays for the reply.
- **Approve**: the person ends the conversation (outcome `completed`).
- **Reject** with a reason: the person ends it, rejecting the last answer (outcome `rejected`).

Ending is a structured decision, not a magic word typed as a reply (the seed's own advice:
"never rely on the user knowing to type 'exit'").

The conversation is the state's `messages`: `{"role", "content", "by"}` dicts (JSON, readable in
`hitl show`), turned into LangChain messages for a chat model. A scripted model's n-th reply
goes to the conversation's n-th agent turn, so a thread resumed elsewhere answers the same.

Example:
    >>> from hitl_graphs import Approve, Respond, Runner, Workflow
    >>> graph = create_conversation_graph(lambda messages: f"you said {messages[-1]['content']!r}")
    >>> with Runner.open(":memory:", workflows=[Workflow("chat", graph)]) as runner:
    ...     view = runner.start("chat", {"task": "hello"})
    ...     print(view.reviews[0].payload["answer"])
    ...     view = runner.resume(view.thread_id, Respond(text="focus on type hints", actor="ana"))
    ...     print(view.reviews[0].payload["answer"])
    ...     print(runner.resume(view.thread_id, Approve(actor="ana")).outcome)
    you said 'hello'
    you said 'focus on type hints'
    completed
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Literal, Protocol, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Durability

from hitl_graphs.decisions import Approve, Decision, DecisionKind, Modify, Reject, Respond
from hitl_graphs.endings import Ending
from hitl_graphs.errors import ConfigError, InvalidDecisionError
from hitl_graphs.gate import check_default, request_review
from hitl_graphs.templates._steps import ask, check_step, ended_by, short

__all__ = [
    "Agent",
    "ConversationState",
    "DURABILITY",
    "Ended",
    "NO_REPLY",
    "Turn",
    "create_conversation_graph",
    "to_messages",
]


class Turn(TypedDict):
    """One message of the conversation."""

    role: Literal["user", "assistant"]
    content: str
    by: str | None
    """`agent` for the agent's answers; for a person's messages and take-overs, their actor name."""


class Ended(TypedDict):
    """How the person ended the conversation (the `ended` state key, kept for code that reads
    it; `ending` is the record every template writes)."""

    by: str | None
    how: Literal["approve", "reject"]
    reason: str | None


class ConversationState(TypedDict, total=False):
    """The conversation graph's state. A person edits `answer` only (taking over a turn)."""

    task: str
    """The opening message (used when `messages` is empty)."""
    messages: list[Turn]
    answer: str
    """The agent's latest answer, as the person may edit it."""
    ended: Ended | None
    ending: Ending | None
    """How the run ended (`hitl_graphs.endings`), `at` the turn: `completed` (approve),
    `rejected` / `expired` (a person's or a deadline's reject)."""


class Agent(Protocol):
    """Answers the conversation so far (its last message is the person's)."""

    def __call__(self, messages: Sequence[Turn], /) -> str: ...


_DECISIONS: tuple[DecisionKind, ...] = ("respond", "modify", "approve", "reject")

NO_REPLY = "(no reply in time; carry on with what you think best)"
"""What a timed-out turn tells the agent by default."""

DURABILITY: Durability = "exit"
"""How a runner should checkpoint this graph: `Workflow(..., durability=conversation.DURABILITY)`.

Once per run, where it stops, together with the ledger's record of the pause: the graph has no
side effects (the agent answers, the person replies), so a crash only asks the agent again for
the answer it was writing."""


def create_conversation_graph(
    agent: BaseChatModel | Agent,
    *,
    system_prompt: str | None = None,
    timeout: float | timedelta | None = None,
    default: Decision | None = None,
) -> StateGraph[ConversationState]:
    """Build a conversation graph: the agent answers, the person replies, until the person ends it.

    Give it to `Workflow(...)`, compile it yourself, or add the compiled graph as a node of a
    larger graph whose state has the same keys. The input is `{"task": "first message"}` (or
    `{"messages": [...]}`).

    Args:
        agent: A chat model, or a callable from the conversation (`Turn` dicts) to the answer.
        system_prompt: A system message put before the conversation for a chat model.
        timeout: Seconds (or a `timedelta`) a person has for each turn; then `default` applies
            (`hitl sweep` / `Runner.sweep()`) and the conversation goes on with it. None: wait.
            Each turn that times out is one more agent answer, so a thread nobody attends calls
            the agent once per `timeout` until someone replies or ends it (`default=Approve()`
            ends the conversation at the first deadline instead).
        default: The decision when a turn times out; by default a `Respond` that tells the agent
            nobody replied, so the conversation continues (your own `Respond(text=...)` says
            something else; `Approve` or `Reject` ends it instead).

    Raises:
        ConfigError: `agent` is neither a chat model nor a sync callable, or `default` is a
            decision a turn cannot take.

    Example:
        >>> graph = create_conversation_graph(lambda messages: "hi", timeout=timedelta(minutes=5),
        ...                                   default=Respond(text="No reply: go on as you see fit."))
        >>> sorted(graph.nodes)
        ['agent', 'human']
    """
    check_step(agent, "agent")
    check_default(default, _DECISIONS)
    answer_from = _model_agent(agent, system_prompt) if isinstance(agent, BaseChatModel) else agent

    def agent_node(state: ConversationState) -> ConversationState:
        messages = list(state.get("messages") or [])
        if not messages:
            if not state.get("task"):
                raise ConfigError("the conversation needs an opening message: start it with {\"task\": \"...\"}")
            messages = [Turn(role="user", content=state["task"], by=None)]
        text = answer_from(messages)
        if not isinstance(text, str):
            raise ConfigError(f"the agent returned {type(text).__name__}; it must return its answer as text")
        return {"messages": [*messages, Turn(role="assistant", content=text, by="agent")], "answer": text}

    turn_default = default if default is not None or timeout is None else Respond(text=NO_REPLY, actor="hitl:deadline")

    def human(state: ConversationState) -> Command[str]:
        messages = list(state["messages"])
        last = messages[-1]
        turn = sum(m["role"] == "assistant" for m in messages)
        decision = request_review(
            "reply",
            {"answer": last["content"], "turn": turn, "messages": messages},
            title=f"Turn {turn}: {short(last['content'])} (respond to reply, approve to end)",
            allowed=_DECISIONS,
            editable=("answer",),
            timeout=timeout,
            default=turn_default,
        )
        match decision:
            case Respond(text=text):
                return Command(goto="agent", update={"messages": [*messages, Turn(role="user", content=text, by=decision.actor)]})
            case Modify(patch=patch):
                # the runner has written the validated patch into the state; a graph resumed
                # without it gets the patch here
                text = str(patch.get("answer", state.get("answer", last["content"])))
                messages[-1] = Turn(role="assistant", content=text, by=decision.actor or "person")
                return Command(goto="human", update={"messages": messages, "answer": text})
            case Approve():
                return Command(goto=END, update={"ended": Ended(by=decision.actor, how="approve", reason=decision.comment),
                                                 "ending": ended_by(decision, at=f"turn {turn}")})
            case Reject(reason=reason):
                return Command(goto=END, update={"ended": Ended(by=decision.actor, how="reject", reason=reason),
                                                 "ending": ended_by(decision, at=f"turn {turn}")})
            case _:  # request_review refuses kinds not allowed
                raise InvalidDecisionError(f"a conversation turn cannot take {decision.kind!r}")

    graph = StateGraph(ConversationState)
    graph.add_node("agent", agent_node)
    graph.add_node("human", human, destinations=("agent", "human", END))
    graph.add_edge(START, "agent")
    graph.add_edge("agent", "human")
    return graph


def to_messages(turns: Sequence[Turn], system_prompt: str | None = None) -> list[BaseMessage]:
    """The conversation as LangChain messages (what a chat-model agent is given).

    Example:
        >>> [type(m).__name__ for m in to_messages([{"role": "user", "content": "hi", "by": "ana"}], "Be brief.")]
        ['SystemMessage', 'HumanMessage']
    """
    messages: list[BaseMessage] = [SystemMessage(system_prompt)] if system_prompt else []
    for turn in turns:
        messages.append(AIMessage(turn["content"]) if turn["role"] == "assistant" else HumanMessage(turn["content"]))
    return messages


def _model_agent(model: BaseChatModel, system_prompt: str | None) -> Agent:
    def agent(turns: Sequence[Turn]) -> str:
        return ask(model, to_messages(turns, system_prompt))

    return agent


