"""Transaction-scoped PostgreSQL advisory locks, for what no row can be locked for yet: the first
import of a session (two pushes of one new file at once) and a user's first project for a folder
(two new sessions from it at once). Each waits for the other's transaction to end, so the second
sees what the first created instead of racing it into a unique constraint or a half-made
project. Released at commit or rollback; nothing to do on SQLite, whose writers take turns."""

from __future__ import annotations

from django.db import connection

# Namespaces of the locks (any fixed 32-bit numbers; search.py's indexing locks use 0x5E4C).
NEW_SESSION = 0x5E4D
NEW_PROJECT = 0x5E4E


def lock_until_commit(namespace: int, key: str) -> None:
    """Waits for, then holds until the transaction ends, the lock on `key` in `namespace`."""
    if connection.vendor != "postgresql":
        return
    assert connection.in_atomic_block, "a transaction-scoped lock needs a transaction"
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [namespace, key])
