"""A real Celery worker on Redis runs jobs against the committed database.

The worker is `celery -A contextlab worker` in a subprocess with its own Redis db number, the test
database's URL and the fake model server's base URL. Bounded waits everywhere; the worker's
process group is killed by id at the end.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from celery import Celery
from django.db import connection

from contextlab.inspector.selectors import index_stored
from contextlab.jobs import services, tasks
from contextlab.jobs.models import Job
from contextlab.jobs.parameters import JobParameters
from contextlab.library.models import Entry, Session
from tests.environment import unavailable
from tests.jobs.fake_llm import FakeLLMServer, Reply
from tests.review.helpers import session_lines, upload
from tests.waiting import wait_until

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

REPO = Path(__file__).resolve().parents[2]
# A Redis db of our own, one per xdist process: two celery workers sharing a queue would take
# each other's messages (each test process has its own database, where job ids collide).
_XDIST = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
REDIS_DB = os.environ.get(
    "CONTEXTLAB_TEST_WORKER_REDIS_DB", str(13 + (int(_XDIST) if _XDIST.isdigit() else 0))
)


def _redis_base() -> str:
    url = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"
    return url.rsplit("/", 1)[0]


BROKER = f"{_redis_base()}/{REDIS_DB}"


def _redis_up() -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(BROKER, socket_connect_timeout=1).ping())
    except Exception:
        return False


@pytest.fixture
def broker():
    if connection.vendor != "postgresql":
        unavailable("the worker test needs PostgreSQL (set DATABASE_URL)")
    if not _redis_up():
        unavailable(f"no Redis at {BROKER}")
    import redis

    redis.Redis.from_url(BROKER).flushdb()
    yield BROKER
    redis.Redis.from_url(BROKER).flushdb()


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
def worker(broker_url, server, blob_dir, *, concurrency=1, lease=60, pool="threads", **extra):
    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "REDIS_URL": broker_url,
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
    log = (Path(blob_dir).parent / f"worker-{time.monotonic_ns()}.log").open("wb")
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
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        log.close()


def send(broker_url, job_id):
    app = Celery("contextlab-test", broker=broker_url, set_as_current=False)
    app.send_task("jobs.run_job", args=[job_id])


def queue_drained(broker_url) -> bool:
    """Nothing waits in Celery's default queue and no message is taken but unacknowledged."""
    import redis

    client = redis.Redis.from_url(broker_url)
    return client.llen("celery") == 0 and client.hlen("unacked") == 0


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
    app = Celery("contextlab-test", broker=broker, set_as_current=False)
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
    with worker(broker, fake_model, blob_dir):
        wait_until(
            lambda: index_stored(session) and not unindexed.exists(),
            what="the worker to index the upload and store its tree index",
        )
    assert queue_drained(broker)
