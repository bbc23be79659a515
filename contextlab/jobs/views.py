"""Jobs in the browser: compact here, continue from here, live status, cancel, retry, history,
and the export of a session back to a Pi JSONL file.

Function views; business logic lives in services. Every page works without JavaScript; with htmx
the forms swap their partials in place and the status partial polls until the job is done.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from contextlab.http import HtmxHttpRequest
from contextlab.jobs import providers, services
from contextlab.jobs.forms import CompactForm, CompactionSettingsForm, ContinueForm, WhatIfForm
from contextlab.jobs.models import Job
from contextlab.library.models import Session
from contextlab.library.selectors import session_for_user_or_404
from contextlab.pi.tokens import DEFAULT_KEEP_RECENT_TOKENS, DEFAULT_RESERVE_TOKENS
from contextlab.review.services import audit_record

HISTORY_LIMIT = 50


def _get_job_for_user(request: HtmxHttpRequest, pk: int) -> Job:
    """The job if its session is visible to the user, else 404 (one query: polled each second)."""
    return get_object_or_404(
        Job.objects.select_related("session", "requested_by").visible_to(request.user), pk=pk
    )


def _status_response(request: HtmxHttpRequest, job: Job, refusal: str = "") -> HttpResponse:
    """The job's status box (htmx polls it); `refusal` says there why an action was refused."""
    response = render(request, "jobs/_job_status.html", {"job": job, "refusal": refusal})
    if request.htmx and job.is_done:
        # 286 tells htmx to stop polling; the body still replaces the partial one last time.
        stop = HttpResponseStopPolling(response.content)
        stop["Content-Type"] = response["Content-Type"]
        return stop
    return response


@login_required
def compact(request: HtmxHttpRequest, session_pk: int) -> HttpResponse:
    """GET: the preview of what Pi would summarise at `leaf`. POST: queue the compaction."""
    session = session_for_user_or_404(request.user, session_pk)
    form = CompactForm(request.POST if request.method == "POST" else request.GET)
    form.is_valid()  # every field is optional: what is missing or malformed is Pi's default
    leaf = form.cleaned_data.get("leaf") or session.leaf_entry_id
    if request.method == "POST":
        try:
            job = services.job_create(
                session=session,
                kind=Job.Kind.COMPACTION,
                leaf_entry_id=leaf,
                parameters=form.parameters(),
                requested_by=request.user,
            )
        except services.JobError as exc:
            return _form_error(request, "jobs/_compact_form.html", session, leaf, str(exc))
        if request.htmx:
            return render(request, "jobs/_job_status.html", {"job": job})
        return redirect("jobs:detail", pk=job.pk)
    preview, error = None, ""
    chosen = form.settings()
    try:
        plan = services.plan_compaction(
            session,
            leaf,
            form.parameters(),
            providers.active_provider(),
            chosen=services.profile_dialect(session),
        )
        preview = {
            "plan": plan.preview,
            "nothing": plan.nothing,
            "calls": len(plan.calls),
            "texts": [{"role": c.role, **_request_text(c.request)} for c in plan.calls],
        }
    except services.JobError as exc:
        error = str(exc)
    context = {
        "session": session,
        "leaf": leaf,
        "preview": preview,
        "error": error,
        "provider": providers.active_provider().public(),
        "loaded": True,
        "keep_recent_tokens": chosen["keepRecentTokens"],
        "reserve_tokens": chosen["reserveTokens"],
    }
    template = "jobs/_compact_form.html" if request.htmx else "jobs/compact.html"
    return render(request, template, context)


def _request_text(request: dict[str, Any]) -> dict[str, Any]:
    """What the preview shows of one summarisation request: its text up to
    CONTEXTLAB_MESSAGE_RENDER_CHARS (a GET must never render a whole context: the request of
    a 500 MB session is hundreds of MB)."""
    limit = settings.CONTEXTLAB_MESSAGE_RENDER_CHARS
    parts: list[str] = []
    size = 0
    for message in request.get("messages") or []:
        content = message.get("content")
        blocks = [{"text": content}] if isinstance(content, str) else content or []
        for block in blocks:
            text = block.get("text") if isinstance(block, dict) else None
            if not isinstance(text, str):
                continue
            if size < limit:
                parts.append(text[: limit - size])
            size += len(text)
    return {
        "maxTokens": request.get("maxTokens"),
        "text": "".join(parts),
        "hidden": max(0, size - limit),
        "chars": size,
    }


# htmx swaps only 2xx answers by default: a refused form comes back as 200 with its message, so
# the user sees it in place; without htmx the page carries 409.
def _form_error(
    request: HtmxHttpRequest, template: str, session: Session, leaf: str, error: str
) -> HttpResponse:
    chosen = CompactionSettingsForm(request.POST).settings()
    if not request.htmx:
        messages.error(request, error)
        query = urlencode({"leaf": leaf, **chosen})
        return redirect(f"{request.path}?{query}")
    context = {
        "session": session,
        "leaf": leaf,
        "error": error,
        "provider": providers.active_provider().public(),
        "loaded": True,
        "keep_recent_tokens": chosen["keepRecentTokens"],
        "reserve_tokens": chosen["reserveTokens"],
    }
    return render(request, template, context)


@login_required
def continue_from(request: HtmxHttpRequest, session_pk: int) -> HttpResponse:
    """Pi's three choices when navigating the tree: no summary, summary, summary + instructions."""
    session = session_for_user_or_404(request.user, session_pk)
    form = ContinueForm(request.POST if request.method == "POST" else request.GET)
    valid = form.is_valid()
    target = form.cleaned_data.get("target", "")
    old_leaf = form.cleaned_data.get("from_leaf") or session.leaf_entry_id
    if request.method == "POST":
        try:
            if not valid:
                raise services.JobError(
                    " ".join(str(e) for e in form.non_field_errors()) or "Choose again"
                )
            if form.cleaned_data["choice"] == "none":
                new_leaf = services.session_continue_without_summary(
                    session=session, target_entry_id=target, actor=request.user, old_leaf=old_leaf
                )
                messages.success(request, f"Leaf moved to {new_leaf or 'the root'} (no summary).")
                target_url = reverse("inspector:session", args=[session.pk])
                return redirect(f"{target_url}?entry={new_leaf}" if new_leaf else target_url)
            job = services.job_create(
                session=session,
                kind=Job.Kind.BRANCH_SUMMARY,
                leaf_entry_id=old_leaf,
                target_entry_id=target,
                parameters=form.parameters(),
                requested_by=request.user,
            )
        except services.JobError as exc:
            context = {
                "session": session,
                "target": target,
                "old_leaf": old_leaf,
                "error": str(exc),
            }
            template = "jobs/_continue_form.html" if request.htmx else "jobs/continue.html"
            return render(request, template, context, status=200 if request.htmx else 409)
        if request.htmx:
            return render(request, "jobs/_job_status.html", {"job": job})
        return redirect("jobs:detail", pk=job.pk)
    context = {"session": session, "target": target, "old_leaf": old_leaf, "error": ""}
    template = "jobs/_continue_form.html" if request.htmx else "jobs/continue.html"
    return render(request, template, context)


@login_required
def detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    job = _get_job_for_user(request, pk)
    if request.htmx:
        return _status_response(request, job)
    return render(request, "jobs/detail.html", {"job": job, "session": job.session})


JOB_PARTS = ("preview", "requests", "responses")


@login_required
def payload(request: HtmxHttpRequest, pk: int, part: str, n: int = 0) -> HttpResponse:
    """One request, response or the preparation of a job, as JSON (the job page lists them and
    loads each on demand: whole summarisation requests made that page weigh megabytes)."""
    if part not in JOB_PARTS:
        raise Http404("No such part of a job")
    job = _get_job_for_user(request, pk)
    value = getattr(job, part)
    if part != "preview":
        if not 0 <= n < len(value):
            raise Http404("No such request or response")
        value = value[n]
    text = json.dumps(value, indent=2, ensure_ascii=False)
    if request.htmx:
        return render(request, "jobs/_payload.html", {"text": text})
    return HttpResponse(text, content_type="application/json")


@login_required
@require_POST
def cancel(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    job = _get_job_for_user(request, pk)
    if not services.job_cancel(job=job, actor=request.user):
        messages.info(request, f"Job #{job.pk} had already ended ({job.status}).")
    if request.htmx:
        return _status_response(request, job)
    return redirect("jobs:detail", pk=job.pk)


@login_required
@require_POST
def retry(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    job = _get_job_for_user(request, pk)
    try:
        new_job = services.job_retry(job=job, requested_by=request.user)
    except services.JobError as exc:
        if request.htmx:
            # The box the Retry button sits in is all htmx swaps: the reason goes in it (a
            # flash message would only show on some later page).
            return _status_response(request, job, refusal=f"Retry refused: {exc}")
        messages.error(request, str(exc))
        return redirect("jobs:detail", pk=job.pk)
    if request.htmx:
        return render(request, "jobs/_job_status.html", {"job": new_job})
    return redirect("jobs:detail", pk=new_job.pk)


@login_required
def job_list(request: HtmxHttpRequest, session_pk: int) -> HttpResponse:
    session = session_for_user_or_404(request.user, session_pk)
    jobs = list(Job.objects.for_session(session.pk).select_related("requested_by")[:HISTORY_LIMIT])
    context = {
        "session": session,
        "jobs": jobs,
        "provider": providers.active_provider().public(),
        "loaded": True,
    }
    if request.htmx:
        return render(request, "jobs/_job_history.html", context)
    return render(request, "jobs/list.html", context)


@login_required
def export(request: HtmxHttpRequest, session_pk: int) -> StreamingHttpResponse:
    """Download the session as a Pi JSONL v3 file (with the entries contextlab added)."""
    session = session_for_user_or_404(request.user, session_pk)
    try:
        chunks = services.session_export_chunks(session)
        first = next(chunks, b"")
    except (services.JobError, OSError) as exc:
        raise Http404(str(exc)) from exc

    def stream() -> Iterator[bytes]:
        yield first
        yield from chunks

    response = StreamingHttpResponse(stream(), content_type="application/x-ndjson")
    filename = services.session_export_filename(session)
    audit_record(actor=request.user, verb="session.export", session=session, target=filename)
    # Django's builder quotes, escapes or percent-encodes the id (which comes from the file).
    response["Content-Disposition"] = content_disposition_header(True, filename)
    return response


@login_required
def what_if(request: HtmxHttpRequest, session_pk: int) -> HttpResponse:
    """Auto-compaction what-if: where Pi would have compacted for these settings (no model)."""
    session = session_for_user_or_404(request.user, session_pk)
    config = providers.active_provider()
    form = WhatIfForm(request.GET)
    context_window = form.whole("contextWindow", config.context_window)
    reserve = form.whole("reserveTokens", DEFAULT_RESERVE_TOKENS)
    keep = form.whole("keepRecentTokens", DEFAULT_KEEP_RECENT_TOKENS)
    leaf = form.data.get("leaf") or session.leaf_entry_id
    error, compactions = "", []
    try:
        compactions = services.what_if_auto_compaction(
            session,
            leaf_id=leaf,
            context_window=context_window,
            reserve_tokens=reserve,
            keep_recent_tokens=keep,
        )
    except services.JobError as exc:
        error = str(exc)
    context = {
        "session": session,
        "leaf": leaf,
        "contextWindow": context_window,
        "reserveTokens": reserve,
        "keepRecentTokens": keep,
        "compactions": compactions,
        "error": error,
    }
    if request.htmx:
        return render(request, "jobs/what_if.html#what-if-results", context)
    return render(request, "jobs/what_if.html", context)
