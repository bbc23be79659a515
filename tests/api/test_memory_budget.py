"""A large session's `/context`, request export and session export are answered by a real web
process (gunicorn, one sync worker) whose peak memory stays under 400 MB: nothing materialises
the whole session; what the leaf's request holds is all that is read.

Two generated sessions: 40 MB, and the 250 MB one of issue 19 (generated, imported and answered in
about 20 s on 2 vCPUs, so it runs by default). Each test prints the worker's peak RSS (VmHWM) after
each answer.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from contextlab.api.services import api_token_create
from contextlab.inspector.services import tree_index_refresh
from contextlab.library.importer import import_session_file
from tests.conftest import REPO
from tests.gunicorn import Gunicorn

sys.path.insert(0, str(REPO / "tools"))
from gen_large_session import write_session

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT_MB = 400


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident set (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmHWM for {pid}")


def fetch(url: str, headers: dict[str, str]) -> tuple[int, int, bytes, bytes]:
    """Status, bytes received, the first and the last 64 KB of the answer (read as a stream)."""
    request = urllib.request.Request(url, headers=headers)
    size = 0
    head = tail = b""
    with urllib.request.urlopen(request, timeout=600) as answer:
        while chunk := answer.read(1 << 20):
            if size < 1 << 16:
                head = (head + chunk)[: 1 << 16]
            tail = (tail + chunk)[-(1 << 16) :]
            size += len(chunk)
        return answer.status, size, head, tail


def _measure(size: str, entries: int, tmp_path: Path, owner: Any, client: Any) -> dict[str, Any]:
    path = write_session(
        tmp_path / "large.jsonl",
        entries=entries,
        target_bytes=_bytes(size),
        branches=20,
        compactions=5,
        seed=7,
        session_id=None,
        cwd="/home/dev/projects/pelican",
    )
    result = import_session_file(path=path, index_search=False)
    session = result.session
    assert session is not None and session.entry_count == entries, result
    tree_index_refresh(session_id=session.pk)  # as the importers do after storing a session
    token = api_token_create(user=owner, name="rss")[1]
    client.force_login(owner)
    cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
    figures: dict[str, Any] = {"file_mb": round(path.stat().st_size / 1e6, 1)}
    api = {"Authorization": f"Bearer {token}"}
    leaf = session.leaf_entry_id
    request_url = f"/sessions/{session.pk}/request/?entry={leaf}"
    answers = {
        "context": (f"/api/v1/sessions/{session.session_id}/context", api),
        "request_export": (request_url, {"Cookie": cookie}),
        "request_curl": (request_url + "&format=curl", {"Cookie": cookie}),
        "session_export": (f"/api/v1/sessions/{session.session_id}/export", api),
    }
    # Each answer from a web process of its own: its peak is that answer's alone.
    for name, (url, headers) in answers.items():
        web = Gunicorn(tmp_path / "gunicorn.log", "--timeout", "300")
        web.start()
        try:
            figures.setdefault("started_mb", round(peak_rss_mb(web.worker), 1))
            status, received, head, tail = fetch(web.url + url, headers)
            assert status == 200, (name, head[:300])
            figures[f"{name}_mb"] = round(received / 1e6, 1)
            figures[f"{name}_peak_rss_mb"] = round(peak_rss_mb(web.worker), 1)
        finally:
            web.stop()
        if name == "context":
            assert head.startswith(b'{"leafId":' + json.dumps(leaf).encode())
            assert tail.endswith(b"}")
        if name == "request_export":
            assert head.startswith(b"{") and tail.endswith(b"}")
        if name == "request_curl":
            assert head.startswith(b"curl ") and tail.endswith(b"\nPI_REQUEST_BODY\n")
        if name == "session_export":
            assert received == path.stat().st_size
    print(f"\nweb process peak RSS, {size} session: {json.dumps(figures)}")
    return figures


def _bytes(size: str) -> int:
    units = {"M": 1 << 20, "G": 1 << 30}
    return int(float(size[:-1]) * units[size[-1]])


def _assert_bounded(figures: dict[str, Any]) -> None:
    for key, value in figures.items():
        if key.endswith("peak_rss_mb"):
            assert value < LIMIT_MB, (key, figures)


def test_a_40mb_session_streams_context_and_exports_from_a_web_process_under_400mb(
    tmp_path, blob_dir, owner, client
):
    _assert_bounded(_measure("40M", 10_000, tmp_path, owner, client))


def test_a_250mb_session_streams_context_and_exports_from_a_web_process_under_400mb(
    tmp_path, blob_dir, owner, client
):
    _assert_bounded(_measure("250M", 60_000, tmp_path, owner, client))
