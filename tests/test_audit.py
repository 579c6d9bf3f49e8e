"""The audit log against a hand-edited database: forged decisions, a deleted tail and head, a rebuilt chain."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from hitl_graphs import Approve, AuditError, AuditHead, AuditKeyError, Reject, Runner, SqliteStore
from hitl_graphs.audit import GENESIS, entry_hash
from tests.conftest import fingerprint, hitl
from tests.workflows import WORKFLOWS, effects

KEY = "9c1e6b2f-a-long-random-secret-kept-off-the-database"


@pytest.fixture(autouse=True)
def _no_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HITL_AUDIT_KEY", raising=False)


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
    """What an attacker with write access does: drop the last entries (and the ledger rows of a
    thread left without any, which verify would name), re-hash the rest, fix the head."""
    conn = sqlite3.connect(db)
    last = conn.execute("SELECT max(seq) FROM hitl_events").fetchone()[0]
    conn.execute("DELETE FROM hitl_events WHERE seq > ?", (last - drop_last,))
    for table in ("hitl_threads", "hitl_reviews"):
        conn.execute(f"DELETE FROM {table} WHERE thread_id NOT IN (SELECT thread_id FROM hitl_events)")
    prev = GENESIS
    rows = conn.execute("SELECT seq, thread_id, review_id, event, actor, data, at FROM hitl_events ORDER BY seq").fetchall()
    for seq, thread_id, review_id, event, actor, data, at in rows:
        body = json.dumps([prev, seq, thread_id, review_id, event, actor, data, repr(at)], separators=(",", ":"))
        digest = hashlib.sha256(body.encode()).hexdigest()
        conn.execute("UPDATE hitl_events SET hash = ? WHERE seq = ?", (digest, seq))  # each links to the entry before
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
    seq, tid, rid, event, actor, data, at = conn.execute(
        "SELECT seq, thread_id, review_id, event, actor, data, at FROM hitl_events ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    prev = _stored_hash(conn, seq - 1)
    body = json.dumps([prev, seq, tid, rid, event, actor, data, repr(at)],
                      separators=(",", ":"))
    conn.execute("UPDATE hitl_events SET hash = ? WHERE seq = ?", (hashlib.sha256(body.encode()).hexdigest(), seq))
    conn.execute("UPDATE hitl_audit_head SET hash = ?", (hashlib.sha256(body.encode()).hexdigest(),))
    conn.commit()
    conn.close()
    cli = hitl(db, "audit", "verify", HITL_AUDIT_KEY=key)
    assert cli.returncode == 1 and "is not keyed with HITL_AUDIT_KEY though entries before it are" in cli.stderr
    assert fingerprint(db, thread_id) == before


# -- what a missing or wrong key, a forged entry and a lost head row do ---------------------------------


def _stored_hash(conn: sqlite3.Connection, seq: int) -> str:
    """Entry `seq`'s hash as the audit rules write it (the file stores it as bytes: 32 plain, 36 keyed)."""
    (stored,) = conn.execute("SELECT hash FROM hitl_events WHERE seq = ?", (seq,)).fetchone()
    return stored if isinstance(stored, str) else stored.hex() if len(stored) == 32 else f"hmac:{stored[:4].hex()}:{stored[4:].hex()}"


def _keyed(db: str, key: str | None = KEY) -> Runner:
    """A runner whose store keys the log with `key` (None: no key)."""
    return Runner(SqliteStore(db, audit_key=key), WORKFLOWS, owns_store=True)


def _one_line_error(result: Any, *fragments: str) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


def _forge_entry(db: str, thread_id: str, review_id: str | None, event: str, actor: str | None, data: dict[str, Any]) -> int:
    """Append an entry with a correct sha256 hash (all the source code tells) and move the head row."""
    conn = sqlite3.connect(db)
    (seq,) = conn.execute("SELECT max(seq) FROM hitl_events").fetchone()
    prev = _stored_hash(conn, seq)
    seq, at, text = seq + 1, time.time(), json.dumps(data, sort_keys=True)
    digest = entry_hash(prev, seq, thread_id, review_id, event, actor, text, at)
    conn.execute("INSERT INTO hitl_events VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (seq, thread_id, review_id, event, actor, text, at, digest))
    conn.execute("UPDATE hitl_audit_head SET seq = ?, hash = ?", (seq, digest))
    conn.commit()
    conn.close()
    return int(seq)


def test_recover_refuses_a_decision_forged_into_a_keyed_log_without_the_key(db: str, effects_file: Path) -> None:
    with _keyed(db) as runner:
        thread_id = runner.start("pay").thread_id
        review_id = runner.show(thread_id).reviews[0].review_id
    decision = {"kind": "approve", "actor": "mallory"}
    _sql(db, "UPDATE hitl_reviews SET status = 'decided', decision = ? WHERE thread_id = ?", json.dumps(decision), thread_id)
    forged = _forge_entry(db, thread_id, review_id, "decided", "mallory", {**decision, "by": "person"})

    recovered = hitl(db, "recover", "--json", HITL_AUDIT_KEY=KEY)
    assert recovered.returncode == 0, recovered.stderr
    (view,) = json.loads(recovered.stdout)
    assert view["status"] == "failed" and "has no audit record; it was not applied" in view["error"]
    assert effects() == ["prepare"]  # the forged approval paid nothing
    _one_line_error(hitl(db, "audit", "verify", HITL_AUDIT_KEY=KEY),
                    f"entry {forged} is not keyed with HITL_AUDIT_KEY though entries before it are")


def test_writing_to_a_keyed_log_without_its_key_is_refused(db: str, effects_file: Path) -> None:
    with _keyed(db) as runner:
        thread_id = runner.start("pay").thread_id
    before = fingerprint(db, thread_id)
    with _keyed(db, None) as runner, pytest.raises(AuditKeyError, match=r"the audit log is keyed \(key id [0-9a-f]{8}\); set HITL_AUDIT_KEY"):
        runner.resume(thread_id, Approve(actor="ana"))
    with _keyed(db, "another key") as runner, pytest.raises(
        AuditKeyError, match=r"HITL_AUDIT_KEY \(key id [0-9a-f]{8}\) is not the key the audit log is keyed with \(key id [0-9a-f]{8}\)"
    ):
        runner.resume(thread_id, Reject(actor="ana"))
    assert fingerprint(db, thread_id) == before and effects() == ["prepare"]
    _one_line_error(hitl(db, "approve", thread_id), "error: the audit log is keyed (key id ")
    assert fingerprint(db, thread_id) == before  # nothing written that a keyed verify would take for tampering
    done = hitl(db, "approve", thread_id, "--json", HITL_AUDIT_KEY=KEY)
    assert done.returncode == 0 and json.loads(done.stdout)["state"]["status"] == "paid"
    assert hitl(db, "audit", "verify", HITL_AUDIT_KEY=KEY).returncode == 0


def test_verify_says_what_a_missing_or_wrong_key_means(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        thread_id = runner.start("pay").thread_id  # entries 1, 2 written before the key was set
    with _keyed(db) as runner:
        runner.resume(thread_id, Approve(actor="ana"))
        report = runner.audit_verify()
    assert (report.ok, report.keyed, report.keyed_from) == (True, True, 3)
    ok = hitl(db, "audit", "verify", HITL_AUDIT_KEY=KEY)
    assert ok.returncode == 0 and "keyed with HITL_AUDIT_KEY from entry 3; entries 1..2 before it are hash-chained only" in ok.stdout
    _one_line_error(hitl(db, "audit", "verify"), f"entries 3..{report.head_seq} are keyed (key id ",
                    "set HITL_AUDIT_KEY to the key they were written with to verify them")
    _one_line_error(hitl(db, "audit", "verify", HITL_AUDIT_KEY="guess"), "entry 3 is keyed with another key (id ",
                    "than the HITL_AUDIT_KEY given (id ")


def test_a_downgrade_is_found_even_without_the_key_and_a_guessed_mac_is_not_taken(db: str, effects_file: Path) -> None:
    with _keyed(db) as runner:
        _history(runner)
    conn = sqlite3.connect(db)
    (seq,) = conn.execute("SELECT max(seq) FROM hitl_events").fetchone()
    prev, kept = _stored_hash(conn, seq - 1), _stored_hash(conn, seq)
    tid, rid, event, actor, data, at = conn.execute(
        "SELECT thread_id, review_id, event, actor, data, at FROM hitl_events WHERE seq = ?", (seq,)).fetchone()
    plain = entry_hash(prev, seq, tid, rid, event, actor, data, at)
    conn.execute("UPDATE hitl_events SET hash = ? WHERE seq = ?", (plain, seq))  # the keyed marker dropped
    conn.execute("UPDATE hitl_audit_head SET hash = ?", (plain,))
    conn.commit()
    for env in ({}, {"HITL_AUDIT_KEY": KEY}):
        _one_line_error(hitl(db, "audit", "verify", **env), f"entry {seq} is not keyed with HITL_AUDIT_KEY though entries before it are")
    guessed = kept.rsplit(":", 1)[0] + ":" + plain  # the marker and key id copied, the MAC made up
    conn.execute("UPDATE hitl_events SET hash = ? WHERE seq = ?", (guessed, seq))
    conn.execute("UPDATE hitl_audit_head SET hash = ?", (guessed,))
    conn.commit()
    conn.close()
    _one_line_error(hitl(db, "audit", "verify", HITL_AUDIT_KEY=KEY), f"entry {seq} was edited or moved: its content no longer matches its hash")


def test_a_missing_head_row_stops_writes_and_audit_head_in_one_line(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        thread_id = runner.start("pay").thread_id
    _sql(db, "DELETE FROM hitl_audit_head")
    before = fingerprint(db, thread_id)
    with Runner.open(db, workflows=WORKFLOWS) as runner, pytest.raises(
        AuditError, match="the audit log's head row is missing though the log has 2 entries"
    ):
        runner.resume(thread_id, Approve(actor="ana"))
    assert fingerprint(db, thread_id) == before
    _one_line_error(hitl(db, "approve", thread_id), "error: the audit log's head row is missing")
    _one_line_error(hitl(db, "audit", "head"), "error: the audit log's head row is missing")  # not the genesis
    assert fingerprint(db, thread_id) == before


def test_cutting_a_thread_off_the_end_is_found_through_the_ledger(db: str, effects_file: Path) -> None:
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        (last,) = _history(runner)
    conn = sqlite3.connect(db)
    (first,) = conn.execute("SELECT min(seq) FROM hitl_events WHERE thread_id = ?", (last,)).fetchone()
    conn.execute("DELETE FROM hitl_events WHERE seq >= ?", (first,))  # the careful attacker fixes the head row too
    conn.execute("UPDATE hitl_audit_head SET seq = ?, hash = (SELECT hash FROM hitl_events WHERE seq = ?)", (first - 1, first - 1))
    conn.commit()
    conn.close()
    _one_line_error(hitl(db, "audit", "verify"), f"thread {last!r} is in the ledger but has no entry in the log: its entries were deleted")


def test_heads_a_cron_job_appends_as_json_lines_are_checked(db: str, effects_file: Path, tmp_path: Path) -> None:
    kept = tmp_path / "heads.jsonl"  # `hitl audit head --json >> heads.jsonl`, as the README's cron line does
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        _history(runner)
    with kept.open("a") as f:
        f.write(hitl(db, "audit", "head", "--json").stdout)
    with Runner.open(db, workflows=WORKFLOWS) as runner:
        (later,) = _history(runner)
    with kept.open("a") as f:
        f.write(hitl(db, "audit", "head", "--json").stdout)
    lines = kept.read_text().splitlines()
    assert len(lines) == 2 and [AuditHead.parse(line).seq for line in lines] == [json.loads(line)["seq"] for line in lines]
    ok = hitl(db, "audit", "verify", *[arg for line in lines for arg in ("--expect-head", line)])
    assert ok.returncode == 0 and "2 kept heads found in the chain" in ok.stdout, ok.stderr

    # the careful attacker removes the last thread: its entries, its ledger rows, the head row fixed
    conn = sqlite3.connect(db)
    (first,) = conn.execute("SELECT min(seq) FROM hitl_events WHERE thread_id = ?", (later,)).fetchone()
    conn.executescript(f"DELETE FROM hitl_events WHERE seq >= {first}; DELETE FROM hitl_threads WHERE thread_id = '{later}'; "
                       f"DELETE FROM hitl_reviews WHERE thread_id = '{later}'; UPDATE hitl_audit_head SET seq = {first - 1}, "
                       f"hash = (SELECT hash FROM hitl_events WHERE seq = {first - 1})")
    conn.close()
    assert hitl(db, "audit", "verify").returncode == 0  # the chain alone cannot see it
    _one_line_error(hitl(db, "audit", "verify", "--expect-head", lines[-1]), "the head kept elsewhere (",
                    f"is not in the log: the log ends at entry {first - 1}, entries at the end were deleted")
