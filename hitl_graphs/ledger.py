"""Old import path of the ledger: see `hitl_graphs.storage` (kept so existing imports work)."""

from hitl_graphs.audit import Event
from hitl_graphs.storage.base import NewThread, ReviewRow, Synced, ThreadRow
from hitl_graphs.storage.sqlite.ledger import SqliteLedger

Ledger = SqliteLedger
"""The old name of `SqliteLedger`."""

__all__ = ["Event", "Ledger", "NewThread", "ReviewRow", "SqliteLedger", "Synced", "ThreadRow"]
