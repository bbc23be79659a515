"""Background jobs: a compaction or a branch summary of a stored session.

The `Job` row is the truth; the Celery message (or the embedded runner's thread) only says "look at
job N". Workers claim a row with a conditional UPDATE, so a message delivered twice, or redelivered
after a worker died, runs the job at most once at a time, and never after it ended.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.cache import cache
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from contextlab.library.models import Session

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User


class JobQuerySet(models.QuerySet["Job"]):
    def visible_to(self, user: User | AnonymousUser | None) -> JobQuerySet:
        """The jobs of the sessions this user may see (`Session.objects.visible_to`'s rule)."""
        return self.filter(session__in=Session.objects.visible_to(user))

    def active(self) -> JobQuerySet:
        return self.filter(status__in=Job.ACTIVE)

    def for_session(self, session_id: int) -> JobQuerySet:
        return self.filter(session_id=session_id).order_by("-created_at", "-id")

    def claim(self, job_id: int, *, now: datetime) -> int:
        """Take job `job_id` for one run: 1 if this caller won it, 0 otherwise.

        One conditional UPDATE, atomic in the database: it matches a queued job, or a running
        job whose lease expired (its worker died: the lease outlives the hard time limit). Two
        workers racing for the same row cannot both see it match.
        """
        won = self.claim_where(job_id, Q(status=Job.Status.QUEUED) | stale_lease(now), now=now)
        if won:
            return won
        # A redelivered message (the pool child running the job was killed) lands on another
        # process of the same host: the dead owner's lease need not run out first.
        owner = self.filter(pk=job_id, status=Job.Status.RUNNING).values_list(
            "claimed_by", flat=True
        )
        owner_id = next(iter(owner), "")
        if owner_id and owner_is_dead(owner_id):
            return self.claim_where(
                job_id, Q(status=Job.Status.RUNNING, claimed_by=owner_id), now=now
            )
        return 0

    def claim_where(self, job_id: int, condition: Q, *, now: datetime) -> int:
        lease = now + timedelta(seconds=settings.CONTEXTLAB_JOB_LEASE_SECONDS)
        return self.filter(Q(pk=job_id) & condition).update(
            status=Job.Status.RUNNING,
            attempts=F("attempts") + 1,
            lease_expires_at=lease,
            started_at=Coalesce(F("started_at"), now),
            claimed_by=worker_identity(),
            progress=0,
            progress_message="claimed by a worker",
            updated_at=now,
        )

    def renew_lease(self, job_id: int, *, now: datetime) -> int:
        """Push a running job's lease forward (its worker is alive); 0 once it ended."""
        lease = now + timedelta(seconds=settings.CONTEXTLAB_JOB_LEASE_SECONDS)
        return self.filter(
            pk=job_id, status=Job.Status.RUNNING, claimed_by=worker_identity()
        ).update(lease_expires_at=lease)


def stale_lease(now: datetime) -> Q:
    return Q(status=Job.Status.RUNNING, lease_expires_at__lt=now)


# Each worker's timer (contextlab.jobs.tasks) sets this key every sweep, with a time to live of
# three sweeps: no key means no worker has been alive lately.
WORKER_ALIVE_KEY = "contextlab:worker-alive"


def worker_seen_at() -> float | None:
    """When a worker last said it is alive (epoch seconds), None if none did lately."""
    try:
        value = cache.get(WORKER_ALIVE_KEY)
    except Exception:  # Redis down: no worker can take jobs either
        return None
    return float(value) if value is not None else None


def owner_is_dead(owner: str) -> bool:
    """True when ``owner`` (a worker_identity()) is a process of this host that no longer runs."""
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def worker_identity() -> str:
    """``host:pid`` of this process: who holds a job's lease (a dead pid on this host means its
    lease can be taken at once, without waiting for it to expire)."""
    return f"{socket.gethostname()}:{os.getpid()}"


class Job(models.Model):
    class Kind(models.TextChoices):
        COMPACTION = "compaction"
        BRANCH_SUMMARY = "branch_summary"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"
        # The job queue (Redis) could not be reached when the job was created: nothing will run
        # it; it blocks nothing and can be retried.
        NOT_SENT = "not_sent", "Not sent"

    ACTIVE = (Status.QUEUED, Status.RUNNING)
    DONE = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED, Status.NOT_SENT)
    RETRYABLE = (Status.FAILED, Status.CANCELLED, Status.NOT_SENT)

    kind = models.CharField(max_length=32, choices=Kind.choices)
    session = models.ForeignKey("library.Session", on_delete=models.CASCADE, related_name="jobs")
    # Compaction: the entry to compact at (normally the session's leaf). Branch summary: the leaf
    # being left (Pi's old leaf); `target_entry_id` is where the user navigates to.
    leaf_entry_id = models.CharField(max_length=100)
    # The session's leaf when the job was queued: a job queued at an earlier entry ("Compact
    # here…") is retried only while the session has not moved on since (blank: older rows).
    session_leaf_entry_id = models.CharField(max_length=100, blank=True)
    target_entry_id = models.CharField(max_length=100, blank=True)
    # Everything the run needs besides the session: custom instructions, replaceInstructions,
    # summarize (branch), reserve/keep-recent tokens, context window, model max tokens.
    parameters = models.JSONField(default=dict)
    provider = models.JSONField(default=dict)  # ProviderConfig.public() at creation time
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    progress = models.PositiveSmallIntegerField(default=0)  # percent
    progress_message = models.CharField(max_length=200, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    max_attempts = models.PositiveSmallIntegerField(default=3)
    error = models.TextField(blank=True)
    # What Pi's preparation said (firstKeptEntryId, tokensBefore, entry ids ...), the exact bodies
    # sent to the model, what came back, and the entries the job appended.
    preview = models.JSONField(default=dict, blank=True)
    requests = models.JSONField(default=list, blank=True)
    responses = models.JSONField(default=list, blank=True)
    usage = models.JSONField(default=dict, blank=True)
    cost = models.FloatField(default=0.0)
    result_entry_ids = models.JSONField(default=list, blank=True)
    retry_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="retries"
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    claimed_by = models.CharField(max_length=300, blank=True)  # worker_identity() of the claim
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ("-created_at", "-id")
        constraints = (
            # Every job moves its session's leaf: two at once would each work from a leaf the
            # other is about to replace. The database refuses the second one, even when two
            # requests race past the service's friendly check.
            models.UniqueConstraint(
                fields=["session"],
                condition=Q(status__in=["queued", "running"]),
                name="jobs_one_active_per_session",
            ),
        )
        indexes = (
            # Job history of a session, newest first.
            models.Index(fields=["session", "-created_at"], name="jobs_job_session_created"),
        )

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.pk} ({self.status})"

    @property
    def is_done(self) -> bool:
        return self.status in self.DONE

    @property
    def is_offline(self) -> bool:
        return bool(self.provider.get("offline"))

    @property
    def status_label(self) -> str:
        return "not sent" if self.status == Job.Status.NOT_SENT else self.status

    @property
    def no_worker(self) -> bool:
        """True while the job waits and no worker said it is alive lately (who can start one
        is told how, on the page)."""
        return not self.is_done and worker_seen_at() is None

    @property
    def duration_seconds(self) -> float | None:
        """From the first claim to the end (or until now while it runs)."""
        if self.started_at is None:
            return None
        end = self.finished_at or timezone.now()
        return max(0.0, (end - self.started_at).total_seconds())

    @property
    def usage_rows(self) -> list[tuple[str, int]]:
        """The provider's reported usage, summed over the job's requests, as label/value rows."""
        names = (
            ("input", "input tokens"),
            ("output", "output tokens"),
            ("cacheRead", "cache read"),
            ("cacheWrite", "cache write"),
        )
        usage = self.usage or {}
        return [(label, int(usage[key])) for key, label in names if usage.get(key)]

    @property
    def waiting_note(self) -> str:
        """Why an active job is not moving, once that lasted a few seconds ("" otherwise)."""
        if self.is_done or settings.CONTEXTLAB_JOBS_EMBEDDED:
            return ""
        now = timezone.now()
        if self.status == Job.Status.RUNNING:
            if self.lease_expires_at is None or self.lease_expires_at >= now:
                return ""
            late = (now - self.lease_expires_at).total_seconds()
            return (
                f"The worker running this job stopped answering {late:.0f} s ago; the next "
                "worker sweep hands it to another worker."
            )
        waited = (now - self.updated_at).total_seconds()
        if waited < settings.CONTEXTLAB_JOB_UNCLAIMED_WARNING_SECONDS:
            return ""
        if worker_seen_at() is None:
            return (
                f"No worker is running: nothing has taken this job in {waited:.0f} s, and "
                "nothing will until a worker starts."
            )
        if self.progress_message == "waiting to retry" and waited < 60:
            return ""
        if not Job.objects.filter(status=Job.Status.RUNNING).exclude(pk=self.pk).exists():
            # An idle worker (one that just started, say) has not taken it: its message was
            # lost or is still on its way; the worker's sweep sends queued jobs again.
            return (
                f"No worker has taken this job in {waited:.0f} s although one is running and "
                "idle; it is sent again within "
                f"{settings.CONTEXTLAB_JOB_SWEEP_SECONDS:.0f} s."
            )
        return (
            f"No worker has taken this job in {waited:.0f} s: the workers are busy with other jobs."
        )
