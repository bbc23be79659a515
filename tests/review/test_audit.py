"""The audit log: who triggered what, recorded by the views and commands that do it, and shown
per project, per session, and (to superusers) for everything."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from contextlab.jobs import services as job_services
from contextlab.jobs.models import Job
from contextlab.review.models import AuditEvent
from contextlab.review.services import audit_record
from tests.review.helpers import jsonl, session_lines, team_session

pytestmark = pytest.mark.django_db


def test_it_records_the_import_command_per_stored_session(tmp_path, blob_dir):
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(jsonl(session_lines(session_id="s-a", cwd="/w/a")))
    (folder / "b.jsonl").write_bytes(jsonl(session_lines(session_id="s-b", cwd="/w/b")))
    call_command("import_sessions", str(folder), "--json", stdout=io.StringIO())
    events = list(AuditEvent.objects.order_by("session__session_id"))
    assert [(e.verb, e.session.session_id, e.data["status"]) for e in events] == [
        ("session.import", "s-a", "new"),
        ("session.import", "s-b", "new"),
    ]
    assert events[0].actor is None and events[0].actor_label.startswith("import_sessions")
    assert events[0].project == events[0].session.project
    # Unchanged files on a second run are not events.
    call_command("import_sessions", str(folder), "--json", stdout=io.StringIO())
    assert AuditEvent.objects.count() == 2


def test_it_records_job_create_cancel_retry_and_export_from_the_views(
    client, owner, import_corpus, offline_provider
):
    from contextlab.library.models import ProjectMembership

    session, _ = import_corpus("tools")
    ProjectMembership.objects.create(project=session.project, user=owner, role="owner")
    client.force_login(owner)
    client.post(reverse("jobs:compact", args=[session.pk]), {"leaf": session.leaf_entry_id})
    job = Job.objects.get(session=session)
    client.post(reverse("jobs:cancel", args=[job.pk]))
    client.post(reverse("jobs:retry", args=[job.pk]))
    retried = Job.objects.exclude(pk=job.pk).get()
    response = client.get(reverse("jobs:export", args=[session.pk]))
    b"".join(response.streaming_content)
    events = list(AuditEvent.objects.order_by("id").values_list("verb", "data__job", "actor"))
    assert events == [
        ("job.create", job.pk, owner.pk),
        ("job.cancel", job.pk, owner.pk),
        ("job.retry", retried.pk, owner.pk),
        ("session.export", None, owner.pk),
    ]
    assert AuditEvent.objects.get(verb="job.retry").data["retry_of"] == job.pk
    page = client.get(reverse("review:session_audit", args=[session.pk])).content.decode()
    for verb in ("job.create", "job.cancel", "job.retry", "session.export"):
        assert f"<code>{verb}</code>" in page


def test_it_does_not_record_a_cancel_of_a_job_that_had_ended(
    owner_client, import_corpus, offline_provider
):
    session, _ = import_corpus("tools")
    job = job_services.job_create(session=session, kind="compaction", enqueue=False)
    job_services.job_cancel(job=job)
    owner_client.post(reverse("jobs:cancel", args=[job.pk]))
    assert not AuditEvent.objects.filter(verb="job.cancel").exists()


def test_it_shows_project_and_session_logs_to_members_only(
    client, owner, teammate, outsider, tmp_path, blob_dir
):
    session = team_session(tmp_path, owner, teammate)
    audit_record(actor=owner, verb="label.add", session=session, target="needs-review")
    urls = [
        reverse("review:project_audit", args=[session.project.pk]),
        reverse("review:session_audit", args=[session.pk]),
    ]
    for user, status in ((owner, 200), (teammate, 200), (outsider, 404)):
        client.force_login(user)
        for url in urls:
            response = client.get(url)
            assert response.status_code == status, (user, url)
            if status == 200:
                assert "needs-review" in response.content.decode()


def test_it_keeps_the_global_log_for_superusers(
    client, owner, tmp_path, blob_dir, django_user_model
):
    audit_record(actor=None, verb="session.import", actor_label="import_sessions (by ci)")
    client.force_login(owner)
    assert client.get(reverse("review:audit")).status_code == 403
    admin = django_user_model.objects.create_superuser("admin", password="x")
    client.force_login(admin)
    html = client.get(reverse("review:audit")).content.decode()
    assert "import_sessions (by ci)" in html


def test_it_lists_events_in_a_constant_number_of_queries(client, owner, tmp_path, blob_dir):
    session = team_session(tmp_path, owner)
    client.force_login(owner)
    url = reverse("review:project_audit", args=[session.project.pk])
    audit_record(actor=owner, verb="label.add", session=session, target="a")
    client.get(url)
    with CaptureQueriesContext(connection) as few:
        client.get(url)
    for n in range(10):
        audit_record(actor=owner, verb="comment.create", session=session, target=f"entry {n}")
    with CaptureQueriesContext(connection) as many:
        html = client.get(url).content.decode()
    assert len(many) == len(few)
    assert html.count("<code>comment.create</code>") == 10
