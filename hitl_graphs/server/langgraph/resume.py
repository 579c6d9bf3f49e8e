"""`command.resume` read as our decisions, one per review it answers.

Three shapes are accepted, the way LangGraph's own clients send them:

- our decision's JSON, `{"kind": "approve"}`, `{"kind": "modify", "patch": {...}}`, ...: for the
  thread's one pending review;
- Agent Inbox's `[{"type": "accept" | "edit" | "response" | "ignore", "args": ...}]`: likewise;
- either of them keyed by interrupt id, `{"<interrupt id>": ...}`, as LangGraph's
  `Command(resume={id: value})`: one answer per pending review named (the ids are those of
  `thread.interrupts` / `state.tasks[].interrupts`).

Who decides is the token's actor, never a field of the body. Only the shape is read here: every
rule (pending, allowed kind, patch, role, deadline, one winner) is the runner's, applied when the
decision is resumed, so a refusal reads the same on every path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hitl_graphs.decisions import Decision, parse_decision
from hitl_graphs.errors import InvalidDecisionError
from hitl_graphs.interop import agent_inbox
from hitl_graphs.reviews import ReviewRequest

SHAPES = ('our decision ({"kind": "approve"}, {"kind": "modify", "patch": {...}}, ...), Agent Inbox\'s '
          '[{"type": "accept", "args": null}], or either keyed by interrupt id ({"<id>": ...})')


def decisions(value: Any, pending: Sequence[ReviewRequest], *, actor: str) -> list[tuple[str | None, Decision]]:
    """(review id, decision) for each review `value` answers, in the order given; the id is None
    for an unkeyed answer to a thread with nothing pending (the runner says why: it ended, it was
    decided by whom).

    Raises:
        InvalidDecisionError: not one of the three shapes, an actor in the body, or an unkeyed
            answer to a thread with several pending reviews (naming their ids).
    """
    by_id = {r.review_id: r for r in pending}
    if _is_answer(value):
        if not pending:
            return [(None, _decision(value, None, actor))]
        if len(pending) != 1:
            ids = ", ".join(by_id) or "none"
            raise InvalidDecisionError(
                f"this thread has {len(pending)} pending reviews; key the resume by interrupt id "
                f'({{"<id>": ...}}); pending ids: {ids}')
        review = pending[0]
        return [(review.review_id, _decision(value, review, actor))]
    if isinstance(value, dict) and "decisions" in value and "decisions" not in by_id:
        raise InvalidDecisionError(
            'the middleware\'s own {"decisions": [...]} matches answers to calls by position; answer each call by '
            f'its interrupt id instead ({{"<id>": {{"kind": "approve"}}, ...}}); pending ids: {", ".join(by_id) or "none"}')
    if isinstance(value, dict) and value and all(isinstance(v, dict | list) for v in value.values()):
        return [(ref, _decision(answer, by_id.get(ref), actor)) for ref, answer in value.items()]
    raise InvalidDecisionError(f"command.resume must be {SHAPES}; got {_brief(value)}")


def _is_answer(value: Any) -> bool:
    return (isinstance(value, dict) and "kind" in value) or agent_inbox.is_responses(value)


def _decision(value: Any, review: ReviewRequest | None, actor: str) -> Decision:
    """`review` None: the id is not pending; the runner refuses it, saying why (decided, by whom)."""
    if agent_inbox.is_responses(value) or isinstance(value, list):
        return agent_inbox.to_decision(value, review, actor=actor)
    if not isinstance(value, dict) or "kind" not in value:
        raise InvalidDecisionError(f"each answer must be {SHAPES}; got {_brief(value)}")
    if "actor" in value and value["actor"] != actor:
        raise InvalidDecisionError("a decision's actor comes from the token (x-api-key); leave 'actor' out")
    return parse_decision({**value, "actor": actor})


def _brief(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
