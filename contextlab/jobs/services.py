"""Compaction and branch-summary jobs: create, run, cancel, retry; and the entries they append.

A run follows Pi 0.80.2's own sequence (``AgentSession.compact`` / ``navigateTree``):

1. the engine prepares, exactly as Pi (``contextlab.pi.compaction`` / ``branch_summary``): what to
   summarise, the summarisation request(s), the entry's ``firstKeptEntryId`` / ``tokensBefore``;
2. each request goes to the configured model (``providers``), or to the offline summariser;
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
from collections.abc import Callable, Container, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import IntegrityError, close_old_connections, connection, transaction
from django.utils import timezone

from contextlab.jobs import offline, providers
from contextlab.jobs.models import Job
from contextlab.jobs.parameters import JobParameters
from contextlab.jobs.signals import job_committed
from contextlab.library.models import Entry, Session, SessionRevision
from contextlab.library.selectors import engine_entries
from contextlab.library.storage.append import append_entries
from contextlab.pi import branch_summary, compaction
from contextlab.pi.branch_summary import join_branch_summary
from contextlab.pi.compaction import (
    auto_compaction_what_if,
    format_file_operations,
    join_split_turn,
)
from contextlab.pi.jsutil import json_stringify
from contextlab.pi.session import SessionTree, parse_session_bytes
from contextlab.pi.tokens import DEFAULT_KEEP_RECENT_TOKENS, DEFAULT_RESERVE_TOKENS
from contextlab.pi.writer import (
    SessionWriter,
    iso_timestamp,
    leaf_after_navigation,
    ordered_entry,
    summarizer_thinking_level,
)
from contextlab.review.services import audit_job, audit_record

logger = logging.getLogger(__name__)

Json = dict[str, Any]


class JobError(Exception):
    """A job cannot be created or run; the message is shown to the user as is."""


class JobConflict(JobError):
    pass


@dataclass
class RetryLater(Exception):
    """The model failed in a way worth retrying (429, 5xx, timeout); run again after a delay."""

    countdown: float
    reason: str


# --------------------------------------------------------------------------------------------
# Plans: what the engine says Pi would do
# --------------------------------------------------------------------------------------------


@dataclass
class PlannedCall:
    role: str  # "history", "turn_prefix" or "branch" (Pi's generateSummary / TurnPrefix / Branch)
    request: Json  # {systemPrompt, messages, maxTokens}, as Pi builds it
    messages: list[Json]  # the agent messages behind it (for the offline summariser)
    previous_summary: str | None = None
    reasoning: str | None = None


@dataclass
class Plan:
    kind: str
    preview: Json
    calls: list[PlannedCall] = field(default_factory=list)
    read_files: list[str] = field(default_factory=list)
    modified_files: list[str] = field(default_factory=list)
    parent_id: str | None = None
    entry: Json = field(default_factory=dict)  # fields besides summary/details
    split_turn: bool = False
    nothing: str | None = None  # why nothing will be appended


def plan_compaction(session: Session, leaf_id: str, params: Json) -> Plan:
    """Pi's ``prepareCompaction`` + the request(s) ``compact`` would send, at ``leaf_id``."""
    return plan_compaction_entries(engine_entries(session), leaf_id, params, session.session_id)


def plan_compaction_entries(entries: list[Json], leaf_id: str, params: Json, name: str) -> Plan:
    path = SessionTree(entries).path(leaf_id)
    if not path:
        raise JobError(f"Entry {leaf_id} is not in session {name}")
    options = compaction.CompactionOptions(
        reserve_tokens=params.get("reserveTokens", DEFAULT_RESERVE_TOKENS),
        keep_recent_tokens=params.get("keepRecentTokens", DEFAULT_KEEP_RECENT_TOKENS),
        model_max_tokens=params.get("modelMaxTokens", 0),
        custom_instructions=params.get("customInstructions") or None,
    )
    preview = compaction.compaction_preview(path, options)
    if path[-1].get("type") == "compaction":
        return Plan("compaction", preview.to_json(), nothing="Already compacted")
    if preview.preparation is None:
        return Plan(
            "compaction", preview.to_json(), nothing="Nothing to compact (session too small)"
        )
    prep = preview.preparation
    plan = Plan(
        "compaction",
        preview.to_json(),
        read_files=list(prep.read_files),
        modified_files=list(prep.modified_files),
        parent_id=leaf_id,
        entry={"firstKeptEntryId": prep.first_kept_entry_id, "tokensBefore": prep.tokens_before},
        split_turn=bool(prep.is_split_turn and prep.turn_prefix_messages),
    )
    # Pi passes the session's thinking level to the summariser (used only by reasoning models).
    reasoning = params.get("thinkingLevel") or summarizer_thinking_level(path)
    if preview.request is not None:
        plan.calls.append(
            PlannedCall(
                "history",
                preview.request,
                prep.messages_to_summarize,
                prep.previous_summary,
                reasoning,
            )
        )
    if preview.turn_prefix_request is not None:
        plan.calls.append(
            PlannedCall(
                "turn_prefix",
                preview.turn_prefix_request,
                prep.turn_prefix_messages,
                None,
                reasoning,
            )
        )
    return plan


def plan_branch_summary(session: Session, old_leaf: str, target: str, params: Json) -> Plan:
    """Pi's ``navigateTree`` with a summary: entries to summarise, the request, the new leaf."""
    return plan_branch_summary_entries(
        engine_entries(session), old_leaf, target, params, session.session_id
    )


def plan_branch_summary_entries(
    entries: list[Json], old_leaf: str, target: str, params: Json, name: str
) -> Plan:
    tree = SessionTree(entries)
    by_id = {e.get("id"): e for e in entries}
    if target not in by_id:
        raise JobError(f"Entry {target} is not in session {name}")
    if old_leaf not in by_id:
        raise JobError(f"Entry {old_leaf} is not in session {name}")
    options = branch_summary.BranchSummaryOptions(
        reserve_tokens=params.get("reserveTokens", DEFAULT_RESERVE_TOKENS),
        context_window=params.get("contextWindow", 0),
        custom_instructions=params.get("customInstructions") or None,
        replace_instructions=bool(params.get("replaceInstructions")),
    )
    preview = branch_summary.branch_summary_preview(tree, old_leaf, target, options)
    # Where the leaf lands (agent-session.js navigateTree): a user message or a custom message
    # sends its text back to the editor, so the leaf is its parent.
    new_leaf = leaf_after_navigation(by_id[target])
    plan = Plan(
        "branch_summary",
        preview.to_json(),
        read_files=list(preview.read_files),
        modified_files=list(preview.modified_files),
        parent_id=new_leaf,
    )
    if not preview.entry_ids:
        plan.nothing = "Nothing to summarise: the target is on the current branch"
    elif preview.request is not None:
        plan.calls.append(PlannedCall("branch", preview.request, preview.messages))
    return plan


# --------------------------------------------------------------------------------------------
# Create / cancel / retry
# --------------------------------------------------------------------------------------------


def _enqueue(job_id: int) -> None:
    # The queue (contextlab.jobs.tasks) sits above these services: it hears of the committed job.
    job_committed.send(sender=Job, job_id=job_id)


def with_model_limits(parameters: Json | None, config: providers.ProviderConfig) -> Json:
    """Job parameters with the model's context window and output cap filled in where the user
    gave none (Pi plans a compaction against the model it will call)."""
    return {
        "contextWindow": config.context_window,
        "modelMaxTokens": config.max_tokens,
        **(parameters or {}),
    }


def job_create(
    *,
    session: Session,
    kind: str,
    leaf_entry_id: str | None = None,
    target_entry_id: str = "",
    parameters: JobParameters | Json | None = None,
    requested_by: Any = None,
    enqueue: bool = True,
    retry_of: Job | None = None,
) -> Job:
    """Queue a job; it is enqueued only once the transaction that created it commits. A job a
    user asked for (`requested_by`) is audited ("job.create", or "job.retry" for a retry) in the
    same transaction."""
    if kind not in Job.Kind.values:
        raise JobError(f"Unknown job kind {kind!r}")
    # The stored leaf, not the caller's copy: a job that just finished may have moved it.
    leaf = leaf_entry_id or Session.objects.values_list("leaf_entry_id", flat=True).get(
        pk=session.pk
    )
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
    _check_model_call_budget(requested_by, config)
    # What the user chose only: the model's limits come from the job's provider when it runs
    # (a retry after the model was changed must not keep the old model's limits).
    params = (
        parameters.as_json() if isinstance(parameters, JobParameters) else dict(parameters or {})
    )
    try:
        with transaction.atomic():
            job = Job.objects.create(
                kind=kind,
                session=session,
                leaf_entry_id=leaf,
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
    """CONTEXTLAB_MODEL_CALLS_PER_USER_PER_HOUR: jobs that call a model, per user, last hour."""
    limit = settings.CONTEXTLAB_MODEL_CALLS_PER_USER_PER_HOUR
    if not limit or config.is_offline or not getattr(requested_by, "pk", None):
        return
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
    if leaf != job.leaf_entry_id:
        raise JobError(
            f"The session's leaf moved from {job.leaf_entry_id} to {leaf} since job #{job.pk} "
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
        parameters=job.parameters,
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


# --------------------------------------------------------------------------------------------
# Run
# --------------------------------------------------------------------------------------------


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
        params = with_model_limits(job.parameters, config)
        plan = (
            plan_compaction(job.session, job.leaf_entry_id, params)
            if job.kind == Job.Kind.COMPACTION
            else plan_branch_summary(job.session, job.leaf_entry_id, job.target_entry_id, params)
        )
    except JobError as exc:
        return _fail(job, str(exc))
    # The preparation without the request bodies (those are stored once sent, within
    # CONTEXTLAB_MAX_REQUEST_BYTES): a huge session's plan must not bloat the job row.
    stored = {k: v for k, v in plan.preview.items() if k not in ("request", "turnPrefixRequest")}
    _progress(job, 10, "prepared", preview=stored)
    if plan.nothing and plan.kind == Job.Kind.BRANCH_SUMMARY:
        # Pi navigates without a summary when the abandoned branch is empty.
        return _finish_without_entry(job, plan)
    if plan.nothing:
        return _fail(job, plan.nothing)

    def on_call(index: int, call: PlannedCall) -> bool:
        if not _still_running(job):
            return False
        _progress(
            job,
            20 + 60 * index // max(1, len(plan.calls)),
            f"summarising ({index + 1}/{len(plan.calls)}: {call.role})",
        )
        return True

    last_report: dict[int, float] = {}  # per call: when "receiving" was last written

    def on_stream(index: int, call: PlannedCall, event: str, amount: int) -> None:
        # What the provider does, as it happens; the row is written at most twice a second.
        step = f"{index + 1}/{len(plan.calls)}: {call.role}"
        base = 20 + 60 * index // max(1, len(plan.calls))
        if event == "sent":
            message = f"request {step} sent ({amount / 1000:,.0f} kB); waiting for the model"
        else:
            if time.monotonic() - last_report.get(index, 0.0) < 0.5:
                return
            last_report[index] = time.monotonic()
            # Pi's estimate: 4 characters a token.
            message = f"receiving the summary ({step}): ~{amount // 4:,} tokens so far"
            base += min(50, 5 + amount // 400) * 60 // 100 // max(1, len(plan.calls))
        _progress(job, base, message)

    try:
        outcome = summarise_plan(
            plan, config, complete=complete, before_call=on_call, on_stream=on_stream
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
    return _append_and_finish(job, plan, outcome.summary, outcome.details, now())


@dataclass
class Summarised:
    summary: str
    details: Json
    requests: list[Json]
    responses: list[Json]
    usage: Json
    cost: float
    error: str = ""


def summarise_plan(
    plan: Plan,
    config: providers.ProviderConfig,
    *,
    complete: Callable[..., providers.Completion] | None = None,
    before_call: Callable[[int, PlannedCall], bool] | None = None,
    on_stream: Callable[[int, PlannedCall, str, int], None] | None = None,
) -> Summarised | None:
    """Send the plan's requests (or write them offline) and join the texts as Pi does.

    Raises ProviderError when a call fails; returns None when ``before_call`` says stop, and a
    result with ``error`` when the model answered with an error stop reason (Pi's messages).
    """
    complete = complete or providers.complete
    texts: dict[str, str] = {}
    requests: list[Json] = []
    responses: list[Json] = []
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
        if on_stream is None:
            result = complete(config, call.request, reasoning=call.reasoning)
        else:
            result = complete(
                config,
                call.request,
                reasoning=call.reasoning,
                on_stream=lambda event, amount, i=index, c=call: on_stream(i, c, event, amount),
            )
        requests.append({"role": call.role, "body": result.request_body})
        responses.append({"role": call.role, "stopReason": result.stop_reason, **result.response})
        for key in usage:
            usage[key] += result.usage.get(key, 0)
        cost += result.usage.get("cost", {}).get("total", 0.0)
        if result.stop_reason in ("error", "aborted"):
            prefix = {
                "history": "Summarization failed",
                "turn_prefix": "Turn prefix summarization failed",
            }.get(call.role, "Summarization failed")
            error = f"{prefix}: {result.error_message or 'Unknown error'}"
            return Summarised("", {}, requests, responses, usage, cost, error)
        texts[call.role] = result.text
    summary, details = _assemble(plan, texts)
    return Summarised(summary, details, requests, responses, usage, cost)


def _assemble(plan: Plan, texts: dict[str, str]) -> tuple[str, Json]:
    """Join the model's texts as Pi does (compaction.js compact / generateBranchSummary)."""
    if plan.kind == "compaction":
        summary = (
            join_split_turn(texts.get("history"), texts["turn_prefix"])
            if plan.split_turn
            else texts["history"]
        )
        summary += format_file_operations(plan.read_files, plan.modified_files)
    elif "branch" not in texts:
        # Entries but no messages (all tool results / settings): Pi's fixed text, no call.
        return join_branch_summary(None, [], []), {"readFiles": [], "modifiedFiles": []}
    else:
        summary = join_branch_summary(texts["branch"], plan.read_files, plan.modified_files)
    return summary, {"readFiles": plan.read_files, "modifiedFiles": plan.modified_files}


def _finish_without_entry(job: Job, plan: Plan) -> Job:
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


class _TakenIds:
    """The entry ids of a revision, asked one candidate at a time (not all loaded)."""

    def __init__(self, entries: Any) -> None:
        self.entries = entries

    def __contains__(self, entry_id: object) -> bool:
        return bool(self.entries.filter(entry_id=entry_id).exists())


def build_entry(
    plan: Plan, taken: Container[str], moment: datetime, summary: str, details: Json
) -> Json:
    """The entry Pi's SessionManager appends for this plan (the engine's writer)."""
    writer = SessionWriter(taken, plan.parent_id)
    timestamp = iso_timestamp(moment)
    if plan.kind == Job.Kind.COMPACTION:
        return dict(
            writer.append_compaction(
                timestamp=timestamp,
                summary=summary,
                first_kept_entry_id=plan.entry["firstKeptEntryId"],
                tokens_before=plan.entry["tokensBefore"],
                details=details,
            )
        )
    return dict(
        writer.branch_with_summary(
            plan.parent_id, timestamp=timestamp, summary=summary, details=details
        )
    )


def _append_and_finish(job: Job, plan: Plan, summary: str, details: Json, moment: datetime) -> Job:
    with transaction.atomic():
        # Lock the job row: a cancel that committed before this point wins, and nothing is
        # appended; one that comes after finds the job succeeded.
        locked = Job.objects.select_for_update().filter(pk=job.pk).first()
        if locked is None or locked.status != Job.Status.RUNNING or _superseded(job, locked):
            return _reload(job)
        # Lock the session row, as the library's import does before it appends synced lines, then
        # the revision: concurrent appends (another job, a sync) get distinct seq numbers and ids.
        session = Session.objects.select_for_update().get(pk=job.session_id)
        revision = SessionRevision.objects.select_for_update().get(pk=session.current_revision_id)
        entries = Entry.objects.filter(revision=revision)
        if plan.parent_id is not None and not entries.filter(entry_id=plan.parent_id).exists():
            return _fail(
                job, f"Entry {plan.parent_id} is no longer in the session's current revision"
            )
        data = build_entry(plan, _TakenIds(entries), moment, summary, details)
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


# --------------------------------------------------------------------------------------------
# Export back to Pi
# --------------------------------------------------------------------------------------------


def session_export_chunks(session: Session) -> Iterator[bytes]:
    """The session as a Pi JSONL v3 file, including the entries contextlab appended.

    1. A v3 file: its original bytes as read (so an untouched session exports byte for byte).
    2. A legacy (v1/v2) file: what Pi writes when it opens and migrates it — every kept line
       migrated, ``JSON.stringify`` per line (the engine's migration, with the same ids the
       library stored, so appended entries still point at the right parents).
    3. Then each entry contextlab appended, in order, keys as Pi writes them.
    """
    revision = session.current_revision
    if revision is None:
        raise JobError(f"Session {session.session_id} has no stored file")
    with revision.open_blob() as fh:
        if revision.original_version >= 3:
            remaining = revision.bytes_read
            while remaining > 0:
                chunk = fh.read(min(1 << 20, remaining))
                if not chunk:
                    break
                remaining -= len(chunk)
                yield chunk
        else:
            parsed = parse_session_bytes(fh.read(revision.bytes_read), source=revision.source_path)
            lines = []
            if parsed.header is not None:
                lines.append(json_stringify(parsed.header))
            lines.extend(json_stringify(entry) for entry in parsed.entries)
            yield ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass") if lines else b""
    added = (
        Entry.objects.filter(revision=revision, origin=Entry.Origin.CONTEXTLAB)
        .order_by("seq")
        .values_list("data", flat=True)
    )
    for data in added:
        yield (json_stringify(ordered_entry(data)) + "\n").encode("utf-8")


def session_export_filename(session: Session) -> str:
    """Pi's file name: ``<header timestamp with : and . as ->_<session id>.jsonl``."""
    stamp = str(session.header.get("timestamp", "")).replace(":", "-").replace(".", "-")
    return f"{stamp}_{session.session_id}.jsonl" if stamp else f"{session.session_id}.jsonl"


def what_if_auto_compaction(
    session: Session,
    *,
    leaf_id: str | None,
    context_window: int,
    reserve_tokens: int,
    keep_recent_tokens: int,
) -> list[Json]:
    """Where along the active path Pi would have auto-compacted, and what each would cut."""
    tree = SessionTree(engine_entries(session))
    leaf = leaf_id or session.leaf_entry_id
    path = tree.path(leaf)
    if not path:
        raise JobError(f"Entry {leaf} is not in session {session.session_id}")
    return [
        w.to_json()
        for w in auto_compaction_what_if(
            path,
            context_window=context_window,
            reserve_tokens=reserve_tokens,
            keep_recent_tokens=keep_recent_tokens,
        )
    ]


def summarise_file_entries(
    *,
    entries: list[Json],
    kind: str,
    leaf_id: str,
    target_id: str = "",
    parameters: Json | None = None,
    name: str = "<file>",
    config: providers.ProviderConfig | None = None,
    now: datetime | None = None,
) -> tuple[Json, Summarised]:
    """The entry Pi would append to a session *file* (not stored): for ``compact`` and
    ``branch-summary`` on the command line without ``--dry-run``.

    Same plan, same model calls and same joining as a job; the result is the entry dict (keys in
    Pi's order, a fresh id unique in the file) for the caller to print as one JSONL line.
    Raises JobError with Pi's message when there is nothing to do, ProviderError when the model
    fails.
    """
    config = config or providers.active_provider()
    params = with_model_limits(parameters, config)
    if kind == Job.Kind.COMPACTION:
        plan = plan_compaction_entries(entries, leaf_id, params, name)
    else:
        plan = plan_branch_summary_entries(entries, leaf_id, target_id, params, name)
    if plan.nothing:
        raise JobError(plan.nothing)
    outcome = summarise_plan(plan, config)
    assert outcome is not None
    if outcome.error:
        raise JobError(outcome.error)
    existing = {str(e.get("id")) for e in entries}
    entry = build_entry(plan, existing, now or timezone.now(), outcome.summary, outcome.details)
    return entry, outcome
