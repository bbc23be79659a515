"""Pages kept whole until what they show changes (contextlab.pages): served again without being
computed, never stale after a write of any kind, never one user's page for another, with forms
that work in every browser of the user."""

from __future__ import annotations

import re

import pytest
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from contextlab import pages
from contextlab.library.importer import import_session_file
from contextlab.library.models import Project, ProjectMembership, Session
from contextlab.review.models import Comment, SessionLabel
from tests.inspector.sessions import linear_session_lines, write_session

pytestmark = pytest.mark.django_db

TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="([A-Za-z0-9]{64})"')


def _session(tmp_path, text: str = "hello there", cwd: str = "/work/kept") -> Session:
    lines = linear_session_lines("0193a1b2-0000-7000-8000-0000000000aa", cwd, text)
    result = import_session_file(path=write_session(tmp_path, lines), index_search=True)
    assert result.session is not None
    return result.session


def _browser(user) -> Client:  # type: ignore[no-untyped-def]
    """A browser signed in as `user`, holding a CSRF cookie (as after its first page)."""
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    browser.get(reverse("library:index"))
    assert browser.cookies.get("csrftoken")
    return browser


def _tables_read(browser: Client, url: str, **headers) -> set[str]:  # type: ignore[no-untyped-def]
    with CaptureQueriesContext(connection) as queries:
        response = browser.get(url, **headers)
    assert response.status_code == 200
    return {t for q in queries.captured_queries for t in re.findall(r'FROM "(\w+)"', q["sql"])}


def test_a_kept_library_page_is_served_again_without_reading_the_sessions(tmp_path, owner):
    _session(tmp_path)
    browser = _browser(owner)
    url = reverse("library:index")
    assert "library_session" in _tables_read(browser, url)  # kept by the first of these
    assert "library_session" not in _tables_read(browser, url)
    assert "hello there" in browser.get(url).content.decode()


def test_every_kind_of_write_shows_on_the_next_page(tmp_path, owner):
    """A model's save, a queryset's bulk update, raw SQL and a delete: each shows at once."""
    session = _session(tmp_path)
    browser = _browser(owner)
    url = reverse("library:index")
    browser.get(url)
    assert "hello there" in browser.get(url).content.decode()

    Session.objects.filter(pk=session.pk).update(name="Renamed in bulk")
    assert "Renamed in bulk" in browser.get(url).content.decode()

    with connection.cursor() as cursor:
        cursor.execute("UPDATE library_session SET name = %s WHERE id = %s", ["Raw", session.pk])
    assert "Raw" in browser.get(url).content.decode()

    SessionLabel.objects.create(session=session, name="needs-review")
    assert "needs-review" in browser.get(url).content.decode()

    Session.objects.filter(pk=session.pk).delete()
    assert "Raw" not in browser.get(url).content.decode()


def test_search_results_follow_a_new_session(tmp_path, owner):
    browser = _browser(owner)
    url = reverse("library:search") + "?q=pelican"
    browser.get(url)
    assert "bicycle" not in browser.get(url).content.decode()  # kept: no hit
    _session(tmp_path, text="a pelican on a bicycle")
    assert "bicycle" in browser.get(url).content.decode()


def test_a_kept_page_is_never_another_users(tmp_path, owner, teammate):
    session = _session(tmp_path)
    project = Project.objects.get(pk=session.project_id)
    ProjectMembership.objects.create(project=project, user=owner, role="owner")  # hers alone
    mine, theirs = _browser(owner), _browser(teammate)
    url = reverse("inspector:session", args=[session.pk])
    library = reverse("library:index")
    for _ in range(2):  # kept by the second
        assert mine.get(url).status_code == 200
        assert "hello there" in mine.get(library).content.decode()
    assert theirs.get(url).status_code == 404
    page = theirs.get(library).content.decode()
    assert "hello there" not in page
    assert teammate.username in page
    # She opens the project to the teammate: both see it at once.
    ProjectMembership.objects.create(project=project, user=teammate, role="member")
    assert theirs.get(url).status_code == 200
    assert "hello there" in theirs.get(library).content.decode()


def test_a_kept_turn_inspector_shows_a_new_comment_at_once(tmp_path, owner, teammate):
    session = _session(tmp_path)
    browser = _browser(owner)
    url = reverse("inspector:session", args=[session.pk]) + "?entry=aaaa0002&tab=context"
    part = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "inspector"}
    browser.get(url, **part)
    assert "library_session" not in _tables_read(browser, url, **part)  # kept
    Comment.objects.create(session=session, entry_id="aaaa0002", author=teammate, body="Why 3?")
    assert "Why 3?" in browser.get(url, **part).content.decode()


def test_a_kept_pages_forms_hold_a_token_of_the_asking_browsers_own_secret(tmp_path, owner):
    session = _session(tmp_path)
    first, second = _browser(owner), _browser(owner)
    assert first.cookies["csrftoken"].value != second.cookies["csrftoken"].value
    url = reverse("inspector:session", args=[session.pk])
    first.get(url)
    first.get(url)  # kept, with tokens of the first browser's secret
    assert "library_session" not in _tables_read(second, url)  # served from the cache
    page = second.get(url).content.decode()
    token = TOKEN.search(page)
    assert token is not None
    assert f'"X-CSRFToken": "{token.group(1)}"' in page  # one fresh token in both places
    response = second.post(
        reverse("review:label_add", args=[session.pk]),
        {"name": "from-the-second-browser", "csrfmiddlewaretoken": token.group(1)},
    )
    assert response.status_code in (200, 302), response.content[:300]
    assert SessionLabel.objects.filter(name="from-the-second-browser").exists()
    assert "from-the-second-browser" in second.get(url).content.decode()


def test_a_page_with_a_one_time_message_is_neither_kept_nor_served_from_the_cache(owner):
    browser = _browser(owner)
    url = reverse("library:index")
    browser.get(url)
    assert "library_session" not in _tables_read(browser, url)  # kept
    token = browser.cookies["csrftoken"].value
    page = browser.post(reverse("library:upload"), {"csrfmiddlewaretoken": token}, follow=True)
    assert "Choose one or more session files" in page.content.decode()  # not the kept page
    again = browser.get(url).content.decode()
    assert "Choose one or more session files" not in again  # shown once
    assert "library_session" not in _tables_read(browser, url)  # and kept as before


def test_a_repeat_with_the_pages_etag_is_a_304(tmp_path, owner):
    _session(tmp_path)
    browser = _browser(owner)
    url = reverse("library:index")
    etag = browser.get(url)["ETag"]
    assert browser.get(url, HTTP_IF_NONE_MATCH=etag).status_code == 304
    Session.objects.update(name="changed")
    assert browser.get(url, HTTP_IF_NONE_MATCH=etag).status_code == 200


def test_the_htmx_part_and_the_whole_page_are_kept_apart(tmp_path, owner):
    _session(tmp_path)
    browser = _browser(owner)
    url = reverse("library:index")
    whole = browser.get(url).content.decode()
    part = browser.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="library-table")
    assert "<html" in whole
    assert "<html" not in part.content.decode()
    assert "<html" in browser.get(url).content.decode()


def test_a_setting_that_shapes_pages_makes_new_keys(tmp_path, owner, settings):
    _session(tmp_path)
    browser = _browser(owner)
    url = reverse("library:index")
    browser.get(url)
    assert "library_session" not in _tables_read(browser, url)
    settings.CONTEXTLAB_ENTRIES_PER_PAGE = 7
    assert "library_session" in _tables_read(browser, url)


def test_the_mark_moves_with_every_committed_change_even_after_a_rollback(tmp_path):
    session = _session(tmp_path)
    before = pages.changes_mark()
    with pytest.raises(RuntimeError), transaction.atomic():
        Session.objects.filter(pk=session.pk).update(name="rolled back")
        assert pages.changes_mark() != before  # this transaction sees its own change
        raise RuntimeError
    assert pages.changes_mark() == before
    Session.objects.filter(pk=session.pk).update(name="another")
    after = pages.changes_mark()
    assert after != before
    # Same number of changes as inside the rolled-back transaction, yet another mark.
    assert after.split(".")[0] == str(int(before.split(".")[0]) + 1)


def test_folding_the_changes_keeps_their_sum_and_moves_the_mark(tmp_path, monkeypatch):
    session = _session(tmp_path)
    for n in range(5):
        Session.objects.filter(pk=session.pk).update(name=f"n{n}")
    total = pages.changes_mark().split(".")[0]
    monkeypatch.setattr(pages, "FOLD_ROWS", 2)
    folded = pages.changes_mark()  # reads, then folds
    monkeypatch.setattr(pages, "FOLD_ROWS", 1000)
    after = pages.changes_mark()
    assert after.split(".")[0] == total == folded.split(".")[0]
    assert after != folded  # the folded row is a new id
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM contextlab_changes")
        assert cursor.fetchone()[0] == 1


def test_a_truncate_never_brings_back_an_earlier_mark(tmp_path):
    _session(tmp_path)
    before = pages.changes_mark()
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE contextlab_changes")
        cursor.execute("TRUNCATE review_sessionlabel")
    total = int(pages.changes_mark().split(".")[0])
    assert total > 1  # a random weight, not a count that earlier marks had
    assert pages.changes_mark() != before


# What cut the tokens out before (a look-behind tried at every character of the page).
_LOOK_BEHIND = re.compile(
    r'(?<=name="csrfmiddlewaretoken" value=")[A-Za-z0-9]{64}(?=")'
    r'|(?<="X-CSRFToken": ")[A-Za-z0-9]{64}(?=")'
)


@hypothesis_settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(
        st.sampled_from(
            [*pages.TOKEN_AFTER, "a" * 64, "Z9" * 32, "b" * 63, '"', "'", "x", "<p>", " "]
        ),
        max_size=12,
    )
)
def test_the_tokens_are_cut_as_the_look_behind_cut_them(pieces) -> None:
    html = "".join(pieces)
    assert pages.cut_tokens(html) == _LOOK_BEHIND.split(html)


def test_the_tokens_are_cut_out_where_django_writes_them_and_nowhere_else():
    token = "a" * 32 + "B" * 32
    html = (
        f'<body hx-headers=\'{{"X-CSRFToken": "{token}"}}\'>'
        f'<input type="hidden" name="csrfmiddlewaretoken" value="{token}">'
        f"<code>{token}</code>"
    )
    segments = pages.cut_tokens(html)
    assert len(segments) == 3
    assert "new".join(segments).count(token) == 1  # the one in the text stays
