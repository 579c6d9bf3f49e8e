"""The tools side of tool-call approval: making tools of typed functions, the argument schema a
person's edit is checked against, the tool's own check of edited arguments, running a call
exactly once, and an agent graph wrapped as a tool.

`hitl_graphs.templates.tool_approval` wires these into the agent loop and re-exports the public
names (`agent_tool`, `tool_args_schema`); import them from there.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.tools import tool as as_tool
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel, ValidationError

from hitl_graphs.effects import run_once
from hitl_graphs.errors import ConfigError, PatchError

ToolLike = BaseTool | Callable[..., Any]
"""A LangChain tool, or a plain typed function (made a tool with `langchain_core.tools.tool`)."""


class _Call(TypedDict):
    """One tool call as the graph keeps it: JSON-native."""

    id: str
    name: str
    args: dict[str, Any]


def agent_tool(agent: StateGraph[Any] | CompiledStateGraph[Any, Any, Any, Any], *, name: str, description: str) -> BaseTool:
    """Wrap an agent graph (e.g. another `create_tool_approval_graph`) as a tool of a parent agent.

    The sub-agent runs inside the parent's `tools` task as a nested graph on the parent's
    checkpointer, so its own reviews surface on the parent thread (keyed by the sub-agent's tool
    call ids) and resuming them continues the sub-agent where it paused: its model is not
    called again and the calls it already ran do not run again. Its memory (`approved_tools`)
    lasts for one delegated request. Give the parent a `NeverAskPolicy()` for this tool unless
    the delegation itself needs a review.

    Args:
        agent: The sub-agent; a `StateGraph` is compiled without a checkpointer (it uses the parent's).
        name: The tool name the parent's model calls.
        description: What the parent's model is told the sub-agent does.

    Example:
        >>> from hitl_graphs import create_tool_approval_graph
        >>> from hitl_graphs.testing import ScriptedChatModel
        >>> helper = create_tool_approval_graph(ScriptedChatModel(script=["done"]), [])
        >>> agent_tool(helper, name="helper", description="Does things.").invoke({"request": "go"})
        'done'
    """
    graph = agent.compile() if isinstance(agent, StateGraph) else agent

    def delegate(request: str, config: RunnableConfig) -> str:
        result = graph.invoke({"messages": [HumanMessage(request)]}, config)
        last = result["messages"][-1]
        return last.text if isinstance(last, AIMessage) else str(last.content)

    return StructuredTool.from_function(
        delegate, name=name, description=description,
    )


def tool_args_schema(tool: BaseTool) -> dict[str, Any]:
    """The JSON Schema of a tool's arguments as the model sees them (unknown arguments refused).

    Example:
        >>> from langchain_core.tools import tool
        >>> @tool
        ... def get_phone_number(name: str) -> str:
        ...     '''Look up a phone number.'''
        ...     return "(123) 456-7890"
        >>> s = tool_args_schema(get_phone_number)
        >>> s["properties"]["name"]["type"], s["required"], s["additionalProperties"]
        ('string', ['name'], False)
    """
    raw = tool.tool_call_schema
    schema: dict[str, Any] = (dict(raw) if isinstance(raw, dict) else raw.model_json_schema() if issubclass(raw, BaseModel)
                              else raw.schema())  # a pydantic.v1 model
    if schema.get("type", "object") == "object" and "additionalProperties" not in schema:
        schema["additionalProperties"] = False
    return schema


def _patch_schema(tool: BaseTool) -> dict[str, Any]:
    args = tool_args_schema(tool)
    defs = args.pop("$defs", None)
    schema: dict[str, Any] = {"type": "object", "properties": {"args": args}, "required": ["args"]}
    if defs:
        schema["$defs"] = defs  # pydantic's `$ref`s point at the root
    return schema


def _check_args(tool: BaseTool, args: Mapping[str, Any]) -> None:
    """Validate edited arguments as the tool will (its argument model, validators included).

    Raises:
        PatchError: naming the argument and the tool's reason.
    """
    model = tool.args_schema
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return  # a tool described by JSON Schema only: the review's schema was the whole check
    if set(model.model_fields) - set(tool_args_schema(tool).get("properties", {})):
        return  # arguments injected at call time are not the person's to give; the schema was checked
    try:
        model.model_validate(dict(args))
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(["args", *(str(p) for p in err["loc"])])
        message = str(err["msg"]).removeprefix("Value error, ")
        raise PatchError(f"field {where!r}: {message} (the tool {tool.name!r} refuses it); change the arguments") from None


def _tools_by_name(tools: Sequence[ToolLike]) -> dict[str, BaseTool]:
    by_name: dict[str, BaseTool] = {}
    for t in tools:
        made = t if isinstance(t, BaseTool) else as_tool(t)
        if not isinstance(made, BaseTool):
            raise ConfigError(f"cannot make a tool of {t!r}; pass a LangChain tool or a typed function with a docstring")
        if made.name in by_name:
            raise ConfigError(f"two tools are named {made.name!r}; tool names must be unique")
        by_name[made.name] = made
    return by_name


def _invoke(tool: BaseTool, call: _Call, args: dict[str, Any], config: RunnableConfig) -> ToolMessage:
    """Run a tool call once: its result is recorded in the ledger (`run_once`), so a crash after
    the tool ran and before the checkpoint does not run it again on recovery."""

    def run() -> dict[str, Any]:
        result = tool.invoke({"type": "tool_call", "id": call["id"], "name": call["name"], "args": args}, config)
        if isinstance(result, ToolMessage):
            return {"content": result.content, "status": result.status}
        return {"content": str(result), "status": "success"}

    done = run_once(f"tool:{call['id']}", run)
    return ToolMessage(done["content"], tool_call_id=call["id"], name=call["name"], status=done["status"])


def _same(tool: str, args: Any) -> str:
    return tool + json.dumps(args, sort_keys=True, default=str)


def _show(call: _Call) -> str:
    args = ", ".join(f"{k}={json.dumps(v, default=str)}" for k, v in call["args"].items())
    text = f"{call['name']}({args})"
    return text if len(text) <= 120 else text[:117] + "..."
