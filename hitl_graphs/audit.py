"""The audit log: every event of every thread, hash-chained so an edit shows.

Each entry's hash covers its own fields and the previous entry's hash, so editing, deleting or
reordering any entry breaks the chain from that point on; `verify` names the first broken entry.
A head row (last sequence number and hash) is written in the same transaction as each append, so
deleting entries at the end shows too, and so does deleting the head row with them (a missing
head row also stops every write, `AuditError`, instead of restarting the log). `verify` also
holds the ledger to the log: every thread in the ledger must have entries, and every review the
ledger says was decided must have the decision the log records (a decision written straight into
the ledger is found, and `recover` will not apply it).

Large values are not copied into the log: a review's payload is stored once, in the ledger, and
its `review_requested` entry commits to it by `payload_hash` (`content_hash` of the payload), so
`verify` finds a payload edited in the ledger; a run's `started` entry names the input's fields,
and the input itself stays in the checkpoints (until the first one, in a side table `recover`
reads).

What it does not stop on its own: whoever can write the file can rebuild the whole chain from
scratch, or cut whole threads off its end with their ledger rows and fix the head row. Two
defences, either or both:

- Keep the head elsewhere: `hitl audit head` prints the last entry's number and hash; store it
  where the database's writers cannot (write-once storage, another machine, a ticket), and
  `hitl audit verify --expect-head SEQ:HASH` checks that entry is still in the log, unchanged.
  What was written after the last head kept is covered by the chain (and the key) only.
- A secret key: with `HITL_AUDIT_KEY` set (or `Runner.open(audit_key=...)`), each new entry's
  hash is an HMAC-SHA256 under it, stored as `hmac:<key id>:<mac>` (the key id, 8 hex digits
  derived from the key, tells a wrong key from an edit). A chain rebuilt or extended without the
  key fails `verify` run with it. Entries written before the key was set stay plain, bound by the
  first keyed entry's link; once one entry is keyed every later one must be, so dropping the
  marker (a downgrade) is itself a break, found even without the key. A process without the key,
  or with another one, is refused before it writes (`AuditKeyError`), so a misconfigured
  process cannot leave entries that look forged. `verify` without the key says which entries it
  cannot check; with a key on a log where no entry is keyed it fails (rebuilt without the key,
  or nothing written since the key was set).

  The key does not protect against whoever holds it: every process that writes the database
  needs it, so it guards against those who can reach the file but not the processes' secrets
  (another host's admin, a restored backup, someone with SQL access). Nor does it show entries
  cut off the end (keep heads for that), nor the whole file deleted. Use a long random key
  (`python -c "import secrets; print(secrets.token_hex(32))"`): any keyed entry lets a short one
  be guessed offline. A keyed log cannot change its key.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from hitl_graphs.errors import AuditError, AuditKeyError

KEY_ENV = "HITL_AUDIT_KEY"
_KEYED = "hmac:"

GENESIS = "0" * 64



@dataclass(frozen=True, slots=True)
class Event:
    """An event to append in the same transaction as the change it records."""

    event: str
    review_id: str | None = None
    actor: str | None = None
    data: dict[str, Any] | None = None


def entry_hash(prev_hash: str, seq: int, thread_id: str, review_id: str | None, event: str,
               actor: str | None, data: str, at: float, key: bytes | None = None) -> str:
    """The hash of one entry: its fields and the previous entry's hash, canonically encoded;
    with `key`, an HMAC-SHA256 under it, marked `hmac:<key id>:`."""
    body = json.dumps([prev_hash, seq, thread_id, review_id, event, actor, data, repr(at)], separators=(",", ":")).encode()
    if key is None:
        return hashlib.sha256(body).hexdigest()
    return f"{_KEYED}{key_id(key)}:{hmac.new(key, body, hashlib.sha256).hexdigest()}"


def content_hash(value: Any) -> str:
    """SHA-256 of a JSON value's canonical form (sorted keys, no spaces): what an entry records
    in place of a large value (a review's payload, a run's input) to commit to its content.

    Example:
        >>> content_hash({"b": 1, "a": [2]}) == content_hash({"a": [2], "b": 1})
        True"""
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()


def anchor_hash(prev: str, seq: int, digest: str) -> str:
    """The global chain's link over an entry linked within its thread (`verify`'s `anchors`): it
    commits to the previous anchor (or, before the first one, the previous entry's hash), the
    entry's place in the log and its hash. Simple enough for a database to compute while it numbers
    the entry (PostgreSQL does, `storage.postgres.audit`), so the global order is bound without a
    writer reading the log's head first.

    Example:
        >>> len(anchor_hash(GENESIS, 1, "ab" * 32))
        64"""
    return hashlib.sha256(f"{prev}:{seq}:{digest}".encode()).hexdigest()


@functools.lru_cache(maxsize=8)
def key_id(key: bytes) -> str:
    """8 hex digits naming a key without revealing it, so a wrong key is told from an edit.

    Example:
        >>> len(key_id(b"s3cret")), key_id(b"s3cret") == key_id(b"other")
        (8, False)"""
    return hmac.new(key, b"hitl_graphs audit key id", hashlib.sha256).hexdigest()[:8]


def _kid(digest: str) -> str | None:
    """The key id of a keyed entry's hash; None for a plain one."""
    return digest[len(_KEYED):len(_KEYED) + 8] if digest.startswith(_KEYED) else None


def key_from_env() -> bytes | None:
    """`$HITL_AUDIT_KEY` as bytes, None when unset or empty."""
    value = os.environ.get(KEY_ENV)
    return value.encode() if value else None


Row = tuple[int, str, str | None, str, str | None, str, float, str, str]
"""One stored entry: seq, thread_id, review_id, event, actor, data (JSON), at, prev_hash, hash."""


def chain(head: tuple[int, str] | None, thread_id: str, events: Iterable[Event], now: float,
          key: bytes | None) -> list[Row]:
    """The entries to store after `head` (the log's last seq and hash; None for an empty log).

    Every backend appends what this returns, in the same transaction as the head row's update
    and the change the events record.

    Raises:
        AuditKeyError: the log is keyed and `key` is missing or another one.
    """
    seq, prev = head if head else (0, GENESIS)
    rows: list[Row] = []
    for e in events:
        seq += 1
        data = json.dumps(e.data or {}, sort_keys=True, separators=(",", ":"), default=str)
        digest = entry_hash(prev, seq, thread_id, e.review_id, e.event, e.actor, data, now, key)
        rows.append((seq, thread_id, e.review_id, e.event, e.actor, data, now, prev, digest))
        prev = digest
    if rows and head is not None:
        check_key(head[1], key)
    return rows


def missing_head(count: int) -> AuditError:
    """The error for a log whose head row is gone though it has entries (nothing is written)."""
    return AuditError(f"the audit log's head row is missing though the log has {count} entries (the database was "
                      "edited?); nothing is written until it is restored: `hitl audit verify` says more")


def check_key(digest: str, key: bytes | None) -> None:
    """Refuse to extend (or trust) a keyed entry without its key: what a process without the key
    wrote after it would read as a downgrade, and another key's entries as edits."""
    kid = _kid(digest)
    if kid is None:
        return  # a plain log takes plain entries, or keyed ones from now on
    if key is None:
        raise AuditKeyError(f"the audit log is keyed (key id {kid}); set {KEY_ENV} to its key to write to it")
    if key_id(key) != kid:
        raise AuditKeyError(f"{KEY_ENV} (key id {key_id(key)}) is not the key the audit log is keyed with "
                            f"(key id {kid}); set the right one")


@dataclass(frozen=True, slots=True)
class AuditReport:
    """What `verify` found: `ok`, how many entries it checked, and the first problem if any.

    Example:
        >>> AuditReport(ok=False, checked=3, head="ab", first_bad_seq=4, problem="entry 4 was edited").first_bad_seq
        4"""

    ok: bool
    checked: int
    head: str
    first_bad_seq: int | None = None
    problem: str | None = None
    head_seq: int = 0
    keyed: bool = False
    """Whether entries are keyed with the key `verify` was given (from the first keyed one on)."""
    keyed_from: int | None = None
    """The first keyed entry (the ones before it were written before the key was set)."""
    kept_heads: int = 0
    """How many heads kept elsewhere (`expect_heads`) were found in the chain."""


@dataclass(frozen=True, slots=True)
class AuditHead:
    """The log's last entry: keep `f"{seq}:{hash}"` where the database's writers cannot write.

    Example:
        >>> str(AuditHead(seq=12, hash="9f" * 32))[:6]
        '12:9f9'"""

    seq: int
    hash: str

    def __str__(self) -> str:
        return f"{self.seq}:{self.hash}"

    @classmethod
    def parse(cls, text: str) -> AuditHead:
        """Read `SEQ:HASH` (what `hitl audit head` prints), or the JSON line `--json` prints.

        Example:
            >>> AuditHead.parse('{"seq": 3, "hash": "' + "ab" * 32 + '", "at": "2025-01-01T00:00:00+00:00"}').seq
            3

        Raises:
            ValueError: neither form."""
        text = text.strip()
        if text.startswith("{"):
            try:
                got = json.loads(text)
            except json.JSONDecodeError:
                got = None
            seq, digest = (got.get("seq"), got.get("hash")) if isinstance(got, dict) else (None, None)
            seq = str(seq) if isinstance(seq, int) and not isinstance(seq, bool) else ""
        else:
            seq, _, digest = text.partition(":")
        if not seq.isdigit() or not isinstance(digest, str) or not _HASH.fullmatch(digest):
            raise ValueError(f"an audit head reads SEQ:HASH (a hash as the log stores it), as `hitl audit head` prints "
                             f"it, or its --json line; got {text[:100]!r}")
        return cls(int(seq), digest)


_HASH = re.compile(r"(hmac:[0-9a-f]{8}:)?[0-9a-f]{64}")


def check_head(last: tuple[int, str] | None, row: tuple[int, str] | None) -> AuditHead:
    """The log's head, from its last entry and its head row (entry 0 and the genesis hash for an
    empty log).

    Raises:
        AuditError: the head row is missing or is not the last entry: a head kept from such a
            log would keep its damage.
    """
    if last is None and row is None:
        return AuditHead(0, GENESIS)
    if row is None:
        assert last is not None
        raise AuditError(f"the audit log's head row is missing though the log has entries up to {last[0]} "
                         "(the database was edited?): `hitl audit verify` says more")
    if last is None or tuple(row) != tuple(last):
        raise AuditError(f"the audit log's head row (entry {row[0]}) is not its last entry "
                         f"({last[0] if last else 'none'}; the database was edited?): `hitl audit verify` says more")
    return AuditHead(int(last[0]), str(last[1]))


def decision_of(data: dict[str, Any]) -> dict[str, Any]:
    """The decision a `decided` entry records (its data without who won the race and the
    values a `Modify` replaced), to compare with the ledger's."""
    return {k: v for k, v in data.items() if k not in ("by", "original")}


def recorded_decision(row: Row | None, key: bytes | None, *, keyed_before: bool,
                      position: int | None = None) -> dict[str, Any] | None:
    """The decision a review's latest `decided` entry (`row`) records, if the entry is intact
    (None otherwise).

    `recover` applies a decision from the ledger only if it equals this: a decision written
    straight into the ledger has no entry, and a forged entry does not hash right. With a key, an
    entry must be keyed unless the log has no keyed entry before it (`keyed_before`): a plain one
    was forged.

    Raises:
        AuditKeyError: the entry is keyed and `key` is missing or another one.

    `position`: for an entry linked within its thread (see `verify`'s `anchors`), its place in the
    thread's entries (1 for the first), which its hash covers in place of `seq`."""
    if row is None or (key is not None and keyed_before and _kid(row[8]) is None):
        return None
    seq, tid, rid, event, actor, data, at, prev_hash, digest = row
    check_key(digest, key)
    if entry_hash(prev_hash, seq if position is None else position, tid, rid, event, actor, data, at,
                  key if _kid(digest) else None) != digest:
        return None
    return decision_of(json.loads(data))


def verify(
    rows: Iterable[Row],
    head_row: tuple[int, str] | None,
    *,
    threads: Sequence[str] = (),
    reviews: Sequence[tuple[str, str, str, dict[str, Any] | None]] = (),
    payloads: Iterable[tuple[str, str, Any]] = (),
    key: bytes | None = None,
    expect_heads: Sequence[AuditHead] = (),
    anchors: Mapping[int, str] | None = None,
) -> AuditReport:
    """Walk the whole chain (`rows`, in order) and report the first entry that was edited, deleted
    or reordered, a missing or wrong head, a thread or a ledger decision the log does not record
    (`threads`: the ledger's thread ids; `reviews`: its decided and applied reviews as
    `(thread_id, review_id, status, decision)`), a review payload the ledger shows that is not the
    one its `review_requested` entry committed to (`payloads`: `(thread_id, review_id, payload)`
    of every review), or a head kept elsewhere (`expect_heads`) that is no longer in the log. Keyed entries are checked with `key` (reported as unverifiable without
    it); with `key`, at least one entry must be keyed. Each store reads its rows and calls this.

    `anchors` (seq -> anchor) marks the entries linked within their thread, for a store whose
    writers do not wait for one another (PostgreSQL): such an entry's `prev_hash` is its thread's
    previous entry's hash (the genesis hash for the first), its hash covers its place in the thread
    instead of `seq`, and its anchor (`anchor_hash` of the previous anchor, `seq` and its hash)
    binds it into the one global chain; the log's head and the heads kept elsewhere are anchors.
    Once one entry is anchored every later one must be.

    Example:
        >>> rows = chain(None, "t1", [Event("started"), Event("decided", actor="ana")], 1.0, None)
        >>> kept = AuditHead(2, rows[-1][8])
        >>> verify(rows, (2, rows[-1][8]), expect_heads=[kept]).ok
        True
        >>> edited = [*rows[:1], (*rows[1][:4], "eve", *rows[1][5:])]
        >>> verify(edited, (2, rows[-1][8])).problem
        'entry 2 was edited or moved: its content no longer matches its hash'
    """
    rows = list(rows)
    want = key_id(key) if key is not None else None
    prev, expected_seq, checked = GENESIS, 1, 0
    keyed_from: int | None = None
    unverified: tuple[int, str] | None = None  # the first keyed entry met without a key, and its key id
    hashes: dict[int, str] = {}
    logged: set[str] = set()
    decided: dict[tuple[str, str], dict[str, Any]] = {}
    asked: dict[tuple[str, str], str] = {}  # the payload hash each review_requested entry commits to
    threads_at: dict[str, tuple[int, str]] = {}  # each thread's entry count and last hash, for anchored entries
    anchored_from: int | None = None

    def broken(seq: int | None, problem: str) -> AuditReport:
        return AuditReport(False, checked, prev, seq, problem, expected_seq - 1, keyed_from is not None and key is not None,
                           keyed_from)

    for seq, thread_id, review_id, event, actor, data, at, prev_hash, digest in rows:
        anchor = anchors.get(seq) if anchors is not None else None
        count, thread_prev = threads_at.get(thread_id, (0, GENESIS))
        link, place = (thread_prev, count + 1) if anchor is not None else (prev, seq)
        if anchor is None and anchored_from is not None:
            return broken(seq, f"entry {seq} is not anchored though entries before it are: it was written or "
                               "rewritten outside the log's writers")
        if prev_hash != link or seq != expected_seq:
            return broken(seq, f"entry {seq} does not follow entry {expected_seq - 1}: an entry was deleted or reordered"
                          if seq != expected_seq else
                          f"entry {seq} does not link to the entry before it: entries were reordered or rewritten")
        kid = _kid(digest)
        if kid is None and keyed_from is not None:
            return broken(seq, f"entry {seq} is not keyed with {KEY_ENV} though entries before it are: "
                               "it was written or rewritten without the key")
        if kid is not None:
            keyed_from = keyed_from or seq
            if key is None:
                unverified = unverified or (seq, kid)
            elif kid != want:
                return broken(seq, f"entry {seq} is keyed with another key (id {kid}) than the {KEY_ENV} given "
                                   f"(id {want}): a wrong key, or entries forged with a key of their own")
        if (kid is None or key is not None) and \
                entry_hash(prev_hash, place, thread_id, review_id, event, actor, data, at, key if kid else None) != digest:
            return broken(seq, f"entry {seq} was edited or moved: its content no longer matches its hash")
        threads_at[thread_id] = (count + 1, digest)
        if anchor is not None:
            anchored_from = anchored_from or seq
            digest = anchor_hash(prev, seq, digest)
            if anchor != digest:
                return broken(seq, f"entry {seq}'s anchor does not follow the entries before it: entries were "
                                   "deleted, reordered or rewritten")
        logged.add(thread_id)
        if event == "decided" and review_id is not None:
            decided[(thread_id, review_id)] = decision_of(json.loads(data))
        elif event == "review_requested" and review_id is not None:
            shown = json.loads(data).get("payload_hash")
            if isinstance(shown, str) and shown:
                asked[(thread_id, review_id)] = shown
        hashes[seq] = digest
        prev, expected_seq, checked = digest, seq + 1, checked + 1
    last = expected_seq - 1
    if rows and head_row is None:
        return broken(None, f"the head row is missing while the log has {last} entries: it was deleted")
    if head_row is not None and (head_row[0], head_row[1]) != (last, prev):
        return broken(last + 1, f"the log ends at entry {last} but its head says {head_row[0]}: entries at the end were "
                                "deleted" if head_row[0] > last else
                                f"the log ends at entry {last} but its head says {head_row[0]}: the head was rewritten")
    for expect in expect_heads:
        kept = f"the head kept elsewhere ({expect.seq}:{expect.hash[:12]}...) is not in the log"
        if expect.seq > last:
            return broken(last + 1, f"{kept}: the log ends at entry {last}, entries at the end were deleted")
        if (hashes.get(expect.seq) if expect.seq else GENESIS) != expect.hash:
            return broken(expect.seq, f"{kept}: entry {expect.seq} has another hash, the log up to it was rebuilt")
    if not rows and threads:
        return broken(None, f"the log is empty but the ledger holds {len(threads)} thread(s): its entries were deleted")
    for thread_id in threads:
        if thread_id not in logged:
            return broken(None, f"thread {thread_id!r} is in the ledger but has no entry in the log: its entries were deleted")
    for thread_id, review_id, status, decision in reviews:
        recorded = decided.get((thread_id, review_id))
        if recorded is None:
            return broken(None, f"review {review_id!r} of thread {thread_id!r} is {status} but the log records no "
                                "decision for it: the ledger was edited")
        if decision is not None and decision != recorded:
            return broken(None, f"review {review_id!r} of thread {thread_id!r} holds a decision other than the one the "
                                "log records: the ledger was edited")
    for thread_id, review_id, payload in payloads:
        committed = asked.get((thread_id, review_id))
        if committed is not None and content_hash(payload) != committed:
            return broken(None, f"review {review_id!r} of thread {thread_id!r} shows a payload other than the one the "
                                "log committed to (its payload_hash): the ledger was edited")
    if unverified is not None:
        return broken(unverified[0], f"entries {unverified[0]}..{last} are keyed (key id {unverified[1]}): set {KEY_ENV} "
                                     "to the key they were written with to verify them")
    if key is not None and rows and keyed_from is None:
        return broken(None, f"no entry is keyed with this {KEY_ENV}: the log was rebuilt without the key, or nothing was "
                            "written since it was set (verify without the key to check the plain chain)")
    return AuditReport(True, checked, prev, head_seq=last, keyed=keyed_from is not None, keyed_from=keyed_from,
                       kept_heads=len(expect_heads))


def export(rows: Iterable[Row], out: TextIO, *, payloads: Mapping[tuple[str, str], Any] | None = None,
           anchors: Mapping[int, str] | None = None) -> int:
    """Write entries as JSON Lines (one entry per line, with its hashes); returns the count.

    Each entry's `data` is written as stored (what its hash covers). A `review_requested` entry
    also gets the payload the ledger holds (`payloads`, by thread and review id) beside it, as
    `payload`: its `content_hash` is the entry's `data.payload_hash` unless the ledger was edited.
    An entry linked within its thread (`verify`'s `anchors`) also gets its `anchor`: what a head
    kept elsewhere names."""
    count = 0
    for seq, tid, review_id, event, actor, data, at, prev_hash, digest in rows:
        line = {"seq": seq, "thread_id": tid, "review_id": review_id, "event": event, "actor": actor,
                "data": json.loads(data), "at": at, "prev_hash": prev_hash, "hash": digest}
        if payloads is not None and event == "review_requested" and review_id is not None \
                and "payload" not in line["data"] and (tid, review_id) in payloads:
            line["payload"] = payloads[(tid, review_id)]
        if anchors is not None and seq in anchors:
            line["anchor"] = anchors[seq]
        out.write(json.dumps(line) + "\n")
        count += 1
    return count
