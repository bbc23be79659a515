"""Read-side queries shared by the UI, the jobs and the commands."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from django.db.models import Count, OuterRef, QuerySet, Subquery, TextField
from django.db.models.functions import Cast, Coalesce
from django.shortcuts import get_object_or_404
from django_stubs_ext import WithAnnotations

from contextlab.db import json_texts
from contextlab.library.models import Entry, ImportProblem, Project, Session, SessionRevision
from contextlab.library.search import apply_search, uses_postgres
from contextlab.library.storage.values import loads_entry


def sessions_for_user(user: Any) -> QuerySet[Session]:
    return Session.objects.visible_to(user).select_related("project")


def filter_sessions(sessions: QuerySet[Session], filters: dict[str, Any]) -> QuerySet[Session]:
    """The library's filters (LibraryFilterForm's cleaned data; the API passes the same keys):
    name or first message, project, model, flag, review label. Not sorted."""
    if filters.get("q"):
        text = filters["q"]
        sessions = sessions.filter(name__icontains=text) | sessions.filter(
            first_message__icontains=text
        )
    if filters.get("project"):
        sessions = sessions.filter(project_id=filters["project"])
    if filters.get("model"):
        # models_used is a JSON list; matching its text works on PostgreSQL and SQLite alike.
        sessions = sessions.annotate(models_text=Cast("models_used", TextField())).filter(
            models_text__icontains=filters["model"]
        )
    flag = filters.get("flag")
    if flag == "problems":
        sessions = sessions.filter(problem_count__gt=0)
    elif flag == "compacted":
        sessions = sessions.filter(compaction_count__gt=0)
    elif flag == "branched":
        sessions = sessions.filter(branch_count__gt=1)
    if filters.get("review_label"):
        # (session, name) is unique, so this join keeps one row per session.
        sessions = sessions.filter(review_labels__name=filters["review_label"])
    return sessions


def session_for_user_or_404(user: Any, pk: int) -> Session:
    """The session (its project loaded) if this user may see it, else 404 (never 403: a page
    must not confirm that a session the user may not see exists)."""
    return get_object_or_404(sessions_for_user(user), pk=pk)


def project_for_user_or_404(user: Any, pk: int) -> Project:
    """The project if this user may see it (Project.objects.visible_to: also an open or
    member's project that holds no session yet), else 404."""
    return get_object_or_404(Project.objects.visible_to(user), pk=pk)


class RevisionCounts(TypedDict):
    entries_stored: int
    problems_found: int


def session_revisions(
    session: Session,
) -> QuerySet[WithAnnotations[SessionRevision, RevisionCounts]]:
    """The session's revisions, newest first, each with its entry and problem counts."""

    def count_of(model: Any) -> Coalesce:
        counts = (
            model.objects.filter(revision=OuterRef("pk"))
            .order_by()
            .values("revision")
            .annotate(n=Count("pk"))
            .values("n")
        )
        return Coalesce(Subquery(counts), 0)

    return session.revisions.annotate(
        entries_stored=count_of(Entry), problems_found=count_of(ImportProblem)
    ).order_by("-number")


@dataclass
class UnusableFile:
    """A file that yielded no session (empty, no header, no usable line), as last imported."""

    path: str
    problems: list[ImportProblem]

    @property
    def first(self) -> ImportProblem:
        return self.problems[0]


def unusable_files_for(user: Any, limit: int = 20) -> list[UnusableFile]:
    """The newest files that produced no session: those the user uploaded; for superusers and
    staff given the permission to view import problems, also everyone else's and those the
    commands met (they belong to no project). Being staff alone gives no such permission."""
    problems = ImportProblem.objects.filter(session=None)
    if not _sees_all_unusable_files(user):
        problems = problems.filter(reported_to=user)
    files: dict[tuple[str, Any], UnusableFile] = {}
    for problem in problems.order_by("-created_at", "id")[: limit * 10]:
        key = (problem.path, problem.reported_to_id)
        if key not in files:
            if len(files) == limit:
                break
            files[key] = UnusableFile(problem.path, [])
        files[key].problems.append(problem)
    for file in files.values():
        file.problems.sort(key=lambda p: p.id)
    return list(files.values())


def unusable_file_problem(user: Any, pk: int) -> ImportProblem | None:
    """One problem row of an unusable file, if the user may see that file."""
    problems = ImportProblem.objects.filter(session=None, pk=pk)
    if not _sees_all_unusable_files(user):
        problems = problems.filter(reported_to=user)
    return problems.first()


def _sees_all_unusable_files(user: Any) -> bool:
    # Permissions are given to staff in the admin; asking only for staff spares everyone else
    # the two permission queries on every library page.
    if user.is_superuser:
        return bool(user.is_active)
    return bool(user.is_staff and user.has_perm("library.view_importproblem"))


def projects_for_user(user: Any) -> QuerySet[Project]:
    visible = Session.objects.visible_to(user)
    return Project.objects.filter(sessions__in=visible).distinct()


def engine_entries(session: Session) -> list[dict[str, Any]]:
    """The migrated v3 entry dicts of the current revision in file order, for the engine
    (contextlab.pi.context.build_session_context, SessionTree). One query.

    The JSON is fetched as text and decoded with orjson: for a 20k-entry session this is several
    times faster than the JSONField's json.loads per row.
    """
    rows = json_texts(Entry.objects.for_session(session), "seq", "data")
    return [loads_entry(raw) for _, raw in rows]


def search_entries(
    query: str,
    user: Any = None,
    *,
    session: Session | None = None,
    entry_ids: list[str] | None = None,
    substring: bool = False,
    limit: int = 100,
) -> QuerySet[Entry]:
    """Entries of current revisions whose text matches `query` (websearch syntax on PostgreSQL:
    words, "phrases", or, -not; identifiers by their parts; pieces of tokens), best first, each
    with `headline` / `snippet_html` / `place`.

    `user=None` searches everything (commands, tests); otherwise only sessions the user may see.
    `session` keeps to one session, `entry_ids` (with it) to those entries (an open context).
    """
    query = query.strip()
    qs = (
        Entry.objects.filter(revision__status="current")
        .select_related("session", "session__project")
        # The entry itself is not shown, only where it is and its snippet; nor its session's
        # header (JSON to decode per hit).
        .defer("data", "search_vector", "session__header")
    )
    if uses_postgres():
        # Up to 100 KB each: the snippet is cut from a window of it in the query.
        qs = qs.defer("search_text")
    if user is not None:
        qs = qs.filter(session__in=Session.objects.visible_to(user))
    if session is not None:
        qs = qs.filter(session=session, revision_id=session.current_revision_id)
        if entry_ids is not None:
            qs = qs.filter(entry_id__in=entry_ids)
    if not query:
        return qs.none()
    return apply_search(qs, query, substring=substring, limit=limit)


def session_problems(session: Session) -> QuerySet[ImportProblem]:
    return ImportProblem.objects.filter(
        session=session, revision_id=session.current_revision_id
    ).order_by("line", "id")
