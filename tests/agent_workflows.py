"""Tool-approval and escalation workflows the tests drive, importable by subprocesses.

`python(db, "import tests.agent_workflows\\n...")` or `hitl(db, ..., HITL_APP="tests.agent_workflows")`.
Every tool, model turn and escalation handler appends to the effects file (`tests.workflows.effect`),
so a test counts what ran, across processes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.graph import StateGraph
from pydantic import BaseModel

from hitl_graphs import (
    AgentLevel,
    AlwaysAskPolicy,
    AnyTrigger,
    AskOncePolicy,
    AskWhenPolicy,
    CustomTrigger,
    ErrorTrigger,
    EscalationState,
    HumanLevel,
    LowConfidenceTrigger,
    NeverAskPolicy,
    ScriptedChatModel,
    SensitiveTrigger,
    ToolApprovalState,
    Workflow,
    agent_tool,
    create_escalation_graph,
    create_tool_approval_graph,
    register,
)
from tests.workflows import effect

# -- tools: each run leaves one line in the effects file -------------------------------------


def get_bank_balance(account_id: str) -> str:
    """Get the bank balance for a given account ID."""
    effect(f"balance:{account_id}")
    return f"Balance for account {account_id} is $1,234.56"


def addition(a: float, b: float) -> float:
    """Add two floats together."""
    effect(f"add:{a}+{b}")
    return a + b


def get_phone_number(name: str) -> str:
    """Get the phone number for a given name."""
    effect(f"phone:{name}")
    return f"The phone number for {name} is (123) 456-7890"


def pay(to: str, amount: int) -> str:
    """Pay `amount` to `to`."""
    effect(f"pay:{to}:{amount}")
    return f"paid {amount} to {to}"


def delete_resource(resource_id: str) -> str:
    """Delete a resource for good."""
    effect(f"delete:{resource_id}")
    return f"deleted {resource_id}"


def lookup(query: str) -> str:
    """Look something up (harmless; recorded at the info level)."""
    effect(f"lookup:{query}")
    return f"found {query}"


class Parcel(BaseModel):
    weight_kg: float
    fragile: bool = False


def ship(to: str, parcel: Parcel) -> str:
    """Ship a parcel (arguments with a nested model: `$defs` in the schema)."""
    effect(f"ship:{to}:{parcel.weight_kg}")
    return f"shipped {parcel.weight_kg} kg to {to}"


def call(name: str, args: dict[str, Any], id: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": id, "type": "tool_call"}


def turns(label: str, replies: Sequence[AIMessage | str], *, final: Callable[[Sequence[BaseMessage]], str] | None = None) -> ScriptedChatModel:
    """A scripted model that logs each call as `model:<label>:<turn>`."""

    def respond(messages: Sequence[BaseMessage]) -> str | AIMessage:
        turn = sum(isinstance(m, AIMessage) for m in messages)
        effect(f"model:{label}:{turn}")
        if turn < len(replies):
            return replies[turn]
        if final is not None:
            return final(messages)
        raise AssertionError(f"model {label!r} asked for turn {turn}; the script has {len(replies)}")

    return ScriptedChatModel(responder=respond)


def summary(messages: Sequence[BaseMessage]) -> str:
    return " | ".join(f"{m.tool_call_id}={m.content}" for m in messages if isinstance(m, ToolMessage))


def ask_for(*calls: dict[str, Any]) -> AIMessage:
    return AIMessage(content="", tool_calls=list(calls))


POLICIES = {
    "get_bank_balance": AlwaysAskPolicy(),
    "addition": NeverAskPolicy(),
    "get_phone_number": AskOncePolicy(),
    "pay": AskWhenPolicy(lambda name, args: args["amount"] > 1000),
    "delete_resource": AlwaysAskPolicy(level="verify", phrase="DELETE {resource_id}"),
    "lookup": AlwaysAskPolicy(level="info"),
}
TOOLS = [get_bank_balance, addition, get_phone_number, pay, delete_resource, lookup, ship]


def agent(label: str, replies: Sequence[AIMessage | str], **options: Any) -> Callable[[], StateGraph[ToolApprovalState]]:
    def build() -> StateGraph[ToolApprovalState]:
        return create_tool_approval_graph(turns(label, replies, final=summary), TOOLS, policies=POLICIES, **options)

    return build


# -- tool-approval workflows ------------------------------------------------------------------

USER = {"messages": [{"role": "user", "content": "please help"}]}

# one model turn, six calls: three run at once (never, info, small payment), three wait
PARALLEL = ask_for(
    call("addition", {"a": 5.5, "b": 3.2}, "c_add"),
    call("lookup", {"query": "rates"}, "c_info"),
    call("pay", {"to": "acme", "amount": 50}, "c_small"),
    call("pay", {"to": "acme", "amount": 5000}, "c_big"),
    call("get_bank_balance", {"account_id": "56789"}, "c_bal"),
    call("delete_resource", {"resource_id": "r-42"}, "c_del"),
)

# two reviews of the same tool in one turn, with call ids as OpenAI writes them, and one of another tool
TWINS = ask_for(
    call("pay", {"to": "acme", "amount": 2000}, "call_07e1c9a4b2f3d5e6a7b8c9d0"),
    call("pay", {"to": "globex", "amount": 3000}, "call_9b41f0c2d3e4a5b6c7d8e9f0"),
    call("get_bank_balance", {"account_id": "56789"}, "call_5c2a8d7e6f5a4b3c2d1e0f9a"),
)

# the seed's intro: one call per turn; the phone tool is asked about once
INTRO = [
    ask_for(call("get_bank_balance", {"account_id": "56789"}, "call_balance")),
    ask_for(call("addition", {"a": 5.5, "b": 3.2}, "call_addition")),
    ask_for(call("get_phone_number", {"name": "Alice"}, "call_phone_1")),
    ask_for(call("get_phone_number", {"name": "Alice"}, "call_phone_2")),
]

# the model asks the same rejected call again, then gives up
STUBBORN = [
    ask_for(call("pay", {"to": "mallory", "amount": 9000}, "p1")),
    ask_for(call("pay", {"to": "mallory", "amount": 9000}, "p2")),
]


def _forever(messages: Sequence[BaseMessage]) -> AIMessage:
    turn = sum(isinstance(m, AIMessage) for m in messages)
    effect(f"model:loop:{turn}")
    return ask_for(call("addition", {"a": turn, "b": 1}, f"loop{turn}"))


def looping_graph() -> StateGraph[ToolApprovalState]:
    return create_tool_approval_graph(ScriptedChatModel(responder=_forever), TOOLS, policies=POLICIES, max_turns=3)


def nested_graph() -> StateGraph[ToolApprovalState]:
    """The seed's multi-agent example: a planner whose tools are two agents with reviewed tools."""
    bank = create_tool_approval_graph(
        turns("bank", [ask_for(call("get_bank_balance", {"account_id": "56789"}, "b1"))], final=summary),
        [get_bank_balance], policies={"get_bank_balance": AlwaysAskPolicy()}, name="bank_agent",
    )
    math = create_tool_approval_graph(
        turns("math", [ask_for(call("addition", {"a": 5.5, "b": 3.2}, "m1"), call("lookup", {"query": "pi"}, "m2"))],
              final=summary),
        [addition, lookup], policies={"addition": AlwaysAskPolicy(), "lookup": NeverAskPolicy()}, name="math_agent",
    )
    planner = turns("planner", [ask_for(call("bank_agent", {"request": "balance of 56789"}, "p_bank"),
                                        call("math_agent", {"request": "5.5 + 3.2"}, "p_math"))], final=summary)
    return create_tool_approval_graph(
        planner,
        [agent_tool(bank, name="bank_agent", description="Gets bank balances."),
         agent_tool(math, name="math_agent", description="Adds numbers.")],
        default_policy=NeverAskPolicy(),
    )


TOOL_WORKFLOWS = [
    Workflow("ta-parallel", agent("parallel", [PARALLEL]), example_input=USER),
    Workflow("ta-twins", agent("twins", [TWINS]), example_input=USER),
    Workflow("ta-single", agent("single", [ask_for(call("pay", {"to": "acme", "amount": 5000}, "c_pay"))]), example_input=USER),
    Workflow("ta-intro", agent("intro", INTRO), example_input=USER),
    Workflow("ta-stubborn", agent("stubborn", STUBBORN), example_input=USER),
    Workflow("ta-unknown", agent("unknown", [ask_for(call("launch_rockets", {}, "c_x"))]), example_input=USER),
    Workflow("ta-ship", agent("ship", [ask_for(call("ship", {"to": "ana", "parcel": {"weight_kg": 2.5}}, "c_ship"))]),
             example_input=USER),
    Workflow("ta-loop", looping_graph, example_input=USER),
    Workflow("ta-nested", nested_graph, example_input=USER),
]

# -- escalation workflows ---------------------------------------------------------------------


def scripted_handler(level: str) -> Callable[[Mapping[str, Any]], Mapping[str, Any]]:
    """A handler that answers what the task scripts for its level: `task[level]` (or raises)."""

    def handle(case: Mapping[str, Any]) -> Mapping[str, Any]:
        effect(f"handler:{level}")
        script = case["task"][level]
        if "raise" in script:
            raise RuntimeError(script["raise"])
        return script

    return handle


TRIGGER = AnyTrigger((
    ErrorTrigger(),
    LowConfidenceTrigger(0.7),
    SensitiveTrigger(),
    CustomTrigger(lambda attempt: attempt.get("amount", 0) > 1000, reason="amount over 1000"),
))


def ladder() -> StateGraph[EscalationState]:
    return create_escalation_graph(
        [AgentLevel("agent", scripted_handler("agent")), AgentLevel("senior_agent", scripted_handler("senior_agent")),
         HumanLevel("human", role="reviewer"), HumanLevel("manager", role="manager")],
        trigger=TRIGGER,
        output_schema={"type": "string"},
    )


def bots_only() -> StateGraph[EscalationState]:
    return create_escalation_graph([AgentLevel("agent", scripted_handler("agent")),
                                    AgentLevel("senior_agent", scripted_handler("senior_agent"))], trigger=TRIGGER)


ESCALATION_WORKFLOWS = [
    Workflow("esc-ladder", ladder),
    Workflow("esc-bots", bots_only),
]

WORKFLOWS = TOOL_WORKFLOWS + ESCALATION_WORKFLOWS
for _wf in WORKFLOWS:
    register(_wf, replace=True)
