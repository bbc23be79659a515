"""A rewritten session (a new revision) completes through every way bytes arrive: upload, push at
offset 0, `import_sessions` of a shrunk or rewritten file, `reimport_sessions`, the growth of a
legacy v1 file, and `--watch`.

A new revision streams its rows through one COPY; nothing may query the connection meanwhile (it
used to read the previous revision's added entries there, and waited on itself forever once 64
rows had been sent). The sizes are far above the 64 rows of one streamed batch: 5,000 and 10,000
entries in the suite; the issue's 100,000 with CONTEXTLAB_BIG_TESTS=1 (minutes: 75 s through
`import_sessions` with search indexing on a loaded machine).
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from contextlab.api.services import api_token_create
from contextlab.library.importer import import_session_file
from contextlab.library.models import Entry, Session, SessionRevision
from contextlab.library.selectors import engine_entries
from tests.api.conftest import Api
from tests.library.conftest import HEADER_ID, header, lines
from tests.library.test_import_command import watching
from tests.waiting import wait_until

BIG = bool(os.environ.get("CONTEXTLAB_BIG_TESTS"))
SIZE = 100_000 if BIG else 5_000  # entries of a session rewritten below (5,000: 78 batches of 64)
SHRUNK = 100_000 if BIG else 10_000
LEGACY = 100_000 if BIG else 1_000


def compact_chain(n: int, *, tag: str = "e", start: int = 0) -> bytes:
    """n small message lines, each the child of the previous, formatted directly (fast for
    100,000 lines)."""
    out = []
    parent = "null"
    for i in range(start, start + n):
        entry_id = f"{tag}{i:07d}"
        role = "user" if i % 2 == 0 else "assistant"
        out.append(
            f'{{"type":"message","id":"{entry_id}","parentId":{parent},'
            f'"timestamp":"2026-01-02T10:00:01.000Z","message":{{"role":"{role}",'
            f'"content":"m{i}","timestamp":1767348000000}}}}\n'
        )
        parent = f'"{entry_id}"'
    return "".join(out).encode()


def session_bytes(n: int, *, tag: str = "e") -> bytes:
    return lines(header()) + compact_chain(n, tag=tag)


def add_compaction(session: Session, parent: str) -> dict:
    """An entry contextlab appended (as a compaction job does): it is carried into a rewrite."""
    summary = {
        "type": "compaction",
        "id": "cafe0001",
        "parentId": parent,
        "timestamp": "2026-01-02T12:00:00.000Z",
        "summary": "done so far",
        "firstKeptEntryId": parent,
        "tokensBefore": 10,
    }
    revision = session.current_revision
    Entry.objects.create(
        session=session,
        revision=revision,
        seq=revision.next_seq,
        entry_id="cafe0001",
        parent_id=parent,
        type="compaction",
        data=summary,
        depth=0,
        origin=Entry.Origin.CONTEXTLAB,
    )
    SessionRevision.objects.filter(pk=revision.pk).update(next_seq=revision.next_seq + 1)
    return summary


def assert_rewritten(n: int, *, tag: str = "e", revisions: int = 2) -> Session:
    session = Session.objects.get(session_id=HEADER_ID)
    assert session.revisions.count() == revisions
    assert session.entry_count == Entry.objects.for_session(session).count()
    ids = list(
        Entry.objects.for_session(session).filter(origin="file").values_list("entry_id", flat=True)
    )
    assert ids == [f"{tag}{i:07d}" for i in range(n)]
    return session


@pytest.mark.django_db
def test_import_sessions_completes_a_shrunk_session_of_10000_entries(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_bytes(session_bytes(SHRUNK))
    import_session_file(path=path, index_search=False)
    add_compaction(Session.objects.get(), parent=f"e{SHRUNK * 9 // 10:07d}")
    path.write_bytes(session_bytes(SHRUNK * 95 // 100))
    out = io.StringIO()
    call_command("import_sessions", str(path), "--json", stdout=out, stderr=io.StringIO())
    [report] = json.loads(out.getvalue())["files"]
    assert report["status"] == "revised" and report["entries"] == SHRUNK * 95 // 100 + 1
    session = assert_rewritten(SHRUNK * 95 // 100)
    # The entry contextlab added is carried over, after the file's.
    assert Entry.objects.for_session(session).last().entry_id == "cafe0001"


@pytest.mark.django_db
def test_import_sessions_completes_a_rewritten_session(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(session_bytes(SIZE))
    import_session_file(path=path)
    path.write_bytes(session_bytes(SIZE + 10, tag="r"))  # other bytes, same session
    out = io.StringIO()
    call_command("import_sessions", str(path), "--json", stdout=out, stderr=io.StringIO())
    assert json.loads(out.getvalue())["files"][0]["status"] == "revised"
    assert_rewritten(SIZE + 10, tag="r")


@pytest.mark.django_db
def test_reimport_sessions_completes_a_large_session(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(session_bytes(SIZE))
    import_session_file(path=path)
    summary = add_compaction(Session.objects.get(), parent=f"e{SIZE - 1:07d}")
    out = io.StringIO()
    call_command("reimport_sessions", HEADER_ID, "--json", stdout=out, stderr=io.StringIO())
    assert json.loads(out.getvalue())["files"][0]["status"] == "revised"
    session = assert_rewritten(SIZE)
    assert engine_entries(session)[-1] == summary


@pytest.mark.django_db
def test_a_grown_legacy_v1_session_is_migrated_again_completely(tmp_path: Path) -> None:
    v1_header = {k: v for k, v in header().items() if k != "version"}

    def v1_lines(n: int) -> bytes:
        return lines(v1_header) + b"".join(
            json.dumps(
                {
                    "type": "message",
                    "timestamp": "2026-01-02T10:00:01.000Z",
                    "message": {"role": "user", "content": f"m{i}", "timestamp": 1767348000000},
                }
            ).encode()
            + b"\n"
            for i in range(n)
        )

    path = tmp_path / "v1.jsonl"
    path.write_bytes(v1_lines(LEGACY))
    import_session_file(path=path)
    path.write_bytes(v1_lines(LEGACY + 3))  # Pi appended to the legacy file
    result = import_session_file(path=path)
    assert result.status == "revised" and result.entries == LEGACY + 3
    assert Session.objects.get().revisions.count() == 2


@pytest.mark.django_db
def test_an_upload_of_a_rewritten_session_completes(owner_client) -> None:
    def post(data: bytes):  # type: ignore[no-untyped-def]
        upload = io.BytesIO(data)
        upload.name = "s.jsonl"
        return owner_client.post(reverse("library:upload"), {"files": [upload]}, follow=True)

    assert post(session_bytes(SIZE)).status_code == 200
    response = post(session_bytes(SIZE - 100, tag="r"))
    assert response.status_code == 200
    assert "s.jsonl: revised" in response.content.decode()
    assert_rewritten(SIZE - 100, tag="r")


@pytest.mark.django_db
def test_a_push_at_offset_0_with_other_bytes_completes_a_new_revision(client, owner) -> None:
    api = Api(client, api_token_create(user=owner)[1])
    assert api.push(HEADER_ID, 0, session_bytes(SIZE)).status_code == 200
    other = session_bytes(SIZE, tag="r")
    response = api.push(HEADER_ID, 0, other)
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "revised"
    assert response.json()["offset"] == len(other)
    assert_rewritten(SIZE, tag="r")


@pytest.mark.django_db(transaction=True)
def test_watch_completes_a_rewritten_session_and_goes_on_with_other_files(tmp_path: Path) -> None:
    folder = tmp_path / "watched"
    folder.mkdir()
    path = folder / "s.jsonl"
    path.write_bytes(session_bytes(SIZE))
    with watching(folder):
        wait_until(
            lambda: Session.objects.filter(entry_count=SIZE).exists(), what="the first import"
        )
        path.write_bytes(session_bytes(SIZE // 2, tag="r"))
        wait_until(
            lambda: Session.objects.filter(revisions__number=2, entry_count=SIZE // 2).exists(),
            timeout=30,
            what="the new revision",
        )
        # The watcher is not stuck: a later file is read too.
        (folder / "other.jsonl").write_bytes(
            lines(header(id="0190d6f2-dddd-7bbb-8ccc-123456789abc")) + compact_chain(3)
        )
        wait_until(lambda: Session.objects.count() == 2, timeout=30, what="the other file")
    assert_rewritten(SIZE // 2, tag="r")
