"""Codecs between our reviews and decisions and the LangGraph ecosystem's own HITL formats.

- `langchain_agents`: LangChain v1's `HumanInTheLoopMiddleware` (a `create_agent` agent),
  batched and per call.
- `agent_inbox`: Agent Inbox's `HumanInterrupt` and its `[HumanResponse]` answers.

They know our vocabulary (decisions, review requests) and the other format, nothing of storage
or the runtime, which calls them where a pause is read and where a decision is handed back.
"""
