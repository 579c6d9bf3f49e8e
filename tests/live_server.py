"""`hitl serve` in a thread of the test process: the same app, a real uvicorn server on a loopback
socket, real LangGraph and SQLite underneath (what the API, web and browser tests talk to)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Sequence

import httpx
import uvicorn

from hitl_graphs import Runner, Workflow
from hitl_graphs.server import create_app
from tests.workflows import WORKFLOWS


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """`hitl serve` in a thread of this process: the same app, a real socket."""

    def __init__(self, db: str, workflows: Sequence[Workflow] = WORKFLOWS) -> None:
        self.db = db
        self.browsers: list[httpx.Client] = []
        self.runner = Runner.open(db, workflows=list(workflows))
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}"
        config = uvicorn.Config(create_app(self.runner, poll=0.05), host="127.0.0.1", port=port, log_level="error",
                                lifespan="on", ws="none")  # as `hitl serve` runs it: no WebSocket
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.01)

    def client(self, token: str | None = None, **headers: str) -> httpx.Client:
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return httpx.Client(base_url=self.url, headers=headers, timeout=10)

    def browser(self) -> httpx.Client:
        """A client that keeps cookies and does not follow redirects (closed with the server)."""
        client = httpx.Client(base_url=self.url, timeout=10, follow_redirects=False)
        self.browsers.append(client)
        return client

    def close(self) -> None:
        for client in self.browsers:
            client.close()
        self.server.should_exit = True
        self.thread.join(10)
        self.runner.close()


def token(server: Server, actor: str, *roles: str) -> str:
    return server.runner.tokens.create(actor, roles=roles).token
