"""Job services against PostgreSQL: creation rules, the atomic claim, cancel, append, export."""

from __future__ import annotations

import io
import json

import pytest

from contextlab.inspector.models import ResourceProfile
from contextlab.jobs import services
from contextlab.jobs.models import Job
from contextlab.jobs.parameters import JobParameters
from contextlab.jobs.services import lifecycle, running
from contextlab.library.models import Entry
from contextlab.pi.dialects.detect import detect_turn_dialect
from contextlab.pi.summaries import SummaryPlan
from contextlab.pi.writer import ENTRY_KEY_ORDER

pytestmark = pytest.mark.django_db


def test_it_refuses_a_second_active_job_on_the_same_session(import_corpus, offline_provider):
    session, _ = import_corpus("tools")
    first = services.job_create(session=session, kind="compaction", enqueue=False)
    with pytest.raises(services.JobConflict, match=f"job #{first.pk} is already queued"):
        services.job_create(session=session, kind="compaction", enqueue=False)
    services.job_cancel(job=first)
    second = services.job_create(session=session, kind="compaction", enqueue=False)
    assert second.leaf_entry_id == session.leaf_entry_id


def test_the_database_refuses_two_active_jobs_even_past_the_check(import_corpus, offline_provider):
    from django.db import IntegrityError, transaction

    session, _ = import_corpus("tools")
    Job.objects.create(kind="compaction", session=session, leaf_entry_id=session.leaf_entry_id)
    with pytest.raises(IntegrityError), transaction.atomic():
        Job.objects.create(kind="compaction", session=session, leaf_entry_id=session.leaf_entry_id)


def test_it_rejects_unknown_entries_and_a_target_equal_to_the_leaf(import_corpus, offline_provider):
    session, _ = import_corpus("branches")
    with pytest.raises(services.JobError, match="Entry nope is not in session"):
        services.job_create(session=session, kind="compaction", leaf_entry_id="nope", enqueue=False)
    with pytest.raises(services.JobError, match="nothing to navigate"):
        services.job_create(
            session=session,
            kind="branch_summary",
            target_entry_id=session.leaf_entry_id,
            enqueue=False,
        )


def test_only_one_claim_wins(import_corpus, offline_provider):
    session, _ = import_corpus("tools")
    job = services.job_create(session=session, kind="compaction", enqueue=False)
    assert services.job_claim(job_id=job.pk) is not None
    assert services.job_claim(job_id=job.pk) is None
    job.refresh_from_db()
    assert job.status == "running" and job.attempts == 1


def test_a_running_job_whose_lease_expired_is_taken_over_then_given_up(
    import_corpus, offline_provider
):
    from datetime import timedelta

    from django.utils import timezone

    session, _ = import_corpus("tools")
    job = services.job_create(session=session, kind="compaction", enqueue=False)
    for attempt in range(1, job.max_attempts + 1):
        later = timezone.now() + timedelta(seconds=10_000 * attempt)
        assert services.job_claim(job_id=job.pk, now=later) is not None
    job.refresh_from_db()
    assert job.attempts == job.max_attempts
    assert services.job_claim(job_id=job.pk, now=timezone.now() + timedelta(days=30)) is None
    job.refresh_from_db()
    assert job.status == "failed"
    assert job.error.startswith(f"Gave up after {job.max_attempts} attempts")


def _plan(session, kind="compaction"):
    leaf = session.leaf_entry_id
    return SummaryPlan(
        kind,
        detect_turn_dialect([], None, {}),
        {},
        leaf_id=leaf,
        parent_id=leaf,
        first_kept_entry_id=leaf,
        tokens_before=1234,
        read_files=["a.py"],
        modified_files=[],
    )


def test_an_appended_entry_has_pis_keys_a_fresh_id_and_moves_the_leaf(
    import_corpus, offline_provider
):
    session, _ = import_corpus("tools")
    old_leaf = session.leaf_entry_id
    job = services.job_create(session=session, kind="compaction", enqueue=False)
    job = services.job_claim(job_id=job.pk)
    from django.utils import timezone

    done = running._append_and_finish(
        job, _plan(session), "S", {"readFiles": ["a.py"], "modifiedFiles": []}, timezone.now()
    )
    assert done.status == "succeeded"
    entry = Entry.objects.get(entry_id=done.result_entry_ids[0])
    assert entry.origin == "contextlab" and entry.parent_id == old_leaf
    assert list(entry.data) == list(ENTRY_KEY_ORDER["compaction"])
    assert entry.data["fromHook"] is False
    assert len(entry.entry_id) == 8 and int(entry.entry_id, 16) >= 0
    assert entry.data["timestamp"].endswith("Z") and len(entry.data["timestamp"]) == 24
    session.refresh_from_db()
    assert session.leaf_entry_id == entry.entry_id
    assert (
        Entry.objects.filter(revision=session.current_revision, entry_id=entry.entry_id).count()
        == 1
    )


@pytest.mark.parametrize("parent", ["leaf", "root"])
def test_an_append_keeps_the_figures_a_reimport_computes(import_corpus, offline_provider, parent):
    # Depth, branches, counts, tokens and activity, kept as the import keeps them.
    from django.core.management import call_command
    from django.utils import timezone

    from contextlab.library.models import Session

    session, _ = import_corpus("branches")
    job = services.job_claim(
        job_id=services.job_create(session=session, kind="compaction", enqueue=False).pk
    )
    plan = _plan(session)
    if parent == "root":
        plan.parent_id = None  # a new root: one more tree leaf
    done = running._append_and_finish(job, plan, "S", {}, timezone.now())
    assert done.status == "succeeded"
    fields = [
        "entry_count", "message_count", "compaction_count", "branch_count", "tokens_estimated",
        "leaf_entry_id", "first_activity", "last_activity",
    ]  # fmt: skip
    after_job = Session.objects.filter(pk=session.pk).values(*fields).get()
    depth = Entry.objects.get(entry_id=done.result_entry_ids[0]).depth
    call_command("reimport_sessions", session.session_id, stdout=io.StringIO())
    assert Session.objects.filter(pk=session.pk).values(*fields).get() == after_job
    assert (
        Entry.objects.get(
            revision=Session.objects.get(pk=session.pk).current_revision,
            entry_id=done.result_entry_ids[0],
        ).depth
        == depth
    )


def test_a_job_cancelled_before_the_append_appends_nothing(import_corpus, offline_provider):
    from django.utils import timezone

    session, _ = import_corpus("tools")
    count = Entry.objects.filter(session=session).count()
    job = services.job_claim(
        job_id=services.job_create(session=session, kind="compaction", enqueue=False).pk
    )
    services.job_cancel(job=job)
    done = running._append_and_finish(job, _plan(session), "S", {}, timezone.now())
    assert done.status == "cancelled"
    assert Entry.objects.filter(session=session).count() == count


def test_it_exports_an_untouched_v3_session_byte_for_byte(import_corpus):
    session, path = import_corpus("branches")
    assert b"".join(services.session_export_chunks(session)) == path.read_bytes()


def test_it_exports_added_entries_after_the_original_bytes(import_corpus, offline_provider):
    from django.utils import timezone

    session, path = import_corpus("branches")
    job = services.job_claim(
        job_id=services.job_create(session=session, kind="compaction", enqueue=False).pk
    )
    running._append_and_finish(
        job, _plan(session), "S", {"readFiles": [], "modifiedFiles": []}, timezone.now()
    )
    exported = b"".join(services.session_export_chunks(session))
    original = path.read_bytes()
    assert exported.startswith(original)
    added = exported[len(original) :].decode()
    assert added.count("\n") == 1
    line = json.loads(added)
    assert list(line) == list(ENTRY_KEY_ORDER["compaction"])
    assert added.startswith('{"type":"compaction","id":"')


def test_a_job_and_its_audit_event_commit_together(import_corpus, offline_provider, monkeypatch):
    from django.contrib.auth import get_user_model

    from contextlab.review.models import AuditEvent

    session, _ = import_corpus("tools")
    user = get_user_model().objects.create_user("auditor", password="x")
    job = services.job_create(session=session, kind="compaction", requested_by=user, enqueue=False)
    assert list(AuditEvent.objects.values_list("verb", "actor__username")) == [
        ("job.create", "auditor")
    ]
    assert services.job_cancel(job=job, actor=user)
    assert AuditEvent.objects.filter(verb="job.cancel").count() == 1

    def refuse(**kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("the audit log is unavailable")

    # An audit event that cannot be written takes the job with it: no unaudited change.
    monkeypatch.setattr(lifecycle, "audit_job", refuse)
    with pytest.raises(RuntimeError):
        services.job_create(session=session, kind="compaction", requested_by=user, enqueue=False)
    assert Job.objects.filter(session=session).count() == 1


def test_a_compaction_job_runs_in_the_dialect_the_project_s_profile_chooses(
    import_corpus, offline_provider
):
    session, _ = import_corpus("tools")  # a Pi 0.80.2 session: 0.x turns
    assert services.profile_dialect(session) is None
    ResourceProfile.objects.create(project=session.project, dialect="0.73")
    assert services.profile_dialect(session) == "0.73"
    job = services.job_create(
        session=session,
        kind="compaction",
        parameters=JobParameters(keep_recent_tokens=10),
        enqueue=False,
    )
    job = services.job_execute(job_id=job.pk)
    assert job.status == Job.Status.SUCCEEDED, job.error
    # Pi 0.73.1's summarisation system prompt (the request the job would send), not 0.80.2's.
    assert "an AI coding assistant" in json.dumps(job.requests[0])
