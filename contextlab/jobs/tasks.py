"""Thin Celery tasks over the job services, and the embedded runner used without Redis.

Tasks take a job id, never a model instance. The service claims the row with a conditional
UPDATE, so a duplicate or redelivered message is harmless. With ``acks_late`` and
``reject_on_worker_lost`` (settings), a worker killed mid-job leaves its message to be delivered
again; the job's lease (longer than the hard time limit) lets the next claim take over, and
``requeue_stale_jobs`` does so as soon as a worker starts.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings
from django.db import close_old_connections, connection
from django.db.models import Q
from django.dispatch import receiver
from django.utils import timezone

from contextlab.jobs import services
from contextlab.jobs.models import Job
from contextlab.jobs.signals import job_committed

logger = logging.getLogger(__name__)


@shared_task(bind=True, name="jobs.run_job", max_retries=None)
def run_job(self, job_id: int) -> str:  # type: ignore[no-untyped-def]
    try:
        job = services.job_execute(job_id=job_id)  # a soft time limit fails the job there
    except services.RetryLater as later:
        raise self.retry(countdown=later.countdown) from None
    return job.status if job is not None else "not claimed"


@shared_task(name="jobs.requeue_stale")
def requeue_stale_jobs() -> int:
    """Re-enqueue jobs whose worker died (running, lease expired) or whose message was lost
    (queued and untouched for a whole lease). A duplicate message is harmless: the claim is
    a conditional UPDATE."""
    now = timezone.now()
    idle_since = now - timedelta(seconds=settings.CONTEXTLAB_JOB_LEASE_SECONDS)
    stale = list(
        Job.objects.filter(
            Q(status=Job.Status.RUNNING, lease_expires_at__lt=now)
            | Q(status=Job.Status.QUEUED, updated_at__lt=idle_since)
        ).values_list("pk", flat=True)
    )
    for job_id in stale:
        run_job.delay(job_id)
    return len(stale)


@worker_ready.connect
def _requeue_on_start(**_: object) -> None:
    try:
        requeue_stale_jobs.delay()
    except Exception:  # pragma: no cover - a broker hiccup must not stop the worker
        logger.exception("could not requeue stale jobs")


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


def enqueue(job_id: int) -> None:
    """Hand a committed job to Celery, or to the embedded runner when there is no broker."""
    if settings.CONTEXTLAB_JOBS_EMBEDDED:
        _embedded_executor().submit(run_embedded, job_id)
    else:
        run_job.delay(job_id)


@receiver(job_committed, dispatch_uid="jobs-enqueue-committed")
def _enqueue_committed(sender: object, *, job_id: int, **kwargs: object) -> None:
    enqueue(job_id)
