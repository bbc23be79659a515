"""Running a job: claim it, keep its lease, send the plan's requests (or write them offline),
read the replies as Pi does, and append the entry in one transaction.

A run follows Pi's own sequence (``AgentSession.compact`` / ``navigateTree``) in the session's
dialect (``contextlab.pi.summaries``):

1. the engine plans, exactly as Pi: what to summarise, the summarisation request(s), the entry's
   ``firstKeptEntryId`` / ``tokensBefore`` (and, for Pi 1.x, its ``systemMessage``);
2. each request goes to the configured model (``providers``), or to the offline summariser; a
   reply Pi would refuse (an error; for Pi 1.x also one cut at the token cap) fails the job;
3. the texts are joined as Pi joins them, the file lists appended;
4. one transaction appends the entry (keys in Pi's order, an 8-hex id unique in the session, an
   ISO timestamp with milliseconds) as a child of the leaf, moves the session's leaf to it and
   marks the job succeeded. Nothing is appended before that transaction, so a failure, a
   cancellation or a killed worker never leaves a partial entry; imported entries are never
   touched.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Container
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

# Celery's soft time limit (celery.exceptions re-exports it), without importing Celery.
from billiard.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.utils import timezone

from contextlab.jobs import offline, providers
from contextlab.jobs.models import Job
from contextlab.jobs.parameters import JobParameters
from contextlab.jobs.services.errors import JobError, RetryLater
from contextlab.jobs.services.planning import plan_branch_summary, plan_compaction, profile_dialect
from contextlab.library.models import Entry, Session, SessionRevision
from contextlab.library.storage.append import append_entries
from contextlab.pi.entries import Json
from contextlab.pi.summaries import (
    SummaryCall,
    SummaryPlan,
    build_entry,
    entry_usage,
    join_summary,
    summary_failure,
)

__all__ = ["Summarised", "job_claim", "job_execute", "job_run", "summarise_plan"]

logger = logging.getLogger(__name__)

# What the job row keeps of a plan's preview: not the requests (stored once sent, within
# CONTEXTLAB_MAX_REQUEST_BYTES) nor Pi 1.x's replayed system state (the whole prompt).
_NOT_STORED = ("request", "turnPrefixRequest", "systemMessage")


def _progress(job: Job, percent: int, message: str, **fields: Any) -> None:
    Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING).update(
        progress=percent, progress_message=message[:200], updated_at=timezone.now(), **fields
    )


def _still_running(job: Job) -> bool:
    return Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING).exists()


def job_claim(*, job_id: int, now: datetime | None = None) -> Job | None:
    """Claim job `job_id` for this worker (see JobQuerySet.claim); None if someone else has it
    or it already ended. A job whose attempts are used up is failed here."""
    now = now or timezone.now()
    if not Job.objects.claim(job_id, now=now):
        return None
    job = Job.objects.select_related("session").get(pk=job_id)
    if job.attempts > job.max_attempts:
        _fail(
            job, f"Gave up after {job.max_attempts} attempts: {job.error or 'the worker was lost'}"
        )
        return None
    return job


def _plan(job: Job, config: providers.ProviderConfig) -> SummaryPlan:
    params = JobParameters.from_json(job.parameters)
    chosen = profile_dialect(job.session)
    if job.kind == Job.Kind.COMPACTION:
        return plan_compaction(job.session, job.leaf_entry_id, params, config, chosen=chosen)
    return plan_branch_summary(
        job.session, job.leaf_entry_id, job.target_entry_id, params, config, chosen=chosen
    )


class _CallProgress:
    """What the job row says while the plan's calls run: which call, then what the provider
    does as it happens (the row is written at most twice a second while text streams in)."""

    def __init__(self, job: Job, plan: SummaryPlan) -> None:
        self.job = job
        self.count = max(1, len(plan.calls))
        self.total = len(plan.calls)
        self.last_report: dict[int, float] = {}  # per call: when "receiving" was last written

    def before_call(self, index: int, call: SummaryCall) -> bool:
        if not _still_running(self.job):
            return False
        _progress(
            self.job,
            20 + 60 * index // self.count,
            f"summarising ({index + 1}/{self.total}: {call.role})",
        )
        return True

    def on_stream(self, index: int, call: SummaryCall, event: str, amount: int) -> None:
        step = f"{index + 1}/{self.total}: {call.role}"
        base = 20 + 60 * index // self.count
        if event == "sent":
            message = f"request {step} sent ({amount / 1000:,.0f} kB); waiting for the model"
        else:
            if time.monotonic() - self.last_report.get(index, 0.0) < 0.5:
                return
            self.last_report[index] = time.monotonic()
            # Pi's estimate: 4 characters a token.
            message = f"receiving the summary ({step}): ~{amount // 4:,} tokens so far"
            base += min(50, 5 + amount // 400) * 60 // 100 // self.count
        _progress(self.job, base, message)


def job_run(
    *,
    job: Job,
    complete: Callable[..., providers.Completion] | None = None,
    now: Callable[[], datetime] | None = None,
) -> Job:
    """Run a claimed job to its end: succeeded, failed, or cancelled meanwhile.

    Raises RetryLater when the model failed in a retryable way and attempts remain; the job is
    queued again (the caller schedules the next run).
    """
    complete = complete or providers.complete
    now = now or timezone.now
    try:
        # The job's attempts are its retries (with their backoff, visible on the job): the SDK
        # does not retry inside each attempt as well, or 3 attempts would make up to 9 calls.
        config = replace(providers.provider_from_public(job.provider), max_retries=0)
    except providers.ProviderError as exc:
        return _fail(job, str(exc))
    try:
        plan = _plan(job, config)
    except JobError as exc:
        return _fail(job, str(exc))
    stored = {k: v for k, v in plan.preview.items() if k not in _NOT_STORED}
    _progress(job, 10, "prepared", preview=stored)
    if plan.nothing and plan.kind == Job.Kind.BRANCH_SUMMARY.value:
        # Pi navigates without a summary when the abandoned branch is empty.
        return _finish_without_entry(job, plan)
    if plan.nothing:
        return _fail(job, plan.nothing)
    progress = _CallProgress(job, plan)
    try:
        outcome = summarise_plan(
            plan,
            config,
            complete=complete,
            before_call=progress.before_call,
            on_stream=progress.on_stream,
        )
    except providers.ProviderError as exc:
        return _provider_failed(job, exc)
    if outcome is None:  # cancelled between two calls
        return _reload(job)
    if outcome.error:
        return _fail(job, outcome.error, requests=outcome.requests, responses=outcome.responses)
    _progress(
        job,
        90,
        "summary received; writing the entry",
        requests=outcome.requests,
        responses=outcome.responses,
        usage=outcome.usage,
        cost=outcome.cost,
    )
    return _append_and_finish(
        job, plan, outcome.summary, outcome.details, now(), usage=outcome.entry_usage
    )


@dataclass
class Summarised:
    summary: str
    details: Json
    requests: list[Json]
    responses: list[Json]
    usage: Json  # the job's token counts over its calls
    cost: float
    error: str = ""
    entry_usage: Json | None = None  # what a Pi 1.x entry records (None: no model answered)


def summarise_plan(
    plan: SummaryPlan,
    config: providers.ProviderConfig,
    *,
    complete: Callable[..., providers.Completion] | None = None,
    before_call: Callable[[int, SummaryCall], bool] | None = None,
    on_stream: Callable[[int, SummaryCall, str, int], None] | None = None,
) -> Summarised | None:
    """Send the plan's requests (or write them offline) and join the texts as Pi does.

    Raises ProviderError when a call fails; returns None when ``before_call`` says stop, and a
    result with ``error`` (Pi's message) when Pi would refuse a reply.
    """
    complete = complete or providers.complete
    texts: dict[str, str] = {}
    requests: list[Json] = []
    responses: list[Json] = []
    usages: list[Json] = []
    usage = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}
    cost = 0.0
    for index, call in enumerate(plan.calls):
        if before_call is not None and not before_call(index, call):
            return None
        if config.is_offline:
            text = offline.summarise(
                call.role,
                call.messages,
                previous_summary=call.previous_summary,
                read_files=plan.read_files,
                modified_files=plan.modified_files,
            )
            requests.append({"role": call.role, "offline": True, "request": call.request})
            responses.append(
                {"role": call.role, "offline": True, "text": text, "stopReason": "stop"}
            )
            texts[call.role] = text
            continue
        stream = (
            None
            if on_stream is None
            else lambda event, amount, i=index, c=call: on_stream(i, c, event, amount)
        )
        result = complete(
            config,
            call.request,
            reasoning=call.thinking_level,
            variant=call.variant,
            on_stream=stream,
        )
        requests.append({"role": call.role, "body": result.request_body})
        responses.append({"role": call.role, "stopReason": result.stop_reason, **result.response})
        for key in usage:
            usage[key] += result.usage.get(key, 0)
        cost += result.usage.get("cost", {}).get("total", 0.0)
        if result.usage:
            usages.append(result.usage)
        error = summary_failure(plan, call, result.stop_reason, result.error_message)
        if error is not None:
            return Summarised("", {}, requests, responses, usage, cost, error)
        texts[call.role] = result.text
    summary, details = join_summary(plan, texts)
    return Summarised(summary, details, requests, responses, usage, cost, "", entry_usage(usages))


def _finish_without_entry(job: Job, plan: SummaryPlan) -> Job:
    with transaction.atomic():
        locked = Job.objects.select_for_update().filter(pk=job.pk).first()
        if locked is None or locked.status != Job.Status.RUNNING:
            return _reload(job)
        Session.objects.filter(pk=job.session_id).update(leaf_entry_id=plan.parent_id or "")
        finished = timezone.now()
        Job.objects.filter(pk=job.pk).update(
            status=Job.Status.SUCCEEDED,
            progress=100,
            progress_message=f"{plan.nothing}; the leaf moved without a summary",
            finished_at=finished,
            lease_expires_at=None,
            updated_at=finished,
        )
    return _reload(job)


def _superseded(job: Job, locked: Job) -> bool:
    """Another claim took this job over (this run lost its lease: it stalled past it)."""
    return (locked.claimed_by, locked.attempts) != (job.claimed_by, job.attempts)


def _provider_failed(job: Job, exc: providers.ProviderError) -> Job:
    if exc.retryable and job.attempts < job.max_attempts:
        countdown = settings.CONTEXTLAB_JOB_RETRY_BASE_SECONDS * (2 ** (job.attempts - 1))
        message = f"Attempt {job.attempts} failed: {exc}; retrying in {countdown:g}s"
        Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING).update(
            status=Job.Status.QUEUED,
            error=message,
            progress_message="waiting to retry",
            lease_expires_at=None,
            updated_at=timezone.now(),
        )
        raise RetryLater(countdown, message)
    return _fail(job, str(exc))


def _fail(job: Job, message: str, **fields: Any) -> Job:
    now = timezone.now()
    Job.objects.filter(pk=job.pk, status__in=Job.ACTIVE).update(
        status=Job.Status.FAILED,
        error=message,
        finished_at=now,
        progress_message="failed",
        lease_expires_at=None,
        updated_at=now,
        **fields,
    )
    return _reload(job)


def _reload(job: Job) -> Job:
    job.refresh_from_db()
    return job


class _TakenIds(Container[str]):
    """The entry ids of a revision, asked one candidate at a time (not all loaded)."""

    def __init__(self, entries: Any) -> None:
        self.entries = entries

    def __contains__(self, entry_id: object) -> bool:
        return bool(self.entries.filter(entry_id=entry_id).exists())


def _append_and_finish(
    job: Job,
    plan: SummaryPlan,
    summary: str,
    details: Json,
    moment: datetime,
    *,
    usage: Json | None = None,
) -> Job:
    with transaction.atomic():
        # Lock the job row: a cancel that committed before this point wins, and nothing is
        # appended; one that comes after finds the job succeeded.
        locked = Job.objects.select_for_update().filter(pk=job.pk).first()
        if locked is None or locked.status != Job.Status.RUNNING or _superseded(job, locked):
            return _reload(job)
        # Lock the session row, as the library's import does before it appends synced lines, then
        # the revision: concurrent appends (another job, a sync) get distinct seq numbers and ids.
        session = Session.objects.select_for_update().get(pk=job.session_id)
        assert session.current_revision_id is not None  # a session is stored with a revision
        revision = SessionRevision.objects.select_for_update().get(pk=session.current_revision_id)
        entries = Entry.objects.filter(revision=revision)
        if plan.parent_id is not None and not entries.filter(entry_id=plan.parent_id).exists():
            return _fail(
                job, f"Entry {plan.parent_id} is no longer in the session's current revision"
            )
        data = build_entry(plan, _TakenIds(entries), moment, summary, details, usage=usage)
        entry_id = data["id"]
        # Sequence, depth, figures, search vectors and tree index: the library's one append.
        append_entries(session=session, revision=revision, entries=[data])
        finished = timezone.now()
        Job.objects.filter(pk=job.pk).update(
            status=Job.Status.SUCCEEDED,
            progress=100,
            progress_message="entry written",
            result_entry_ids=[entry_id],
            finished_at=finished,
            lease_expires_at=None,
            error="",
            updated_at=finished,
        )
    return _reload(job)


class _LeaseKeeper:
    """Renews a running job's lease every third of it, from a thread of the process running it:
    while this process lives the job is its own; once it dies (SIGKILL included) the lease runs
    out and the workers' sweep hands the job to another worker."""

    def __init__(self, job_id: int) -> None:
        self.job_id = job_id
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"lease-{job_id}", daemon=True)

    def __enter__(self) -> _LeaseKeeper:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)

    def _run(self) -> None:
        interval = max(0.2, settings.CONTEXTLAB_JOB_LEASE_SECONDS / 3)
        try:
            while not self.stop.wait(interval):
                try:
                    if not Job.objects.renew_lease(self.job_id, now=timezone.now()):
                        return  # the job ended (or was taken over)
                except Exception:
                    logger.warning("could not renew the lease of job %s", self.job_id)
                    close_old_connections()
        finally:
            connection.close()


def job_execute(
    *, job_id: int, complete: Callable[..., providers.Completion] | None = None
) -> Job | None:
    """Claim and run one job (what a Celery task or the embedded runner calls).

    Returns the job after the run, or None if it could not be claimed. Raises RetryLater.
    """
    job = job_claim(job_id=job_id)
    if job is None:
        return None
    try:
        with _LeaseKeeper(job.pk):
            return job_run(job=job, complete=complete)
    except RetryLater:
        raise
    except SoftTimeLimitExceeded:
        return _fail(job, f"Timed out after {settings.CELERY_TASK_SOFT_TIME_LIMIT}s")
    except Exception:
        # The exception's text can hold database hosts, paths or values of the session: it goes
        # to the log; every viewer of the job sees a plain message.
        logger.exception("job %s crashed", job_id)
        return _fail(job, internal_error_message(job_id))


def internal_error_message(job_id: int) -> str:
    return (
        "Internal error: the job stopped because of a fault on the server, not in the session "
        f"or the model. An administrator can find the details in the worker's log (job {job_id})."
    )
