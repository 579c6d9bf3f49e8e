"""Issue 17's figures: the HTTP API over loopback next to the same operation in process.

- `GET /api/reviews` first page (50) with many paused threads: end to end over loopback (a real
  uvicorn server and an HTTP client with a kept-alive connection), p50, next to `Runner.pending`
  in the same process on the same database (the API's own cost is the difference).
- A decision through `POST /api/threads/{id}/decision` vs `Runner.resume` in process, on threads
  of the same database, interleaved: the median difference in ms (target: at most 3 ms). Sent by
  two clients in turn, each on a kept-alive connection: the standard library's `http.client`
  (the least a client can add, so the difference is the API's own cost: the target's figure) and
  httpx (what the tests use; it adds about half a millisecond of its own per request).
"""

from __future__ import annotations

import http.client
import json
import random
import socket
import statistics
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.bulk import populate
from benchmarks.graphs import ours_workflow
from benchmarks.setups import INPUT
from benchmarks.stats import remove_db, summary


def api(workdir: Path, *, size: int, list_reps: int, decisions: int, seed: int = 17) -> dict[str, Any]:
    import httpx
    import uvicorn

    from hitl_graphs import Approve, Runner
    from hitl_graphs.server import create_app

    rng = random.Random(seed)
    wf = ours_workflow()
    db = str(workdir / f"api-{size}.sqlite")
    remove_db(db)
    populated = populate(db, size, workflow=wf, input=INPUT)
    runner = Runner.open(db, workflows=[wf])
    token = runner.tokens.create("bench").token
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(runner), host="127.0.0.1", port=port, log_level="error", ws="none"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {token}"})
    plain = http.client.HTTPConnection("127.0.0.1", port)
    try:
        for _ in range(5):  # warm: imports, page cache, the connection
            assert len(client.get("/api/reviews", params={"limit": 50}).json()) == 50
            runner.pending(limit=50)
        http_ms, local_ms = [], []
        for _ in range(list_reps):
            t0 = time.perf_counter()
            page = client.get("/api/reviews", params={"limit": 50})
            http_ms.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            runner.pending(limit=50)
            local_ms.append((time.perf_counter() - t0) * 1000)
            assert page.status_code == 200 and len(page.json()) == 50
        picks = [r.thread_id for r in runner.pending(limit=3 * decisions + 6, offset=rng.randrange(0, max(1, size // 2)))]
        picks = [t for t in picks if not t.startswith("bulk-template")]
        rng.shuffle(picks)

        def via_api(thread_id: str) -> float:
            review_id = runner.show(thread_id).reviews[0].review_id
            t0 = time.perf_counter()
            r = client.post(f"/api/threads/{thread_id}/decision", json={"review_id": review_id, "kind": "approve"})
            took = (time.perf_counter() - t0) * 1000
            assert r.status_code == 200 and r.json()["status"] == "done", r.text
            return took

        def via_stdlib(thread_id: str) -> float:
            review_id = runner.show(thread_id).reviews[0].review_id
            t0 = time.perf_counter()
            plain.request("POST", f"/api/threads/{thread_id}/decision",
                          json.dumps({"review_id": review_id, "kind": "approve"}),
                          {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
            r = plain.getresponse()
            body = r.read()
            took = (time.perf_counter() - t0) * 1000
            assert r.status == 200 and json.loads(body)["status"] == "done", body
            return took

        def in_process(thread_id: str) -> float:
            review_id = runner.show(thread_id).reviews[0].review_id
            t0 = time.perf_counter()
            view = runner.resume(thread_id, Approve(actor="bench"), review_id=review_id)
            took = (time.perf_counter() - t0) * 1000
            assert view.status == "done"
            return took

        via_api(picks.pop())
        via_stdlib(picks.pop())
        in_process(picks.pop())
        api_ms, stdlib_ms, local_resume_ms, diffs, httpx_diffs = [], [], [], [], []
        for _ in range(decisions):
            a = via_stdlib(picks.pop())
            h = via_api(picks.pop())
            b = in_process(picks.pop())
            stdlib_ms.append(a)
            api_ms.append(h)
            local_resume_ms.append(b)
            diffs.append(a - b)
            httpx_diffs.append(h - b)
    finally:
        plain.close()
        client.close()
        server.should_exit = True
        thread.join(10)
        runner.close()
    return {
        "threads": size,
        "populate_s": populated.get("seconds"),
        "reviews_first_page_ms": {"http_loopback": summary(http_ms, 3), "in_process": summary(local_ms, 3),
                                  "p50_http_ms": round(statistics.median(http_ms), 3), "target_ms": 10},
        "decision_ms": {"http_loopback": summary(stdlib_ms, 3), "http_loopback_httpx": summary(api_ms, 3),
                        "in_process_resume": summary(local_resume_ms, 3),
                        "api_minus_in_process_median_ms": round(statistics.median(diffs), 3),
                        "httpx_minus_in_process_median_ms": round(statistics.median(httpx_diffs), 3), "target_ms": 3},
        "note": "HTTP figures are end to end over loopback (client, uvicorn, app, runner) on a shared 2-core machine; "
                "the in-process figures are the same operation on the same database in the same run; a decision's "
                "http_loopback is sent with http.client (the standard library), http_loopback_httpx with httpx",
    }
