"""Refresh docs/inbox.png: the web inbox on a scratch database with a few demo reviews, as Debian's
chromium shows it (run from the repository root: `.venv/bin/python tools/inbox_screenshot.py`)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from hitl_graphs.examples import examples  # noqa: E402
from tests.live_server import Server, token  # noqa: E402
from tests.test_web_browser import CHROMIUM, QUIET  # noqa: E402


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="inbox-shot-") as tmp:
        server = Server(str(Path(tmp) / "hitl.sqlite"), examples())
        try:
            for name, data in (("email", {"to": "bo@example.com", "topic": "the offsite"}),
                               ("plan-review", {"task": "fix the flaky build"}), ("tool-approval", None),
                               ("escalation", None), ("multi-step", None)):
                server.runner.start(name, data, actor="sam")
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=QUIET)
                page = browser.new_page(viewport={"width": 1000, "height": 560})
                page.goto(server.url + "/login")
                page.fill("#token", token(server, "ana", "reviewer"))
                page.click("button[type=submit]")
                page.wait_for_selector("#reviews")
                page.screenshot(path=str(ROOT / "docs" / "inbox.png"))
                browser.close()
        finally:
            server.close()


if __name__ == "__main__":
    main()
