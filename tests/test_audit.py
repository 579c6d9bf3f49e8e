"""The audit log against a hand-edited database: forged decisions, a deleted tail and head, a rebuilt chain."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from hitl_graphs import AuditHead, Approve, Runner, SqliteStore
from hitl_graphs.audit import GENESIS
from tests.conftest import fingerprint, hitl
from tests.workflows import WORKFLOWS, effects


def _sql(db: str, script: str, *args: object) -> None:
    conn = sqlite3.connect(db)
    conn.execute(script, args) if args else conn.executescript(script)
    conn.commit()
    conn.close()


def _history(runner: Runner) -> list[str]:
    """A few threads' worth of entries: started, reviews requested, decided, applied, ended."""
    for amount in (5, 6):
        thread_id = runner.start("pay", {"to": "acme", "amount": amount}).thread_id
        runner.resume(thread_id, Approve(actor="ana"))
    return [runner.start("pay", {"to": "bolt", "amount": 7}).thread_id]


def test_a_decision_written_straight_into_the_ledger_is_not_applied_and_verify_finds_it(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        (thread_id,) = _history(runner)
    _sql(db, "UPDATE hitl_reviews SET status = 'decided', decision = ? WHERE thread_id = ?",
         json.dumps({"kind": "approve", "actor": "mallory"}), thread_id)

    recovered = hitl(db, "recover", "--json")
    assert recovered.returncode == 0, recovered.stderr
    (view,) = json.loads(recovered.stdout)
    assert view["status"] == "failed" and "has no audit record; it was not applied" in view["error"]
    assert effects().count("pay:bolt:7") == 0  # the forged approval paid nothing
    verified = hitl(db, "audit", "verify")
    assert verified.returncode == 1
    assert f"thread {thread_id!r} is decided but the log records no decision for it: the ledger was edited" in verified.stderr
    again = hitl(db, "recover", "--json")
    assert again.returncode == 0 and effects().count("pay:bolt:7") == 0  # refused again, not applied


def test_a_decision_changed_in_the_ledger_is_not_applied(db: str, effects_file: Path) -> None:
    """A person approved 7; someone edits the recorded decision to a bigger amount before recovery."""
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        (thread_id,) = _history(runner)
    # the process that claimed it died before applying it: claim by hand the way the ledger does
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        review_id = runner.show(thread_id).reviews[0].review_id
        runner.ledger.claim(thread_id, review_id, {"kind": "modify", "patch": {"amount": 7}, "actor": "ana"},
                            owner="gone:1", lease_until=0.0)
    _sql(db, "UPDATE hitl_reviews SET decision = ? WHERE thread_id = ?",
         json.dumps({"kind": "modify", "patch": {"amount": 7000}, "actor": "ana"}), thread_id)
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        (view,) = runner.recover()
        assert view.status == "failed" and "differs from the one its audit record holds" in (view.error or "")
        assert not runner.audit_verify().ok
    assert not any(e.startswith("pay:bolt") for e in effects())


@pytest.mark.parametrize(
    ("forgery", "problem"),
    [
        ("DELETE FROM hitl_events WHERE seq = (SELECT max(seq) FROM hitl_events); DELETE FROM hitl_audit_head",
         "the head row is missing while the log has"),
        ("DELETE FROM hitl_events; DELETE FROM hitl_audit_head", "the log is empty but the ledger holds 3 thread(s)"),
        ("UPDATE hitl_audit_head SET seq = seq - 1", "the head was rewritten"),
    ],
    ids=["tail-and-head-deleted", "all-deleted", "head-rewritten"],
)
def test_deleting_the_tail_with_its_head_shows(db: str, effects_file: Path, forgery: str, problem: str) -> None:
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        _history(runner)
        assert runner.audit_verify().ok
    _sql(db, forgery)
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        report = runner.audit_verify()
    assert not report.ok and problem in (report.problem or "")
    cli = hitl(db, "audit", "verify")
    assert cli.returncode == 1 and problem in cli.stderr


def _rebuild_chain_without_key(db: str, drop_last: int) -> None:
    """What an attacker with write access does: drop the last entries, re-hash the rest, fix the head."""
    conn = sqlite3.connect(db)
    last = conn.execute("SELECT max(seq) FROM hitl_events").fetchone()[0]
    conn.execute("DELETE FROM hitl_events WHERE seq > ?", (last - drop_last,))
    prev = GENESIS
    rows = conn.execute("SELECT seq, thread_id, review_id, event, actor, data, at FROM hitl_events ORDER BY seq").fetchall()
    for seq, thread_id, review_id, event, actor, data, at in rows:
        body = json.dumps([prev, seq, thread_id, review_id, event, actor, data, repr(at)], separators=(",", ":"))
        digest = hashlib.sha256(body.encode()).hexdigest()
        conn.execute("UPDATE hitl_events SET prev_hash = ?, hash = ? WHERE seq = ?", (prev, digest, seq))
        prev = digest
    conn.execute("UPDATE hitl_audit_head SET seq = ?, hash = ?", (rows[-1][0], prev))
    conn.commit()
    conn.close()


def test_a_rebuilt_chain_is_found_by_the_head_kept_elsewhere(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        _history(runner)
    printed = hitl(db, "audit", "head")
    assert printed.returncode == 0, printed.stderr
    kept = printed.stdout.strip()
    as_json = json.loads(hitl(db, "audit", "head", "--json").stdout)
    assert as_json["head"] == kept and AuditHead.parse(kept).seq == as_json["seq"]
    assert hitl(db, "audit", "verify", "--expect-head", kept).returncode == 0

    _rebuild_chain_without_key(db, drop_last=2)
    assert hitl(db, "audit", "verify").returncode == 0  # the rebuilt chain is consistent on its own
    cli = hitl(db, "audit", "verify", "--expect-head", kept)
    assert cli.returncode == 1 and "the head kept elsewhere" in cli.stderr and "is not in the log" in cli.stderr
    bad = hitl(db, "audit", "verify", "--expect-head", "12:nothex")
    assert bad.returncode == 1 and "an audit head reads SEQ:HASH" in bad.stderr


def test_with_a_key_a_chain_rebuilt_without_it_is_found(db: str, effects_file: Path) -> None:
    key = "s3cret-kept-off-the-database-host"
    with Runner(SqliteStore(db, audit_key=key), WORKFLOWS, owns_store=True) as runner:
        _history(runner)
        report = runner.audit_verify()
        assert report.ok and report.keyed
    assert hitl(db, "audit", "verify", HITL_AUDIT_KEY=key).returncode == 0
    wrong = hitl(db, "audit", "verify", HITL_AUDIT_KEY="guess")
    assert wrong.returncode == 1

    _rebuild_chain_without_key(db, drop_last=1)
    cli = hitl(db, "audit", "verify", HITL_AUDIT_KEY=key)
    assert cli.returncode == 1 and "no entry is keyed with this HITL_AUDIT_KEY" in cli.stderr


def test_a_key_set_later_keys_every_entry_from_then_on(db: str, effects_file: Path) -> None:
    key = "added-later"
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        thread_id = runner.start("pay", {"to": "acme", "amount": 5}).thread_id
    with Runner(SqliteStore(db, audit_key=key), WORKFLOWS, owns_store=True) as runner:
        runner.resume(thread_id, Approve(actor="ana"))
        assert runner.audit_verify().ok
    before = fingerprint(db, thread_id)
    # an entry after the first keyed one, re-hashed without the key: a downgrade
    conn = sqlite3.connect(db)
    seq, prev, tid, rid, event, actor, data, at = conn.execute(
        "SELECT seq, prev_hash, thread_id, review_id, event, actor, data, at FROM hitl_events ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    body = json.dumps([prev, seq, tid, rid, event, actor, data, repr(at)],
                      separators=(",", ":"))
    conn.execute("UPDATE hitl_events SET hash = ? WHERE seq = ?", (hashlib.sha256(body.encode()).hexdigest(), seq))
    conn.execute("UPDATE hitl_audit_head SET hash = ?", (hashlib.sha256(body.encode()).hexdigest(),))
    conn.commit()
    conn.close()
    cli = hitl(db, "audit", "verify", HITL_AUDIT_KEY=key)
    assert cli.returncode == 1 and "is not keyed with HITL_AUDIT_KEY though entries before it are" in cli.stderr
    assert fingerprint(db, thread_id) == before
