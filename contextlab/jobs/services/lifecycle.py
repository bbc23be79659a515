"""A job's life before and after its run: create (queued once the transaction commits), cancel,
retry; and Pi's navigation without a summary, which writes nothing."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from contextlab.jobs import providers
from contextlab.jobs.models import Job
from contextlab.jobs.parameters import JobParameters
from contextlab.jobs.services.errors import JobConflict, JobError
from contextlab.jobs.signals import job_committed
from contextlab.library.models import Entry, Session
from contextlab.library.selectors import engine_entries
from contextlab.pi.writer import leaf_after_navigation
from contextlab.review.services import audit_job, audit_record

__all__ = [
    "job_cancel",
    "job_create",
    "job_retry",
    "session_continue_without_summary",
]


def _enqueue(job_id: int) -> None:
    # The queue (contextlab.jobs.tasks) sits above these services: it hears of the committed job.
    job_committed.send(sender=Job, job_id=job_id)


def job_create(
    *,
    session: Session,
    kind: str,
    leaf_entry_id: str | None = None,
    target_entry_id: str = "",
    parameters: JobParameters | Mapping[str, Any] | None = None,
    requested_by: Any = None,
    enqueue: bool = True,
    retry_of: Job | None = None,
) -> Job:
    """Queue a job; it is enqueued only once the transaction that created it commits. A job a
    user asked for (`requested_by`) is audited ("job.create", or "job.retry" for a retry) in the
    same transaction. `parameters` are what the user chose (a mapping: their stored JSON form,
    as `Job.parameters` holds it)."""
    if kind not in Job.Kind.values:
        raise JobError(f"Unknown job kind {kind!r}")
    # The stored leaf, not the caller's copy: a job that just finished may have moved it.
    session_leaf = Session.objects.values_list("leaf_entry_id", flat=True).get(pk=session.pk)
    leaf = leaf_entry_id or session_leaf
    if not leaf:
        raise JobError("The session has no entries to work on")
    if not Entry.objects.for_session(session).filter(entry_id=leaf).exists():
        raise JobError(f"Entry {leaf} is not in session {session.session_id}")
    if kind == Job.Kind.BRANCH_SUMMARY:
        if not target_entry_id:
            raise JobError("A branch summary needs a target entry")
        if target_entry_id == leaf:
            raise JobError("The target is the current leaf: there is nothing to navigate")
        if not Entry.objects.for_session(session).filter(entry_id=target_entry_id).exists():
            raise JobError(f"Entry {target_entry_id} is not in session {session.session_id}")
    active = Job.objects.active().filter(session=session).first()
    if active is not None:
        raise JobConflict(_conflict_message(active))
    config = providers.active_provider()
    # What the user chose only: the model's limits come from the job's provider when it runs
    # (a retry after the model was changed must not keep the old model's limits).
    if not isinstance(parameters, JobParameters):
        parameters = JobParameters.from_json(dict(parameters or {}))
    params = parameters.as_json()
    try:
        with transaction.atomic():
            _check_model_call_budget(requested_by, config)
            job = Job.objects.create(
                kind=kind,
                session=session,
                leaf_entry_id=leaf,
                session_leaf_entry_id=session_leaf or "",
                target_entry_id=target_entry_id,
                parameters=params,
                provider=config.public(),
                max_attempts=settings.CONTEXTLAB_JOB_MAX_ATTEMPTS,
                requested_by=requested_by if getattr(requested_by, "pk", None) else None,
                retry_of=retry_of,
                progress_message="queued",
            )
            if getattr(requested_by, "is_authenticated", False):
                if retry_of is None:
                    audit_job(actor=requested_by, verb="job.create", job=job)
                else:
                    audit_job(actor=requested_by, verb="job.retry", job=job, retry_of=retry_of.pk)
    except IntegrityError:
        # Lost the race with another request: the partial unique index saw both.
        active = Job.objects.active().filter(session=session).first()
        raise JobConflict(_conflict_message(active)) from None
    if enqueue:
        transaction.on_commit(lambda: _enqueue(job.pk))
        if not transaction.get_connection().in_atomic_block:
            job.refresh_from_db()  # sent already, or marked "not sent"
    return job


def _check_model_call_budget(requested_by: Any, config: providers.ProviderConfig) -> None:
    """CONTEXTLAB_MODEL_CALLS_PER_USER_PER_HOUR: jobs that call a model, per user, last hour.

    Called inside the transaction that stores the job. The user's row is locked first, so that
    simultaneous requests by one user count and insert one after the other: without the lock,
    each would count the jobs committed before it and all of them could pass (READ COMMITTED
    gives the count after the lock a fresh snapshot, which sees the jobs the others stored).
    """
    limit = settings.CONTEXTLAB_MODEL_CALLS_PER_USER_PER_HOUR
    if not limit or config.is_offline or not getattr(requested_by, "pk", None):
        return
    list(
        get_user_model()
        .objects.select_for_update()
        .filter(pk=requested_by.pk)
        .values_list("pk", flat=True)
    )
    since = timezone.now() - timedelta(hours=1)
    used = (
        Job.objects.filter(requested_by=requested_by, created_at__gte=since)
        .exclude(provider__offline=True)
        .exclude(status=Job.Status.NOT_SENT)
        .count()
    )
    if used >= limit:
        raise JobError(
            f"You have started {used} model jobs in the last hour, the limit per user "
            f"(CONTEXTLAB_MODEL_CALLS_PER_USER_PER_HOUR={limit}); try again later."
        )


def _conflict_message(active: Job | None) -> str:
    if active is None:
        return "Another job was just started for this session; wait for it to finish."
    return (
        f"{active.get_kind_display()} job #{active.pk} is already {active.status} for this "
        "session; wait for it to finish or cancel it first."
    )


def job_cancel(*, job: Job, actor: Any = None) -> bool:
    """Cancel a queued or running job. A running one stops before appending anything. A cancel
    by a user (`actor`) is audited in the same transaction."""
    now = timezone.now()
    with transaction.atomic():
        changed = Job.objects.filter(pk=job.pk, status__in=Job.ACTIVE).update(
            status=Job.Status.CANCELLED,
            finished_at=now,
            progress_message="cancelled",
            updated_at=now,
        )
        if changed and getattr(actor, "is_authenticated", False):
            audit_job(actor=actor, verb="job.cancel", job=job)
    job.refresh_from_db()
    return changed == 1


def job_retry(*, job: Job, requested_by: Any = None) -> Job:
    """Start a failed or cancelled job again, as a new job (the history keeps both).

    Refused, with the reason, when the retry could only pile up entries: the job was already
    retried (retry the newest one), its chain of retries is at CONTEXTLAB_JOB_MAX_RETRIES, the
    session's leaf moved since it was queued (another job or new lines appended there), or the
    same compaction / branch summary already exists as a child of its leaf.
    """
    if job.status not in Job.RETRYABLE:
        raise JobError(
            "Only failed, cancelled or unsent jobs can be retried "
            f"(job #{job.pk} is {job.get_status_display().lower()})"
        )
    later = job.retries.order_by("-pk").first()
    if later is not None:
        raise JobError(
            f"Job #{job.pk} was already retried as job #{later.pk}; retry that one if needed."
        )
    chain = 0
    ancestor = job
    while ancestor.retry_of_id is not None and chain <= settings.CONTEXTLAB_JOB_MAX_RETRIES:
        chain += 1
        ancestor = Job.objects.only("pk", "retry_of_id").get(pk=ancestor.retry_of_id)
    if chain >= settings.CONTEXTLAB_JOB_MAX_RETRIES:
        raise JobError(
            f"Job #{job.pk} is already retry {chain} of job #{ancestor.pk} (at most "
            f"{settings.CONTEXTLAB_JOB_MAX_RETRIES}); check the error and start a new job."
        )
    leaf = Session.objects.values_list("leaf_entry_id", flat=True).get(pk=job.session_id)
    # Compared with the leaf the session had when the job was queued, not the entry the job
    # works at: "Compact here…" at an earlier entry is retried as long as nothing moved since.
    queued_leaf = job.session_leaf_entry_id or job.leaf_entry_id
    if leaf != queued_leaf:
        raise JobError(
            f"The session's leaf moved from {queued_leaf} to {leaf} since job #{job.pk} "
            "was queued: retrying would branch off an old entry. Start a new job from the "
            "current leaf instead."
        )
    existing = _existing_result(job)
    if existing is not None:
        raise JobError(existing)
    return job_create(
        session=job.session,
        kind=job.kind,
        leaf_entry_id=job.leaf_entry_id,
        target_entry_id=job.target_entry_id,
        parameters=JobParameters.from_json(job.parameters),
        requested_by=requested_by,
        retry_of=job,
    )


def _existing_result(job: Job) -> str | None:
    """Why the job's result is already in the session, if it is: a job that wrote the same
    compaction or branch summary (same leaf and target), or a compaction entry below the leaf."""
    done = (
        Job.objects.filter(
            session_id=job.session_id,
            kind=job.kind,
            leaf_entry_id=job.leaf_entry_id,
            target_entry_id=job.target_entry_id,
            status=Job.Status.SUCCEEDED,
        )
        .order_by("-pk")
        .first()
    )
    if done is not None:
        return (
            f"Job #{done.pk} already wrote this {job.get_kind_display().lower()} "
            f"({', '.join(done.result_entry_ids) or 'no entry'}); retrying would add a sibling."
        )
    if job.kind != Job.Kind.COMPACTION:
        return None
    child = (
        Entry.objects.for_session(job.session)
        .filter(parent_id=job.leaf_entry_id, type="compaction")
        .values_list("entry_id", flat=True)
        .first()
    )
    if child is not None:
        return (
            f"Entry {job.leaf_entry_id} already has a compaction ({child}); retrying would add "
            "a sibling."
        )
    return None


def session_continue_without_summary(
    *, session: Session, target_entry_id: str, actor: Any = None, old_leaf: str = ""
) -> str | None:
    """Pi's navigateTree without a summary: the leaf moves, nothing is written to the file.

    Like Pi, this is not persisted in the session file (reopening puts the leaf back on the last
    line); contextlab keeps the new leaf on the session row until the next entry arrives.
    """
    entries = {e.get("id"): e for e in engine_entries(session)}
    target = entries.get(target_entry_id)
    if target is None:
        raise JobError(f"Entry {target_entry_id} is not in session {session.session_id}")
    new_leaf = leaf_after_navigation(target)
    with transaction.atomic():
        Session.objects.filter(pk=session.pk).update(leaf_entry_id=new_leaf or "")
        if getattr(actor, "is_authenticated", False):
            audit_record(
                actor=actor,
                verb="session.continue",
                session=session,
                target=f"leaf {old_leaf} -> {new_leaf or 'the root'}",
                data={"from": old_leaf, "to": new_leaf},
            )
    session.leaf_entry_id = new_leaf or ""
    return new_leaf
