"""What a test needs from the machine (a tool, a service, root for a mount), said one way.

On a developer's machine a missing requirement (a Pi oracle, Chromium, a PostgreSQL server
program, Redis, a tmpfs mount) skips the test, with the reason. Under CI (the runner sets CI,
e.g. CI=true) it fails instead: there the fault and oracle tests are the proof, and a skip would
let them vanish from the run unnoticed.
"""

from __future__ import annotations

import glob
import os
import shutil
from typing import NoReturn

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def unavailable(reason: str) -> NoReturn:
    """Skip the test for `reason`, or fail it under CI."""
    if in_ci():
        pytest.fail(f"{reason} (CI is set: a missing requirement fails the run)", pytrace=False)
    pytest.skip(reason)


def postgres_tool(name: str) -> str | None:
    """A PostgreSQL server program (initdb, pg_ctl): on PATH, else in Debian's
    /usr/lib/postgresql/<version>/bin (the newest), which is not on PATH by default."""
    found = shutil.which(name)
    if found:
        return found
    candidates = glob.glob(f"/usr/lib/postgresql/*/bin/{name}")
    candidates.sort(key=lambda path: int(path.split("/")[4]) if path.split("/")[4].isdigit() else 0)
    return candidates[-1] if candidates else None


def delete_redis_keys(url: str, prefix: str) -> int:
    """Delete the keys under `prefix` in the Redis database at `url` (a test's or a run's own),
    never anything else: the suite shares Redis with other runs and other programs. Returns how
    many were deleted; an unreachable Redis deletes nothing."""
    import redis

    if not prefix:
        raise ValueError("refusing to delete every key: give a prefix")
    pattern = "".join("\\" + c if c in "*?[]\\" else c for c in prefix) + "*"
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=10)
        deleted = 0
        batch: list[bytes] = []
        for key in client.scan_iter(match=pattern, count=1000):
            batch.append(key)
            if len(batch) == 500:
                deleted += client.unlink(*batch)
                batch.clear()
        if batch:
            deleted += client.unlink(*batch)
        return deleted
    except redis.ConnectionError:
        return 0
