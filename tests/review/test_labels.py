"""Review labels on sessions: added from the session page, filterable in the library, never
written to the session file."""

from __future__ import annotations

import hashlib

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from contextlab.library.models import Entry
from contextlab.review.models import AuditEvent, SessionLabel
from tests.review.helpers import import_open, team_session

pytestmark = pytest.mark.django_db


def test_it_labels_a_session_without_javascript_and_filters_the_library(
    client, owner, tmp_path, blob_dir
):
    session = team_session(tmp_path, owner)
    other = import_open(tmp_path, session_id="sess-other", cwd="/work/other")
    blob = session.current_revision.blob_file
    before = hashlib.sha256(blob.read_bytes()).hexdigest()
    entries = Entry.objects.count()
    client.force_login(owner)
    add = reverse("review:label_add", args=[session.pk])
    response = client.post(add, {"name": "Needs Review"})
    assert response.status_code == 302
    assert list(SessionLabel.objects.values_list("name", flat=True)) == ["needs-review"]
    page = client.get(reverse("inspector:session", args=[session.pk])).content.decode()
    assert 'id="review-labels"' in page and ">needs-review</a>" in page
    listed = client.get(reverse("library:index"), {"review_label": "needs-review"})
    html = listed.content.decode()
    assert session.session_id in html and other.session_id not in html
    assert '<option value="needs-review" selected>' in html
    # Pi's session file and the stored entries are untouched: this is contextlab's own data.
    assert hashlib.sha256(blob.read_bytes()).hexdigest() == before
    assert Entry.objects.count() == entries
    assert AuditEvent.objects.filter(verb="label.add", target="needs-review").count() == 1


def test_it_swaps_the_labels_partial_for_htmx_and_reports_bad_names(
    client, owner, tmp_path, blob_dir
):
    session = team_session(tmp_path, owner)
    client.force_login(owner)
    add = reverse("review:label_add", args=[session.pk])
    html = client.post(add, {"name": "bug"}, headers={"HX-Request": "true"}).content.decode()
    assert html.startswith('<div id="review-labels"') and ">bug</a>" in html
    again = client.post(add, {"name": "bug"}, headers={"HX-Request": "true"})
    assert again.status_code == 200 and SessionLabel.objects.count() == 1
    bad = client.post(add, {"name": "<b>"}, headers={"HX-Request": "true"}).content.decode()
    assert "A label is 1 to 40" in bad and "<b>" not in bad
    remove = reverse("review:label_remove", args=[session.pk])
    html = client.post(remove, {"name": "bug"}, headers={"HX-Request": "true"}).content.decode()
    assert ">bug</a>" not in html
    assert not SessionLabel.objects.exists()
    assert list(AuditEvent.objects.order_by("id").values_list("verb", flat=True)) == [
        "label.add",
        "label.remove",
    ]


def test_it_keeps_labels_of_hidden_sessions_from_outsiders(
    client, owner, outsider, tmp_path, blob_dir
):
    session = team_session(tmp_path, owner)
    SessionLabel.objects.create(session=session, name="secret-triage")
    client.force_login(outsider)
    assert (
        client.post(reverse("review:label_add", args=[session.pk]), {"name": "x"}).status_code
        == 404
    )
    remove = reverse("review:label_remove", args=[session.pk])
    assert client.post(remove, {"name": "secret-triage"}).status_code == 404
    assert "secret-triage" not in client.get(reverse("library:index")).content.decode()
    assert SessionLabel.objects.count() == 1


def test_it_lists_labelled_sessions_in_a_constant_number_of_queries(
    client, owner, tmp_path, blob_dir
):
    client.force_login(owner)
    first = import_open(tmp_path, session_id="s-0", cwd="/w/0")
    SessionLabel.objects.create(session=first, name="bug")
    client.get(reverse("library:index"))
    with CaptureQueriesContext(connection) as few:
        client.get(reverse("library:index"))
    for n in range(1, 6):
        session = import_open(tmp_path, session_id=f"s-{n}", cwd=f"/w/{n}")
        SessionLabel.objects.create(session=session, name="bug")
        SessionLabel.objects.create(session=session, name=f"l{n}")
    with CaptureQueriesContext(connection) as many:
        html = client.get(reverse("library:index")).content.decode()
    assert len(many) == len(few)
    assert html.count('class="badge badge-review"') == 11
