"""The library page, search and browser upload, through full HTTP requests."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from contextlab.library.importer import import_session_file
from contextlab.library.models import Entry, ImportProblem, Session
from tests.inspector.sessions import (
    SESSION_ID,
    XSS,
    linear_session_lines,
    rich_session_lines,
    write_session,
)

pytestmark = pytest.mark.django_db


def _import(tmp_path, lines=None, name=None, user=None):
    path = write_session(tmp_path, lines, name)
    return import_session_file(path=path, user=user)


def _linear(session_id: str, cwd: str, text: str) -> list[dict]:
    return linear_session_lines(session_id, cwd, text)


def test_it_redirects_anonymous_visitors_to_login(client):
    response = client.get(reverse("library:index"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_it_groups_sessions_by_project_with_their_figures(owner_client, tmp_path, owner):
    _import(tmp_path, user=owner)
    _import(tmp_path, _linear("s-two", "/srv/other", "fix the build"), name="two.jsonl")
    response = owner_client.get(reverse("library:index"))
    assert response.status_code == 200
    html = response.content.decode()
    session = Session.objects.get(session_id=SESSION_ID)
    assert reverse("inspector:session", args=[session.pk]) in html
    assert "/srv/other" in html and "fix the build" in html
    assert "anthropic/claude-sonnet-4-5" in html
    # The name is HTML-escaped, never markup.
    assert "Rich &lt;script&gt;session&lt;/script&gt;" in html
    assert "<script>session" not in html


def test_it_lists_sessions_in_a_constant_number_of_queries(owner_client, tmp_path):
    for n in range(3):
        _import(tmp_path, _linear(f"s-{n}", f"/srv/p{n}", f"task {n}"), name=f"{n}.jsonl")
    owner_client.get(reverse("library:index"))  # warm up session/auth caches
    with CaptureQueriesContext(connection) as few:
        owner_client.get(reverse("library:index"))
    for n in range(3, 9):
        _import(tmp_path, _linear(f"s-{n}", f"/srv/p{n}", f"task {n}"), name=f"{n}.jsonl")
    with CaptureQueriesContext(connection) as many:
        response = owner_client.get(reverse("library:index"))
    assert response.content.decode().count("task ") >= 9
    assert len(many) == len(few)
    assert len(many) <= 7  # with the user's files that yielded no session


def test_it_filters_and_sorts_and_renders_only_the_table_for_htmx(owner_client, tmp_path):
    _import(tmp_path, _linear("s-a", "/srv/a", "alpha task"), name="a.jsonl")
    _import(tmp_path, _linear("s-b", "/srv/b", "beta task"), name="b.jsonl")
    url = reverse("library:index")
    html = owner_client.get(url, {"q": "beta"}).content.decode()
    assert "beta task" in html and "alpha task" not in html
    html = owner_client.get(url, {"model": "gpt-5.1"}).content.decode()
    assert "beta task" in html and "alpha task" in html
    html = owner_client.get(url, {"model": "claude"}).content.decode()
    assert "beta task" not in html
    partial = owner_client.get(
        url, {"sort": "cost"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="library-table"
    )
    body = partial.content.decode()
    assert body.lstrip().startswith('<div id="library-table">')
    assert "<html" not in body


def test_sorting_by_age_reorders_the_project_groups_too(owner_client, tmp_path):
    from datetime import UTC, datetime

    _import(tmp_path, _linear("s-old", "/srv/zeta", "the old task"), name="old.jsonl")
    _import(tmp_path, _linear("s-new", "/srv/alpha", "the new task"), name="new.jsonl")
    _import(tmp_path, _linear("s-mid", "/srv/zeta", "the mid task"), name="mid.jsonl")
    for session_id, day in (("s-old", 1), ("s-mid", 2), ("s-new", 3)):
        when = datetime(2026, 1, day, tzinfo=UTC)
        Session.objects.filter(session_id=session_id).update(
            first_activity=when, last_activity=when
        )
    url = reverse("library:index")

    def order(sort: str) -> list[str]:
        html = owner_client.get(url, {"sort": sort}).content.decode()
        return re.findall(r"the (old|mid|new) task", html)

    # Groups follow their first session in the chosen order; rows inside a group too.
    assert order("oldest") == ["old", "mid", "new"]
    assert order("recent") == ["new", "mid", "old"]


def test_it_leaves_what_only_the_full_page_shows_out_of_the_htmx_table(owner_client, tmp_path):
    _import(tmp_path, _linear("s-a", "/srv/a", "alpha task"), name="a.jsonl")
    url = reverse("library:index")
    labels_query = 'SELECT DISTINCT "review_sessionlabel"."name"'

    def tables(**headers):
        with CaptureQueriesContext(connection) as queries:
            assert owner_client.get(url, headers=headers).status_code == 200
        sql = " ".join(q["sql"] for q in queries.captured_queries)
        return {name for name in ("importproblem", labels_query) if name in sql}

    # The label filter (a DISTINCT over review labels) and the unusable files are not in the table.
    assert tables() == {"importproblem", labels_query}
    assert tables(HX_Request="true", HX_Target="library-table") == set()


def test_it_flags_import_problems(owner_client, tmp_path):
    path = write_session(tmp_path)
    with path.open("a") as f:
        f.write("{not json\n")
        f.write(
            json.dumps(
                {
                    "type": "message",
                    "id": "zz",
                    "parentId": "a0000005",
                    "timestamp": "2025-11-20T11:00:00.000Z",
                    "message": {"role": "user", "content": "x", "timestamp": 1},
                }
            )
            + "\n"
        )
    import_session_file(path=path)
    assert ImportProblem.objects.exists()
    html = owner_client.get(reverse("library:index"), {"flag": "problems"}).content.decode()
    assert "problem" in html
    assert "Rich &lt;script&gt;" in html


def test_it_searches_message_text_with_highlighted_hits_that_open_the_entry(owner_client, tmp_path):
    _import(tmp_path)
    response = owner_client.get(reverse("library:search"), {"q": "prints"})
    html = response.content.decode()
    session = Session.objects.get(session_id=SESSION_ID)
    assert response.status_code == 200
    assert "<mark>" in html
    assert (
        f"{reverse('inspector:session', args=[session.pk])}?entry=a0000002&amp;tab=context" in html
    )


def test_it_escapes_html_in_search_snippets(owner_client, tmp_path):
    _import(tmp_path)
    html = owner_client.get(reverse("library:search"), {"q": "please read"}).content.decode()
    assert "<mark>" in html
    assert "<script>window" not in html and "<img src=x" not in html
    assert "&lt;" in html


def test_it_imports_several_uploaded_files_through_the_import_service(owner_client, owner):
    rich = "".join(json.dumps(line) + "\n" for line in rich_session_lines()).encode()
    other = "".join(
        json.dumps(line) + "\n" for line in _linear("s-up", "/srv/up", "uploaded")
    ).encode()
    files = [io.BytesIO(rich), io.BytesIO(other)]
    files[0].name, files[1].name = f"{XSS}.jsonl", "two.jsonl"
    response = owner_client.post(
        reverse("library:upload"),
        {"files": files},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="upload-results",
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert body.count("<li>") == 2 and "new" in body
    # Django keeps only the last path component of the name; the rest must come out inert.
    assert "&lt;img src=x" in body and "<img src=x" not in body
    assert Session.objects.filter(session_id__in=[SESSION_ID, "s-up"]).count() == 2
    session = Session.objects.get(session_id=SESSION_ID)
    assert session.imported_by == owner
    assert Entry.objects.for_session(session).count() == len(rich_session_lines()) - 1


def test_it_uploads_without_javascript_and_reports_on_the_next_page(owner_client):
    other = io.BytesIO(
        "".join(json.dumps(line) + "\n" for line in _linear("s-nojs", "/srv/x", "plain")).encode()
    )
    other.name = "plain.jsonl"
    response = owner_client.post(reverse("library:upload"), {"files": [other]}, follow=True)
    assert response.status_code == 200
    assert "plain.jsonl: new" in response.content.decode()


def test_it_refuses_upload_by_get_and_without_csrf(client, owner):
    client.force_login(owner)
    assert client.get(reverse("library:upload")).status_code == 405
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(owner)
    assert strict.post(reverse("library:upload"), {}).status_code == 403


def test_it_searches_in_a_constant_number_of_queries(owner_client, tmp_path):
    for n in range(2):
        _import(tmp_path, _linear(f"s-q{n}", f"/srv/q{n}", f"needle {n}"), name=f"q{n}.jsonl")
    url = reverse("library:search")
    owner_client.get(url, {"q": "needle"})
    with CaptureQueriesContext(connection) as few:
        owner_client.get(url, {"q": "needle"})
    for n in range(2, 8):
        _import(tmp_path, _linear(f"s-q{n}", f"/srv/q{n}", f"needle {n}"), name=f"q{n}.jsonl")
    with CaptureQueriesContext(connection) as many:
        response = owner_client.get(url, {"q": "needle"})
    assert response.content.decode().count("<mark>") >= 8
    assert len(many) == len(few)


def test_it_shows_each_revision_of_a_rewritten_file_and_serves_its_original_bytes(
    owner_client, tmp_path
):
    from contextlab.review.models import AuditEvent

    lines = _linear("s-hist", "/srv/hist", "first version of the task")
    path = write_session(tmp_path, lines, "s-hist.jsonl")
    first_bytes = path.read_bytes()
    import_session_file(path=path)
    rewritten = _linear("s-hist", "/srv/hist", "the task")
    path = write_session(tmp_path, rewritten, "s-hist.jsonl")  # shorter: a new revision
    assert import_session_file(path=path).status == "revised"
    session = Session.objects.get(session_id="s-hist")

    page = owner_client.get(reverse("library:history", args=[session.pk])).content.decode()
    cells = r'<td class="num">r(\d+)</td>\s*<td>(\w+)</td>\s*<td>([^<]*)</td>'
    assert re.findall(cells, page) == [
        ("2", "current", f"file shrank from {len(first_bytes)} to {path.stat().st_size} bytes"),
        ("1", "superseded", "first import"),
    ]
    from contextlab.library.selectors import session_revisions

    counted = [(r.number, r.entries_stored) for r in session_revisions(session)]
    assert counted == [
        (r.number, Entry.objects.filter(revision=r).count()) for r in session_revisions(session)
    ]
    assert all(n > 0 for _, n in counted)
    old = owner_client.get(reverse("library:original", args=[session.pk, 1]))
    assert b"".join(old.streaming_content) == first_bytes
    assert old["Content-Disposition"] == 'attachment; filename="s-hist.r1.jsonl"'
    new = owner_client.get(reverse("library:original", args=[session.pk, 2]))
    assert b"".join(new.streaming_content) == path.read_bytes()
    assert new["Content-Disposition"] == 'attachment; filename="s-hist.jsonl"'
    assert owner_client.get(reverse("library:original", args=[session.pk, 3])).status_code == 404
    assert AuditEvent.objects.filter(verb="session.download_original", session=session).count() == 2


def test_it_keeps_history_and_original_bytes_from_outsiders(client, owner, outsider, tmp_path):
    from contextlab.library.models import ProjectMembership

    result = _import(tmp_path, _linear("s-private", "/srv/private", "secret plan"), "p.jsonl")
    ProjectMembership.objects.create(
        project=result.session.project, user=owner, role=ProjectMembership.Role.OWNER
    )
    urls = [
        reverse("library:history", args=[result.session.pk]),
        reverse("library:original", args=[result.session.pk, 1]),
    ]
    for user, status in ((owner, 200), (outsider, 404)):
        client.force_login(user)
        assert [client.get(url).status_code for url in urls] == [status, status]


def test_it_lists_files_that_yielded_no_session_to_who_uploaded_them(
    client, owner, teammate, tmp_path, django_user_model
):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from contextlab.review.models import AuditEvent

    bad = b"this is not a session\nnor is this\n"
    client.force_login(owner)
    client.post(reverse("library:upload"), {"files": [SimpleUploadedFile("broken.jsonl", bad)]})
    # A command met another unusable file: no one uploaded it.
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"\n\n")
    import_session_file(path=empty)

    page = client.get(reverse("library:index")).content.decode()
    assert "1 file could not be imported" in page and "<code>broken.jsonl</code>" in page
    assert "no line of this file is usable" in page and str(empty) not in page
    link = re.search(r'href="(/unusable/\d+/original\.jsonl)"', page).group(1)
    download = client.get(link)
    assert b"".join(download.streaming_content) == bad
    assert AuditEvent.objects.filter(verb="file.download_unusable").count() == 1

    client.force_login(teammate)  # another user: neither file is theirs
    assert "could not be imported" not in client.get(reverse("library:index")).content.decode()
    assert client.get(link).status_code == 404

    # Staff without permissions see no one else's failed uploads.
    staff = django_user_model.objects.create_user("ops", password="x", is_staff=True)
    client.force_login(staff)
    assert "could not be imported" not in client.get(reverse("library:index")).content.decode()
    assert client.get(link).status_code == 404
    # Given the permission to view import problems, they see them all.
    from django.contrib.auth.models import Permission

    staff.user_permissions.add(Permission.objects.get(codename="view_importproblem"))
    staff = django_user_model.objects.get(pk=staff.pk)  # a fresh permission cache
    client.force_login(staff)
    page = client.get(reverse("library:index")).content.decode()
    assert "2 files could not be imported" in page and str(empty) in page
    assert client.get(link).status_code == 200


def test_it_says_so_when_an_upload_has_no_file(owner_client):
    response = owner_client.post(
        reverse("library:upload"), {}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="upload-results"
    )
    assert "No file was uploaded" in response.content.decode()
    page = owner_client.post(reverse("library:upload"), {}, follow=True).content.decode()
    assert "Choose one or more session files" in page


def test_it_uploads_a_png_with_one_clear_error_and_no_session(owner_client):
    png = io.BytesIO(bytes.fromhex("89504e470d0a1a0a0000000d49484452") + bytes(range(256)) * 64)
    png.name = "screenshot.png"
    body = owner_client.post(
        reverse("library:upload"),
        {"files": [png]},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="upload-results",
    ).content.decode()
    assert body.count("not a text file") == 1
    assert body.count('class="error"') == 1
    assert Session.objects.count() == 0


def test_it_uploads_a_file_pi_would_reject_without_creating_a_session(owner_client):
    bad = io.BytesIO(b"[1,2,3]\n")
    bad.name = "array.jsonl"
    body = owner_client.post(
        reverse("library:upload"),
        {"files": [bad]},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="upload-results",
    ).content.decode()
    assert "Pi would reject the whole file" in body
    assert Session.objects.count() == 0
    assert "noheader-" not in owner_client.get(reverse("library:index")).content.decode()


def test_it_says_no_session_matches_a_filter_without_hits(owner_client, tmp_path):
    _import(tmp_path)
    html = owner_client.get(reverse("library:index"), {"q": "zzz-nothing-like-this"}).content
    assert b"No session matches these filters" in html and b"No sessions yet" not in html
    empty = owner_client.get(reverse("library:index")).content
    assert b"No session matches" not in empty


def test_the_tokens_column_says_what_it_counts_for_each_pi_generation(owner_client, tmp_path):
    _import(tmp_path, _linear("s-a", "/srv/a", "alpha task"), name="a.jsonl")
    html = owner_client.get(reverse("library:index")).content.decode()
    note = html.split('id="tokens-note">', 1)[1].split("</p>", 1)[0]
    assert "Pi 1.x hold their system prompt as entries, so it is counted" in note
    assert "Pi 0.x sessions do not hold it" in note
    assert 'href="#tokens-note"' in html
