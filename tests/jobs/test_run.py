"""Job bodies, called directly: success, retries, failures, cancellation. No partial entries."""

from __future__ import annotations

import pytest

from contextlab.jobs import providers, services, tasks
from contextlab.jobs.models import Job
from contextlab.jobs.parameters import JobParameters
from contextlab.library.models import Entry
from contextlab.pi.writer import ENTRY_KEY_ORDER
from tests.conftest import corpus_entry_id
from tests.jobs.fake_llm import FakeLLMServer, Reply
from tests.waiting import wait_until

pytestmark = pytest.mark.django_db


@pytest.fixture
def server():
    with FakeLLMServer() as s:
        yield s


@pytest.fixture
def anthropic_provider(settings, server):
    settings.CONTEXTLAB_JOB_RETRY_BASE_SECONDS = 0.05
    server.point_at(settings, "anthropic", timeout=5.0, model="fake-claude")


def _count(session):
    return Entry.objects.filter(session=session).count()


def _job(session, **params):
    params.setdefault("keep_recent_tokens", 10)
    return services.job_create(
        session=session,
        kind="compaction",
        parameters=JobParameters(**params),
        enqueue=False,
    )


def test_an_offline_compaction_appends_pis_entry_with_an_offline_summary(
    import_corpus, offline_provider
):
    session, _ = import_corpus("tools")
    before = _count(session)
    job = services.job_execute(job_id=_job(session).pk)
    assert job.status == "succeeded" and job.progress == 100
    entry = Entry.objects.get(session=session, entry_id=job.result_entry_ids[0])
    assert entry.data["summary"].startswith("## Goal\n")
    assert "offline summary" in entry.data["summary"]
    assert entry.data["firstKeptEntryId"] == job.preview["firstKeptEntryId"]
    assert entry.data["tokensBefore"] == job.preview["tokensBefore"]
    plan = services.plan_compaction(
        session,
        job.leaf_entry_id,
        JobParameters(keep_recent_tokens=10),
        providers.active_provider(),
    )
    assert job.requests[0]["offline"] is True
    assert job.requests[0]["request"] == plan.preview["request"]
    # The row keeps the preparation, not a second copy of the request bodies.
    assert "request" not in job.preview and "turnPrefixRequest" not in job.preview
    assert _count(session) == before + 1


def test_a_429_requeues_the_job_and_the_next_run_succeeds(
    import_corpus, anthropic_provider, server
):
    session, _ = import_corpus("tools")
    job = _job(session)
    server.script.append(Reply(status=429))
    with pytest.raises(services.RetryLater) as later:
        services.job_execute(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "queued" and job.attempts == 1
    assert "Attempt 1 failed" in job.error and "HTTP 429" in job.error
    assert later.value.countdown == pytest.approx(0.05)
    before = _count(session)
    job = services.job_execute(job_id=job.pk)
    assert job.status == "succeeded" and job.attempts == 2 and job.error == ""
    assert _count(session) == before + 1
    assert server.requests[0].body == server.requests[1].body


def test_a_client_error_fails_the_job_without_an_entry(import_corpus, anthropic_provider, server):
    session, _ = import_corpus("tools")
    before = _count(session)
    server.script.append(Reply(status=400))
    job = services.job_execute(job_id=_job(session).pk)
    assert job.status == "failed"
    assert "HTTP 400" in job.error and "fake server error 400" in job.error
    assert _count(session) == before


def test_retryable_errors_give_up_after_the_last_attempt(import_corpus, anthropic_provider, server):
    session, _ = import_corpus("tools")
    before = _count(session)
    job = _job(session)
    server.script.extend([Reply(status=503)] * job.max_attempts)
    for _ in range(job.max_attempts - 1):
        with pytest.raises(services.RetryLater):
            services.job_execute(job_id=job.pk)
    job = services.job_execute(job_id=job.pk)
    assert job.status == "failed" and "HTTP 503" in job.error
    assert _count(session) == before


@pytest.mark.django_db(transaction=True)
def test_the_embedded_runner_retries_in_a_thread_of_the_web_process(
    import_corpus, anthropic_provider, server, settings
):
    settings.CONTEXTLAB_JOBS_EMBEDDED = True
    session, _ = import_corpus("tools")
    server.script.extend([Reply(status=500), Reply(text="## Goal\nembedded")])
    job = _job(session)
    tasks.enqueue(job.pk)

    def done() -> bool:
        job.refresh_from_db()
        return job.is_done

    wait_until(done, timeout=30, what="the embedded runner to end the job")
    assert job.status == "succeeded" and job.attempts == 2
    entry = Entry.objects.get(session=session, entry_id=job.result_entry_ids[0])
    assert entry.data["summary"].startswith("## Goal\nembedded")


def test_a_job_cancelled_while_the_model_answers_appends_nothing(import_corpus, anthropic_provider):
    session, _ = import_corpus("tools")
    before = _count(session)
    job = _job(session)

    def answer_after_the_user_cancelled(config, request, reasoning=None, **_):
        services.job_cancel(job=Job.objects.get(pk=job.pk))
        return providers.Completion("## Goal\nlate", "stop", {}, {}, {})

    done = services.job_execute(job_id=job.pk, complete=answer_after_the_user_cancelled)
    assert done.status == "cancelled"
    assert done.result_entry_ids == []
    assert _count(session) == before


def test_a_summary_cut_off_at_max_tokens_is_stored_like_pi(
    import_corpus, anthropic_provider, server
):
    session, _ = import_corpus("tools")
    server.script.append(Reply(text="## Goal\ncut sho", stop_reason="length"))
    job = services.job_execute(job_id=_job(session).pk)
    assert job.status == "succeeded"
    assert job.responses[0]["stopReason"] == "length"


def test_nothing_to_compact_and_already_compacted_fail_with_pis_messages(
    import_corpus, offline_provider
):
    session, _ = import_corpus("tools")
    job = services.job_execute(job_id=_job(session, keep_recent_tokens=1_000_000).pk)
    assert job.status == "failed" and job.error == "Nothing to compact (session too small)"
    done = services.job_execute(job_id=_job(session).pk)
    assert done.status == "succeeded"
    again = services.job_execute(job_id=_job(session).pk)
    assert again.leaf_entry_id == done.result_entry_ids[0]
    assert again.status == "failed" and again.error == "Already compacted"


def test_a_branch_summary_lands_under_the_target_and_moves_the_leaf(
    import_corpus, offline_provider
):
    session, _ = import_corpus("branches")
    target = corpus_entry_id("branches", user="Suggest a name", reply=True)
    job = services.job_create(
        session=session, kind="branch_summary", target_entry_id=target, enqueue=False
    )
    job = services.job_execute(job_id=job.pk)
    assert job.status == "succeeded", job.error
    entry = Entry.objects.get(session=session, entry_id=job.result_entry_ids[0])
    assert list(entry.data) == list(ENTRY_KEY_ORDER["branch_summary"])
    assert entry.parent_id == target and entry.data["fromId"] == target
    assert entry.data["summary"].startswith(
        "The user explored a different conversation branch before returning here.\n"
    )
    session.refresh_from_db()
    assert session.leaf_entry_id == entry.entry_id


def test_jobs_never_change_imported_entries_or_the_original_bytes(import_corpus, offline_provider):
    session, path = import_corpus("branches")

    def imported():
        return list(
            Entry.objects.filter(session=session, origin="file")
            .order_by("seq")
            .values_list("entry_id", "parent_id", "seq", "data")
        )

    before = imported()
    target = corpus_entry_id("branches", user="Why MIT", reply=True)
    job = services.job_create(
        session=session, kind="branch_summary", target_entry_id=target, enqueue=False
    )
    assert services.job_execute(job_id=job.pk).status == "succeeded"
    assert services.job_execute(job_id=_job(session).pk).status == "succeeded"
    assert imported() == before
    session.refresh_from_db()
    with session.current_revision.open_blob() as fh:
        assert fh.read() == path.read_bytes()


@pytest.mark.django_db(transaction=True)
def test_an_appended_summary_is_searchable_and_counted(import_corpus, offline_provider):
    from contextlab.library.selectors import search_entries

    session, _ = import_corpus("tools")
    job = services.job_execute(job_id=_job(session).pk)
    entry = Entry.objects.get(session=session, entry_id=job.result_entry_ids[0])
    assert entry.search_indexed and "offline summary" in entry.search_text
    assert entry.tokens > 0
    assert entry in search_entries("contextlab without a model")


def test_a_job_that_runs_out_of_time_fails_as_timed_out_and_appends_nothing(
    import_corpus, anthropic_provider, settings
):
    from celery.exceptions import SoftTimeLimitExceeded

    settings.CELERY_TASK_SOFT_TIME_LIMIT = 7
    session, _ = import_corpus("tools")
    before = _count(session)

    def slow(config, request, reasoning=None, **_):
        raise SoftTimeLimitExceeded()  # what Celery raises in the task when time is up

    done = services.job_execute(job_id=_job(session).pk, complete=slow)
    assert (done.status, done.error) == ("failed", "Timed out after 7s")
    assert _count(session) == before
    # Raised inside a provider's SDK call, it is not taken for a provider failure either.
    with pytest.raises(SoftTimeLimitExceeded):
        providers._raise_for(SoftTimeLimitExceeded(), "Anthropic")


def test_a_retry_plans_with_the_limits_of_the_model_configured_now(
    import_corpus, anthropic_provider, settings
):
    session, _ = import_corpus("tools")
    failed = _job(session)
    assert failed.parameters == {"keepRecentTokens": 10}  # only what was chosen is stored
    services.job_cancel(job=failed)
    settings.CONTEXTLAB_LLM = {
        **settings.CONTEXTLAB_LLM,
        "anthropic": {**settings.CONTEXTLAB_LLM["anthropic"], "max_tokens": 1000},
    }
    seen = []

    def answer(config, request, reasoning=None, **_):
        seen.append(request["maxTokens"])
        return providers.Completion("## Goal\nok", "stop", {}, {}, {})

    retried = services.job_retry(job=Job.objects.get(pk=failed.pk))
    done = services.job_execute(job_id=retried.pk, complete=answer)
    assert done.status == "succeeded"
    # Pi caps the summary at 0.8 x reserveTokens, and at the model's own maxTokens.
    assert seen and max(seen) <= 1000


def test_a_request_over_the_size_limit_is_not_sent_and_the_job_fails_saying_why(
    import_corpus, anthropic_provider, server, settings
):
    settings.CONTEXTLAB_MAX_REQUEST_BYTES = 2_000
    session, _ = import_corpus("tools")
    before = _count(session)
    done = services.job_execute(job_id=_job(session).pk)
    assert done.status == "failed"
    assert "over the limit of" in done.error and "CONTEXTLAB_MAX_REQUEST_BYTES" in done.error
    assert "nothing was sent" in done.error
    assert server.requests == []
    assert done.requests == [] and _count(session) == before


def test_model_jobs_per_user_per_hour_are_limited_with_a_clear_message(
    import_corpus, anthropic_provider, settings, owner
):
    settings.CONTEXTLAB_MODEL_CALLS_PER_USER_PER_HOUR = 2
    session, _ = import_corpus("tools")
    for _ in range(2):
        job = services.job_create(
            session=session, kind="compaction", requested_by=owner, enqueue=False
        )
        services.job_cancel(job=job)
    with pytest.raises(services.JobError, match="limit per user"):
        services.job_create(session=session, kind="compaction", requested_by=owner, enqueue=False)
    # The offline summariser calls no model: not counted, not limited.
    settings.CONTEXTLAB_LLM = {**settings.CONTEXTLAB_LLM, "provider": "offline"}
    services.job_create(session=session, kind="compaction", requested_by=owner, enqueue=False)


def test_a_crashed_job_shows_a_plain_message_and_logs_the_details(
    import_corpus, offline_provider, owner, client, monkeypatch, caplog
):
    from django.db import OperationalError
    from django.urls import reverse

    from contextlab.jobs.services import running
    from contextlab.review.models import ProjectMembership

    session, _ = import_corpus("tools")
    ProjectMembership.objects.create(project=session.project, user=owner, role="owner")
    internals = 'connection to server at "db.internal" (10.0.0.5), port 5432 failed: /srv/x.sock'

    def crashed(*args, **kwargs):
        raise OperationalError(internals)

    monkeypatch.setattr(running, "plan_compaction", crashed)
    job = services.job_execute(job_id=_job(session).pk)
    assert job.status == "failed"
    assert job.error == services.internal_error_message(job.pk)
    client.force_login(owner)
    page = client.get(reverse("jobs:detail", args=[job.pk])).content.decode()
    assert "fault on the server" in page
    for secret in ("db.internal", "10.0.0.5", "/srv/x.sock", "OperationalError"):
        assert secret not in page and secret not in job.error
    assert internals in caplog.text  # the administrator's log has it


def test_an_unexpected_provider_failure_shows_no_internals(caplog):
    with pytest.raises(providers.ProviderError) as caught:
        try:
            raise KeyError("choices at /srv/app/.venv/lib/openai/_streaming.py")
        except KeyError as exc:
            providers._raise_for(exc, "OpenAI (https://api.openai.com/v1)")
    message = str(caught.value)
    assert message == (
        "The request to OpenAI (https://api.openai.com/v1) failed unexpectedly; "
        "the details are in the worker's log"
    )
    assert not caught.value.retryable
    assert "_streaming.py" in caplog.text
