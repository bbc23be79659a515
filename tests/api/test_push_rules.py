"""The push rules under which nothing is lost (README, "Pushing a session's lines"): a repeat of
stored bytes changes nothing, every answer carries the digest of the stored tail, offsets are line
ends, one writer per session, hidden and unknown sessions alike, one audit event per push run."""

from __future__ import annotations

import hashlib
import io
import itertools
import json

import pytest
from django.urls import reverse

from contextlab.api.services import PUSH_RUN_SECONDS
from contextlab.library.models import Entry, Session
from contextlab.review.models import AuditEvent, ProjectMembership
from tests.api.test_push import corpus_bytes, session_id_of, stored_rows

pytestmark = pytest.mark.django_db


def tail_of(data: bytes, offset: int) -> tuple[int, str]:
    size = min(offset, 4096)
    return size, hashlib.sha256(data[offset - size : offset]).hexdigest()


def line_ends(data: bytes) -> list[int]:
    return [i + 1 for i, byte in enumerate(data) if byte == 0x0A]


def test_a_shorter_push_of_the_same_first_lines_changes_nothing(owner_api, blob_dir):
    data = corpus_bytes("tools")
    sid = session_id_of(data)
    owner_api.push(sid, 0, data)
    before = stored_rows(Session.objects.get(session_id=sid))
    for cut in (line_ends(data)[9], line_ends(data)[9] + 7, len(data) - 1):
        answer = owner_api.push(sid, 0, data[:cut])
        assert answer.status_code == 200
        assert answer.json()["status"] == "unchanged"
        assert answer.json()["offset"] == len(data)
    session = Session.objects.get(session_id=sid)
    assert session.revisions.count() == 1
    assert stored_rows(session) == before
    with session.current_revision.open_blob() as blob:
        assert blob.read() == data


def test_every_answer_carries_the_digest_of_the_stored_tail(owner_api, blob_dir):
    data = corpus_bytes("tools")
    sid = session_id_of(data)
    first = line_ends(data)[2]
    assert first < 4096 < len(data)
    answers = [owner_api.push(sid, 0, data[:first])]
    answers.append(owner_api.push(sid, 5, b"x\n"))  # 409
    answers.append(owner_api.push(sid, first, data[first:]))
    answers.append(owner_api.get(f"/sessions/{sid}/lines"))
    answers.append(owner_api.push(sid, len(data) + 3, b""))  # 409
    assert [a.status_code for a in answers] == [200, 409, 200, 200, 409]
    for answer in answers:
        body = answer.json()
        assert list(body)[-2:] == ["tailBytes", "tailSha256"]
        assert (body["tailBytes"], body["tailSha256"]) == tail_of(data, body["offset"])
    assert answers[0].json()["tailBytes"] == first
    assert answers[-1].json()["tailBytes"] == 4096
    unknown = owner_api.push("never-stored", 9, b"{}\n").json()
    assert (unknown["offset"], unknown["tailBytes"]) == (0, 0)
    assert unknown["tailSha256"] == hashlib.sha256(b"").hexdigest()


def test_the_offset_is_always_at_a_line_end_of_the_stored_bytes(owner_api, blob_dir):
    data = corpus_bytes("tools")
    sid = session_id_of(data)
    ends = line_ends(data)
    # A last line that is valid JSON but has no newline yet is not taken.
    answer = owner_api.push(sid, 0, data[: ends[4] - 1]).json()
    assert answer["offset"] == ends[3]
    answer = owner_api.push(sid, ends[3], data[ends[3] : ends[8] + 20]).json()
    assert answer["status"] == "appended" and answer["offset"] == ends[8]
    # A body with no complete line stores nothing and keeps the offset.
    answer = owner_api.push(sid, ends[8], data[ends[8] : ends[9] - 1]).json()
    assert answer["status"] == "unchanged" and answer["offset"] == ends[8]
    answer = owner_api.push(sid, ends[8], data[ends[8] :]).json()
    assert answer["offset"] == len(data)
    session = Session.objects.get(session_id=sid)
    assert session.problem_count == 0
    with session.current_revision.open_blob() as blob:
        assert blob.read() == data


def test_a_409_that_falls_mid_line_for_the_client_is_repaired_by_a_push_from_0(owner_api, blob_dir):
    """The server holds bytes the client does not have (another Pi process of the same user
    pushed other lines): its offset falls inside a line of the client's file. The tail digest
    tells the client, which sends its whole file again; the server then holds exactly it."""
    data = corpus_bytes("tools")
    sid = session_id_of(data)
    ends = line_ends(data)
    owner_api.push(sid, 0, data[: ends[5]])
    other = b'{"type":"label","id":"zz000001","parentId":null,"timestamp":"2026-01-02T10:00:00.000Z","targetId":"x","label":"other process"}\n'  # noqa: E501
    assert owner_api.push(sid, ends[5], other).json()["status"] == "appended"

    conflict = owner_api.push(sid, ends[5], data[ends[5] :])
    assert conflict.status_code == 409
    offset = conflict.json()["offset"]
    assert offset == ends[5] + len(other) and offset not in ends  # mid-line for the client
    tail = conflict.json()["tailBytes"], conflict.json()["tailSha256"]
    assert tail != tail_of(data, offset)  # the client's own bytes there differ: resend from 0

    answer = owner_api.push(sid, 0, data)
    assert answer.status_code == 200 and answer.json()["status"] == "revised"
    assert answer.json()["offset"] == len(data)
    session = Session.objects.get(session_id=sid)
    with session.current_revision.open_blob() as blob:
        assert blob.read() == data
    ids = [json.loads(line)["id"] for line in data.splitlines()[1:]]
    assert [row[2] for row in stored_rows(session)] == ids
    assert session.problem_count == 0


def test_a_second_writer_is_refused_and_the_owners_lines_stay(
    owner_api, teammate_api, owner, teammate, blob_dir, client
):
    data = corpus_bytes("tools")
    sid = session_id_of(data)
    half = line_ends(data)[len(line_ends(data)) // 2]
    owner_api.push(sid, 0, data[:half])
    session = Session.objects.get(session_id=sid)
    ProjectMembership.objects.create(project=session.project, user=teammate)  # sees it
    assert teammate_api.get(f"/sessions/{sid}").status_code == 200
    before = stored_rows(session)
    forged = b'{"type":"label","id":"f0000001","parentId":null,"timestamp":"2026-01-02T10:00:00.000Z","targetId":"x","label":"FORGED"}\n'  # noqa: E501
    for offset, body in ((half, forged), (0, data[:half] + forged), (0, data), (half, b"")):
        refused = teammate_api.push(sid, offset, body)
        assert refused.status_code == 403, (offset, refused.content)
        assert "first pushed or uploaded" in refused.json()["detail"]
    # Nor through the browser upload.
    client.force_login(teammate)
    upload = io.BytesIO(data[:half] + forged)
    upload.name = "s.jsonl"
    page = client.post(reverse("library:upload"), {"files": [upload]}, follow=True)
    assert "written only by the account" in page.content.decode()
    assert stored_rows(Session.objects.get(session_id=sid)) == before
    assert not Entry.objects.filter(entry_id="f0000001").exists()
    # The owner goes on.
    done = owner_api.push(sid, half, data[half:])
    assert done.status_code == 200 and done.json()["offset"] == len(data)


def test_the_project_owner_may_push_to_a_session_someone_else_first_pushed(
    owner_api, teammate_api, owner, blob_dir
):
    data = corpus_bytes("tools")
    sid = session_id_of(data)
    half = line_ends(data)[3]
    teammate_api.push(sid, 0, data[:half])
    session = Session.objects.get(session_id=sid)
    ProjectMembership.objects.create(project=session.project, user=owner, role="owner")
    assert owner_api.push(sid, half, data[half:]).status_code == 200


def test_hidden_and_unknown_sessions_answer_alike(owner_api, outsider_api, blob_dir):
    data = corpus_bytes("tools")
    sid = session_id_of(data)
    owner_api.push(sid, 0, data)
    for offset, body in ((1, b""), (1, b"{}\n"), (len(data), b"{}\n"), (0, b""), (0, b"{")):
        hidden = outsider_api.push(sid, offset, body)
        unknown = outsider_api.push("never-stored", offset, body)
        assert hidden.status_code == unknown.status_code, (offset, body)
        assert hidden.json() == unknown.json() | {"sessionId": sid}, (offset, body)
    hidden = outsider_api.get(f"/sessions/{sid}/lines")
    unknown = outsider_api.get("/sessions/never-stored/lines")
    assert hidden.status_code == unknown.status_code == 404
    assert hidden.json() == unknown.json() == {"detail": "Not Found"}
    assert Session.objects.get(session_id=sid).entry_count == len(data.splitlines()) - 1


def test_appends_are_audited_once_per_push_run(owner_api, owner, blob_dir):
    data = corpus_bytes("tools")
    sid = session_id_of(data)
    ends = line_ends(data)
    owner_api.push(sid, 0, data[: ends[2]])
    for start, end in itertools.pairwise(ends[2:8]):
        assert owner_api.push(sid, start, data[start:end]).json()["status"] == "appended"
    owner_api.push(sid, ends[7], b"")  # nothing new: nothing audited
    events = list(AuditEvent.objects.filter(verb__startswith="session.").order_by("id"))
    assert [e.verb for e in events] == ["session.upload", "session.push"]
    run = events[1]
    assert run.actor == owner and run.session.session_id == sid
    assert (run.data["from"], run.data["to"]) == (ends[2], ends[7])
    assert (run.data["pushes"], run.data["new_entries"]) == (5, 5)

    # A push after a pause starts a new run.
    run.data["last_at"] -= PUSH_RUN_SECONDS + 1
    run.save(update_fields=["data"])
    owner_api.push(sid, ends[7], data[ends[7] :])
    runs = AuditEvent.objects.filter(verb="session.push").order_by("id")
    assert [(e.data["from"], e.data["to"], e.data["pushes"]) for e in runs] == [
        (ends[2], ends[7], 5),
        (ends[7], len(data), 1),
    ]
