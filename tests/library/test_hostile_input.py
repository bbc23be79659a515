"""Hostile ids and NUL bytes: the export's Content-Disposition is
built by Django's helper, ids are validated at import with a problem for their line, NUL in any
form field gets a clear 400, and upload errors never show raw exception text."""

from __future__ import annotations

import email.message
import io
import json

import pytest
from django.urls import reverse

from contextlab.library import views as library_views
from contextlab.library.importer import import_session_file
from contextlab.library.models import Entry, ImportProblem, Session
from contextlab.review.models import Comment, ProjectMembership, SessionLabel
from tests.inspector.sessions import linear_session_lines

pytestmark = pytest.mark.django_db


def _write(tmp_path, lines, name="s.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _upload(client, lines, name="s.jsonl"):
    data = io.BytesIO("".join(json.dumps(line) + "\n" for line in lines).encode())
    data.name = name
    return client.post(reverse("library:upload"), {"files": [data]}, follow=True)


def _filename(header: str) -> str | None:
    message = email.message.Message()
    message["Content-Disposition"] = header
    return message.get_filename()


def test_the_export_name_cannot_inject_header_parameters(owner_client, tmp_path):
    hostile = "b-x\"; filename*=UTF-8''evil.html; x=\""
    lines = linear_session_lines(hostile, "/srv/x", "hi")
    session = import_session_file(path=_write(tmp_path, lines)).session
    assert session is not None and session.session_id == hostile
    response = owner_client.get(reverse("jobs:export", args=[session.pk]))
    assert response.status_code == 200
    name = _filename(response["Content-Disposition"])
    assert name == f"2025-01-02T00-00-00-000Z_{hostile}.jsonl"
    assert not name.endswith(".html")
    b"".join(response.streaming_content)


def _with_entry(lines, entry_id, parent="aaaa0002"):
    lines.append(
        {
            "type": "message",
            "id": entry_id,
            "parentId": parent,
            "timestamp": "2025-01-02T00:00:03.000Z",
            "message": {"role": "user", "content": "again", "timestamp": 1735776003000},
        }
    )
    return lines


@pytest.mark.parametrize("kind", ["json", "curl"])
def test_the_request_download_name_cannot_inject_header_parameters(owner_client, tmp_path, kind):
    hostile = "e\"; filename*=UTF-8''evil.html; x=\""
    lines = _with_entry(linear_session_lines("s-request-name", "/srv/x", "hi"), hostile)
    result = import_session_file(path=_write(tmp_path, lines))
    assert result.problems == []  # a quote is a character like any other in an id
    url = reverse("inspector:request", args=[result.session.pk])
    response = owner_client.get(url, {"entry": hostile, "download": "1", "format": kind})
    assert response.status_code == 200
    name = _filename(response["Content-Disposition"])
    suffix = ".sh" if kind == "curl" else ".json"
    assert name == f"request-{hostile}{suffix}"
    assert not name.endswith(".html")


@pytest.mark.parametrize(
    ("entry_id", "parent"),
    [
        ("e\r\nSet-Cookie: a=b", "aaaa0002"),
        ("tab\there", "aaaa0002"),
        ("bell\x07", "aaaa0002"),
        ("del\x7f", "aaaa0002"),
        ("child001", "aaaa0002\n"),
    ],
)
def test_entry_ids_with_control_characters_are_refused_for_their_line(
    owner_client, tmp_path, entry_id, parent
):
    lines = _with_entry(linear_session_lines("s-control-ids", "/srv/x", "hi"), entry_id, parent)
    result = import_session_file(path=_write(tmp_path, lines))
    assert result.session is not None and result.status != "failed"
    what = 'its "id"' if parent == "aaaa0002" else 'its "parentId"'
    expected = f"{what} holds control characters (such as NUL, CR or LF): the entry is not imported"
    assert [(p.line, p.reason) for p in result.problems] == [(4, expected)]
    assert not Entry.objects.filter(entry_id=entry_id).exists()
    # The rest of the file is there, and the pages that show an entry id in a header never 500.
    assert Entry.objects.filter(session=result.session).count() == 2
    url = reverse("inspector:request", args=[result.session.pk])
    response = owner_client.get(url, {"entry": entry_id, "download": "1"})
    assert response.status_code == 404


@pytest.mark.parametrize(
    ("session_id", "reason"),
    [
        ("a\r\nSet-Cookie: x=1", "control characters"),
        ("nul\x00id", "control characters"),
        ("s" * 256, "256 characters long"),
    ],
)
def test_a_header_id_that_cannot_be_stored_is_refused_alike_by_cli_and_upload(
    owner_client, tmp_path, session_id, reason
):
    lines = linear_session_lines(session_id, "/srv/x", "hi")
    result = import_session_file(path=_write(tmp_path, lines))
    assert result.status == "failed" and result.session is None
    assert reason in result.problems[0].reason
    assert "the file is not imported" in result.problems[0].reason
    response = _upload(owner_client, lines)
    assert response.status_code == 200
    body = response.content.decode()
    assert reason in body and "the file is not imported" in body
    assert "PostgreSQL" not in body and "0x00" not in body
    assert not Session.objects.exists()


def test_entry_ids_over_100_characters_or_with_nul_are_refused_not_cut(
    owner_client, tmp_path, owner
):
    lines = linear_session_lines("s-long-ids", "/srv/long", "hi")
    long_a, long_b = "x" * 100 + "a", "x" * 100 + "b"
    for long_id in (long_a, long_b, "nul\x00id"):
        lines.append(
            {
                "type": "message",
                "id": long_id,
                "parentId": "aaaa0002",
                "timestamp": "2025-01-02T00:00:03.000Z",
                "message": {"role": "user", "content": "again", "timestamp": 1735776003000},
            }
        )
    result = import_session_file(path=_write(tmp_path, lines))
    assert result.session is not None
    reasons = [(p.line, p.reason) for p in result.problems]
    expected = 'its "id" is 101 characters long; contextlab keeps ids of at most 100'
    assert (4, f"{expected}: the entry is not imported") in reasons
    assert any(line == 5 for line, _ in reasons)
    controls = 'its "id" holds control characters (such as NUL, CR or LF)'
    assert (6, f"{controls}: the entry is not imported") in reasons
    assert not Entry.objects.filter(entry_id__startswith="x" * 100).exists()
    assert ImportProblem.objects.filter(session=result.session).count() == 3
    # So no comment can land on a cut id that two entries would share.
    url = reverse("review:comment_create", args=[result.session.pk])
    response = owner_client.post(url, {"entry": "x" * 100, "body": "shared?"})
    assert response.status_code in (400, 404)
    assert not Comment.objects.exists()


def test_nul_in_any_form_field_gets_a_clear_400_and_stores_nothing(
    client, owner, tmp_path, blob_dir
):
    session = import_session_file(
        path=_write(tmp_path, linear_session_lines("s-nul", "/srv/nul", "hi"))
    ).session
    ProjectMembership.objects.create(project=session.project, user=owner, role="owner")
    client.force_login(owner)
    nul = "a\x00b"
    pk, project = session.pk, session.project.pk
    requests = [
        ("get", reverse("library:search"), {"q": nul}),
        ("get", reverse("library:index"), {"q": nul}),
        ("post", reverse("review:comment_create", args=[pk]), {"entry": "aaaa0002", "body": nul}),
        ("post", reverse("review:comment_create", args=[pk]), {"entry": nul, "body": "x"}),
        ("post", reverse("review:label_add", args=[pk]), {"name": nul}),
        ("post", reverse("review:label_remove", args=[pk]), {"name": nul}),
        ("post", reverse("review:members", args=[project]), {"username": nul, "role": "member"}),
        ("post", reverse("jobs:compact", args=[pk]), {"instructions": nul, "leaf": "aaaa0002"}),
        ("get", reverse("jobs:compact", args=[pk]), {"leaf": nul}),
        ("post", reverse("jobs:continue", args=[pk]), {"choice": nul, "instructions": nul}),
        ("get", reverse("inspector:session", args=[pk]), {"entry": nul}),
    ]
    for method, url, data in requests:
        response = getattr(client, method)(url, data)
        assert response.status_code == 400, (url, data)
        assert "NUL character" in response.content.decode()
    assert not Comment.objects.exists() and not SessionLabel.objects.exists()
    assert ProjectMembership.objects.count() == 1
    from contextlab.jobs.models import Job

    assert not Job.objects.exists()


def test_upload_errors_show_no_raw_exception_text(owner_client, monkeypatch, caplog):
    def broken(**kwargs):
        raise RuntimeError('connection to server at "10.0.0.5" failed: password=hunter2')

    monkeypatch.setattr(library_views, "import_session_file", broken)
    response = _upload(owner_client, linear_session_lines("s-err", "/srv/err", "hi"))
    body = response.content.decode()
    assert "could not be imported because of an error on the server" in body
    assert "10.0.0.5" not in body and "hunter2" not in body
    assert "hunter2" in caplog.text  # the administrator's log has it


@pytest.mark.parametrize(
    ("value", "refused"),
    [("a\x1fb", True), ("a\x7fb", True), ("\x00", True), ("a b~", False), ("é\x80ü", False)],
)
def test_an_id_is_refused_for_c0_controls_and_del_only(value, refused):
    from contextlab.library.importer.decoding import id_problem

    assert (id_problem(value, "its id", 100, controls=True) is not None) == refused
