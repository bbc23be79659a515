"""Compare speed (#19): the crafted pair and the two ends of a large session.

Figures (milliseconds, through Django's full request stack with the test client):
- `siblings_1500_lines`: two sibling user messages of 1,500 lines, every line a little
  different (the pair that pinned a worker for 120 s under `difflib.ndiff`);
- `large_session_ends`: the first request and the last one of a generated 60,000-entry session
  with branches and compactions (its two ends: one message against a compacted context).
For each: `first` (nothing of the session in this process's memory), `repeat` (the same pair
again: the kept comparison), `conditional` (again with the ETag of the first: a 304 where
the code answers one), and the page's size. A request past `LIMIT_SECONDS` is stopped and
reported as `null` with `timed_out` (the old code on the crafted pair).

Runs in a throw-away test database (created and dropped here). The same file measured the code
before #19 (`before` in bench/results/compare.json, kept from that run): copy it into a checkout
of the older commit and run `python -m bench compare` there.
"""

from __future__ import annotations

import signal
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.generator import large_session_generator

REPO = Path(__file__).resolve().parent.parent
LIMIT_SECONDS = 180
LINES = 1500
ENTRIES = 60_000


class _TimedOut(Exception):
    pass


def _siblings_lines() -> list[dict[str, Any]]:
    def log(suffix: str) -> str:
        return "\n".join(
            f"2025-11-20 10:{i % 60:02d} worker {i} finished step {i}{suffix}" for i in range(LINES)
        )

    def message(entry_id: str, parent: str, role: str, content: Any, n: int) -> dict[str, Any]:
        body: dict[str, Any] = {"role": role, "content": content, "timestamp": 1763632800000 + n}
        if role == "assistant":
            body.update(
                api="anthropic-messages",
                provider="anthropic",
                model="claude-sonnet-4-5",
                stopReason="stop",
                usage={"input": 10, "output": 2, "cacheRead": 0, "cacheWrite": 0},
            )
        return {
            "type": "message",
            "id": entry_id,
            "parentId": parent,
            "timestamp": f"2025-11-20T10:00:{n:02d}.000Z",
            "message": body,
        }

    return [
        {
            "type": "session",
            "version": 3,
            "id": "bench-compare-siblings",
            "timestamp": "2025-11-20T10:00:00.000Z",
            "cwd": "/home/dev/proj",
        },
        {
            "type": "model_change",
            "id": "m0000001",
            "parentId": None,
            "timestamp": "2025-11-20T10:00:01.000Z",
            "provider": "anthropic",
            "modelId": "claude-sonnet-4-5",
        },
        message("u0000001", "m0000001", "user", "Here is the log.", 2),
        message("a0000001", "u0000001", "assistant", [{"type": "text", "text": "Send it."}], 3),
        message("s0000001", "a0000001", "user", log(""), 4),
        message("s0000002", "a0000001", "user", log(" (retried)"), 5),
    ]


def _timed(client: Any, url: str, **headers: str) -> tuple[float | None, Any]:
    def stop(signum: int, frame: Any) -> None:
        raise _TimedOut

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(LIMIT_SECONDS)
    started = time.perf_counter()
    try:
        response = client.get(url, **headers)
    except _TimedOut:
        return None, None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return round((time.perf_counter() - started) * 1000, 1), response


def _measure(client: Any, url: str) -> dict[str, Any]:
    from contextlab.inspector.selectors import clear_cache

    clear_cache()  # nothing of the session in this process's memory
    first_ms, first = _timed(client, url)
    if first is None:
        return {"first_ms": None, "timed_out": True, "limit_seconds": LIMIT_SECONDS}
    assert first.status_code == 200, first.status_code
    repeat_ms, _ = _timed(client, url)
    out: dict[str, Any] = {
        "first_ms": first_ms,
        "repeat_ms": repeat_ms,
        "page_kb": round(len(first.content) / 1024, 1),
    }
    etag = first.get("ETag")
    if etag:
        conditional_ms, conditional = _timed(client, url, HTTP_IF_NONE_MATCH=etag)
        out["conditional_ms"] = conditional_ms
        out["conditional_status"] = conditional.status_code if conditional else None
    html = first.content.decode()
    summary_at = html.find('id="compare-summary"')
    if summary_at >= 0:
        import re

        text = re.sub(r"<[^>]+>", "", html[summary_at : html.find("</p>", summary_at)])
        out["summary"] = text.split(">", 1)[-1].strip()
    return out


def main() -> dict[str, Any]:
    import django

    django.setup()
    import orjson
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import setup_test_environment
    from django.urls import reverse

    from contextlab.inspector.selectors import session_index
    from contextlab.inspector.services import tree_index_refresh
    from contextlab.library.importer import import_session_file

    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    work = Path(tempfile.mkdtemp(prefix="bench-compare-"))
    settings.CONTEXTLAB_BLOB_DIR = work / "blobs"
    try:
        user = get_user_model().objects.create_user("bench", password="bench-password-1")
        client = Client(HTTP_HOST="127.0.0.1")
        client.force_login(user)

        siblings = work / "siblings.jsonl"
        siblings.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in _siblings_lines()))
        small = import_session_file(path=siblings, index_search=False).session
        assert small is not None
        url = reverse("inspector:compare", args=[small.pk]) + "?a=s0000001&b=s0000002"
        crafted = _measure(client, url)

        large_path = work / "large.jsonl"
        large_session_generator().write_session(
            large_path,
            entries=ENTRIES,
            target_bytes=40 * 1024 * 1024,
            branches=20,
            compactions=5,
            seed=19,
            session_id="bench-compare-60k",
            cwd="/home/dev/projects/pelican",
        )
        large = import_session_file(path=large_path, index_search=False).session
        assert large is not None
        tree_index_refresh(session_id=large.pk)  # what import_sessions / upload / jobs do
        index = session_index(large)
        first_user = next(i for i in index.order if index.items[i].role == "user")
        leaf = index.leaf_id or ""
        url = reverse("inspector:compare", args=[large.pk]) + f"?a={first_user}&b={leaf}"
        ends = _measure(client, url)
        return {
            "siblings_1500_lines": crafted,
            "large_session_ends": {
                "entries": large.entry_count,
                "file_mb": round(large_path.stat().st_size / 1e6, 1),
                **ends,
            },
        }
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    import json

    print(json.dumps(main(), indent=2))
