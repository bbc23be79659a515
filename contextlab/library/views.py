"""The session library: sessions grouped by project, full-text search, upload."""

from __future__ import annotations

from itertools import groupby
from pathlib import Path

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Prefetch
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from contextlab.inspector.selectors import session_index
from contextlab.library.forms import SORTS, LibraryFilterForm
from contextlab.library.importer import import_session_file
from contextlab.library.search import snippet_html
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
from contextlab.review.models import SessionLabel
from contextlab.review.selectors import labels_in_use
from contextlab.review.services import audit_record, upload_check, upload_record

# The library is one page; past this many sessions, filters narrow it down.
LIBRARY_LIMIT = 500
SEARCH_LIMIT = 100


@login_required
def index(request: HttpRequest) -> HttpResponse:
    form = LibraryFilterForm(request.GET)
    filters = form.cleaned_data if form.is_valid() else {}
    sort = filters.get("sort") or "recent"

    sessions = filter_sessions(sessions_for_user(request.user), filters)
    sessions = sessions.prefetch_related(
        Prefetch("review_labels", queryset=SessionLabel.objects.only("session_id", "name"))
    )
    sessions = list(sessions.order_by("project__cwd", "project_id", *SORTS[sort])[:LIBRARY_LIMIT])
    groups = [
        (project, list(items)) for project, items in groupby(sessions, key=lambda s: s.project)
    ]
    context = {
        "nav": "library",
        "form": form,
        "filters": filters,
        "sort": sort,
        "groups": groups,
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
def search(request: HttpRequest) -> HttpResponse:
    query = request.GET.get("q", "").strip()[:500]
    hits = list(search_entries(query, user=request.user)[:SEARCH_LIMIT]) if query else []
    for hit in hits:
        hit.snippet_html = snippet_html(hit)
    context = {
        "nav": "library",
        "search_query": query,
        "hits": hits,
        "limit": SEARCH_LIMIT,
    }
    if request.htmx and request.htmx.target == "search-results":
        return render(request, "library/search.html#search-results", context)
    return render(request, "library/search.html", context)


@login_required
@require_POST
def upload(request: HttpRequest) -> HttpResponse:
    files = request.FILES.getlist("files")
    results = []
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
                # The uploader's ownership of a project the upload created, and the audit
                # event, commit with the entries.
                within=lambda result, created=created_project: upload_record(
                    user=request.user,
                    session=result.session,
                    status=result.status,
                    created_project=created,
                ),
            )
        except Exception as exc:  # one bad file must not hide the results of the others
            results.append({"name": upload_file.name, "error": str(exc)})
            continue
        if outcome.session is not None:
            # Build the session's tree index now, while the user waits for the upload anyway,
            # so that opening a large session right after is quick (in this process).
            session_index(outcome.session)
        results.append({"name": upload_file.name, "outcome": outcome})
    if request.htmx:
        return render(request, "library/index.html#upload-results", {"results": results})
    if not files:
        messages.error(request, "Choose one or more session files (.jsonl) to upload.")
    for result in results:
        if "error" in result:
            messages.error(request, f"{result['name']}: {result['error']}")
        else:
            messages.success(request, f"{result['name']}: {result['outcome'].status}")
    return redirect("library:index")


@login_required
def history(request: HttpRequest, pk: int) -> HttpResponse:
    """The versions of a session's file that were imported (a rewrite or a shrink starts a new
    one; the old ones keep their entries), each with its original bytes to download."""
    session = session_for_user_or_404(request.user, pk)
    return render(
        request,
        "library/history.html",
        {"session": session, "revisions": session_revisions(session)},
    )


@login_required
def original(request: HttpRequest, pk: int, number: int) -> FileResponse:
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
def unusable_original(request: HttpRequest, pk: int) -> FileResponse:
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
