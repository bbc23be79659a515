"""The jobs pages over full HTTP requests: forms, live status, cancel, retry, history, export."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from contextlab.jobs import services
from contextlab.jobs.models import Job
from contextlab.library.models import Entry
from tests.conftest import corpus_entry_id

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


def test_it_sends_anonymous_visitors_to_the_login_page(client, import_corpus):
    session, _ = import_corpus("tools")
    for name in ("jobs:list", "jobs:export", "jobs:compact", "jobs:continue"):
        response = client.get(reverse(name, args=[session.pk]))
        assert response.status_code == 302 and "/login/" in response["Location"]


def test_posting_compact_queues_a_job_after_commit(
    owner_client, owner, import_corpus, offline_provider, django_capture_on_commit_callbacks
):
    session, _ = import_corpus("tools")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = owner_client.post(
            reverse("jobs:compact", args=[session.pk]),
            {"leaf": session.leaf_entry_id, "instructions": "focus on tests"},
        )
    job = Job.objects.get(session=session)
    assert response.status_code == 302 and response["Location"] == reverse(
        "jobs:detail", args=[job.pk]
    )
    assert len(callbacks) == 1  # enqueued only once the transaction commits
    assert job.parameters["customInstructions"] == "focus on tests"
    assert job.requested_by == owner and job.status == "queued" and job.is_offline


def test_a_second_compact_is_refused_with_a_message_naming_the_first(
    owner_client, import_corpus, offline_provider
):
    session, _ = import_corpus("tools")
    first = services.job_create(session=session, kind="compaction", enqueue=False)
    response = owner_client.post(
        reverse("jobs:compact", args=[session.pk]), {"leaf": session.leaf_entry_id}, **HTMX
    )
    assert response.status_code == 200  # htmx swaps only 2xx: the message shows in place
    assert f"job #{first.pk} is already queued" in response.content.decode()


def test_the_status_partial_polls_until_the_job_is_done(
    owner_client, import_corpus, offline_provider
):
    session, _ = import_corpus("tools")
    job = services.job_create(session=session, kind="compaction", enqueue=False)
    url = reverse("jobs:detail", args=[job.pk])
    running = owner_client.get(url, **HTMX)
    assert running.status_code == 200
    assert 'hx-trigger="every 1s, visibilitychange from:document"' in running.content.decode()
    assert "offline summary" in running.content.decode()
    cancelled = owner_client.post(reverse("jobs:cancel", args=[job.pk]), **HTMX)
    assert cancelled.status_code == 286  # htmx: stop polling
    assert "cancelled" in cancelled.content.decode()
    assert "hx-trigger" not in cancelled.content.decode()
    assert owner_client.get(url).status_code == 200  # full page without htmx


def test_retry_starts_a_new_job_linked_to_the_old_one(
    owner_client, import_corpus, offline_provider
):
    session, _ = import_corpus("tools")
    job = services.job_create(session=session, kind="compaction", enqueue=False)
    services.job_cancel(job=job)
    response = owner_client.post(reverse("jobs:retry", args=[job.pk]))
    new = Job.objects.exclude(pk=job.pk).get()
    assert response["Location"] == reverse("jobs:detail", args=[new.pk])
    assert new.retry_of == job and new.status == "queued"


def test_cancel_and_retry_only_accept_post(owner_client, import_corpus, offline_provider):
    session, _ = import_corpus("tools")
    job = services.job_create(session=session, kind="compaction", enqueue=False)
    assert owner_client.get(reverse("jobs:cancel", args=[job.pk])).status_code == 405
    assert owner_client.get(reverse("jobs:retry", args=[job.pk])).status_code == 405


def test_the_history_lists_jobs_in_a_fixed_number_of_queries(
    owner_client, import_corpus, offline_provider, django_assert_max_num_queries
):
    session, _ = import_corpus("tools")
    for _ in range(5):
        services.job_cancel(
            job=services.job_create(session=session, kind="compaction", enqueue=False)
        )
    with django_assert_max_num_queries(6):
        response = owner_client.get(reverse("jobs:list", args=[session.pk]))
    assert response.content.decode().count("Compaction #") == 5
    assert "offline summariser" in response.content.decode()


def test_continue_without_summary_moves_the_leaf_to_the_targets_parent_for_a_user_message(
    owner_client, import_corpus
):
    session, _ = import_corpus("branches")
    licence = corpus_entry_id("branches", user="Actually, suggest a licence")
    response = owner_client.post(
        reverse("jobs:continue", args=[session.pk]), {"target": licence, "choice": "none"}
    )
    session.refresh_from_db()
    assert response.status_code == 302
    assert response["Location"] == (
        f"{reverse('inspector:session', args=[session.pk])}?entry={session.leaf_entry_id}"
    )
    # A user message sends its text back to the editor: the leaf is its parent.
    assert session.leaf_entry_id != licence
    assert session.leaf_entry_id == Entry.objects.get(session=session, entry_id=licence).parent_id
    assert not Job.objects.exists()


def test_continue_with_a_custom_prompt_needs_the_instructions(
    owner_client, import_corpus, offline_provider
):
    session, _ = import_corpus("branches")
    url = reverse("jobs:continue", args=[session.pk])
    target = corpus_entry_id("branches", user="What is this project", reply=True)
    response = owner_client.post(url, {"target": target, "choice": "custom"})
    assert response.status_code == 409
    assert "Write the custom instructions" in response.content.decode()
    response = owner_client.post(
        url,
        {
            "target": target,
            "choice": "custom",
            "instructions": "only the decisions",
            "replace": "1",
        },
    )
    job = Job.objects.get()
    assert job.kind == "branch_summary" and job.target_entry_id == target
    assert job.parameters["replaceInstructions"] is True


def test_export_downloads_the_file_pi_wrote(owner_client, import_corpus):
    session, path = import_corpus("branches")
    response = owner_client.get(reverse("jobs:export", args=[session.pk]))
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == path.read_bytes()
    assert response["Content-Disposition"].endswith(f'_{session.session_id}.jsonl"')


def test_the_compact_form_previews_pis_request_before_queueing(
    owner_client, import_corpus, offline_provider
):
    session, _ = import_corpus("tools")
    url = reverse("jobs:compact", args=[session.pk])
    nothing = owner_client.get(url, {"leaf": session.leaf_entry_id}, **HTMX).content.decode()
    assert "Nothing to compact (session too small)" in nothing  # Pi's defaults keep it all
    response = owner_client.get(
        url, {"leaf": session.leaf_entry_id, "keepRecentTokens": "150"}, **HTMX
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert "First kept entry" in body and "Tokens before" in body
    assert "Summarisation request (max tokens 13107)" in body
    assert "offline summariser" in body
    assert not Job.objects.exists()  # a preview queues nothing


def test_an_included_compact_form_lazy_loads_its_preview(import_corpus, rf, owner):
    from django.template.loader import render_to_string

    session, _ = import_corpus("tools")
    html = render_to_string("jobs/_compact_form.html", {"session": session, "leaf": "abc"})
    assert 'hx-trigger="load"' in html
    assert f'href="{reverse("jobs:compact", args=[session.pk])}?leaf=abc"' in html


def test_the_what_if_page_lists_where_pi_would_have_compacted(owner_client, import_corpus):
    session, _ = import_corpus("tools")
    url = reverse("jobs:what_if", args=[session.pk])
    response = owner_client.get(
        url, {"contextWindow": "1000", "reserveTokens": "100", "keepRecentTokens": "200"}
    )
    assert response.status_code == 200
    body = response.content.decode()
    found = re.search(
        r"(\d+) auto-compactions? for contextWindow 1000, reserveTokens 100, "
        r"keepRecentTokens 200\.",
        body,
    )
    assert found and int(found.group(1)) > 0
    assert body.count("<li>after <code>") == int(found.group(1))
    partial = owner_client.get(url, {"contextWindow": "1000000"}, **HTMX)
    assert partial.content.decode().lstrip().startswith('<div id="what-if-results">')
    assert "0 auto-compactions" in partial.content.decode()
