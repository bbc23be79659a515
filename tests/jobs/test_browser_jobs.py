"""Compact here, in a real Chromium against a live server, with the embedded job runner."""

from __future__ import annotations

import pytest
from django.urls import reverse

from contextlab.jobs.models import Job
from contextlab.library.models import Entry
from tests.conftest import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_compact_here_previews_queues_polls_and_stops_when_done(
    page, live_server, owner, import_corpus, offline_provider, settings
):
    settings.CONTEXTLAB_JOBS_EMBEDDED = True
    session, _ = import_corpus("tools")
    login(page, live_server.url, owner.username)

    url = reverse("jobs:compact", args=[session.pk])
    page.goto(f"{live_server.url}{url}?keepRecentTokens=150")
    assert page.locator("#compact-form dl.preview").is_visible()
    assert "offline summariser" in page.inner_text("#compact-form")
    page.fill("#compact-instructions", "focus on the files")
    page.click("#compact-form form[method=post] button[type=submit]")

    # htmx swaps in the status partial, which polls until the job ends and then stops.
    page.wait_for_selector(".job-status.job-succeeded", timeout=30_000)
    status = page.locator(".job-status")
    assert status.get_attribute("hx-trigger") is None
    assert "offline summary" in status.inner_text()
    job = Job.objects.get(session=session)
    assert job.parameters["customInstructions"] == "focus on the files"
    assert Entry.objects.filter(session=session, entry_id__in=job.result_entry_ids).exists()
    # The appended entry links to the session inspector.
    assert status.locator(f"a[href*='entry={job.result_entry_ids[0]}']").count() == 1


def test_continue_from_here_with_a_summary_from_the_inspector(
    page, live_server, owner, import_corpus, offline_provider, settings
):
    from tests.conftest import corpus_entry_id

    settings.CONTEXTLAB_JOBS_EMBEDDED = True
    session, _ = import_corpus("branches")
    target = corpus_entry_id("branches", user="Suggest a name", reply=True)
    login(page, live_server.url, owner.username)

    page.goto(f"{live_server.url}{reverse('inspector:session', args=[session.pk])}?entry={target}")
    page.click("details.continue-here summary")  # the inspector folds the form away
    form = page.locator("#continue-form")
    form.locator("input[name=choice][value=summary]").check()
    form.locator("button[type=submit]").click()
    page.wait_for_selector(".job-status.job-succeeded", timeout=30_000)
    job = Job.objects.get(session=session)
    assert job.kind == "branch_summary" and job.target_entry_id == target
    entry = Entry.objects.get(session=session, entry_id=job.result_entry_ids[0])
    assert entry.parent_id == target and entry.data["fromId"] == target
