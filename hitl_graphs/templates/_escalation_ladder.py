"""The rungs of an escalation ladder and what moves a case up them: the attempt an automated level
makes, its handlers (`ModelHandler` around any chat model), the levels (`AgentLevel`,
`HumanLevel`, `default_levels`) and the triggers that read an attempt (`LowConfidenceTrigger`,
`ErrorTrigger`, `SensitiveTrigger`, `CustomTrigger`, `AnyTrigger`).

`hitl_graphs.templates.escalation` wires a ladder into a graph and re-exports the public names
from here; import them from there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

# -- what flows through the levels ----------------------------------------------------------


class Attempt(TypedDict, total=False):
    """One automated level's try: its output and the signals triggers read (plus any extra keys)."""

    level: str
    output: Any
    confidence: float | None
    error: str | None
    sensitive: bool


class EscalationCase(TypedDict):
    """What a handler sees: the task, the attempts below it and why they were escalated."""

    task: Any
    attempts: list[Attempt]
    escalations: list[dict[str, Any]]



# -- handlers -------------------------------------------------------------------------------


class EscalationHandler(Protocol):
    """An automated level's work: from the case to `{"output", "confidence", "sensitive", ...}`.

    Return a mapping; `output` is what a person later approves or edits, the other keys feed the
    trigger (extra keys are kept for custom triggers). Raising, or returning `error`, is an
    `error` signal. Must be a pure function of the case to replay the same in any process.
    """

    def __call__(self, case: EscalationCase) -> Mapping[str, Any]:
        """Try to resolve the case."""
        ...


_MODEL_PROMPT = (
    "Resolve the case you are given. Answer with one JSON object: "
    '{"output": <your answer>, "confidence": <0 to 1>, "sensitive": <true if a person must look>}.'
)


@dataclass(frozen=True)
class ModelHandler:
    """An `EscalationHandler` that asks a chat model (any LangChain model, or `ScriptedChatModel`).

    The model is asked for a JSON object `{"output", "confidence", "sensitive"}`; a reply that is
    not one is taken as the output itself, with no confidence. At a higher level, the model is
    told what the levels below answered and why that was escalated, so it retries knowingly.

    Example:
        >>> from hitl_graphs.testing import ScriptedChatModel
        >>> senior = ModelHandler(ScriptedChatModel(script=['{"output": "refund", "confidence": 0.9}']))
        >>> senior({"task": "refund?", "attempts": [], "escalations": []})
        {'output': 'refund', 'confidence': 0.9}
    """

    model: BaseChatModel
    system_prompt: str = _MODEL_PROMPT

    def __call__(self, case: EscalationCase) -> Mapping[str, Any]:
        task = case["task"] if isinstance(case["task"], str) else json.dumps(case["task"])
        messages = [SystemMessage(self.system_prompt), HumanMessage(task)]
        for attempt, esc in zip(case["attempts"], case["escalations"], strict=False):
            messages.append(HumanMessage(
                f"The {attempt.get('level')} level answered {json.dumps(attempt.get('output'))} and it was escalated: "
                f"{esc.get('reason')}. Do better."
            ))
        return parse_model_reply(self.model.invoke(messages).text)


def parse_model_reply(text: str) -> dict[str, Any]:
    """A model's reply as an attempt: its JSON object (fences allowed), else `{"output": text}`.

    Example:
        >>> parse_model_reply('```json\\n{"output": 4, "confidence": 0.5}\\n```')
        {'output': 4, 'confidence': 0.5}
        >>> parse_model_reply("just text")
        {'output': 'just text'}
    """
    body = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    try:
        data = json.loads(body)
    except ValueError:
        return {"output": text}
    return data if isinstance(data, dict) and "output" in data else {"output": data}


# -- levels ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class AgentLevel:
    """An automated level: `handler` tries the case; the trigger decides if it goes up.

    Example:
        >>> AgentLevel("agent", lambda case: {"output": "ok", "confidence": 0.9}).name
        'agent'
    """

    name: str
    handler: EscalationHandler


@dataclass(frozen=True)
class HumanLevel:
    """A level where a person holding `role` decides: approve, modify, reject, or escalate.

    Example:
        >>> HumanLevel("manager", role="manager").role
        'manager'
    """

    name: str
    role: str


EscalationLevel: TypeAlias = AgentLevel | HumanLevel
"""One rung of the ladder."""


def default_levels(
    agent: EscalationHandler,
    senior: EscalationHandler,
    *,
    human_role: str = "reviewer",
    manager_role: str = "manager",
) -> tuple[EscalationLevel, ...]:
    """The seed's ladder: `agent` -> `senior_agent` -> `human` -> `manager`.

    Example:
        >>> [level.name for level in default_levels(lambda c: {}, lambda c: {})]
        ['agent', 'senior_agent', 'human', 'manager']
    """
    return (
        AgentLevel("agent", agent),
        AgentLevel("senior_agent", senior),
        HumanLevel("human", role=human_role),
        HumanLevel("manager", role=manager_role),
    )


# -- triggers -------------------------------------------------------------------------------


class EscalationTrigger(Protocol):
    """Reads an attempt and returns why it must go up a level, or `None` if it may stand."""

    def __call__(self, attempt: Attempt) -> str | None:
        """The reason to escalate, or `None`."""
        ...


@dataclass(frozen=True, slots=True)
class LowConfidenceTrigger:
    """Escalate when the attempt's confidence is below `threshold` (no confidence: no signal).

    Example:
        >>> LowConfidenceTrigger(0.7)({"confidence": 0.4})
        'low confidence: 0.4 < 0.7'
    """

    threshold: float = 0.7

    def __call__(self, attempt: Attempt) -> str | None:
        confidence = attempt.get("confidence")
        if confidence is not None and confidence < self.threshold:
            return f"low confidence: {confidence} < {self.threshold}"
        return None


@dataclass(frozen=True, slots=True)
class ErrorTrigger:
    """Escalate when the handler raised or reported an error.

    Example:
        >>> ErrorTrigger()({"error": "TimeoutError: upstream"})
        'error: TimeoutError: upstream'
    """

    def __call__(self, attempt: Attempt) -> str | None:
        return f"error: {attempt['error']}" if attempt.get("error") else None


@dataclass(frozen=True, slots=True)
class SensitiveTrigger:
    """Escalate when the attempt is flagged sensitive.

    Example:
        >>> SensitiveTrigger()({"sensitive": True})
        'sensitive: flagged for a person'
    """

    def __call__(self, attempt: Attempt) -> str | None:
        return "sensitive: flagged for a person" if attempt.get("sensitive") else None


@dataclass(frozen=True, slots=True)
class CustomTrigger:
    """Escalate when `predicate(attempt)` is true, giving `reason`.

    Example:
        >>> big = CustomTrigger(lambda a: a.get("amount", 0) > 1000, reason="amount over 1000")
        >>> big({"amount": 2400})
        'amount over 1000'
    """

    predicate: Callable[[Attempt], bool]
    reason: str

    def __call__(self, attempt: Attempt) -> str | None:
        return self.reason if self.predicate(attempt) else None


@dataclass(frozen=True, slots=True)
class AnyTrigger:
    """Escalate on the first of `triggers` that gives a reason.

    Example:
        >>> AnyTrigger((ErrorTrigger(), LowConfidenceTrigger(0.7)))({"confidence": 0.9}) is None
        True
    """

    triggers: tuple[EscalationTrigger, ...]

    def __call__(self, attempt: Attempt) -> str | None:
        for trigger in self.triggers:
            if (reason := trigger(attempt)) is not None:
                return reason
        return None


DEFAULT_TRIGGER = AnyTrigger((ErrorTrigger(), LowConfidenceTrigger(0.7), SensitiveTrigger()))
"""The seed's `should_escalate`: an error, confidence below 0.7, or a sensitive flag."""
