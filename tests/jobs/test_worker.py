"""A real Celery worker on Redis runs jobs against the committed database.

The worker is `celery -A contextlab worker` in a subprocess with a Redis key prefix of its own
(in REDIS_URL's database), the test database's URL and the fake model server's base URL. Bounded
waits everywhere; the worker's process group is killed by id at the end.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from celery import Celery
from django.db import connection

from contextlab.inspector.selectors import index_stored
from contextlab.jobs import services, tasks
from contextlab.jobs.models import Job
from contextlab.jobs.parameters import JobParameters
from contextlab.library.models import Entry, Session
from tests.environment import delete_redis_keys, unavailable
from tests.jobs.fake_llm import FakeLLMServer, Reply
from tests.review.helpers import session_lines, upload
from tests.waiting import wait_until

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Broker:
    """The Redis database REDIS_URL names and, in it, this test's own key prefix: its worker
    and the messages it is sent share it, so two workers (two xdist processes, two test runs at
    once) never take each other's messages, and the test deletes only its own keys."""

    url: str
    prefix: str

    def app(self) -> Celery:
        """A Celery client that sends to this test's queues."""
        app = Celery("contextlab-test", broker=self.url, set_as_current=False)
        app.conf.broker_transport_options = {"global_keyprefix": self.prefix}
        return app

    def cache(self):  # type: ignore[no-untyped-def]
        """The cache the worker writes (its "alive" key)."""
        from django.core.cache.backends.redis import RedisCache

        return RedisCache(self.url, {"KEY_PREFIX": self.prefix})


def _redis_up(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except Exception:
        return False


@pytest.fixture
def broker(settings):
    if connection.vendor != "postgresql":
        unavailable("the worker test needs PostgreSQL (set DATABASE_URL)")
    url = settings.REDIS_URL or "redis://127.0.0.1:6379/0"
    if not _redis_up(url):
        unavailable(f"no Redis at {url}")
    # Under the run's own prefix (tests/settings.py), one more level for this test.
    own = Broker(url, f"{settings.CONTEXTLAB_REDIS_PREFIX}worker-{uuid.uuid4().hex[:8]}:")
    yield own
    delete_redis_keys(own.url, own.prefix)


@pytest.fixture
def fake_model(settings):
    with FakeLLMServer() as server:
        server.point_at(settings, model="fake-gpt", provider_name="openai")
        yield server


def _database_url() -> str:
    """The test database (pytest-django's, e.g. test_contextlab_gw0), for the worker process."""
    from urllib.parse import quote

    s = connection.settings_dict
    auth = quote(s["USER"] or "", safe="")
    if s.get("PASSWORD"):
        auth += ":" + quote(s["PASSWORD"], safe="")
    host = s["HOST"] or "127.0.0.1"
    return f"postgres://{auth}@{host}:{s['PORT'] or 5432}/{s['NAME']}"


@contextmanager
def worker(broker: Broker, server, blob_dir, *, concurrency=1, lease=60, pool="threads", **extra):
    """A worker, entered once it says it is ready: the waits of the tests time the work, not a
    worker's start (tens of seconds on a loaded machine)."""
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "REDIS_URL": broker.url,
        "CONTEXTLAB_REDIS_PREFIX": broker.prefix,
        "CONTEXTLAB_BLOB_DIR": str(blob_dir),
        "CONTEXTLAB_LLM_PROVIDER": "openai",
        "CONTEXTLAB_LLM_MAX_RETRIES": "0",
        "OPENAI_BASE_URL": server.openai_base_url,
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_MODEL": "fake-gpt",
        "CONTEXTLAB_JOB_LEASE_SECONDS": str(lease),
        "CONTEXTLAB_JOB_RETRY_BASE_SECONDS": "0.2",
        **extra,
    }
    log_path = Path(blob_dir).parent / f"worker-{time.monotonic_ns()}.log"
    log = log_path.open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "contextlab",
            "worker",
            f"--pool={pool}",
            f"--concurrency={concurrency}",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "--loglevel=INFO",
        ],
        cwd=REPO,
        env=env,
        # A file, not a pipe nobody reads: a chatty worker would block once the pipe is full.
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    proc.log_path = log_path  # type: ignore[attr-defined]
    try:
        wait_ready(proc)
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        log.close()


def wait_ready(proc) -> None:
    """Until the worker says it is ready (consuming): on a loaded machine that takes seconds."""
    wait_until(
        lambda: b" ready." in proc.log_path.read_bytes() or proc.poll() is not None,
        timeout=180,
        what="the worker to start",
    )
    assert proc.poll() is None, proc.log_path.read_text()


def send(broker: Broker, job_id):
    broker.app().send_task("jobs.run_job", args=[job_id])


def queue_drained(broker: Broker) -> bool:
    """Nothing waits in Celery's default queue and no message is taken but unacknowledged."""
    import redis

    client = redis.Redis.from_url(broker.url)
    return (
        client.llen(f"{broker.prefix}celery") == 0 and client.hlen(f"{broker.prefix}unacked") == 0
    )


def job_done(job_id):
    job = Job.objects.get(pk=job_id)
    return job if job.is_done else None


def test_it_runs_a_compaction_on_a_real_worker(broker, fake_model, import_corpus, blob_dir):
    session, _ = import_corpus("tools")
    before = Entry.objects.filter(session=session).count()
    job = services.job_create(
        session=session,
        kind="compaction",
        parameters=JobParameters(keep_recent_tokens=10),
        enqueue=False,
    )
    with worker(broker, fake_model, blob_dir):
        send(broker, job.pk)
        job = wait_until(lambda: job_done(job.pk), what="the job to end")
    assert job.status == "succeeded", job.error
    assert Entry.objects.filter(session=session).count() == before + 1
    entry = Entry.objects.get(entry_id=job.result_entry_ids[0], session=session)
    assert entry.type == "compaction" and entry.origin == "contextlab"
    assert entry.data["summary"].startswith("## Goal\nSummarised by the fake server.")
    # What the worker sent is what the row says it sent.
    assert fake_model.requests[0].json == job.requests[0]["body"]


def test_a_worker_killed_mid_job_leaves_no_entry_and_the_job_is_retried(
    broker, fake_model, import_corpus, blob_dir
):
    session, _ = import_corpus("tools")
    before = Entry.objects.filter(session=session).count()
    job = services.job_create(
        session=session,
        kind="compaction",
        parameters=JobParameters(keep_recent_tokens=10),
        enqueue=False,
    )
    fake_model.script.append(Reply(stall_seconds=60))
    with worker(broker, fake_model, blob_dir, lease=2) as proc:
        send(broker, job.pk)
        assert fake_model.received.wait(60), "the worker never called the model"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    fake_model.release.set()
    job.refresh_from_db()
    assert job.status == "running" and job.attempts == 1
    assert Entry.objects.filter(session=session).count() == before
    time.sleep(2.5)  # the dead worker's lease runs out
    with worker(broker, fake_model, blob_dir, lease=60):
        # A starting worker re-enqueues jobs whose lease expired.
        job = wait_until(lambda: job_done(job.pk), what="the retried job to end")
    assert job.status == "succeeded", job.error
    assert job.attempts == 2
    assert Entry.objects.filter(session=session).count() == before + 1


def test_a_message_delivered_twice_runs_the_job_once(broker, fake_model, import_corpus, blob_dir):
    session, _ = import_corpus("tools")
    before = Entry.objects.filter(session=session).count()
    job = services.job_create(
        session=session,
        kind="compaction",
        parameters=JobParameters(keep_recent_tokens=150),
        enqueue=False,
    )
    fake_model.script.append(Reply(stall_seconds=1.0))
    with worker(broker, fake_model, blob_dir, concurrency=2):
        send(broker, job.pk)
        send(broker, job.pk)
        job = wait_until(lambda: job_done(job.pk), what="the job to end")
        # The second delivery is taken and acknowledged (acks_late: it stays in kombu's
        # "unacked" hash until its task returns, and a retry waiting for its countdown does too).
        wait_until(
            lambda: queue_drained(broker),
            timeout=30.0,
            what="both deliveries to be taken and acknowledged",
        )
        time.sleep(0.2)
    assert job.status == "succeeded"
    assert job.attempts == 1
    assert len(fake_model.requests) == len(job.requests) == 1  # one history request
    assert Entry.objects.filter(session=session).count() == before + 1


def test_two_simultaneous_compactions_on_the_same_leaf_one_is_refused(
    import_corpus, offline_provider
):
    import threading

    session, _ = import_corpus("tools")
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def create():
        try:
            barrier.wait(5)
            services.job_create(session=session, kind="compaction", enqueue=False)
            outcomes.append("created")
        except services.JobConflict as exc:
            outcomes.append(str(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=create) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert outcomes.count("created") == 1
    refused = next(o for o in outcomes if o != "created")
    assert "already queued" in refused or "just started" in refused
    assert Job.objects.filter(session=session).count() == 1


def test_a_real_worker_indexes_an_uploaded_session_after_the_request(
    broker, fake_model, client, owner, blob_dir, monkeypatch
):
    from contextlab.jobs.models import WORKER_ALIVE_KEY

    app = broker.app()
    monkeypatch.setattr(
        tasks.after_import,
        "delay",
        lambda session_id: app.send_task("jobs.after_import", args=[session_id]),
    )
    client.force_login(owner)
    response = upload(client, session_lines(session_id="sess-after-upload", cwd="/work/up"))
    assert response.status_code == 200
    session = Session.objects.get(session_id="sess-after-upload")
    unindexed = Entry.objects.for_session(session).filter(search_indexed=False)
    assert unindexed.exists() and not index_stored(session)
    # The worker's timer sweeps once at start (and not again within the test): seeing the
    # upload's entries unindexed it may queue jobs.index_pending besides the after-import
    # message. Both are waited for, taken and acknowledged, before the worker is stopped.
    with worker(broker, fake_model, blob_dir, CONTEXTLAB_JOB_SWEEP_SECONDS="3600"):
        wait_until(
            lambda: index_stored(session) and not unindexed.exists(),
            what="the worker to index the upload and store its tree index",
        )
        wait_until(
            lambda: broker.cache().get(WORKER_ALIVE_KEY) is not None and queue_drained(broker),
            what="the start-up sweep, and every message taken and acknowledged",
        )
