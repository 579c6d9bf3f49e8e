"""The web inbox in a real headless Chromium (Debian's, driven by Playwright; `make test` installs
it with tools/ensure_chromium.sh, never `playwright install`): a person logs in, edits, decides,
and another person's page follows. The rest of the inbox is tested without a browser
(tests/test_web.py); these few cover what only a browser does: htmx, cookies, forms as typed."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.conftest import fingerprint
from tests.live_server import Server, token
from tests.test_web import WEB_WORKFLOWS, paused, review_url
from tests.workflows import effects

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = os.environ.get("HITL_CHROMIUM", "/usr/bin/chromium")
QUIET = ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--no-first-run",
         "--disable-default-apps", "--disable-sync", "--metrics-recording-only", "--disable-dev-shm-usage"]


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    assert os.access(CHROMIUM, os.X_OK), f"no browser at {CHROMIUM}: run `make chromium` (tools/ensure_chromium.sh)"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=QUIET)
        yield browser
        browser.close()


@pytest.fixture
def server(db: str, effects_file: Path) -> Iterator[Server]:
    s = Server(db, WEB_WORKFLOWS)
    yield s
    s.close()


def logged_in(chromium: Browser, server: Server, actor: str, *roles: str) -> Page:
    """A fresh browser profile where `actor` pasted a token into the login page."""
    page = chromium.new_context().new_page()
    page.goto(server.url + "/")
    expect(page).to_have_url(re.compile(r"/login"))
    page.fill("#token", token(server, actor, *roles))
    page.click("button[type=submit]")
    expect(page.locator("#who")).to_contain_text(actor)
    return page


def test_a_reviewer_edits_a_plan_step_approves_and_another_reviewers_pages_follow(
    chromium: Browser, server: Server, tmp_path: Path
) -> None:
    thread_id, review_id = paused(server, "plan-review", {"task": "fix the build"})
    bob = logged_in(chromium, server, "bob")
    expect(bob.locator("#reviews")).to_contain_text("Plan v1 (3 steps) for: fix the build")
    bob.screenshot(path=str(tmp_path / "inbox.png"))
    assert (tmp_path / "inbox.png").read_bytes().startswith(b"\x89PNG")

    ana = logged_in(chromium, server, "ana")
    ana.click("text=Plan v1 (3 steps) for: fix the build")
    expect(ana.locator("ol.steps li")).to_have_text(
        ["Research: fix the build", "Pick the most important findings", "Write the summary"])
    ana.fill("input[aria-label='step 2']", "Pick the two findings that matter")
    ana.click("#modify button[type=submit]")
    expect(ana.locator("#done")).to_contain_text("modify")
    expect(ana.locator("#status")).to_contain_text("plan-review · paused")  # ran on to its re-planning review
    view = server.runner.show(thread_id)
    assert [r["step"] for r in view.state["results"]] == ["Research: fix the build", "Pick the two findings that matter"]
    assert [e.actor for e in server.runner.history(thread_id) if e.event == "decided"] == ["ana"]

    # bob's inbox follows by itself (htmx), and the review he had listed says who decided it
    expect(bob.locator("#reviews")).to_contain_text("Plan v3 (1 step, 2 done)", timeout=10_000)
    expect(bob.locator("#reviews")).not_to_contain_text("Plan v1")
    bob.goto(server.url + review_url(thread_id, review_id))
    expect(bob.locator("#standing")).to_have_text("decided by ana just now: modify")
    expect(bob.locator("#approve")).to_have_count(0)


def test_a_tool_argument_that_breaks_the_schema_is_shown_next_to_the_field_and_nothing_is_sent(
    chromium: Browser, server: Server, db: str
) -> None:
    thread_id, review_id = paused(server, "transfer", {"account": "DE123456", "amount": 120})
    before = fingerprint(db, thread_id)
    ana = logged_in(chromium, server, "ana")
    ana.goto(server.url + review_url(thread_id, review_id))
    error = ana.locator("#err-f-args-amount")
    ana.fill("#f-args-amount", "5000")
    ana.locator("#f-args-amount").blur()  # htmx checks the form on change, before it is sent
    expect(error).to_have_text("5000 is greater than the maximum of 1000")
    ana.click("#modify button[type=submit]")  # sent anyway: refused, the same error next to the field
    expect(ana.locator("#f-args-amount")).to_have_value("5000")
    expect(error).to_have_text("5000 is greater than the maximum of 1000")
    assert fingerprint(db, thread_id) == before and effects() == []
    ana.fill("#f-args-amount", "900")
    ana.locator("#f-args-amount").blur()
    expect(error).to_be_hidden()
    ana.click("#modify button[type=submit]")
    expect(ana.locator("#status")).to_contain_text("transfer · done")
    assert effects() == ["transfer:DE123456:900:False"]
