"""What each commit on PostgreSQL promises, and how it keeps the promise without making the audit
chain's lock wait on the disk.

A commit with `synchronous_commit = on` (the server's default) waits until its WAL is flushed to
disk, and a transaction keeps its locks until then: the audit chain's advisory lock
(`audit.append`) was held through one disk flush per append, so appends were flushed one at a
time, whatever the number of workers. Here every transaction of ours commits with `SET LOCAL
synchronous_commit = off` (set by the statement that takes the thread's audit lock, else sent
before COMMIT; its locks released as soon as the commit is in the WAL buffers), and a
commit that carries a promise is then flushed (`flush`) before the caller goes on. PostgreSQL
writes WAL in order, so that flush makes every earlier commit durable too, and concurrent flushes
share one `fdatasync` (group commit).

| commit | before the caller goes on |
|---|---|
| a decision (`claim`), a pause or an end (`sync`), a failure (`fail_thread`), a release | flushed (`durable=True`) |
| an effect's result (`effects.put`), a remembered approval | flushed (a plain synchronous commit: no chain lock) |
| a thread's start (`create_thread`; a run under `"exit"`: in its first pause's commit), taking a thread (`take_thread`), a history entry (`add_events`, `record_once`; from a run under `"exit"`: in the commit of where it stopped) | not flushed: kept books, made durable by the next flushed commit (a run's pause or end; a refusal's entry, whatever comes next) |
| a run's checkpoint under `durability="exit"` (`saver`) | in the commit of the ledger's record of where the run stopped (flushed) |

A process crash loses nothing at all (the server has every commit); a server crash (power loss,
`pg_ctl stop -m immediate`) loses only commits nobody was told about: the unflushed ones come
after the last flushed one in the WAL, and every call that answers made a flushed commit first.

What changes: another session may read a commit in the moment before it is flushed (a racer
told "already decided", a history reader past the cursor). Readers that tell someone outside
the database what they read (`events_after`: webhooks, the event stream; a refused claim) flush
first (`flush`): what they hand out was visible, so its commit record is already in the WAL, and
flushing up to the WAL's current end makes it durable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Final, Protocol, TypeVar, cast

import psycopg
from psycopg.rows import DictRow
from psycopg_pool import ConnectionPool

Conn = psycopg.Connection[DictRow]

#: Make every commit so far durable, at the server's own `synchronous_commit` level: a transaction
#: that writes WAL and takes a transaction id (a transactional logical message, prefix
#: `hitl_flush`, empty; nothing reads it unless a logical decoding slot does) commits
#: synchronously, which flushes the WAL up to its commit record, past every commit before it.
#: (Taking an id alone is not enough: a transaction that wrote no WAL before its commit record
#: commits without a flush.) When the WAL is already flushed to its end (another session's flush
#: covered ours), it writes nothing and waits for nothing.
FLUSH_SQL: Final[str] = (
    "SELECT CASE WHEN pg_current_wal_flush_lsn() < pg_current_wal_insert_lsn() "
    "THEN pg_logical_emit_message(true, 'hitl_flush', '') END"
)


def flush(c: Conn) -> None:
    """Make every commit made before this call (by any session) durable; call outside a transaction."""
    c.execute(FLUSH_SQL)


class Tail(Protocol):
    """Statements a transaction sends in its COMMIT's round trip, just before COMMIT (`tail`).

    What they lock is then held only while the server runs them and commits: never while the
    client process waits for a core, which on a busy machine is what makes a lock held across round
    trips a convoy (the audit chain's, `audit`)."""

    relaxes_commit: bool
    """Whether a statement the transaction ran for this tail already set its commit not to wait
    for the disk (`SET LOCAL synchronous_commit = off`, the setting read at COMMIT), so the
    transaction need not send the setting itself (`transaction`)."""

    def send(self, c: Conn) -> None:
        """Queue the statements on `c` (in pipeline mode: they go with the COMMIT)."""

    def failed(self, error: psycopg.Error) -> None:
        """Raise what `error` (from these statements or the COMMIT) means to the caller, if
        anything more than itself; the transaction is rolled back."""


T = TypeVar("T", bound=Tail)
_TAILS: dict[int, dict[str, Tail]] = {}


def tail(c: Conn, name: str, make: Callable[[], T]) -> T:
    """The transaction's tail called `name` (made on first use); only inside `transaction`."""
    tails = _TAILS.get(id(c))
    if tails is None:
        raise RuntimeError("a commit tail needs a transaction opened by commits.transaction")
    got = tails.get(name)
    if got is None:
        got = tails[name] = make()
    return cast(T, got)


@contextmanager
def transaction(pool: ConnectionPool[Conn], *, durable: bool) -> Iterator[Conn]:
    """One transaction on a pooled connection that releases its locks at commit without waiting
    for the disk; with `durable`, flushed before this returns (after its locks are released).

    The connection is in pipeline mode for the whole transaction: each statement goes to the
    server as it is queued (so its locks are taken then, in the order written), and the client
    waits only where it needs a result (a `fetchone`); what is left (writes, the tails, COMMIT,
    the flush) is waited for once, at the end. BEGIN rides with the first statements. So a
    transaction that reads once, then writes, costs two round trips, however many
    statements it runs. (A statement's error surfaces where a result is next waited for, or at
    the end; the transaction then rolls back.) The commit setting is read at COMMIT, so it goes
    last, and only where no statement of the transaction set it already (`Tail.relaxes_commit`:
    the audit lock's, which nearly every transaction of ours takes).
    """
    with pool.connection() as c:
        tails: dict[str, Tail] = {}
        _TAILS[id(c)] = tails
        try:
            with c.pipeline():
                c.execute("BEGIN")
                yield c
                for t in tails.values():
                    t.send(c)
                if not any(t.relaxes_commit for t in tails.values()):
                    c.execute("SET LOCAL synchronous_commit = off")
                c.execute("COMMIT")
                if durable:
                    c.execute(FLUSH_SQL)
        except psycopg.Error as error:
            _rollback(c)
            for t in tails.values():
                t.failed(error)
            raise
        except BaseException:
            _rollback(c)
            raise
        finally:
            _TAILS.pop(id(c), None)


def _rollback(c: Conn) -> None:
    """End a transaction that failed or was refused; nothing of it stays. A broken connection is
    left to the pool, which discards it."""
    if c.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        with suppress(psycopg.Error):
            c.execute("ROLLBACK")


class Pool(ConnectionPool[Conn]):
    """The store's pool. A saver on it (`saver.HitlPostgresSaver`) keeps a run's checkpoint for
    the ledger's transaction on this pool that records where the run stopped."""
