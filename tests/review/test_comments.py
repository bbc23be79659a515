"""Comments on entries: in the turn inspector, through full requests, with and without htmx."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from contextlab.review.models import AuditEvent, Comment
from tests.review.helpers import team_session

pytestmark = pytest.mark.django_db


def _page(session, entry: str = "aaaa0001") -> str:
    return reverse("inspector:session", args=[session.pk]) + f"?entry={entry}"


def test_it_adds_a_comment_without_javascript_and_shows_it_beside_the_entry(
    client, owner, teammate, tmp_path, blob_dir
):
    session = team_session(tmp_path, owner, teammate)
    client.force_login(teammate)
    url = reverse("review:comment_create", args=[session.pk])
    response = client.post(url, {"entry": "aaaa0001", "body": "Why <b>this</b> tool?"})
    assert response.status_code == 302
    assert response["Location"] == _page(session) + "#comments"
    html = client.get(_page(session)).content.decode()
    assert "Why &lt;b&gt;this&lt;/b&gt; tool?" in html
    assert 'id="comments"' in html and 'name="csrfmiddlewaretoken"' in html
    # Above the context's messages, not after every message of a long context.
    assert 'id="messages"' in html
    assert html.index('id="comments"') < html.index('id="messages"')
    # Not beside another entry.
    assert "Why &lt;b&gt;this" not in client.get(_page(session, "aaaa0002")).content.decode()
    comment = Comment.objects.get()
    assert (comment.author, comment.entry_id) == (teammate, "aaaa0001")
    event = AuditEvent.objects.get(verb="comment.create")
    assert (event.actor, event.session) == (teammate, session)


def test_it_swaps_the_comments_partial_for_htmx(client, owner, tmp_path, blob_dir):
    session = team_session(tmp_path, owner)
    client.force_login(owner)
    url = reverse("review:comment_create", args=[session.pk])
    response = client.post(
        url, {"entry": "aaaa0002", "body": "looks right"}, headers={"HX-Request": "true"}
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert html.startswith('<div id="comments"') and "looks right" in html
    assert "<html" not in html
    refused = client.post(url, {"entry": "aaaa0002", "body": "   "}, headers={"HX-Request": "true"})
    assert "Write something first." in refused.content.decode()
    assert Comment.objects.count() == 1


def test_it_counts_comments_on_tree_rows_in_a_constant_number_of_queries(
    client, owner, tmp_path, blob_dir
):
    session = team_session(tmp_path, owner)
    client.force_login(owner)
    client.get(_page(session))  # warm the session index and auth caches
    with CaptureQueriesContext(connection) as few:
        client.get(_page(session))
    for n in range(5):
        Comment.objects.create(session=session, entry_id="aaaa0001", author=owner, body=f"c{n}")
        Comment.objects.create(session=session, entry_id="aaaa0002", author=owner, body=f"d{n}")
    # The selected entry's turn is kept per its comments: asked once more, as `few` was.
    client.get(_page(session))
    with CaptureQueriesContext(connection) as many:
        html = client.get(_page(session)).content.decode()
    assert len(many) == len(few)
    assert html.count('class="comment-count"') == 2
    assert "✎ 5" in html


def test_it_lets_only_the_author_delete_a_comment(client, owner, teammate, tmp_path, blob_dir):
    session = team_session(tmp_path, owner, teammate)
    comment = Comment.objects.create(session=session, entry_id="aaaa0001", author=owner, body="x")
    url = reverse("review:comment_delete", args=[comment.pk])
    client.force_login(teammate)
    assert f'action="{url}"' not in client.get(_page(session)).content.decode()
    assert client.post(url).status_code == 403
    client.force_login(owner)
    assert f'action="{url}"' in client.get(_page(session)).content.decode()
    assert client.post(url).status_code == 302
    assert not Comment.objects.exists()
    assert AuditEvent.objects.filter(verb="comment.delete", actor=owner).exists()


def test_it_hides_comments_from_outsiders(client, owner, outsider, tmp_path, blob_dir):
    session = team_session(tmp_path, owner)
    comment = Comment.objects.create(session=session, entry_id="aaaa0001", author=owner, body="x")
    client.force_login(outsider)
    create = reverse("review:comment_create", args=[session.pk])
    assert client.post(create, {"entry": "aaaa0001", "body": "hi"}).status_code == 404
    assert client.post(reverse("review:comment_delete", args=[comment.pk])).status_code == 404
    assert Comment.objects.count() == 1


def test_it_refuses_comments_on_unknown_entries_by_get_and_without_csrf(
    client, owner, tmp_path, blob_dir
):
    session = team_session(tmp_path, owner)
    client.force_login(owner)
    create = reverse("review:comment_create", args=[session.pk])
    assert client.post(create, {"entry": "nope", "body": "hi"}).status_code == 404
    assert client.get(create).status_code == 405
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(owner)
    assert strict.post(create, {"entry": "aaaa0001", "body": "hi"}).status_code == 403
    assert not Comment.objects.exists()


def test_it_lets_the_author_edit_a_comment_and_marks_it_edited(
    client, owner, teammate, tmp_path, blob_dir
):
    session = team_session(tmp_path, owner, teammate)
    comment = Comment.objects.create(session=session, entry_id="aaaa0001", author=owner, body="x")
    url = reverse("review:comment_edit", args=[comment.pk])
    client.force_login(teammate)
    assert client.post(url, {"body": "hijacked"}).status_code == 403
    assert client.post(url, {"body": ""}).status_code == 403  # not theirs, whatever they send
    client.force_login(owner)
    html = client.post(url, {"body": "clearer"}, headers={"HX-Request": "true"}).content.decode()
    assert "clearer" in html and "(edited)" in html
    comment.refresh_from_db()
    assert comment.body == "clearer" and comment.edited_at is not None
    assert client.post(url, {"body": ""}, follow=True).status_code == 200
    comment.refresh_from_db()
    assert comment.body == "clearer"
    assert AuditEvent.objects.filter(verb="comment.edit").count() == 1
