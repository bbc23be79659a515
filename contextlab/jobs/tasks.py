"""Thin Celery tasks over the job services, the worker's own timer, and the embedded runner used
without Redis.

Tasks take a job id, never a model instance. The service claims the row with a conditional
UPDATE, so a duplicate or redelivered message is harmless. Nothing can leave a job stuck:

1. Enqueueing happens after commit; when the broker cannot be reached the job is marked
   "not sent" (it blocks nothing, and Retry sends it again) instead of failing the request.
2. A running job renews its lease (CONTEXTLAB_JOB_LEASE_SECONDS) every third of it. A worker
   killed mid-job stops renewing; ``acks_late`` + ``reject_on_worker_lost`` put the message back
   (the claim takes over at once when the dead owner was a process of this host), and Redis
   redelivers a message whose worker's main process died after the visibility timeout, which
   equals the lease.
3. Every worker's main process runs a timer (``_sweep_forever``) that says it is alive (the job
   page tells when no worker is) and re-queues jobs whose lease expired or whose message was
   lost, and entries left unindexed; it also removes temporary blobs older than the grace
   period (left by imports that were killed).
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from celery import Task, shared_task
from celery.signals import worker_ready, worker_shutting_down
from django.conf import settings
from django.core.cache import cache
from django.db import close_old_connections, connection
from django.db.models import Q
from django.utils import timezone

from contextlab.inspector.services import tree_index_refresh
from contextlab.jobs import services
from contextlab.jobs.models import WORKER_ALIVE_KEY, Job, owner_is_dead, stale_lease
from contextlab.library.importer.blobs import prune_temp_files
from contextlab.library.models import Entry, Session
from contextlab.library.search import index_pending, index_revision

logger = logging.getLogger(__name__)


@shared_task(bind=True, name="jobs.run_job", max_retries=None)
def run_job(self: Task[[int], str], job_id: int) -> str:
    try:
        job = services.job_execute(job_id=job_id)  # a soft time limit fails the job there
    except services.RetryLater as later:
        raise self.retry(countdown=later.countdown) from None
    return job.status if job is not None else "not claimed"


@shared_task(name="jobs.requeue_stale")
def requeue_stale_jobs() -> int:
    """Re-enqueue jobs whose worker died (running, lease expired or its process gone) or whose
    message was lost (queued and untouched for a whole lease). A duplicate message is harmless:
    the claim is a conditional UPDATE."""
    now = timezone.now()
    idle_since = now - timedelta(seconds=settings.CONTEXTLAB_JOB_LEASE_SECONDS)
    rows = Job.objects.filter(
        stale_lease(now)
        | Q(status=Job.Status.RUNNING, claimed_by__startswith=f"{socket.gethostname()}:")
        | Q(status=Job.Status.QUEUED, updated_at__lt=idle_since)
    ).values_list("pk", "status", "claimed_by", "lease_expires_at")
    stale = [
        pk
        for pk, status, owner, lease in rows
        if status == Job.Status.QUEUED
        or (lease is not None and lease < now)
        or owner_is_dead(owner)
    ]
    for job_id in stale:
        run_job.delay(job_id)
    return len(stale)


@shared_task(name="jobs.index_pending")
def index_pending_entries(limit: int = 50) -> int:
    """Search text for entries left unindexed (a process died while indexing them)."""
    return index_pending(limit=limit)


@shared_task(name="jobs.after_import")
def after_import(session_id: int) -> None:
    """What follows the commit of an uploaded session, off the web request: its entries' search
    text and its stored tree index (both a matter of seconds and hundreds of MB for a large
    file, more than a web worker should spend). Neither is written only here: the sweep indexes
    what is left unindexed, and the first open of the session builds a missing tree index."""
    revision_id = (
        Session.objects.filter(pk=session_id).values_list("current_revision_id", flat=True).first()
    )
    if revision_id is None:
        return  # deleted meanwhile
    index_revision(revision_id)
    tree_index_refresh(session_id=session_id)


def _after_import_embedded(session_id: int) -> None:
    close_old_connections()
    try:
        after_import(session_id)
    except Exception:  # the sweep and the first open redo what is missing
        logger.warning("after-import work of session %s failed", session_id, exc_info=True)
    finally:
        connection.close()


def enqueue_after_import(session_id: int) -> None:
    """Hand `after_import` to a worker (or, without Redis, to the embedded runner's thread).
    When the broker cannot be reached nothing is lost: see after_import."""
    if settings.CONTEXTLAB_JOBS_EMBEDDED:
        _embedded_executor().submit(_after_import_embedded, session_id)
        return
    try:
        after_import.delay(session_id)
    except Exception as exc:
        logger.warning("after-import work of session %s not sent: %s", session_id, exc)


# --------------------------------------------------------------------------------------------
# The worker's own timer: "alive" for the job pages, and the sweep
# --------------------------------------------------------------------------------------------


def worker_sweep_once() -> None:
    """One tick of the worker's timer: say alive, re-queue stale jobs, resume indexing."""
    close_old_connections()
    try:
        cache.set(WORKER_ALIVE_KEY, time.time(), timeout=settings.CONTEXTLAB_JOB_SWEEP_SECONDS * 3)
        requeue_stale_jobs()
        # Idempotent: an import indexing the same rows meanwhile only makes one side wait.
        if Entry.objects.filter(search_indexed=False).exists():
            index_pending_entries.delay()
        # Temporary blobs of imports killed mid-file (a blob store this host does not share
        # has no tmp/ here: nothing to do).
        pruned = prune_temp_files()
        if pruned:
            logger.info("removed %d temporary blob(s) left by killed imports", len(pruned))
    finally:
        connection.close()


def _sweep_forever(stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            worker_sweep_once()
        except Exception:  # a database or broker outage must not end the timer
            logger.warning("job sweep failed", exc_info=True)
        stop.wait(settings.CONTEXTLAB_JOB_SWEEP_SECONDS)


_sweeper_stop = threading.Event()


@worker_ready.connect
def _start_sweeper(**_: object) -> None:
    """In the worker's main process (which outlives its pool children): a daemon thread that
    sweeps every CONTEXTLAB_JOB_SWEEP_SECONDS, so no separate beat process is needed."""
    threading.Thread(
        target=_sweep_forever, args=(_sweeper_stop,), name="contextlab-sweep", daemon=True
    ).start()


@worker_shutting_down.connect
def _stop_sweeper(**_: object) -> None:
    _sweeper_stop.set()


# --------------------------------------------------------------------------------------------
# Embedded mode: no Redis, the same service in a thread of the web process
# --------------------------------------------------------------------------------------------

_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def _embedded_executor() -> ThreadPoolExecutor:
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="contextlab-job")
        return _executor


def run_embedded(job_id: int) -> Job | None:
    """Run a job to its end in this thread, sleeping between retries as Celery would."""
    close_old_connections()
    try:
        while True:
            try:
                return services.job_execute(job_id=job_id)
            except services.RetryLater as later:
                time.sleep(later.countdown)
    finally:
        # This thread gets no request_finished signal: close its connection explicitly.
        connection.close()


def enqueue(job_id: int) -> bool:
    """Hand a committed job to Celery, or to the embedded runner when there is no broker.

    False when the broker could not be reached: the job is then "not sent" (never left queued,
    where it would block its session with nobody to run it).
    """
    if settings.CONTEXTLAB_JOBS_EMBEDDED:
        _embedded_executor().submit(run_embedded, job_id)
        return True
    try:
        run_job.delay(job_id)
    except Exception as exc:
        logger.warning("job %s not sent: %s", job_id, exc)
        now = timezone.now()
        Job.objects.filter(pk=job_id, status=Job.Status.QUEUED).update(
            status=Job.Status.NOT_SENT,
            error=(
                "Not sent: the job queue (Redis) could not be reached. Nothing ran; "
                "retry once it is back."
            ),
            progress_message="not sent",
            finished_at=now,
            updated_at=now,
        )
        return False
    return True
