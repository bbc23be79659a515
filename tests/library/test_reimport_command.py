"""`manage.py reimport_sessions`: imports redone from the original bytes in the blob store."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from contextlab.library.importer import import_session_file
from contextlab.library.models import Entry, Session, SessionRevision
from contextlab.library.selectors import engine_entries
from contextlab.pi.session import parse_session_file
from contextlab.review.models import AuditEvent
from tests.library.conftest import HEADER_ID, chain, header

pytestmark = pytest.mark.django_db


def reimport_json(*args: str) -> tuple[dict, int]:
    out = io.StringIO()
    code = 0
    try:
        call_command("reimport_sessions", *args, "--json", stdout=out, stderr=io.StringIO())
    except SystemExit as exc:
        code = int(exc.code or 0)
    return json.loads(out.getvalue()), code


def test_it_reads_a_session_again_from_its_stored_bytes_without_the_file(write_session) -> None:
    path = write_session(header(), *chain(4), b"not json")
    expected = parse_session_file(path).entries
    import_session_file(path=path)
    path.unlink()  # the file is gone: the blob is all there is

    report, code = reimport_json(HEADER_ID)

    assert code == 0
    assert [
        (f["sessionId"], f["status"], f["entries"], f["newEntries"]) for f in report["files"]
    ] == [(HEADER_ID, "revised", 4, 4)]
    assert [p["line"] for p in report["files"][0]["problems"]] == [6]  # still named, still kept
    session = Session.objects.get()
    revisions = list(session.revisions.order_by("number").values_list("number", "status", "reason"))
    assert revisions == [
        (1, "superseded", "first import"),
        (2, "current", "re-imported from the stored original bytes"),
    ]
    assert engine_entries(session) == expected
    assert Entry.objects.filter(revision__number=1).count() == 4  # the old revision is kept
    assert session.current_revision.blob_file.read_bytes() == (
        SessionRevision.objects.get(number=1).blob_file.read_bytes()
    )
    assert AuditEvent.objects.filter(verb="session.import", data__status="revised").count() == 1


def test_it_reimports_every_session_with_all(write_session) -> None:
    import_session_file(path=write_session(header(), *chain(2), name="a.jsonl"))
    other = header(id="0190d6f2-bbbb-7bbb-8ccc-123456789abc")
    import_session_file(path=write_session(other, *chain(3), name="b.jsonl"))

    report, code = reimport_json("--all")

    assert code == 0
    assert [(f["status"], f["entries"]) for f in report["files"]] == [
        ("revised", 2),
        ("revised", 3),
    ]
    assert SessionRevision.objects.filter(status="current", number=2).count() == 2


def test_it_fails_a_session_whose_stored_bytes_are_missing_and_changes_nothing(
    write_session,
) -> None:
    import_session_file(path=write_session(header(), *chain(2)))
    revision = SessionRevision.objects.get()
    revision.blob_file.unlink()

    report, code = reimport_json(HEADER_ID)

    assert code == 1
    failed = report["files"][0]
    assert failed["status"] == "failed" and failed["entries"] == 2
    assert "stored bytes of revision r1 cannot be read" in failed["problems"][0]["reason"]
    assert SessionRevision.objects.get().status == "current" and Entry.objects.count() == 2


def test_it_names_unknown_session_ids(write_session) -> None:
    with pytest.raises(CommandError, match="No stored session with id nope"):
        call_command("reimport_sessions", "nope", stdout=io.StringIO())
    with pytest.raises(CommandError, match="Give session ids, or --all"):
        call_command("reimport_sessions", stdout=io.StringIO())
