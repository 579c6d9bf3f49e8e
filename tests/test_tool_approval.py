"""Tool-call approval: policies, levels, a decision per call by call id, loop guards, nested agents.

Run to the pause, look at what the person sees, decide, and count what ran (the effects file):
a rejected call never runs, an approved one runs exactly once, also across processes.
"""

from __future__ import annotations

import doctest
import importlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from hitl_graphs import (
    AlwaysAskPolicy,
    Approve,
    AskOncePolicy,
    AskWhenPolicy,
    Confirmation,
    ConfigError,
    InvalidDecisionError,
    Modify,
    NeverAskPolicy,
    PatchError,
    Reject,
    ReviewNotPendingError,
    Runner,
    Workflow,
    ScriptedChatModel,
    ThreadView,
    create_tool_approval_graph,
    UnknownThreadError,
    tool_args_schema,
)
from hitl_graphs.patches import validate_payload_patch
from tests.agent_workflows import TOOL_WORKFLOWS, addition, pay, ship
from tests.conftest import fingerprint, hitl, python
from tests.drivers import Driven
from tests.workflows import effects

APP = "tests.agent_workflows"


@pytest.fixture
def workflows() -> list[Workflow]:
    """What the shared `runner` fixture (both drivers) runs in this module."""
    return TOOL_WORKFLOWS


def tool_messages(view: ThreadView) -> dict[str, dict[str, Any]]:
    return {m["tool_call_id"]: m for m in view.state["messages"] if m["type"] == "tool"}


def literal(text: str) -> str:
    return re.escape(text)


# -- policies and levels, alone --------------------------------------------------------------


@dataclass(frozen=True)
class PolicyCase:
    id: str
    policy: Any
    args: Mapping[str, Any]
    approved_before: bool
    expected: Confirmation | None


POLICY_CASES = [
    PolicyCase("always-asks", AlwaysAskPolicy(), {}, False, Confirmation("confirm")),
    PolicyCase("always-asks-after-approval", AlwaysAskPolicy(), {}, True, Confirmation("confirm")),
    PolicyCase("never-asks", NeverAskPolicy(), {}, False, None),
    PolicyCase("once-asks-first", AskOncePolicy(), {}, False, Confirmation("confirm")),
    PolicyCase("once-then-not", AskOncePolicy(), {}, True, None),
    PolicyCase("custom-small", AskWhenPolicy(lambda n, a: a["amount"] > 1000), {"amount": 50}, False, None),
    PolicyCase("custom-big", AskWhenPolicy(lambda n, a: a["amount"] > 1000), {"amount": 5000}, False, Confirmation("confirm")),
    PolicyCase("info-level", AlwaysAskPolicy(level="info"), {}, False, Confirmation("info")),
    PolicyCase("verify-phrase", AlwaysAskPolicy(level="verify", phrase="DELETE {resource_id} via {tool}"),
               {"resource_id": "r-42"}, False, Confirmation("verify", phrase="DELETE r-42 via delete_resource")),
]


@pytest.mark.parametrize("case", POLICY_CASES, ids=lambda c: c.id)
def test_policies(case: PolicyCase) -> None:
    assert case.policy.confirmation("delete_resource", case.args, approved_before=case.approved_before) == case.expected


CONFIG_ERRORS = [
    ("verify-without-phrase", lambda: AlwaysAskPolicy(level="verify"), "a 'verify' confirmation needs the phrase"),
    ("unknown-level", lambda: AskOncePolicy(level="loud"), "unknown confirmation level 'loud'; use one of info, confirm, verify"),
    ("phrase-names-missing-arg", lambda: AlwaysAskPolicy(level="verify", phrase="PAY {amout}").confirmation(
        "pay", {"amount": 1}, approved_before=False), "verification phrase 'PAY {amout}' names 'amout'; the call to 'pay' has: amount, tool"),
    ("policy-for-unknown-tool", lambda: create_tool_approval_graph(ScriptedChatModel(), [addition],
        policies={"adition": NeverAskPolicy()}), "policies name 'adition', which is not a tool here; tools: addition"),
    ("duplicate-tool", lambda: create_tool_approval_graph(ScriptedChatModel(), [addition, addition]),
        "two tools are named 'addition'"),
    ("no-turns", lambda: create_tool_approval_graph(ScriptedChatModel(), [addition], max_turns=0),
        "max_turns must be at least 1, got 0"),
]


@pytest.mark.parametrize(("make", "message"), [c[1:] for c in CONFIG_ERRORS], ids=[c[0] for c in CONFIG_ERRORS])
def test_configuration_errors_say_what_to_fix(make: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=literal(message)):
        make()


def test_a_model_that_cannot_call_tools_is_refused_when_the_graph_is_built(db: str) -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel, GenericFakeChatModel
    from langchain_core.messages import AIMessage

    from hitl_graphs import Workflow

    fake = GenericFakeChatModel(messages=iter([AIMessage("hi")]))
    expected = ("GenericFakeChatModel cannot call tools (its bind_tools is not implemented; LangChain's "
                "GenericFakeChatModel and FakeListChatModel only answer in text): the tool-approval template needs a "
                "chat model with tool calling (ChatOpenAI, ChatAnthropic, ChatOllama, ...), or offline "
                "ScriptedChatModel(script=[tool_call(name, args), ...])")
    with pytest.raises(ConfigError, match=literal(expected)):
        create_tool_approval_graph(fake, [addition])
    with pytest.raises(ConfigError, match="FakeListChatModel cannot call tools"):
        create_tool_approval_graph(FakeListChatModel(responses=["hi"]), [addition])
    with pytest.raises(ConfigError, match=literal("needs a chat model with tool calling (ChatOpenAI")):
        create_tool_approval_graph(lambda messages: "hi", [addition])  # type: ignore[arg-type]
    # registered lazily, it is refused at start, before a thread exists
    wf = Workflow("fake-agent", lambda: create_tool_approval_graph(GenericFakeChatModel(messages=iter([])), [addition]))
    with Runner.open(db, workflows=[wf]) as runner:
        with pytest.raises(ConfigError, match="GenericFakeChatModel cannot call tools"):
            runner.start("fake-agent", {"messages": [("user", "1 + 2?")]}, thread_id="t-fake")
        assert runner.pending() == []
        with pytest.raises(UnknownThreadError, match="does not exist"):
            runner.show("t-fake")


def test_argument_schema_refuses_unknown_and_mistyped_arguments() -> None:
    from langchain_core.tools import tool

    schema = {"type": "object", "properties": {"args": tool_args_schema(tool(ship))}, "required": ["args"]}
    schema["$defs"] = schema["properties"]["args"].pop("$defs")
    review = SimpleNamespace(editable=("args",), payload={"args": {}}, patch_schema=schema)
    good = {"args": {"to": "bo", "parcel": {"weight_kg": 1}}}
    assert validate_payload_patch(good, review) == good
    with pytest.raises(PatchError, match=literal("field 'args.parcel.weight_kg' expects number: 'heavy' is not of type 'number'")):
        validate_payload_patch({"args": {"to": "bo", "parcel": {"weight_kg": "heavy"}}}, review)
    with pytest.raises(PatchError, match="Additional properties are not allowed"):
        validate_payload_patch({"args": {"to": "bo", "parcel": {"weight_kg": 1}, "cc": "eve"}}, review)


# -- one call, each decision -----------------------------------------------------------------


@dataclass(frozen=True)
class DecisionCase:
    id: str
    decision: Any
    ran: list[str]
    result: str
    approved_tools: list[str]


DECISIONS = [
    DecisionCase("approve", Approve(actor="ana"), ["pay:acme:5000"], "paid 5000 to acme", ["pay"]),
    DecisionCase("modify", Modify(patch={"args": {"to": "acme", "amount": 900}}, actor="ana"), ["pay:acme:900"],
                 '[a person changed the arguments to {"amount": 900, "to": "acme"}] paid 900 to acme', ["pay"]),
    DecisionCase("reject", Reject(reason="too much", actor="ana"), [],
                 "Not run: a person rejected this call: too much. Do not ask for it again with the same arguments.", []),
]


@pytest.mark.parametrize("case", DECISIONS, ids=lambda c: c.id)
def test_each_decision_on_a_call(runner: Driven, case: DecisionCase) -> None:
    view = runner.start("ta-single")
    (review,) = view.reviews
    assert (review.key, review.kind, review.node) == ("c_pay", "tool_calls", "tools")
    assert review.payload == {"call_id": "c_pay", "tool": "pay", "args": {"to": "acme", "amount": 5000}, "level": "confirm",
                              "turn": 1, "description": "Pay `amount` to `to`."}
    assert review.title == 'Run pay(to="acme", amount=5000)?'
    assert effects() == ["model:single:0"]
    done = runner.resume(view.thread_id, case.decision, review_id="c_pay")
    assert done.status == "done"
    assert [e for e in effects() if not e.startswith("model:")] == case.ran
    assert effects().count("model:single:1") == 1
    message = tool_messages(done)["c_pay"]
    assert message["content"] == case.result
    assert message["status"] == ("error" if case.id == "reject" else "success")
    assert done.state.get("approved_tools", []) == case.approved_tools
    (logged,) = done.state["tool_log"]
    assert (logged["decision"], logged["actor"], logged["ran"]) == (case.id, "ana", bool(case.ran))


BAD_ARGS = [
    ("wrong-type", {"args": {"to": "acme", "amount": "lots"}}, "field 'args.amount' expects integer: 'lots' is not of type 'integer'"),
    ("null-arg", {"args": {"to": None}}, "field 'args.to' expects string: None is not of type 'string'"),
    ("unknown-arg", {"args": {"to": "acme", "amount": 10, "memo": "x"}}, "Additional properties are not allowed ('memo' was unexpected)"),
    ("not-editable", {"tool": "delete_resource"}, "field 'tool' may not be changed in this review; editable fields: args"),
]


@pytest.mark.parametrize(("patch", "message"), [b[1:] for b in BAD_ARGS], ids=[b[0] for b in BAD_ARGS])
def test_bad_arguments_are_refused_and_the_call_stays_pending(runner: Driven, db: str, patch: dict[str, Any], message: str) -> None:
    view = runner.start("ta-single")
    before = fingerprint(db, view.thread_id)
    with pytest.raises(PatchError, match=literal(message)):
        runner.resume(view.thread_id, Modify(patch=patch), review_id="c_pay")
    assert fingerprint(db, view.thread_id) == before
    assert runner.show(view.thread_id).reviews == view.reviews
    assert effects() == ["model:single:0"]


def test_a_modify_of_one_argument_keeps_the_others(runner: Runner, db: str) -> None:
    view = runner.start("ta-single")
    with pytest.raises(PatchError, match=literal("field 'args.amount' expects integer: 'lots' is not of type 'integer'")):
        runner.resume(view.thread_id, Modify({"args": {"amount": "lots"}}), review_id="c_pay")  # checked after merging
    done = runner.resume(view.thread_id, Modify({"args": {"amount": 900}}, actor="ana"), review_id="c_pay")
    assert done.status == "done"
    assert [e for e in effects() if not e.startswith("model:")] == ["pay:acme:900"]
    (logged,) = done.state["tool_log"]
    assert logged["args"] == {"to": "acme", "amount": 900}
    (decided,) = [e for e in runner.history(view.thread_id) if e.event == "decided"]
    assert decided.data["patch"] == {"args": {"to": "acme", "amount": 900}}   # what ran is what is on record


# -- one turn, many calls: one review set, a decision per call id ------------------------------


def test_parallel_calls_wait_as_one_set_and_take_mixed_decisions_by_call_id(runner: Driven, db: str) -> None:
    view = runner.start("ta-parallel")
    by_key = {r.key: r for r in view.reviews}
    assert set(by_key) == {"c_big", "c_bal", "c_del"}
    assert by_key["c_del"].verify_phrase == "DELETE r-42"
    assert by_key["c_big"].verify_phrase is by_key["c_bal"].verify_phrase is None
    # what needs no review already ran, without waiting; the info-level call is on record
    assert sorted(effects()) == ["add:5.5+3.2", "lookup:rates", "model:parallel:0", "pay:acme:50"]
    assert [(e["call_id"], e["level"], e["ran"]) for e in runner.show(view.thread_id).state["tool_log"]] == [("c_info", "info", True)]

    before = fingerprint(db, view.thread_id)
    with pytest.raises(ReviewNotPendingError, match="has 3 pending reviews; pass a review id"):
        runner.resume(view.thread_id, Approve())
    with pytest.raises(InvalidDecisionError, match=literal("needs the verification phrase 'DELETE r-42' typed exactly; got 'DELETE r-43'")):
        runner.resume(view.thread_id, Approve(verification="DELETE r-43"), review_id="c_del")
    with pytest.raises(InvalidDecisionError, match=literal("needs the verification phrase 'DELETE r-42' typed exactly; got None")):
        runner.resume(view.thread_id, Approve(), review_id="c_del")
    assert fingerprint(db, view.thread_id) == before

    # answered out of order, by call id, each from its own process (the graph rebuilt from the database);
    # the others stay pending and nothing runs twice
    out = hitl(db, "approve", view.thread_id, "--review", "c_del", "--verify", "DELETE r-42", "--actor", "ana", HITL_APP=APP)
    assert out.returncode == 0, out.stderr
    assert {r.key for r in runner.show(view.thread_id).reviews} == {"c_big", "c_bal"}
    assert effects().count("delete:r-42") == 1
    out = hitl(db, "reject", view.thread_id, "--review", "c_bal", "--reason", "not this account", "--actor", "bo", HITL_APP=APP)
    assert out.returncode == 0, out.stderr
    assert [r.key for r in runner.show(view.thread_id).reviews] == ["c_big"]
    assert {r.payload["turn"] for r in view.reviews} == {1}

    done = runner.resume(view.thread_id, Modify(patch={"args": {"to": "acme", "amount": 900}}, actor="ana"), review_id="c_big")
    assert done.status == "done"
    ran = sorted(e for e in effects() if not e.startswith("model:"))
    assert ran == ["add:5.5+3.2", "delete:r-42", "lookup:rates", "pay:acme:50", "pay:acme:900"]   # never balance, never 5000
    assert [e for e in effects() if e.startswith("model:")] == ["model:parallel:0", "model:parallel:1"]
    results = tool_messages(done)
    assert set(results) == {"c_add", "c_info", "c_small", "c_big", "c_bal", "c_del"}
    assert results["c_bal"]["content"] == (
        "Not run: a person rejected this call: not this account. Do not ask for it again with the same arguments."
    )
    assert results["c_del"]["content"] == "deleted r-42"
    log = {e["call_id"]: (e["decision"], e["actor"], e["ran"]) for e in done.state["tool_log"]}
    assert log == {"c_info": (None, None, True), "c_del": ("approve", "ana", True), "c_bal": ("reject", "bo", False),
                   "c_big": ("modify", "ana", True)}
    assert done.state["rejected_calls"] == [{"tool": "get_bank_balance", "args": {"account_id": "56789"}, "reason": "not this account"}]


# -- the seed's intro example: always / never / once, across processes -------------------------


def test_seed_intro_example_across_processes(db: str, effects_file: Path) -> None:
    """Balance asks every time, addition never, phone the first time only; each step its own process."""
    out = hitl(db, "run", "ta-intro", "--json", HITL_APP=APP)
    assert out.returncode == 0, out.stderr
    view = json.loads(out.stdout)
    thread = view["thread_id"]
    assert [r["key"] for r in view["reviews"]] == ["call_balance"]

    out = hitl(db, "approve", thread, "--review", "call_balance", "--json", HITL_APP=APP)
    assert out.returncode == 0, out.stderr
    view = json.loads(out.stdout)
    assert [r["key"] for r in view["reviews"]] == ["call_phone_1"]           # addition ran unasked
    assert effects() == ["model:intro:0", "balance:56789", "model:intro:1", "add:5.5+3.2", "model:intro:2"]

    out = hitl(db, "approve", thread, "--review", "call_phone_1", "--json", HITL_APP=APP)
    assert out.returncode == 0, out.stderr
    view = json.loads(out.stdout)
    assert view["status"] == "done"                                          # the second phone call ran unasked
    assert effects()[5:] == ["phone:Alice", "model:intro:3", "phone:Alice", "model:intro:4"]
    assert view["state"]["approved_tools"] == ["get_bank_balance", "get_phone_number"]
    assert view["state"]["messages"][-1]["content"] == (
        "call_balance=Balance for account 56789 is $1,234.56 | call_addition=8.7 | "
        "call_phone_1=The phone number for Alice is (123) 456-7890 | call_phone_2=The phone number for Alice is (123) 456-7890"
    )


def test_ask_once_memory_is_per_thread(runner: Driven) -> None:
    first = runner.start("ta-intro")
    first = runner.resume(first.thread_id, Approve(), review_id="call_balance")
    assert runner.resume(first.thread_id, Approve(), review_id="call_phone_1").status == "done"
    second = runner.start("ta-intro")
    assert [r.key for r in second.reviews] == ["call_balance"]               # always asks again
    second = runner.resume(second.thread_id, Approve(), review_id="call_balance")
    assert [r.key for r in second.reviews] == ["call_phone_1"]               # a new thread asks once again


def test_builtin_tool_approval_workflow_reproduces_the_seed(db: str) -> None:
    from hitl_graphs.examples.tool_approval import tool_approval_workflow

    with Runner.open(db, workflows=[tool_approval_workflow()]) as runner:
        view = runner.start("tool-approval")
        assert [r.key for r in view.reviews] == ["call_balance"]
        view = runner.resume(view.thread_id, Reject(reason="private"), review_id="call_balance")
        assert [r.key for r in view.reviews] == ["call_phone_1"]
        done = runner.resume(view.thread_id, Approve(), review_id="call_phone_1")
    assert done.status == "done"
    assert done.state["messages"][-1]["content"] == (
        "Here is what I found:\n"
        "- Not run: a person rejected this call: private. Do not ask for it again with the same arguments.\n"
        "- 8.7\n- The phone number for Alice is (123) 456-7890\n- The phone number for Alice is (123) 456-7890"
    )


# -- loop guards -------------------------------------------------------------------------------


def test_a_rejected_call_is_not_asked_again(runner: Driven) -> None:
    view = runner.start("ta-stubborn")
    done = runner.resume(view.thread_id, Reject(reason="unknown payee"), review_id="p1")
    assert done.status == "done"                                             # the repeat did not pause
    results = tool_messages(done)
    assert results["p2"]["content"] == (
        "Not run: a person already rejected this exact call (unknown payee). "
        "Do not ask for it again; change the arguments or answer without it."
    )
    assert results["p2"]["status"] == "error"
    assert [e for e in effects() if not e.startswith("model:")] == []
    assert [e["call_id"] for e in done.state["tool_log"]] == ["p1", "p2"]


def test_turn_limit_stops_a_model_that_never_stops(runner: Driven) -> None:
    done = runner.start("ta-loop")
    assert done.status == "done"
    assert done.state["stop_reason"] == "turn limit: the model still asked for tools after 3 turns"
    assert effects() == ["model:loop:0", "add:0.0+1.0", "model:loop:1", "add:1.0+1.0", "model:loop:2"]
    assert tool_messages(done)["loop2"]["content"] == "Not run: turn limit: the model still asked for tools after 3 turns."


def test_unknown_tool_is_answered_not_run(runner: Driven) -> None:
    done = runner.start("ta-unknown")
    assert done.status == "done"
    assert tool_messages(done)["c_x"]["content"].startswith("Not run: there is no tool 'launch_rockets'; tools: addition, ")


# -- nested agents ----------------------------------------------------------------------------


def test_sub_agent_reviews_surface_on_the_top_thread_and_resume_where_they_paused(runner: Driven, db: str) -> None:
    view = runner.start("ta-nested")
    by_key = {r.key: r for r in view.reviews}
    assert set(by_key) == {"b1", "m1"}
    assert by_key["b1"].title == 'bank_agent: Run get_bank_balance(account_id="56789")?'
    assert by_key["m1"].payload["agent"] == "math_agent"
    assert sorted(effects()) == ["lookup:pi", "model:bank:0", "model:math:0", "model:planner:0"]

    code = (
        "from hitl_graphs import Runner, Modify\n"
        "with Runner.open() as r:\n"
        f"    v = r.resume({view.thread_id!r}, Modify(patch={{'args': {{'a': 1, 'b': 2}}}}, actor='ana'), review_id='m1')\n"
        "    print(v.status, [x.key for x in v.reviews])\n"
    )
    out = python(db, "import tests.agent_workflows\n" + code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["paused", "['b1']"]
    # the math agent went on from its pause: its model was not asked again for turn 0, lookup did not rerun
    assert sorted(effects()) == ["add:1.0+2.0", "lookup:pi", "model:bank:0", "model:math:0", "model:math:1", "model:planner:0"]

    done = runner.resume(view.thread_id, Approve(), review_id="b1")
    assert done.status == "done"
    assert sorted(effects()) == ["add:1.0+2.0", "balance:56789", "lookup:pi", "model:bank:0", "model:bank:1", "model:math:0",
                                 "model:math:1", "model:planner:0", "model:planner:1"]
    results = tool_messages(done)
    assert results["p_bank"]["content"] == "b1=Balance for account 56789 is $1,234.56"
    assert results["p_math"]["content"] == "m1=[a person changed the arguments to {\"a\": 1, \"b\": 2}] 3.0 | m2=found pi"


def test_nested_model_schemas_are_checked_before_running(runner: Driven) -> None:
    view = runner.start("ta-ship")
    with pytest.raises(PatchError, match=literal("field 'args.parcel.weight_kg' expects number")):
        runner.resume(view.thread_id, Modify(patch={"args": {"to": "ana", "parcel": {"weight_kg": "2kg"}}}), review_id="c_ship")
    done = runner.resume(view.thread_id, Modify(patch={"args": {"to": "bo", "parcel": {"weight_kg": 3}}}), review_id="c_ship")
    assert [e for e in effects() if not e.startswith("model:")] == ["ship:bo:3.0"]
    assert done.status == "done"


def test_graph_works_in_plain_langgraph_with_a_pay_tool() -> None:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    from tests.agent_workflows import ask_for, call, summary, turns

    graph = create_tool_approval_graph(
        turns("plain", [ask_for(call("pay", {"to": "acme", "amount": 2000}, "x1"))], final=summary), [pay],
        policies={"pay": AskWhenPolicy(lambda name, args: args["amount"] > 1000, level="verify", phrase="PAY {amount}")},
    ).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    paused = graph.invoke({"messages": [("user", "pay acme")]}, config)
    (interrupt,) = paused["__interrupt__"]
    assert interrupt.value["verify_phrase"] == "PAY 2000"
    done = graph.invoke(Command(resume={interrupt.id: {"kind": "reject", "reason": "no"}}), config)
    assert done["messages"][-1].content.startswith("x1=Not run: a person rejected this call: no.")


@pytest.mark.parametrize("module", ["hitl_graphs.templates.tool_approval", "hitl_graphs.examples.tool_approval"])
def test_docstring_examples_run(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


# -- one id scheme: what `pending` and `show` print is what `--review` takes --------------------


def test_reviews_of_the_same_tool_are_named_as_pending_shows_them(db: str, effects_file: Path) -> None:
    run = hitl(db, "run", "ta-twins", "--json", HITL_APP=APP)
    assert run.returncode == 0, run.stderr
    thread_id = json.loads(run.stdout)["thread_id"]
    acme, globex, balance = "call_07e1c9a4b2f3d5e6a7b8c9d0", "call_9b41f0c2d3e4a5b6c7d8e9f0", "call_5c2a8d7e6f5a4b3c2d1e0f9a"
    listed = hitl(db, "pending", HITL_APP=APP).stdout
    for ref in (acme, globex, balance):
        assert f"(review {ref}: approve, modify, reject)" in listed
    shown = hitl(db, "show", thread_id, HITL_APP=APP, COLUMNS="200").stdout
    assert all(f"review {ref}" in shown for ref in (acme, globex, balance))
    order = [r["key"] for r in json.loads(hitl(db, "show", thread_id, "--json", HITL_APP=APP).stdout)["reviews"]]
    assert sorted(order) == sorted([acme, globex, balance])
    assert f"--review REVIEW   (REVIEW: one of {', '.join(order)})" in shown
    titles = {acme: 'Run pay(to="acme", amount=2000)?', globex: 'Run pay(to="globex", amount=3000)?',
              balance: 'Run get_bank_balance(account_id="56789")?'}
    before = fingerprint(db, thread_id)

    # without --review, and with a tool name two reviews call: refused listing the same refs, nothing changes
    unnamed = hitl(db, "approve", thread_id, HITL_APP=APP)
    assert unnamed.stderr.strip() == (
        f"error: thread '{thread_id}' has 3 pending reviews; pass a review id (`--review`), as `hitl pending` shows it: "
        + "; ".join(f"{ref} ({titles[ref]})" for ref in order)
    )
    ambiguous = hitl(db, "approve", thread_id, "--review", "pay", HITL_APP=APP)
    assert ambiguous.stderr.strip() == (
        f"error: 2 pending reviews of thread '{thread_id}' call 'pay'; pass the review id of one: "
        + "; ".join(f"{ref} ({titles[ref]})" for ref in order if ref != balance)
    )
    assert unnamed.returncode == ambiguous.returncode == 1
    assert fingerprint(db, thread_id) == before

    # the ref pending printed; then the tool name, now that one pending review calls it
    assert hitl(db, "approve", thread_id, "--review", acme, HITL_APP=APP).returncode == 0
    assert hitl(db, "reject", thread_id, "--review", "get_bank_balance", "--reason", "private", HITL_APP=APP).returncode == 0
    done = hitl(db, "modify", thread_id, "--review", "pay", "--patch", '{"args": {"amount": 300}}', "--json", HITL_APP=APP)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "done"
    assert sorted(e for e in effects() if not e.startswith("model:")) == ["pay:acme:2000", "pay:globex:300"]
    again = hitl(db, "approve", thread_id, "--review", globex, HITL_APP=APP)
    assert again.stderr.startswith(f"error: review '{globex}' of thread '{thread_id}' was already decided (modify")
    assert "merge over those shown" in hitl(db, "modify", "--help", HITL_APP=APP).stdout
