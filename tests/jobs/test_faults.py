"""Jobs never stuck: real Celery workers (prefork, as deployed) killed mid-job, a broker that
cannot be reached when a job is queued, and PostgreSQL (a throwaway cluster) stopped while a
worker runs a job. Each ends with the job finished or failed visibly, one entry appended at most,
and nothing left queued that blocks the session.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from contextlab.jobs import providers, services, tasks
from contextlab.jobs.models import Job
from contextlab.jobs.parameters import JobParameters
from contextlab.jobs.services import running
from contextlab.library.models import Entry
from tests.conftest import CORPUS
from tests.jobs.fake_llm import Reply
from tests.jobs.test_worker import (  # noqa: F401
    REPO,
    broker,
    fake_model,
    job_done,
    send,
    worker,
)
from tests.library.test_postgres_faults import (  # noqa: F401
    Cluster,
    cluster,
    pg_env,
    pg_manage,
    pg_reset,
)
from tests.waiting import wait_until

pytestmark = [pytest.mark.worker, pytest.mark.faults, pytest.mark.django_db(transaction=True)]


def _pool_children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _compaction(session) -> Job:
    return services.job_create(
        session=session,
        kind="compaction",
        parameters=JobParameters(keep_recent_tokens=10),
        enqueue=False,
    )


def test_a_killed_pool_child_s_job_is_taken_over_by_its_redelivered_message_at_once(
    broker,  # noqa: F811
    fake_model,  # noqa: F811
    import_corpus,
    blob_dir,
):
    session, _ = import_corpus("tools")
    before = Entry.objects.filter(session=session).count()
    job = _compaction(session)
    fake_model.script.append(Reply(stall_seconds=60))
    # A lease and a sweep far longer than the test: only the redelivery can rescue the job.
    with worker(
        broker, fake_model, blob_dir, pool="prefork", lease=300, CONTEXTLAB_JOB_SWEEP_SECONDS="300"
    ) as proc:
        send(broker, job.pk)
        assert fake_model.received.wait(60), "the worker never called the model"
        children = wait_until(lambda: _pool_children(proc.pid), what="the pool child")
        job.refresh_from_db()
        assert job.claimed_by.endswith(f":{children[0]}")
        killed_at = time.monotonic()
        os.kill(children[0], signal.SIGKILL)
        job = wait_until(lambda: job_done(job.pk), timeout=30, what="the job to end")
        took = time.monotonic() - killed_at
    fake_model.release.set()
    assert job.status == "succeeded", job.error
    assert job.attempts == 2
    assert took < 20, f"the redelivered message waited {took:.0f}s"
    assert Entry.objects.filter(session=session).count() == before + 1


def test_a_killed_worker_main_process_s_job_is_recovered_by_another_worker_within_a_lease(
    broker,  # noqa: F811
    fake_model,  # noqa: F811
    import_corpus,
    blob_dir,
):
    session, _ = import_corpus("tools")
    before = Entry.objects.filter(session=session).count()
    job = _compaction(session)
    fake_model.script.append(Reply(stall_seconds=60))
    lease, sweep = 4, 1
    timing = {"CONTEXTLAB_JOB_SWEEP_SECONDS": str(sweep)}
    with worker(broker, fake_model, blob_dir, pool="prefork", lease=lease, **timing) as first:
        send(broker, job.pk)
        assert fake_model.received.wait(60), "the worker never called the model"
        # Entered once the second worker is ready: the recovery is timed, not its start.
        with worker(broker, fake_model, blob_dir, lease=lease, **timing):
            # The main process only: its pool child dies with it (Celery sets PDEATHSIG).
            os.kill(first.pid, signal.SIGKILL)
            first.wait(timeout=10)
            killed_at = time.monotonic()
            job = wait_until(lambda: job_done(job.pk), timeout=60, what="the job to end")
            took = time.monotonic() - killed_at
    fake_model.release.set()
    assert job.status == "succeeded", job.error
    assert job.attempts == 2
    # The default lease (30 s) and sweep (10 s) make this "within a minute".
    assert took < lease + 2 * sweep + 10, f"recovered after {took:.0f}s"
    assert Entry.objects.filter(session=session).count() == before + 1


@pytest.fixture
def redis_outage(settings):
    """Celery pointed at a port where no Redis listens (what a Redis outage looks like); call
    the returned function with a test's broker to end the outage."""
    app = tasks.run_job.app
    settings.CONTEXTLAB_JOBS_EMBEDDED = False
    saved = (app.conf.broker_url, app.conf.broker_transport_options)

    def point_at(url: str, options: dict) -> None:
        app.conf.broker_url = url
        app.conf.broker_transport_options = options
        app._pool = None
        app.amqp._producer_pool = None  # it holds on to the old connection pool

    point_at("redis://127.0.0.1:9/0", saved[1])
    yield lambda back: point_at(back.url, {**saved[1], "global_keyprefix": back.prefix})
    point_at(*saved)


def test_a_compaction_queued_while_redis_is_down_is_not_sent_blocks_nothing_and_runs_on_retry(
    client,
    owner,
    import_corpus,
    redis_outage,
    offline_provider,
    broker,  # noqa: F811
    fake_model,  # noqa: F811
    blob_dir,
):
    session, _ = import_corpus("tools")
    client.force_login(owner)
    form = {"leaf": session.leaf_entry_id, "keepRecentTokens": "10"}
    started = time.monotonic()
    response = client.post(f"/sessions/{session.pk}/compact/", form)
    assert time.monotonic() - started < 10  # no hanging request either
    assert response.status_code == 302
    job = Job.objects.get(session=session)
    assert job.status == "not_sent"
    assert "could not be reached" in job.error
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "not sent" in page and "Retry" in page
    # Nothing blocks the session: a second try is not "already queued".
    response = client.post(f"/sessions/{session.pk}/compact/", form)
    assert response.status_code == 302
    assert Job.objects.filter(session=session, status="not_sent").count() == 2
    assert not Job.objects.active().filter(session=session).exists()
    # Redis is back: Retry sends the job, a worker runs it.
    redis_outage(broker)
    client.post(f"/jobs/{job.pk}/retry/")
    retried = Job.objects.get(retry_of=job)
    assert retried.status == "queued"
    with worker(broker, fake_model, blob_dir):
        retried = wait_until(lambda: job_done(retried.pk), timeout=60, what="the retried job")
    assert retried.status == "succeeded", retried.error


def test_the_job_page_says_when_no_worker_is_alive_and_when_none_took_the_job(
    client, owner, import_corpus, settings
):
    from django.core.cache import cache

    settings.CONTEXTLAB_JOBS_EMBEDDED = False
    session, _ = import_corpus("tools")
    job = _compaction(session)
    client.force_login(owner)
    cache.delete(tasks.WORKER_ALIVE_KEY)
    assert "No worker" not in client.get(f"/jobs/{job.pk}/").content.decode()  # just queued
    Job.objects.filter(pk=job.pk).update(updated_at=job.updated_at.replace(year=2000))
    page = client.get(f"/jobs/{job.pk}/", headers={"HX-Request": "true"}).content.decode()
    assert "No worker is running" in page
    # An ordinary user is not told to run a command on the server; an administrator is.
    assert "Ask the administrator to start one" in page and "make worker" not in page
    owner.is_staff = True
    owner.save(update_fields=["is_staff"])
    page = client.get(f"/jobs/{job.pk}/", headers={"HX-Request": "true"}).content.decode()
    assert "make worker" in page
    cache.set(tasks.WORKER_ALIVE_KEY, time.time(), 30)
    # A worker that just started and runs nothing is not "busy with other jobs".
    page = client.get(f"/jobs/{job.pk}/", headers={"HX-Request": "true"}).content.decode()
    assert "No worker has taken this job" in page and "idle" in page and "busy" not in page
    other, _ = import_corpus("branches")
    running_job = _compaction(other)
    Job.objects.filter(pk=running_job.pk).update(status="running")
    page = client.get(f"/jobs/{job.pk}/", headers={"HX-Request": "true"}).content.decode()
    assert "No worker has taken this job" in page and "busy with other jobs" in page
    cache.delete(tasks.WORKER_ALIVE_KEY)


def test_the_job_page_says_who_asked_when_it_ran_how_long_and_what_it_used(
    client, owner, import_corpus, offline_provider
):
    session, _ = import_corpus("tools")
    job = services.job_create(
        session=session,
        kind="compaction",
        parameters=JobParameters(keep_recent_tokens=10),
        requested_by=owner,
        enqueue=False,
    )
    job = services.job_execute(job_id=job.pk)
    assert job.status == "succeeded"
    Job.objects.filter(pk=job.pk).update(
        usage={"input": 1200, "output": 345, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1545}
    )
    client.force_login(owner)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert '<dd class="job-requester">owner</dd>' in page
    for fact in ("Queued", "Started", "Finished", "Took", "Input tokens", "Output tokens"):
        assert f"<dt>{fact}</dt>" in page, fact
    assert "<dd>1200</dd>" in page and "<dd>345</dd>" in page
    assert "Cache read" not in page  # nothing reported: no row


def test_a_running_job_shows_the_request_sent_and_the_tokens_streaming_in(import_corpus, settings):
    from tests.jobs.fake_llm import FakeLLMServer

    session, _ = import_corpus("tools")
    job = _compaction(session)
    seen: list[str] = []
    with FakeLLMServer() as server:
        server.script.append(Reply(text="## Goal\n" + "word " * 4000))
        server.point_at(settings)
        Job.objects.filter(pk=job.pk).update(provider=providers.active_provider().public())
        real_progress = running._progress

        def spy(job, percent, message, **fields):
            seen.append(message)
            real_progress(job, percent, message, **fields)

        running._progress = spy
        try:
            done = services.job_execute(job_id=job.pk)
        finally:
            running._progress = real_progress
    assert done.status == "succeeded", done.error
    assert done.progress_message == "entry written"
    assert any(re.match(r"request 1/\d: history sent \(\d+ kB\)", m) for m in seen), seen
    assert any(
        re.match(r"receiving the summary \(1/\d: history\): ~[\d,]+ tokens", m) for m in seen
    )
    assert seen[-1] == "summary received; writing the entry"
    assert connection.vendor  # the run left this test's connection usable


def test_a_queued_job_whose_message_was_lost_is_sent_again_by_a_worker_s_sweep(
    broker,  # noqa: F811
    fake_model,  # noqa: F811
    import_corpus,
    blob_dir,
):
    session, _ = import_corpus("tools")
    job = _compaction(session)  # queued, but no message was ever sent
    lease = 3
    Job.objects.filter(pk=job.pk).update(updated_at=job.updated_at.replace(year=2000))
    with worker(broker, fake_model, blob_dir, lease=lease, CONTEXTLAB_JOB_SWEEP_SECONDS="1"):
        job = wait_until(lambda: job_done(job.pk), timeout=30, what="the swept job to end")
    assert job.status == "succeeded", job.error
    assert job.attempts == 1


def _create_job_on(pg: Cluster, blobs: Path, server) -> int:
    """A compaction job for the one session of the throwaway cluster, created as the web app
    would (in its own process, configured for the fake model)."""
    code = (
        "from contextlab.jobs import services; from contextlab.library.models import Session; "
        "job = services.job_create(session=Session.objects.get(), kind='compaction', "
        "parameters={'keepRecentTokens': 10}, enqueue=False); print(job.pk)"
    )
    env = {
        **pg_env(pg, blobs),
        "CONTEXTLAB_LLM_PROVIDER": "openai",
        "OPENAI_BASE_URL": server.openai_base_url,
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_MODEL": "fake-gpt",
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return int(done.stdout.strip().splitlines()[-1])


def test_postgresql_stopped_while_a_worker_runs_a_job_ends_the_job_soon_after_recovery(
    cluster,  # noqa: F811
    broker,  # noqa: F811
    fake_model,  # noqa: F811
    tmp_path,
):
    blobs = tmp_path / "pg-blobs"
    pg_reset(cluster, blobs)
    copy = tmp_path / "tools.jsonl"
    shutil.copyfile(CORPUS / "tools" / "session.jsonl", copy)
    imported = pg_manage(cluster, blobs, "import_sessions", str(copy), "--json")
    assert imported.returncode == 0, imported.stderr[-2000:]
    job_id = _create_job_on(cluster, blobs, fake_model)
    before = int(cluster.sql("SELECT count(*) FROM library_entry"))
    fake_model.script.append(Reply(stall_seconds=60))
    status = f"SELECT status FROM jobs_job WHERE id = {job_id}"
    timing = {"CONTEXTLAB_JOB_SWEEP_SECONDS": "1", "DATABASE_URL": cluster.url}
    with worker(broker, fake_model, blobs, pool="prefork", lease=4, **timing):
        send(broker, job_id)
        assert fake_model.received.wait(60), "the worker never called the model"
        assert cluster.sql(status) == "running"
        cluster.crash()  # PostgreSQL dies while the model is still writing the summary
        fake_model.release.set()  # the answer arrives with the database gone
        time.sleep(3)  # the worker fails to store it (and to renew its lease)
        cluster.start()
        recovered = time.monotonic()
        final = wait_until(
            lambda: cluster.sql(status) in ("succeeded", "failed") and cluster.sql(status),
            timeout=60,
            interval=0.2,
            what="the job to end once PostgreSQL is back",
        )
        took = time.monotonic() - recovered
    assert took < 60
    after = int(cluster.sql("SELECT count(*) FROM library_entry"))
    assert after == before + (1 if final == "succeeded" else 0)  # one entry at most
    assert final == "succeeded", cluster.sql(f"SELECT error FROM jobs_job WHERE id = {job_id}")
    # The first attempt died with the database; the sweep re-queued the job once it was back.
    assert int(cluster.sql(f"SELECT attempts FROM jobs_job WHERE id = {job_id}")) >= 2
    left = cluster.sql("SELECT count(*) FROM jobs_job WHERE status IN ('queued', 'running')")
    assert left == "0"  # nothing left to block the session
