"""The REST API, `/api/v1/` (django-ninja): projects, sessions, entries, context, search, jobs,
comments, labels, export, and pushing a session's lines.

Every operation acts as the user of the bearer token and sees what that user sees on the pages
(`Session.objects.visible_to` / `Project.objects.visible_to`): anything else is 404, never 403.
Operations call the apps' selectors and services; the few things with no page of their own
(tokens, pushes, the context object) are in contextlab.api.services.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.db.models import Prefetch
from django.db.utils import OperationalError
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils.http import content_disposition_header
from ninja import NinjaAPI, Query, Router, Status, Swagger
from ninja.errors import AuthenticationError, ValidationError
from ninja.openapi.docs import _csrf_needed
from ninja.security import HttpBearer

from contextlab.api import schemas as s
from contextlab.api.schemas import PAGE_MAX
from contextlab.api.services import (
    ApiError,
    json_chunks,
    session_context,
    session_push_lines,
    session_push_state,
    spool_body,
    token_user,
)
from contextlab.budgets import (
    BudgetExceeded,
    ClientGone,
    budget_response,
    client_closed,
    is_budget_error,
)
from contextlab.jobs import providers
from contextlab.jobs import services as jobs
from contextlab.jobs.models import Job
from contextlab.jobs.parameters import JobParameters
from contextlab.library.forms import SORTS
from contextlab.library.models import Entry, Project, Session
from contextlab.library.search import snippet_html
from contextlab.library.selectors import (
    filter_sessions,
    search_entries,
    session_problems,
    session_revisions,
    sessions_for_user,
)
from contextlab.pi.tokens import DEFAULT_KEEP_RECENT_TOKENS, DEFAULT_RESERVE_TOKENS
from contextlab.review import services as review
from contextlab.review.models import Comment, ProjectMembership, SessionLabel
from contextlab.review.selectors import comments_for_entry, session_labels


def _holds_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_nul(v) for v in value)
    return False


def _nul_in_request(request: HttpRequest) -> bool:
    """A NUL character in the path, the query or a JSON body: PostgreSQL text cannot hold one, so
    such a request is refused before it reaches a query. (A pushed body is bytes of a file: the
    import reports its NULs as it does for any file.)"""
    if "\x00" in request.path_info or _holds_nul(dict(request.GET.lists())):
        return True
    if request.content_type == "application/json" and request.body:
        try:
            return _holds_nul(json.loads(request.body))
        except ValueError:
            return False  # ninja answers malformed JSON itself
    return False


class BearerToken(HttpBearer):
    """`Authorization: Bearer TOKEN`, a token made on the API tokens page or by
    `manage.py api_token`. The request then acts as the token's user."""

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        user = token_user(token)
        if user is None:
            return None
        if _nul_in_request(request):
            raise ApiError(400, "NUL characters are not accepted in paths, queries or JSON")
        request.user = user
        return user


class BundledSwagger(Swagger):
    """Swagger UI from django-ninja's bundled files, not a CDN. ninja renders those only when
    "ninja" is in INSTALLED_APPS; its templates and static files are found through
    settings.NINJA_DIR instead, so that processes that never serve the API never import ninja."""

    def render_page(self, request: HttpRequest, api: NinjaAPI, **kwargs: Any) -> HttpResponse:
        self.settings["url"] = self.get_openapi_url(api, kwargs)
        context = {
            "swagger_settings": json.dumps(self.settings, indent=1),
            "api": api,
            "add_csrf": _csrf_needed(api),
        }
        return render(request, self.template, context)


api = NinjaAPI(
    title="contextlab API",
    version="1",
    description=(
        "Pi coding-agent sessions: projects, sessions, entries, the context of an entry, search, "
        "compaction and branch-summary jobs, comments, review labels, export, and pushing a "
        "session's lines as Pi writes them. Authenticate with `Authorization: Bearer TOKEN`."
    ),
    auth=BearerToken(),
    urls_namespace="api-v1",
    docs=BundledSwagger(),
    docs_url="/docs",
    openapi_url="/openapi.json",
)

# Every operation may answer these besides its own success.
COMMON: dict[int, Any] = {
    400: s.ErrorOut,
    401: s.ErrorOut,
    404: s.ErrorOut,
    422: s.ValidationErrorOut,
}


def responses(ok: Any, **more: Any) -> dict[int, Any]:
    """`{200: ok}` (or another success code) plus the common errors and `more` (as `_409=...`)."""
    out: dict[int, Any] = dict(ok) if isinstance(ok, dict) else {200: ok}
    out.update(COMMON)
    out.update({int(code.lstrip("_")): schema for code, schema in more.items()})
    return out


@api.exception_handler(ApiError)
def _api_error(request: HttpRequest, exc: ApiError) -> HttpResponse:
    return api.create_response(request, {"detail": str(exc)}, status=exc.status)


@api.exception_handler(BudgetExceeded)
def _past_budget(request: HttpRequest, exc: BudgetExceeded) -> HttpResponse:
    if isinstance(exc, ClientGone):
        return client_closed()  # nobody reads it, as for a page
    return budget_response(request, exc)


@api.exception_handler(OperationalError)
def _database_error(request: HttpRequest, exc: OperationalError) -> HttpResponse:
    """A query PostgreSQL cancelled at the request's statement_timeout gets the budget's
    answer (503 with its message); any other database error goes on to Django."""
    if is_budget_error(exc):
        return budget_response(request, exc)
    raise exc


@api.exception_handler(AuthenticationError)
def _unauthorized(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return api.create_response(request, {"detail": "Unauthorized"}, status=401)


@api.exception_handler(ValidationError)
def _invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    # Pydantic's error items hold the input and context, which may not be JSON (bytes, errors).
    detail = [
        {"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": str(e.get("type"))}
        for e in exc.errors
    ]
    return api.create_response(request, {"detail": detail}, status=422)


# --- Helpers --------------------------------------------------------------------------------


def _session_or_404(request: HttpRequest, session_id: str) -> Session:
    session = (
        sessions_for_user(request.user)
        .select_related("current_revision")
        .filter(session_id=session_id)
        .first()
    )
    if session is None:
        raise ApiError(404, "Not Found")
    return session


def _session_out(session: Session, labels: list[str] | None = None) -> dict[str, Any]:
    if labels is None:
        labels = [label.name for label in session.review_labels.all()]
    return {
        "sessionId": session.session_id,
        "id": session.pk,
        "projectId": session.project_id,
        "cwd": session.project.cwd,
        "title": session.title,
        "name": session.name,
        "firstMessage": session.first_message,
        "fileVersion": session.file_version,
        "leafEntryId": session.leaf_entry_id,
        "sizeBytes": session.size_bytes,
        "entryCount": session.entry_count,
        "messageCount": session.message_count,
        "compactionCount": session.compaction_count,
        "branchCount": session.branch_count,
        "problemCount": session.problem_count,
        "tokensEstimated": session.tokens_estimated,
        "usageTokens": session.usage_tokens,
        "costTotal": session.cost_total,
        "firstActivity": session.first_activity,
        "lastActivity": session.last_activity,
        "modelsUsed": session.models_used or [],
        "reviewLabels": labels,
    }


def _entry_out(entry: Entry) -> dict[str, Any]:
    return {
        "entryId": entry.entry_id,
        "parentId": entry.parent_id,
        "type": entry.type,
        "role": entry.role,
        "seq": entry.seq,
        "lineNo": entry.line_no,
        "timestamp": entry.timestamp,
        "depth": entry.depth,
        "tokens": entry.tokens,
        "origin": entry.origin,
        "data": entry.data if isinstance(entry.data, dict) else {"value": entry.data},
    }


def _job_out(job: Job) -> dict[str, Any]:
    return {
        "id": job.pk,
        "kind": job.kind,
        "sessionId": job.session.session_id,
        "status": job.status,
        "progress": job.progress,
        "progressMessage": job.progress_message,
        "attempts": job.attempts,
        "maxAttempts": job.max_attempts,
        "error": job.error,
        "leafEntryId": job.leaf_entry_id,
        "targetEntryId": job.target_entry_id,
        "parameters": job.parameters or {},
        "preview": job.preview or {},
        "resultEntryIds": job.result_entry_ids or [],
        "usage": job.usage or {},
        "cost": job.cost,
        "createdAt": job.created_at,
        "startedAt": job.started_at,
        "finishedAt": job.finished_at,
    }


def _comment_out(comment: Comment) -> dict[str, Any]:
    return {
        "id": comment.pk,
        "entryId": comment.entry_id,
        "author": comment.author.get_username() if comment.author is not None else None,
        "body": comment.body,
        "createdAt": comment.created_at,
        "editedAt": comment.edited_at,
    }


# --- Projects -------------------------------------------------------------------------------

projects_router = Router(tags=["projects"])


def _project_out(project: Project, roles: dict[int, str], restricted: set[int]) -> dict[str, Any]:
    return {
        "id": project.pk,
        "cwd": project.cwd,
        "name": project.name,
        "restricted": project.pk in restricted,
        "role": roles.get(project.pk),
    }


def _projects(request: HttpRequest, pk: int | None = None) -> list[dict[str, Any]]:
    projects = Project.objects.visible_to(request.user)
    if pk is not None:
        projects = projects.filter(pk=pk)
    projects_list = list(projects.order_by("cwd"))
    ids = [p.pk for p in projects_list]
    memberships = ProjectMembership.objects.filter(project_id__in=ids)
    restricted = set(memberships.values_list("project_id", flat=True))
    roles = (
        dict(memberships.filter(user=request.user).values_list("project_id", "role"))
        if request.user.is_authenticated
        else {}
    )
    return [_project_out(p, roles, restricted) for p in projects_list]


@projects_router.get("", response=responses(list[s.ProjectOut]), summary="Projects you see")
def list_projects(request: HttpRequest) -> Any:
    return _projects(request)


@projects_router.get("/{project_id}", response=responses(s.ProjectOut), summary="One project")
def get_project(request: HttpRequest, project_id: int) -> Any:
    found = _projects(request, project_id)
    if not found:
        raise ApiError(404, "Not Found")
    return found[0]


# --- Sessions -------------------------------------------------------------------------------

sessions_router = Router(tags=["sessions"])


@sessions_router.get(
    "", response=responses(s.SessionPage), summary="Sessions you see, with the library's filters"
)
def list_sessions(request: HttpRequest, filters: Query[s.SessionFilters]) -> Any:
    sessions = filter_sessions(
        sessions_for_user(request.user),
        {
            "q": filters.q,
            "project": filters.project,
            "model": filters.model,
            "flag": filters.flag,
            "review_label": filters.reviewLabel,
        },
    )
    count = sessions.count()
    page = sessions.prefetch_related(
        Prefetch("review_labels", queryset=SessionLabel.objects.only("session_id", "name"))
    ).order_by(*SORTS[filters.sort or "recent"])[filters.offset : filters.offset + filters.limit]
    return {"count": count, "items": [_session_out(x) for x in page]}


@sessions_router.get("/{session_id}", response=responses(s.SessionDetailOut), summary="One session")
def get_session(request: HttpRequest, session_id: str) -> Any:
    session = _session_or_404(request, session_id)
    out = _session_out(session, session_labels(session))
    revision = session.current_revision
    out.update(
        {
            "header": session.header if isinstance(session.header, dict) else {},
            "parentSession": session.parent_session,
            "revision": revision.number if revision is not None else None,
            "problems": [
                {"line": p.line or 0, "reason": p.reason}
                for p in session_problems(session)[:PAGE_MAX]
            ],
        }
    )
    return out


@sessions_router.get(
    "/{session_id}/history",
    response=responses(list[s.RevisionOut]),
    summary="The revisions of the session's file, newest first",
)
def session_history(request: HttpRequest, session_id: str) -> Any:
    session = _session_or_404(request, session_id)
    return [
        {
            "number": r.number,
            "status": r.status,
            "reason": r.reason,
            "sourcePath": r.source_path,
            "bytesRead": r.bytes_read,
            "blobSha256": r.blob_sha256,
            "originalVersion": r.original_version,
            "entries": r.entries_stored,
            "problems": r.problems_found,
            "current": r.pk == session.current_revision_id,
            "createdAt": r.created_at,
            "updatedAt": r.updated_at,
        }
        for r in session_revisions(session)
    ]


@sessions_router.get(
    "/{session_id}/entries",
    response=responses(s.EntryPage),
    summary="The session's entries in file order (its current revision), a page at a time",
)
def list_entries(request: HttpRequest, session_id: str, paging: Query[s.Paging]) -> Any:
    session = _session_or_404(request, session_id)
    entries = Entry.objects.for_session(session)
    page = entries[paging.offset : paging.offset + paging.limit]
    return {"count": entries.count(), "items": [_entry_out(e) for e in page]}


@sessions_router.get(
    "/{session_id}/entries/{entry_id}", response=responses(s.EntryOut), summary="One entry"
)
def get_entry(request: HttpRequest, session_id: str, entry_id: str) -> Any:
    session = _session_or_404(request, session_id)
    entry = Entry.objects.for_session(session).filter(entry_id=entry_id).first()
    if entry is None:
        raise ApiError(404, "No such entry in this session")
    return _entry_out(entry)


@sessions_router.get(
    "/{session_id}/context",
    response=responses(s.ContextOut),
    summary="What Pi sent to the model at a leaf: `manage.py context --json`'s object",
    description=(
        "`leaf`: an entry id, or `line:N` (the header is line 1); omitted: the session's leaf. "
        "The same JSON object, byte for byte, as `manage.py context FILE --leaf LEAF --json` "
        "on the session's file."
    ),
)
def get_context(request: HttpRequest, session_id: str, leaf: str | None = None) -> Any:
    session = _session_or_404(request, session_id)
    result = session_context(session, leaf)
    # JSON.stringify's text, as the command prints it (numbers and escapes exactly as Pi's),
    # streamed a message at a time: the request's objects are in memory, its text never whole.
    return StreamingHttpResponse(json_chunks(result), content_type="application/json")


@sessions_router.get(
    "/{session_id}/export",
    response=COMMON,
    summary="The session as a Pi JSONL v3 file, with the entries contextlab appended",
    openapi_extra={
        "responses": {
            200: {
                "description": "The file",
                "content": {
                    "application/x-ndjson": {"schema": {"type": "string", "format": "binary"}}
                },
            }
        }
    },
)
def export_session(request: HttpRequest, session_id: str) -> Any:
    session = _session_or_404(request, session_id)
    try:
        chunks = jobs.session_export_chunks(session)
        first = next(chunks, b"")
    except (jobs.JobError, OSError) as exc:
        raise ApiError(404, str(exc)) from exc

    def stream() -> Iterator[bytes]:
        yield first
        yield from chunks

    filename = jobs.session_export_filename(session)
    review.audit_record(actor=request.user, verb="session.export", session=session, target=filename)
    response = StreamingHttpResponse(stream(), content_type="application/x-ndjson")
    # Django's builder quotes, escapes or percent-encodes the id (which comes from the file).
    response["Content-Disposition"] = content_disposition_header(True, filename)
    return response


# --- Pushing lines --------------------------------------------------------------------------

PUSH_DESCRIPTION = """Append the bytes of the session's file from byte `offset` on (the body,
raw). The answer's `offset` is how many bytes of the file the server now holds, always at the end
of a line: the next push sends the file from there. Only complete lines are stored (bytes after
the body's last newline are sent again by the next push). Every answer (200 and 409, and the GET)
also carries `tailBytes` = min(offset, 4096) and `tailSha256`, the lowercase hex SHA-256 of the
stored bytes [offset - tailBytes, offset): a client whose own bytes there differ sends its whole
file again from 0. A push whose `offset` is not the server's is answered 409 with the same object,
so a client resumes from the server's offset after any failure without losing or duplicating a
line. `offset=0` sends the whole file: bytes that repeat what the server holds (all or a prefix of
it) change nothing, a file that grew is appended, different bytes become a new revision. A session
is written only by the account that first pushed or uploaded it and its project's owners (403 for
anyone else); a session the user cannot see answers as one that is not stored (409 with offset 0
to a push from another offset, 404 to the GET). The same import as files and uploads, with an
upload's membership rules (a push that creates a project makes you its owner)."""


@sessions_router.post(
    "/{session_id}/lines",
    response=responses(s.PushOut, _403=s.ErrorOut, _409=s.PushOut, _413=s.ErrorOut),
    summary="Push the session file's bytes from `offset` on",
    description=PUSH_DESCRIPTION,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/x-ndjson": {"schema": {"type": "string", "format": "binary"}},
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
            },
        }
    },
)
def push_lines(
    request: HttpRequest,
    session_id: str,
    offset: int = Query(..., ge=0, le=2**62),  # type: ignore[type-arg]  # ninja's documented form
) -> Any:
    body, size = spool_body(request, settings.CONTEXTLAB_API_MAX_PUSH_BYTES)
    with body:
        result = session_push_lines(
            user=request.user, session_id=session_id, offset=offset, body=body, body_size=size
        )
    return Status(409 if result.conflict else 200, result.as_json())


@sessions_router.get(
    "/{session_id}/lines",
    response=responses(s.PushOut),
    summary="Where to push from: the bytes of the file the server holds",
)
def push_state(request: HttpRequest, session_id: str) -> Any:
    return session_push_state(user=request.user, session_id=session_id).as_json()


# --- Search ---------------------------------------------------------------------------------

search_router = Router(tags=["search"])


@search_router.get(
    "", response=responses(list[s.SearchHit]), summary="Full-text search of messages you see"
)
def search(request: HttpRequest, query: Query[s.SearchQuery]) -> Any:
    hits = search_entries(query.q, user=request.user, limit=query.limit)
    return [
        {
            "sessionId": hit.session.session_id,
            "entryId": hit.entry_id,
            "type": hit.type,
            "role": hit.role,
            "seq": hit.seq,
            "snippetHtml": str(snippet_html(hit)),
        }
        for hit in hits
    ]


# --- Jobs -----------------------------------------------------------------------------------

jobs_router = Router(tags=["jobs"])


def _job_parameters(data: s.JobIn) -> JobParameters:
    """The parameters the dashboard's forms give a job (Pi's defaults where none is given)."""
    instructions = (data.customInstructions or "").strip()
    if data.kind == Job.Kind.COMPACTION.value:
        return JobParameters(
            keep_recent_tokens=(
                DEFAULT_KEEP_RECENT_TOKENS
                if data.keepRecentTokens is None
                else data.keepRecentTokens
            ),
            reserve_tokens=(
                DEFAULT_RESERVE_TOKENS if data.reserveTokens is None else data.reserveTokens
            ),
            custom_instructions=instructions,
        )
    return JobParameters(
        reserve_tokens=data.reserveTokens,
        custom_instructions=instructions,
        replace_instructions=data.replaceInstructions if instructions else None,
    )


def _job_or_404(request: HttpRequest, job_id: int) -> Job:
    job = Job.objects.select_related("session").visible_to(request.user).filter(pk=job_id).first()
    if job is None:
        raise ApiError(404, "Not Found")
    return job


@sessions_router.post(
    "/{session_id}/jobs/preview",
    response=responses(s.PreviewOut),
    tags=["jobs"],
    summary="What a compaction or branch summary would do (nothing is queued)",
)
def preview_job(request: HttpRequest, session_id: str, data: s.JobIn) -> Any:
    session = _session_or_404(request, session_id)
    leaf = data.leaf or session.leaf_entry_id
    params = _job_parameters(data)
    config = providers.active_provider()
    chosen = jobs.profile_dialect(session)
    try:
        if data.kind == Job.Kind.COMPACTION.value:
            plan = jobs.plan_compaction(session, leaf, params, config, chosen=chosen)
        else:
            if not data.target:
                raise jobs.JobError("A branch summary needs a target entry")
            plan = jobs.plan_branch_summary(
                session, leaf, data.target, params, config, chosen=chosen
            )
    except jobs.JobError as exc:
        raise ApiError(400, str(exc)) from None
    return {
        "kind": data.kind,
        "leafEntryId": leaf,
        "targetEntryId": data.target or "",
        "plan": plan.preview,
        "nothing": plan.nothing,
        "calls": len(plan.calls),
    }


@sessions_router.post(
    "/{session_id}/jobs",
    response=responses({201: s.JobOut}, _409=s.ErrorOut),
    tags=["jobs"],
    summary="Queue a compaction or a branch summary",
)
def create_job(request: HttpRequest, session_id: str, data: s.JobIn) -> Any:
    session = _session_or_404(request, session_id)
    try:
        job = jobs.job_create(
            session=session,
            kind=data.kind,
            leaf_entry_id=data.leaf or None,
            target_entry_id=data.target or "",
            parameters=_job_parameters(data),
            requested_by=request.user,
        )
    except jobs.JobConflict as exc:
        raise ApiError(409, str(exc)) from None
    except jobs.JobError as exc:
        raise ApiError(400, str(exc)) from None
    return Status(201, _job_out(job))


@sessions_router.get(
    "/{session_id}/jobs",
    response=responses(list[s.JobOut]),
    tags=["jobs"],
    summary="The session's jobs, newest first",
)
def list_jobs(request: HttpRequest, session_id: str, paging: Query[s.Paging]) -> Any:
    session = _session_or_404(request, session_id)
    found = Job.objects.for_session(session.pk).select_related("session")
    return [_job_out(j) for j in found[paging.offset : paging.offset + paging.limit]]


@jobs_router.get("/{job_id}", response=responses(s.JobOut), summary="A job's status")
def get_job(request: HttpRequest, job_id: int) -> Any:
    return _job_out(_job_or_404(request, job_id))


@jobs_router.post(
    "/{job_id}/cancel", response=responses(s.CancelOut), summary="Cancel a queued or running job"
)
def cancel_job(request: HttpRequest, job_id: int) -> Any:
    job = _job_or_404(request, job_id)
    cancelled = jobs.job_cancel(job=job, actor=request.user)
    return {"cancelled": cancelled, "job": _job_out(job)}


# --- Comments and review labels -------------------------------------------------------------

review_router = Router(tags=["review"])


@sessions_router.get(
    "/{session_id}/comments",
    response=responses(list[s.CommentOut]),
    tags=["review"],
    summary="Reviewers' comments on the session's entries",
)
def list_comments(request: HttpRequest, session_id: str, where: Query[s.CommentFilter]) -> Any:
    session = _session_or_404(request, session_id)
    if where.entry:
        found = comments_for_entry(session, where.entry)
    else:
        found = Comment.objects.filter(session=session).select_related("author")
    return [_comment_out(c) for c in found[:PAGE_MAX]]


@sessions_router.post(
    "/{session_id}/comments",
    response=responses({201: s.CommentOut}),
    tags=["review"],
    summary="Comment on an entry",
)
def create_comment(request: HttpRequest, session_id: str, data: s.CommentIn) -> Any:
    session = _session_or_404(request, session_id)
    if not Entry.objects.for_session(session).filter(entry_id=data.entryId).exists():
        raise ApiError(404, "No such entry in this session")
    try:
        comment = review.comment_create(
            session=session, entry_id=data.entryId, author=request.user, body=data.body
        )
    except review.ReviewError as exc:
        raise ApiError(400, str(exc)) from None
    return Status(201, _comment_out(comment))


def _comment_or_404(request: HttpRequest, comment_id: int) -> Comment:
    comment = (
        Comment.objects.select_related("session", "author")
        .visible_to(request.user)
        .filter(pk=comment_id)
        .first()
    )
    if comment is None:
        raise ApiError(404, "Not Found")
    return comment


@review_router.patch(
    "/comments/{comment_id}",
    response=responses(s.CommentOut, _403=s.ErrorOut),
    summary="Edit your comment",
)
def edit_comment(request: HttpRequest, comment_id: int, data: s.CommentEdit) -> Any:
    comment = _comment_or_404(request, comment_id)
    try:
        comment = review.comment_update(comment=comment, actor=request.user, body=data.body)
    except review.ReviewForbidden as exc:
        raise ApiError(403, str(exc)) from None
    except review.ReviewError as exc:
        raise ApiError(400, str(exc)) from None
    return _comment_out(comment)


@review_router.delete(
    "/comments/{comment_id}",
    response=responses({204: None}, _403=s.ErrorOut),
    summary="Delete your comment",
)
def delete_comment(request: HttpRequest, comment_id: int) -> Any:
    comment = _comment_or_404(request, comment_id)
    try:
        review.comment_delete(comment=comment, actor=request.user)
    except review.ReviewForbidden as exc:
        raise ApiError(403, str(exc)) from None
    return Status(204, None)


@sessions_router.get(
    "/{session_id}/labels",
    response=responses(list[str]),
    tags=["review"],
    summary="The session's review labels",
)
def list_labels(request: HttpRequest, session_id: str) -> Any:
    return session_labels(_session_or_404(request, session_id))


@sessions_router.post(
    "/{session_id}/labels",
    response=responses(s.LabelOut),
    tags=["review"],
    summary="Add a review label (contextlab's own, never written to the file)",
)
def add_label(request: HttpRequest, session_id: str, data: s.LabelIn) -> Any:
    session = _session_or_404(request, session_id)
    try:
        name = review.normalise_label(data.name)
        added = review.session_label_add(session=session, name=name, actor=request.user)
    except review.ReviewError as exc:
        raise ApiError(400, str(exc)) from None
    return {"name": name, "added": added is not None}


@sessions_router.delete(
    "/{session_id}/labels/{name}",
    response=responses(s.LabelRemovedOut),
    tags=["review"],
    summary="Remove a review label",
)
def remove_label(request: HttpRequest, session_id: str, name: str) -> Any:
    session = _session_or_404(request, session_id)
    removed = review.session_label_remove(session=session, name=name, actor=request.user)
    return {"name": name, "removed": removed}


api.add_router("/projects", projects_router)
api.add_router("/sessions", sessions_router)
api.add_router("/search", search_router)
api.add_router("/jobs", jobs_router)
api.add_router("", review_router)
