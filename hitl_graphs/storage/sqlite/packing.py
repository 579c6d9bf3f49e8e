"""How an audit entry's hash and a review's request are packed into SQLite rows, and read back.

A finished thread keeps five audit entries and a review row beside LangGraph's checkpoints, so
what each row repeats is paid on every thread (issue 15: at most 2 KB a thread over plain
LangGraph). Two things are packed, losslessly; the rest of the code sees the values unpacked:

- An entry's hash is stored as bytes: 32 for a plain SHA-256, 36 for a keyed one (the key id's 4
  bytes, then the MAC), instead of 64 or 78 characters of hex. The previous entry's hash is not
  stored at all: it is the hash of the entry before (`seq - 1`), so reads put it back and `verify`
  checks each entry against it, as before. Entries written before schema 7 keep their hex text,
  which reads the same.
- A review's request is stored without what the row's columns already hold (its ids, workflow,
  creation time and required role) and without fields at their defaults. Reads prepend the
  columns, so the JSON handed to pydantic is the whole request again. A request whose creation
  time a float timestamp cannot give back exactly (not UTC, or naive) is stored whole, as are
  requests written before schema 7: a whole request starts with its `review_id` key, which a
  packed one never holds.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from hitl_graphs.audit import GENESIS
from hitl_graphs.reviews import ReviewRequest

_KEYED = "hmac:"

_IN_COLUMNS = frozenset({"review_id", "thread_id", "workflow", "created_at", "required_role"})

REQUEST = "request, thread_id, review_id, workflow, created_at, required_role"
"""The columns `request_json` reads, in its argument order (prefix each with an alias if needed)."""

_WHOLE = '{"review_id"'


def pack_hash(digest: str) -> bytes:
    """An entry's hash as stored: a plain one's 32 bytes, a keyed one's key id and MAC (36 bytes).

    Example:
        >>> unpack_hash(pack_hash("hmac:0a1b2c3d:" + "ef" * 32)) == "hmac:0a1b2c3d:" + "ef" * 32
        True"""
    if digest.startswith(_KEYED):
        kid, _, mac = digest[len(_KEYED):].partition(":")
        return bytes.fromhex(kid) + bytes.fromhex(mac)
    return bytes.fromhex(digest)


def unpack_hash(stored: bytes | str) -> str:
    """An entry's hash as the audit rules read it (`hmac:<key id>:<mac>` or hex); hex text written
    before schema 7 (or by hand) is returned as it is, so an edit to it still shows."""
    if isinstance(stored, str):
        return stored
    if len(stored) == 36:
        return f"{_KEYED}{stored[:4].hex()}:{stored[4:].hex()}"
    return stored.hex()


def prev_hash(seq: int, before: bytes | str | None) -> str:
    """The previous entry's hash for entry `seq`, from the stored hash of entry `seq - 1`
    (`before`; None when there is no such entry): the genesis for the first entry, and for an
    entry whose predecessor is gone an empty string, which links to nothing."""
    if before is not None:
        return unpack_hash(before)
    return GENESIS if seq == 1 else ""


def pack_request(request: ReviewRequest) -> str:
    """A review's request as its row stores it: without what the row's columns hold (see the
    module docstring), whole when its creation time would not read back exactly."""
    at = request.created_at
    if at.utcoffset() != timedelta(0) or datetime.fromtimestamp(at.timestamp(), UTC) != at:
        return request.model_dump_json()
    return request.model_dump_json(exclude=set(_IN_COLUMNS), exclude_defaults=True)


def request_json(packed: str, thread_id: str, review_id: str, workflow: str, created_at: float,
                 required_role: str | None) -> str:
    """The whole request's JSON from a row's `request` and its columns (`REQUEST`, in order)."""
    if packed.startswith(_WHOLE):
        return packed
    columns = json.dumps({"review_id": review_id, "thread_id": thread_id, "workflow": workflow,
                          "created_at": datetime.fromtimestamp(created_at, UTC).isoformat(),
                          "required_role": required_role}, separators=(",", ":"))
    rest = packed.strip()[1:]
    return columns[:-1] + ("," + rest if rest.lstrip() != "}" else "}")
