"""Pushing a session's lines over HTTP: the exact contract of the README's REST API section
(offsets, 409 and resume, torn lines, rewritten files, upload membership rules)."""

from __future__ import annotations

import copy
import json
import random
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import Client
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from contextlab.api import services as api_services
from contextlab.api.services import api_token_create
from contextlab.inspector.models import TreeIndex
from contextlab.jobs.tasks import after_import
from contextlab.library.importer import import_session_file
from contextlab.library.models import Entry, Project, Session
from contextlab.review.models import AuditEvent, ProjectMembership
from contextlab.wsgi import application
from tests.conftest import CORPUS

pytestmark = pytest.mark.django_db

KEYS = {
    "sessionId",
    "offset",
    "status",
    "entries",
    "newEntries",
    "problems",
    "tailBytes",
    "tailSha256",
}
SCHEMA_CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


def corpus_bytes(name: str) -> bytes:
    return (CORPUS / name / "session.jsonl").read_bytes()


def session_id_of(data: bytes) -> str:
    return json.loads(data.split(b"\n", 1)[0])["id"]


def stored_rows(session: Session) -> list[tuple]:
    return list(
        Entry.objects.for_session(session).values_list("seq", "line_no", "entry_id", "parent_id")
    )


def test_the_whole_file_in_one_push_is_stored_as_an_import_would(owner_api, blob_dir, tmp_path):
    data = corpus_bytes("tools")
    sid = session_id_of(data)
    response = owner_api.push(sid, 0, data)
    assert response.status_code == 200, response.content
    answer = response.json()
    assert set(answer) == KEYS
    assert answer["sessionId"] == sid and answer["status"] == "new"
    assert answer["offset"] == len(data)
    session = Session.objects.get(session_id=sid)
    assert answer["entries"] == answer["newEntries"] == session.entry_count > 0
    with session.current_revision.open_blob() as blob:
        assert blob.read() == data

    # The same file imported from disk gives the same rows.
    pushed = stored_rows(session)
    Session.objects.all().delete()
    copy = tmp_path / "tools.jsonl"
    shutil.copyfile(CORPUS / "tools" / "session.jsonl", copy)
    assert stored_rows(import_session_file(path=copy).session) == pushed


def test_pushes_cut_anywhere_resume_from_the_server_offset_and_lose_or_repeat_nothing(
    owner_api, blob_dir
):
    data = corpus_bytes("interactive")
    sid = session_id_of(data)
    rng = random.Random(13)
    client_has = 0  # what the client's file holds so far (Pi keeps appending)
    server = 0
    statuses = set()
    while server < len(data):
        client_has = min(len(data), client_has + rng.randint(1, 900))
        answer = owner_api.push(sid, server, data[server:client_has])
        assert answer.status_code == 200, answer.content
        body = answer.json()
        statuses.add(body["status"])
        # Only complete lines are held: a torn last line waits for the next push.
        assert body["offset"] <= client_has
        assert body["offset"] == len(data) or data[body["offset"] - 1 : body["offset"]] == b"\n"
        server = body["offset"]
    assert statuses >= {"new", "appended"}
    session = Session.objects.get(session_id=sid)
    with session.current_revision.open_blob() as blob:
        assert blob.read() == data
    ids = [json.loads(line)["id"] for line in data.splitlines()[1:]]
    assert [row[2] for row in stored_rows(session)] == ids
    assert session.revisions.count() == 1


def test_a_push_from_another_offset_is_409_with_the_servers_offset_and_changes_nothing(
    owner_api, blob_dir
):
    data = corpus_bytes("tools")
    sid = session_id_of(data)
    half = data.index(b"\n", len(data) // 2) + 1
    assert owner_api.push(sid, 0, data[:half]).json()["offset"] == half
    before = stored_rows(Session.objects.get(session_id=sid))

    # A retry of a request that did arrive (the client never saw the answer): 409, resume.
    replay = owner_api.push(sid, 5, data[5:half])
    assert replay.status_code == 409
    assert set(replay.json()) == KEYS
    assert replay.json()["offset"] == half and replay.json()["status"] == "conflict"
    ahead = owner_api.push(sid, half + 10, data[half + 10 :])
    assert ahead.status_code == 409 and ahead.json()["offset"] == half
    assert stored_rows(Session.objects.get(session_id=sid)) == before

    done = owner_api.push(sid, half, data[half:])
    assert done.status_code == 200 and done.json()["offset"] == len(data)
    assert done.json()["status"] == "appended"
    # Pushing nothing more: unchanged.
    again = owner_api.push(sid, len(data), b"").json()
    assert again["status"] == "unchanged" and again["newEntries"] == 0

    # Unknown session, offset > 0: 409 with offset 0 (send the whole file).
    unknown = owner_api.push("not-stored-yet", 100, b"{}\n")
    assert unknown.status_code == 409 and unknown.json()["offset"] == 0
    assert owner_api.get(f"/sessions/{sid}/lines").json()["offset"] == len(data)


def test_offset_zero_on_a_stored_session_resends_or_rewrites_the_file(owner_api, blob_dir):
    data = corpus_bytes("tools")
    sid = session_id_of(data)
    owner_api.push(sid, 0, data)
    same = owner_api.push(sid, 0, data).json()
    assert same["status"] == "unchanged" and same["offset"] == len(data)

    lines = data.splitlines(keepends=True)
    # The first lines again (a client that read less of the file): nothing is replaced.
    prefix = owner_api.push(sid, 0, b"".join(lines[:10])).json()
    assert prefix["status"] == "unchanged" and prefix["offset"] == len(data)
    # Different bytes, shorter: Pi rewrote the file.
    rewritten = b"".join(lines[:-3]).replace(b'"type":"message"', b'"type": "message"', 1)
    answer = owner_api.push(sid, 0, rewritten)
    assert answer.status_code == 200
    assert answer.json()["status"] == "revised" and answer.json()["offset"] == len(rewritten)
    session = Session.objects.get(session_id=sid)
    assert session.revisions.count() == 2
    assert session.current_revision.number == 2


def test_a_push_into_a_new_project_makes_the_pusher_its_owner(owner_api, owner, blob_dir):
    data = corpus_bytes("branches")
    sid = session_id_of(data)
    assert owner_api.push(sid, 0, data).status_code == 200
    session = Session.objects.get(session_id=sid)
    membership = ProjectMembership.objects.get(project=session.project)
    assert (membership.user, membership.role) == (owner, "owner")
    assert session.imported_by == owner
    assert AuditEvent.objects.filter(verb="session.upload", session=session).count() == 1


def test_an_outsider_cannot_push_into_a_restricted_session_or_project(
    owner_api, outsider_api, blob_dir
):
    data = corpus_bytes("branches")
    sid = session_id_of(data)
    half = data.index(b"\n", len(data) // 2) + 1
    owner_api.push(sid, 0, data[:half])
    before = stored_rows(Session.objects.get(session_id=sid))

    refused = outsider_api.push(sid, 0, data)
    assert refused.status_code == 404
    assert refused.json() == {"detail": "Not Found"}
    # From another offset the session answers as one that is not stored: send the whole file.
    for offset, body in ((half, data[half:]), (3, b"x\n")):
        refused = outsider_api.push(sid, offset, body)
        assert refused.status_code == 409
        assert refused.json() == outsider_api.push("never-stored", offset, body).json() | {
            "sessionId": sid
        }
        assert refused.json()["offset"] == 0
    assert outsider_api.get(f"/sessions/{sid}/lines").status_code == 404
    assert stored_rows(Session.objects.get(session_id=sid)) == before

    # Another session of the same folder: stored in a project of the outsider's own, never in
    # the restricted one.
    other = data.replace(sid.encode(), b"another-session-id", 1)
    assert outsider_api.push("another-session-id", 0, other).status_code == 200
    theirs = Session.objects.get(session_id="another-session-id").project
    assert theirs != Session.objects.get(session_id=sid).project
    assert Project.objects.count() == 2


def test_a_body_that_is_another_sessions_file_is_refused(owner_api, blob_dir):
    data = corpus_bytes("tools")
    response = owner_api.push("some-other-id", 0, data)
    assert response.status_code == 400
    assert not Session.objects.exists()


def test_a_torn_first_line_stores_nothing_and_asks_for_it_again(owner_api, blob_dir):
    data = corpus_bytes("tools")
    sid = session_id_of(data)
    answer = owner_api.push(sid, 0, data[:20]).json()
    assert answer["offset"] == 0 and answer["status"] == "failed"
    assert not Session.objects.exists()
    assert owner_api.push(sid, 0, data).json()["offset"] == len(data)


def test_a_body_larger_than_the_limit_is_413(owner_api, blob_dir, settings):
    settings.CONTEXTLAB_API_MAX_PUSH_BYTES = 100
    data = corpus_bytes("tools")
    response = owner_api.push(session_id_of(data), 0, data)
    assert response.status_code == 413
    assert not Session.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_two_clients_pushing_the_same_session_at_once_store_each_line_once(
    owner, blob_dir, django_db_blocker
):
    """Two threads (each its own connection) push the same file in different cuts, each always
    resuming from the offset the server answered: the session row's lock orders them, and the
    stored file is the file, each entry once."""
    import threading

    from django.db import connection
    from django.test import Client

    from contextlab.api.services import api_token_create
    from tests.api.conftest import Api

    data = corpus_bytes("interactive")
    sid = session_id_of(data)
    token = api_token_create(user=owner)[1]
    errors: list[BaseException] = []
    statuses: list[str] = []

    def client_run(seed: int) -> None:
        try:
            api = Api(Client(), token)
            rng = random.Random(seed)
            offset = has = 0  # the server's offset; what this client's file holds (it grows)
            for _ in range(500):
                if offset >= len(data):
                    break
                has = min(len(data), max(has, offset) + rng.randint(50, 700))
                answer = api.push(sid, offset, data[offset:has])
                assert answer.status_code in (200, 409), answer.content
                offset = answer.json()["offset"]
                statuses.append(answer.json()["status"])
            else:
                raise AssertionError("no progress")
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=client_run, args=(seed,)) for seed in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    assert "conflict" in statuses  # they did get in each other's way
    session = Session.objects.get(session_id=sid)
    with session.current_revision.open_blob() as blob:
        assert blob.read() == data
    ids = [json.loads(line)["id"] for line in data.splitlines()[1:]]
    assert [row[2] for row in stored_rows(session)] == ids


@contextmanager
def wsgi_keeps_the_test_connection() -> Iterator[None]:
    """Requests through the WSGI application (as schemathesis sends them) must not close the
    test's database connection at their end, as Django's test client ensures for its own (and
    a test client request connects the signal again when it ends)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def test_successful_push_answers_are_valid_against_the_served_schema(owner, blob_dir):
    """The property-based run only reaches the push with random offsets (409s): here each kind of
    answer — new, appended, unchanged, and the 409 — goes through schemathesis's checks against
    /api/v1/openapi.json as served, and the checks are seen to reject an answer the schema does
    not describe."""
    token = api_token_create(user=owner, name="schema")[1]
    served = json.loads(Client(HTTP_HOST="localhost").get("/api/v1/openapi.json").content)
    data = corpus_bytes("tools")
    sid = session_id_of(data)
    cut = data.index(b"\n", len(data) // 2) + 1

    def push(schema_dict, offset, body):  # type: ignore[no-untyped-def]
        loaded = schemathesis.openapi.from_dict(schema_dict)
        loaded.app = application
        case = loaded["/api/v1/sessions/{session_id}/lines"]["POST"].Case(
            path_parameters={"session_id": sid},
            query={"offset": offset},
            body=body,
            media_type="application/octet-stream",
        )
        with wsgi_keeps_the_test_connection():
            return case, case.call(headers={"Authorization": f"Bearer {token}"})

    for offset, body, status, word in (
        (0, data[:cut], 200, "new"),
        (cut, data[cut:], 200, "appended"),
        (len(data), b"", 200, "unchanged"),
        (1, b"{}\n", 409, "conflict"),
    ):
        case, response = push(served, offset, body)
        assert (response.status_code, response.json()["status"]) == (status, word)
        case.validate_response(response, checks=SCHEMA_CHECKS)
    assert response.json()["offset"] == len(data)

    # Not vacuous: a schema that says `offset` is a string rejects the same answer.
    wrong = copy.deepcopy(served)
    wrong["components"]["schemas"]["PushOut"]["properties"]["offset"] = {"type": "string"}
    case, response = push(wrong, len(data), b"")
    with pytest.raises(FailureGroup, match="Response violates schema"):
        case.validate_response(response, checks=SCHEMA_CHECKS)


def test_a_small_push_is_searchable_when_answered_and_a_large_one_is_indexed_by_the_worker(
    owner_api, blob_dir, settings, monkeypatch
):
    """Pi appends a line or two at a time: those are indexed before the answer. A first push of a
    long session is answered at once and handed, like an upload, to after_import (search text
    and the stored tree index), which a worker runs."""
    data = corpus_bytes("tools")
    sid = session_id_of(data)
    cut = data.index(b"\n", len(data) // 2) + 1
    handed: list[int] = []
    monkeypatch.setattr(api_services, "enqueue_after_import", handed.append)
    settings.CONTEXTLAB_API_INDEX_INLINE_BYTES = cut - 1

    assert owner_api.push(sid, 0, data[:cut]).json()["status"] == "new"
    session = Session.objects.get(session_id=sid)
    assert handed == [session.pk]
    assert Entry.objects.for_session(session).filter(search_indexed=False).exists()
    after_import(session.pk)
    assert not Entry.objects.for_session(session).filter(search_indexed=False).exists()
    assert TreeIndex.objects.filter(revision=session.current_revision).exists()

    assert owner_api.push(sid, cut, data[cut:]).json()["status"] == "appended"
    assert handed == [session.pk]  # the small append was indexed in the request
    assert not Entry.objects.for_session(session).filter(search_indexed=False).exists()
