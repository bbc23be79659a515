"""The session library: sessions grouped by project, full-text search, upload."""

from __future__ import annotations

import logging
from functools import partial
from pathlib import Path
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.db.models import Prefetch
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from contextlab.http import HtmxHttpRequest
from contextlab.inspector.selectors import context_entry_ids
from contextlab.jobs.tasks import enqueue_after_import
from contextlab.library.forms import SORTS, LibraryFilterForm
from contextlab.library.importer import ImportResult, import_session_file
from contextlab.library.models import Session
from contextlab.library.rendering import search_hits_html, session_rows_html
from contextlab.library.selectors import (
    filter_sessions,
    projects_for_user,
    search_entries,
    session_for_user_or_404,
    session_revisions,
    sessions_for_user,
    unusable_file_problem,
    unusable_files_for,
)
from contextlab.library.uploads import too_large_message
from contextlab.pages import kept_page
from contextlab.review.models import SessionLabel
from contextlab.review.selectors import labels_in_use
from contextlab.review.services import audit_record, upload_check, upload_record

logger = logging.getLogger(__name__)
UPLOAD_FAILED = (
    "could not be imported because of an error on the server (it is logged for the"
    " administrator); nothing from it is shown"
)

# The library is one page; past this many sessions, filters narrow it down.
LIBRARY_LIMIT = 500
SEARCH_LIMIT = 100
# Session columns the library's rows never show: not read (the header is JSON to decode).
LIBRARY_UNUSED = ("header", "source_path", "parent_session")


@login_required
@kept_page("library")
def index(request: HtmxHttpRequest) -> HttpResponse:
    form = LibraryFilterForm(request.GET)
    filters = form.cleaned_data if form.is_valid() else {}
    sort = filters.get("sort") or "recent"

    found = filter_sessions(sessions_for_user(request.user), filters)
    found = found.prefetch_related(
        Prefetch("review_labels", queryset=SessionLabel.objects.only("session_id", "name"))
    ).defer(*LIBRARY_UNUSED)
    # Sorted as asked across the whole library (the limit keeps the first sessions of that
    # order); each project group comes where its first session does, so "oldest" and "recent"
    # reorder the groups too, not only the rows inside them.
    sessions = list(found.order_by(*SORTS[sort])[:LIBRARY_LIMIT])
    by_project: dict[int | None, list[Session]] = {}
    for item in sessions:
        by_project.setdefault(item.project_id, []).append(item)
    groups = [(items[0].project, items) for items in by_project.values()]
    context = {
        "nav": "library",
        "form": form,
        "filters": filters,
        # With a filter set, an empty table means "nothing matches", not "nothing imported".
        "filters_active": any(v for k, v in filters.items() if k != "sort"),
        "sort": sort,
        "groups": groups,
        "session_rows": session_rows_html(groups),
        "session_total": len(sessions),
        "truncated": len(sessions) == LIBRARY_LIMIT,
        "projects": projects_for_user(request.user).order_by("cwd"),
        "known_models": sorted({m for s in sessions for m in (s.models_used or [])}),
        "sorts": list(SORTS),
    }
    if request.htmx and request.htmx.target == "library-table":
        return render(request, "library/index.html#library-table", context)
    # Only the full page shows these (the filter form's labels, the files that gave no session).
    context["review_labels"] = labels_in_use(request.user)
    context["unusable_files"] = unusable_files_for(request.user)
    return render(request, "library/index.html", context)


@login_required
@kept_page("search")
def search(request: HtmxHttpRequest) -> HttpResponse:
    """Search every visible session, or one (`session`), or what the model received with one of
    its entries as the leaf (`session` and `context`, an entry id)."""
    query = request.GET.get("q", "").strip()[:500]
    session = None
    open_entry = request.GET.get("entry", "").strip()[:100] or None
    within = request.GET.get("within", "context" if open_entry else "session")
    entry_ids = None
    if request.GET.get("session", "").isdigit():
        session = session_for_user_or_404(request.user, int(request.GET["session"]))
        if open_entry is not None and within == "context":
            entry_ids = context_entry_ids(session, open_entry)
            if entry_ids is None:
                raise Http404("No such entry in this session.")
    else:
        open_entry = None
    scope_entry = open_entry if entry_ids is not None else None
    substring = request.GET.get("match") == "substring"
    hits = (
        list(
            search_entries(
                query,
                user=request.user,
                session=session,
                entry_ids=entry_ids,
                substring=substring,
                limit=SEARCH_LIMIT,
            )
        )
        if query
        else []
    )
    hits_html = search_hits_html(hits)
    context = {
        "nav": "library",
        "search_query": query,
        "hits": hits,
        "hits_html": hits_html,
        "limit": SEARCH_LIMIT,
        "scope_session": session,
        "scope_entry": scope_entry,
        "open_entry": open_entry,
        "substring": substring,
        "search_mode": getattr(hits[0], "search_mode", "") if hits else "",
    }
    if request.htmx and request.htmx.target == "search-results":
        return render(request, "library/search.html#search-results", context)
    return render(request, "library/search.html", context)


def _record_upload(user: Any, created_project: bool, result: ImportResult) -> None:
    """The upload's audit event (and the uploader's ownership), in the import's transaction."""
    assert result.session is not None  # `within` runs once the session is stored
    upload_record(
        user=user, session=result.session, status=result.status, created_project=created_project
    )


@login_required
@require_POST
def upload(request: HtmxHttpRequest) -> HttpResponse:
    files = request.FILES.getlist("files")
    results = [
        {"name": name, "error": too_large_message()}
        for name in getattr(request, "too_large_uploads", [])
    ]
    for upload_file in files:
        try:
            refusal, created_project = upload_check(user=request.user, fileobj=upload_file)
            if refusal:
                results.append({"name": upload_file.name, "error": refusal})
                continue
            outcome = import_session_file(
                fileobj=upload_file,
                name=upload_file.name,
                user=request.user,
                index_search=False,  # after_import does it, off this request
                # The uploader's ownership of a project the upload created, and the audit
                # event, commit with the entries.
                within=partial(_record_upload, request.user, created_project),
            )
        except Exception:  # one bad file must not hide the results of the others
            # The details (database errors, paths) are for the log, not for the page.
            logger.exception("upload of %r by %s failed", upload_file.name, request.user)
            results.append({"name": upload_file.name, "error": UPLOAD_FAILED})
            continue
        if outcome.session is not None:
            # Search indexing and the tree index run in a worker once the import has committed:
            # a large file would keep this web worker busy (and big) for many seconds more.
            transaction.on_commit(partial(enqueue_after_import, outcome.session.pk))
        results.append({"name": upload_file.name, "outcome": outcome})
    if request.htmx:
        return render(
            request,
            "library/index.html#upload-results",
            {"results": results, "no_files": not files},
        )
    if not files and not results:
        messages.error(request, "Choose one or more session files (.jsonl) to upload.")
    for result in results:
        if "error" in result:
            messages.error(request, f"{result['name']}: {result['error']}")
        else:
            messages.success(request, f"{result['name']}: {result['outcome'].status}")
    return redirect("library:index")


@login_required
def history(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """The versions of a session's file that were imported (a rewrite or a shrink starts a new
    one; the old ones keep their entries), each with its original bytes to download."""
    session = session_for_user_or_404(request.user, pk)
    return render(
        request,
        "library/history.html",
        {"session": session, "revisions": session_revisions(session)},
    )


@login_required
def original(request: HtmxHttpRequest, pk: int, number: int) -> FileResponse:
    """The bytes of a revision's file exactly as they were read (Pi can open them as they are)."""
    session = session_for_user_or_404(request.user, pk)
    revision = get_object_or_404(session.revisions, number=number)
    try:
        handle = revision.open_blob()
    except FileNotFoundError as exc:
        raise Http404("The stored copy of this file is missing from CONTEXTLAB_BLOB_DIR.") from exc
    name = Path(revision.source_path).name or f"{session.session_id}.jsonl"
    if not name.endswith(".jsonl"):
        name += ".jsonl"
    if revision.pk != session.current_revision_id:
        name = f"{name.removesuffix('.jsonl')}.r{revision.number}.jsonl"
    audit_record(actor=request.user, verb="session.download_original", session=session, target=name)
    return FileResponse(
        handle, as_attachment=True, filename=name, content_type="application/x-ndjson"
    )


@login_required
def unusable_original(request: HtmxHttpRequest, pk: int) -> FileResponse:
    """The bytes of a file that yielded no session, as they were kept when it was imported."""
    problem = unusable_file_problem(request.user, pk)
    blob = problem.blob_file if problem is not None else None
    if problem is None or blob is None:
        raise Http404("No stored copy of this file.")
    try:
        handle = blob.open("rb")
    except FileNotFoundError as exc:
        raise Http404("The stored copy of this file is missing from CONTEXTLAB_BLOB_DIR.") from exc
    name = Path(problem.path).name or "unusable.jsonl"
    audit_record(actor=request.user, verb="file.download_unusable", target=problem.path[:200])
    return FileResponse(
        handle, as_attachment=True, filename=name, content_type="application/x-ndjson"
    )
