"""Live sync: append one line to a 20k-entry session and time how long contextlab takes to have
it stored (and searchable). Target: < 50 ms.

Each sync is what the watcher does on a change: import_session_file on the file, which compares
the stored offset and fingerprint, reads only the new bytes, stores the entry, updates the
session's figures and indexes the entry for search. Then the same through `import_sessions
--watch` as a user runs it (file events, scans 60 s apart so they cannot help): from the moment
the line is written to the moment another database connection sees the entry. Environment:
BENCH_SYNC_ENTRIES (default 20000), BENCH_SYNC_BYTES (default 20M, about what a real 20k-entry
session weighs), BENCH_SYNC_APPENDS (default 30).
"""

from __future__ import annotations

import io
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from bench.bench_import import REPO, parse_size, scratch_database


def _line(parent: str, n: int) -> bytes:
    entry = {
        "type": "message",
        "id": f"a{n:07x}",
        "parentId": parent,
        "timestamp": f"2026-02-01T10:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
        "message": {
            "role": "user" if n % 2 else "assistant",
            "content": [
                {"type": "text", "text": f"appended line {n}: keep going with the pelican"}
            ],
            "timestamp": 1769940000000 + n,
        },
    }
    return orjson.dumps(entry) + b"\n"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> dict[str, Any]:
    entries = int(os.environ.get("BENCH_SYNC_ENTRIES", "20000"))
    size = parse_size(os.environ.get("BENCH_SYNC_BYTES", "20M"))
    appends = int(os.environ.get("BENCH_SYNC_APPENDS", "30"))
    sys.path.insert(0, str(REPO / "tools"))
    from gen_large_session import write_session

    with scratch_database(), tempfile.TemporaryDirectory() as tmp:
        from django.db import connection

        from contextlab.library.importer import Status, import_session_file
        from contextlab.library.models import Entry, Session

        path = write_session(
            Path(tmp) / "live.jsonl",
            entries=entries,
            target_bytes=size,
            branches=20,
            compactions=5,
            seed=3,
            session_id=None,
            cwd="/home/dev/live",
        )
        started = time.perf_counter()
        first = import_session_file(path=path)
        initial = time.perf_counter() - started
        session = Session.objects.get(session_id=first.session_id)
        parent = session.leaf_entry_id
        total, storing = [], []
        for n in range(appends):
            with path.open("ab") as f:
                f.write(_line(parent, n))
            started = time.perf_counter()
            result = import_session_file(path=path)
            elapsed = time.perf_counter() - started
            assert result.status == Status.APPENDED and result.new_entries == 1, result
            total.append(elapsed)
            storing.append(elapsed - result.index_seconds)
            parent = f"a{n:07x}"
        watched = _watch_latencies(path, session.pk, parent, appends)
        stored = Entry.objects.filter(session=session, revision=session.current_revision).count()
        figures = {
            "database": connection.vendor,
            "file_bytes": path.stat().st_size,
            "entries_before": first.entries,
            "entries_after": stored,
            "initial_import_s": round(initial, 2),
            "appends": appends,
            "sync_ms_median": round(statistics.median(total) * 1000, 1),
            "sync_ms_p95": round(_percentile(total, 0.95) * 1000, 1),
            "sync_ms_max": round(max(total) * 1000, 1),
            "sync_without_search_index_ms_median": round(statistics.median(storing) * 1000, 1),
            "watch_ms_median": round(statistics.median(watched) * 1000, 1),
            "watch_ms_p95": round(_percentile(watched, 0.95) * 1000, 1),
            "target_ms": 50,
        }
    return figures


def _watch_latencies(path: Path, session_pk: int, parent: str, appends: int) -> list[float]:
    """Seconds from writing a line to the watcher having stored it, `appends` times."""
    from django.core.management import call_command
    from django.db import connection

    from contextlab.library.models import Entry

    stop = threading.Event()
    out = io.StringIO()

    def watch() -> None:
        try:
            options = ["--watch", "--interval", "60", "--index-after", "3600"]
            call_command("import_sessions", str(path.parent), *options, stop_event=stop, stdout=out)
        finally:
            connection.close()

    thread = threading.Thread(target=watch)
    thread.start()
    latencies = []
    try:
        while "Watching" not in out.getvalue():
            time.sleep(0.01)
        count = Entry.objects.filter(session_id=session_pk).count()
        for n in range(appends, 2 * appends):
            time.sleep(0.05)  # Pi's lines come a model call apart, not back to back
            with path.open("ab") as f:
                f.write(_line(parent, n))
            started = time.perf_counter()
            count += 1
            while Entry.objects.filter(session_id=session_pk).count() < count:
                if time.perf_counter() - started > 30:
                    raise RuntimeError("the watcher did not store the appended line in 30 s")
                time.sleep(0.001)
            latencies.append(time.perf_counter() - started)
            parent = f"a{n:07x}"
    finally:
        stop.set()
        thread.join(timeout=30)
    return latencies
