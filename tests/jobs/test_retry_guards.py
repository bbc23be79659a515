"""Jobs that cannot pile up: a retry is refused when it could only add a sibling entry, retries
are capped, and the provider SDK does not retry inside each of the job's own attempts."""

from __future__ import annotations

import pytest
from django.urls import reverse

from contextlab.jobs import services
from contextlab.jobs.models import Job
from contextlab.jobs.parameters import JobParameters
from contextlab.library.models import Entry, Session
from tests.jobs.fake_llm import FakeLLMServer, Reply

pytestmark = pytest.mark.django_db


def _compactions_of(session, leaf: str) -> list[str]:
    return list(
        Entry.objects.filter(session=session, type="compaction", parent_id=leaf).values_list(
            "entry_id", flat=True
        )
    )


def _job(session) -> Job:
    return services.job_create(
        session=session,
        kind="compaction",
        parameters=JobParameters(keep_recent_tokens=10),
        enqueue=False,
    )


def _retry(client, job: Job):
    return client.post(reverse("jobs:retry", args=[job.pk]), follow=True)


def test_retrying_twice_after_another_job_compacted_the_leaf_adds_no_sibling(
    owner_client, import_corpus, offline_provider
):
    session, _ = import_corpus("tools")
    leaf = session.leaf_entry_id
    cancelled = _job(session)
    services.job_cancel(job=cancelled)
    other = services.job_execute(job_id=_job(session).pk)
    assert other.status == "succeeded"
    moved_to = Session.objects.get(pk=session.pk).leaf_entry_id
    assert moved_to == other.result_entry_ids[0] != leaf
    for _ in range(2):
        page = _retry(owner_client, cancelled).content.decode()
        assert f"leaf moved from {leaf} to {moved_to}" in page
    assert Job.objects.filter(retry_of=cancelled).count() == 0
    assert _compactions_of(session, leaf) == other.result_entry_ids


def test_a_cancelled_compaction_queued_at_an_earlier_entry_is_retried_while_nothing_moved(
    owner_client, import_corpus, offline_provider
):
    """A compaction queued ("Compact here…") at an entry above the leaf: cancel, then Retry,
    queues the retry at the same entry; only a leaf that moved since then refuses it."""
    session, _ = import_corpus("tools")
    leaf = session.leaf_entry_id
    earlier = Entry.objects.get(session=session, entry_id=leaf).parent_id
    assert earlier and earlier != leaf
    queued = services.job_create(
        session=session,
        kind="compaction",
        leaf_entry_id=earlier,
        parameters=JobParameters(keep_recent_tokens=10),
        enqueue=False,
    )
    assert queued.session_leaf_entry_id == leaf
    services.job_cancel(job=queued)
    page = _retry(owner_client, queued).content.decode()
    assert "leaf moved" not in page
    retried = Job.objects.get(retry_of=queued)
    assert (retried.leaf_entry_id, retried.session_leaf_entry_id) == (earlier, leaf)


def test_a_retry_is_refused_when_the_same_compaction_already_exists(
    owner_client, import_corpus, offline_provider
):
    session, _ = import_corpus("tools")
    leaf = session.leaf_entry_id
    cancelled = _job(session)
    services.job_cancel(job=cancelled)
    done = services.job_execute(job_id=_job(session).pk)
    # Back on the compacted entry (Pi's /tree without a summary): the leaf is the job's again.
    services.session_continue_without_summary(session=session, target_entry_id=leaf)
    page = _retry(owner_client, cancelled).content.decode()
    assert f"Job #{done.pk} already wrote this compaction" in page
    assert _compactions_of(session, leaf) == done.result_entry_ids
    # Without that job's record, the entry in the file still says so.
    Job.objects.filter(pk=done.pk).delete()
    with pytest.raises(services.JobError, match=f"Entry {leaf} already has a compaction"):
        services.job_retry(job=cancelled)


def test_a_job_is_retried_once_and_a_chain_of_retries_is_capped(
    owner_client, import_corpus, offline_provider, settings
):
    settings.CONTEXTLAB_JOB_MAX_RETRIES = 2
    session, _ = import_corpus("tools")
    first = _job(session)
    services.job_cancel(job=first)
    second = services.job_retry(job=first)
    services.job_cancel(job=second)
    page = _retry(owner_client, first).content.decode()
    assert f"Job #{first.pk} was already retried as job #{second.pk}" in page
    third = services.job_retry(job=second)
    services.job_cancel(job=third)
    page = _retry(owner_client, third).content.decode()
    assert f"Job #{third.pk} is already retry 2 of job #{first.pk} (at most 2)" in page
    assert Job.objects.filter(session=session).count() == 3


def test_a_refused_retry_says_why_inside_the_status_box_htmx_swaps(
    owner_client, import_corpus, offline_provider
):
    """With JavaScript the Retry button posts with htmx, which swaps only the job's status box:
    the reason it was refused is in that box, not in a flash message of some later page."""
    session, _ = import_corpus("tools")
    leaf = session.leaf_entry_id
    cancelled = _job(session)
    services.job_cancel(job=cancelled)
    services.job_execute(job_id=_job(session).pk)
    moved_to = Session.objects.get(pk=session.pk).leaf_entry_id
    response = owner_client.post(
        reverse("jobs:retry", args=[cancelled.pk]),
        headers={"HX-Request": "true", "HX-Target": f"job-{cancelled.pk}"},
    )
    assert response.status_code in (200, 286)  # swapped by htmx (286: and polling stops)
    body = response.content.decode()
    assert body.lstrip().startswith(f'<div id="job-{cancelled.pk}"')
    assert "Retry refused: The session" in body
    assert f"leaf moved from {leaf} to {moved_to}" in body
    assert 'role="alert"' in body
    assert Job.objects.filter(retry_of=cancelled).count() == 0
    # Not left behind as a flash message for the next page either.
    page = owner_client.get(reverse("jobs:detail", args=[cancelled.pk])).content.decode()
    assert "Retry refused" not in page and "leaf moved" not in page


def test_the_sdk_does_not_retry_inside_the_jobs_attempts(import_corpus, settings):
    with FakeLLMServer() as server:
        settings.CONTEXTLAB_JOB_RETRY_BASE_SECONDS = 0.05
        # max_retries: what the SDK would do on its own for each attempt
        server.point_at(settings, "anthropic", max_retries=2, timeout=5.0, model="fake-claude")
        session, _ = import_corpus("tools")
        job = services.job_create(
            session=session,
            kind="compaction",
            parameters=JobParameters(keep_recent_tokens=10),
            enqueue=False,
        )
        server.script.extend([Reply(status=503)] * 9)
        for attempt in range(1, job.max_attempts):
            with pytest.raises(services.RetryLater):
                services.job_execute(job_id=job.pk)
            assert len(server.requests) == attempt
        job = services.job_execute(job_id=job.pk)
        assert job.status == "failed" and "HTTP 503" in job.error
        assert len(server.requests) == job.max_attempts == 3
