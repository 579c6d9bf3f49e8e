"""The whole OpenAPI schema fuzzed (schemathesis, in process): whatever a client sends, the server
answers with a status and body its schema documents, and never a 500."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from hitl_graphs import Runner
from hitl_graphs.server import create_app
from tests.workflows import WORKFLOWS

_dir = tempfile.TemporaryDirectory(prefix="hitl-schema-")
runner = Runner.open(str(Path(_dir.name) / "fuzz.sqlite"), workflows=WORKFLOWS)
TOKEN = runner.tokens.create("fuzzer", roles=["finance"]).token
PAUSED = runner.start("pay", {"to": "acme", "amount": 5}, thread_id="fuzz-thread")
app = create_app(runner)
schema = schemathesis.openapi.from_asgi("/openapi.json", app).exclude(path="/api/events")


@pytest.fixture(scope="module", autouse=True)
def _close() -> object:
    yield
    runner.close()
    _dir.cleanup()


@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_answer_is_documented_and_none_is_a_500(case: schemathesis.Case) -> None:
    response = case.call(headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code < 500, response.text
    case.validate_response(response)
