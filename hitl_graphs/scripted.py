"""A deterministic, offline chat model for demos, notebooks and tests.

`ScriptedChatModel` is a real LangChain `BaseChatModel` (so `bind_tools`, `invoke`, `ainvoke`
and graphs use it like any provider's model) that answers from a script. Which reply it gives is
decided by the conversation, not by a counter in memory: the n-th reply goes to a conversation
that already holds n AI messages. A thread resumed in another process, hours later, therefore
gets exactly the reply it would have got without the pause.

Swap in any real model (`ChatOpenAI`, `ChatAnthropic`, ...) where a template takes `model=`.

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> model = ScriptedChatModel(script=["Hello!", tool_call("get_balance", {"account": "A-1"})])
    >>> model.invoke([HumanMessage("hi")]).content
    'Hello!'
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from pydantic import Field


def tool_call(name: str, args: dict[str, Any], *, id: str | None = None, content: str = "") -> AIMessage:
    """An AI message asking for one tool call (a script entry).

    The call id is derived from the name and arguments unless given, so replays match.

    Example:
        >>> tool_call("add", {"a": 1, "b": 2}, id="c1").tool_calls[0]["args"]
        {'a': 1, 'b': 2}
    """
    call_id = id or f"call_{uuid.uuid5(uuid.NAMESPACE_URL, name + repr(sorted(args.items()))).hex[:12]}"
    return AIMessage(content=content, tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}])


class ScriptedChatModel(BaseChatModel):
    """Replies from a script, chosen by how many AI messages the conversation already has.

    Args:
        script: Replies in order: a string, or an `AIMessage` (use `tool_call(...)` for tools).
        responder: Instead of a script, a function from the conversation to the reply.
        default: Reply once the script is used up; without it the model raises, naming the
            conversation length, so a test never silently loops.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> ScriptedChatModel(script=["hi", "bye"]).invoke([HumanMessage("hello")]).content
        'hi'
    """

    script: Sequence[str | AIMessage] = Field(default_factory=list)
    responder: Callable[[Sequence[BaseMessage]], str | AIMessage] | None = None
    default: str | None = None

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = self._reply(messages)
        message = AIMessage(content=reply) if isinstance(reply, str) else reply.model_copy()
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _reply(self, messages: Sequence[BaseMessage]) -> str | AIMessage:
        if self.responder is not None:
            return self.responder(messages)
        turn = sum(isinstance(m, AIMessage) for m in messages)
        if turn < len(self.script):
            return self.script[turn]
        if self.default is not None:
            return self.default
        raise ValueError(
            f"ScriptedChatModel has {len(self.script)} scripted replies and the conversation already holds "
            f"{turn} AI messages; add replies or set default="
        )

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[LanguageModelInput, AIMessage]:
        """Accept tools as a real model would; which tool is called comes from the script."""
        return self
