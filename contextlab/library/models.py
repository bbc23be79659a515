"""Projects, sessions, their file revisions and entries.

A Pi session file is append-only, so a stored session follows its file: appended lines become new
entries of the current revision; a file that shrank or was rewritten (Pi rewrites legacy files when
it migrates them) becomes a new `SessionRevision`, and the previous revision keeps its entries and
its original bytes untouched. Entries always belong to one revision; "the session's entries" means
the entries of its current revision (`Entry.objects.for_session`).
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Self, TypeVar, cast

from django.conf import settings
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import Q

from contextlab.library.locks import NEW_PROJECT, lock_until_commit

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User
    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.db.models.expressions import Expression

_M = TypeVar("_M", bound=models.Model)


class OrderedJSONField(models.JSONField):
    """A JSONField stored as PostgreSQL `json` (the exact text) rather than `jsonb`.

    jsonb re-orders object keys (by length, then bytes). Pi serialises parts of stored entries
    with JSON.stringify (tool-call arguments in provider requests and summarisation prompts, whole
    lines on export), so key order is part of what the model saw and must survive storage.
    The Python API is JSONField's; lookups inside `data` (has_key, contains, key = value) need jsonb
    and do not work: filter on the columns (type, role, entry_id) instead.
    """

    def db_type(self, connection: BaseDatabaseWrapper) -> str | None:
        if connection.vendor == "postgresql":
            return "json"
        return super().db_type(connection)

    def get_db_prep_value(
        self, value: Any, connection: BaseDatabaseWrapper, prepared: bool = False
    ) -> Any:
        if connection.vendor == "postgresql":
            from psycopg.types.json import Json

            if not prepared:
                value = self.get_prep_value(value)
            return None if value is None else Json(value)
        return super().get_db_prep_value(value, connection, prepared)

    def from_db_value(
        self, value: Any, expression: Expression, connection: BaseDatabaseWrapper
    ) -> Any:
        if value is not None and not isinstance(value, str):
            return value  # psycopg already decoded the json column
        return super().from_db_value(value, expression, connection)


def _visible_projects_q(user: User, project_field: str) -> Q:
    """The visibility rule (ProjectMembership explains it): superusers see everything, a project
    that never had members is open to every signed-in user, a project with members only to
    them, and a restricted project whose members are all gone to nobody else (it stays
    closed). EXISTS subqueries, not joins, so callers' querysets keep one row per object."""
    members = ProjectMembership.objects.filter(project_id=models.OuterRef(project_field))
    restricted = Project.objects.filter(pk=models.OuterRef(project_field), restricted=True)
    # Combining conditional expressions makes a Q (the stubs say Combinable).
    return cast(
        Q,
        (~models.Exists(members) & ~models.Exists(restricted))
        | models.Exists(members.filter(user_id=user.pk)),
    )


class _VisibleToQuerySet(models.QuerySet[_M]):
    """`visible_to(user)` for a QuerySet whose rows belong to a project through `project_field`
    (the visibility rule is _visible_projects_q's)."""

    project_field = "pk"

    def visible_to(self, user: User | AnonymousUser | None) -> Self:
        if user is None or not user.is_authenticated:
            return self.none()
        if user.is_superuser:
            return self
        return self.filter(_visible_projects_q(user, self.project_field))


class ProjectQuerySet(_VisibleToQuerySet["Project"]):
    """`visible_to(user)`: the projects this user may see."""


class Project(models.Model):
    """Sessions that Pi ran in one working directory (the header's `cwd`), of one team.

    A folder names a place, not an owner: one cwd has at most one *shared* project (`created_by`
    empty: where sessions imported by a command land, open unless an administrator restricts it)
    and one project per user whose upload or push started it (`created_by`: restricted, that user
    its first owner, who adds the team). See `project_for_new_session`.
    """

    cwd = models.TextField()
    # Kept as a bare id when the account is deleted (no database constraint): set to NULL, the
    # project would collide with the folder's shared project.
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Set when the project gets its first member and never cleared by removing members: a
    # project whose last member is deleted (in the admin, or with their account) stays closed
    # to everyone but superusers instead of falling open. Only an administrator reopens it.
    restricted = models.BooleanField(default=False)

    objects = ProjectQuerySet.as_manager()

    class Meta:
        ordering = ("cwd", "id")
        constraints = (
            # One shared project per folder, and one per user who started a project there (both
            # also the indexes behind project_for_new_session's lookups).
            models.UniqueConstraint(
                fields=["cwd"], condition=Q(created_by=None), name="library_project_shared_cwd"
            ),
            models.UniqueConstraint(fields=["cwd", "created_by"], name="library_project_team_cwd"),
        )

    def __str__(self) -> str:
        return self.cwd

    @property
    def name(self) -> str:
        # Pi's cwd may be a Windows path; take the last component of either separator.
        tail = self.cwd.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
        return tail or self.cwd


class MembershipQuerySet(models.QuerySet["ProjectMembership"]):
    def owners(self) -> MembershipQuerySet:
        return self.filter(role=ProjectMembership.Role.OWNER)


class ProjectMembership(models.Model):
    """Who may see a project: the visibility rule of `Project.objects.visible_to` and
    `Session.objects.visible_to`.

    1. Superusers see everything.
    2. A project without members is *open*: every signed-in user sees it. Sessions imported
       without a user (the `import_sessions` command, `--watch`, `demo`) land in such projects,
       which suits a single team sharing one machine.
    3. A project with at least one member is *restricted*: only its members see it, and everyone
       else gets 404 on every URL that names it or one of its sessions.
    4. It stays restricted (`Project.restricted`) when its last member goes (deleted in the
       admin, or with their account): closed to all but superusers, never open again unless an
       administrator clears the flag.

    A web upload that creates a project makes the uploader its owner (so it starts restricted);
    an owner adds teammates by username on the project's members page (contextlab.review manages
    memberships). The model lives with the projects it guards, so that the library's own queries
    apply the rule without importing the apps above it; its table kept its first name.
    """

    class Role(models.TextChoices):
        MEMBER = "member"  # sees the project's sessions, comments, labels them
        OWNER = "owner"  # a member who also manages the members

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="project_memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    added_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = MembershipQuerySet.as_manager()

    class Meta:
        db_table = "review_projectmembership"
        ordering = ("project", "user__username")
        constraints = (
            # Also the index behind visible_to's EXISTS (project = ? [AND user = ?]).
            models.UniqueConstraint(fields=["project", "user"], name="review_membership_once"),
        )

    def __str__(self) -> str:
        return f"{self.user} {self.role} of {self.project}"

    @staticmethod
    def owner_problem(owner_ids: list[int], user_id: int, role: str) -> str | None:
        """Why giving `user_id` the role `role` would leave the project without an owner (None
        when it would not), given the user ids of its current owners. A project that has no
        owner yet (an open project) gets an owner first: its first member added as a plain
        member would close it to everyone else with nobody able to manage its members. Asked
        by the members page (review.services.membership_add) and the admin alike."""
        if role == ProjectMembership.Role.OWNER:
            return None
        if not owner_ids:
            return (
                "This project has no owner yet: its first member must be an owner, who can then"
                " add members. Add an owner first."
            )
        if owner_ids == [user_id]:
            return "A project keeps at least one owner: add another owner first."
        return None


class ProjectUnavailable(Exception):
    """The user's own project for this folder exists but they were removed from it: a new
    session of theirs from that folder has no project it may go into."""


def project_choice(cwd: str, user: Any) -> Project | None:
    """The existing project a new session from folder `cwd` goes into, or None when one is to be
    created for it (project_for_new_session's rules; reads only). ProjectUnavailable when none
    may be used or created."""
    if user is None or not user.is_authenticated:
        return Project.objects.filter(cwd=cwd, created_by=None).first()
    mine = Project.objects.filter(cwd=cwd, memberships__user=user)
    found = mine.filter(memberships__role=ProjectMembership.Role.OWNER).order_by("pk").first()
    if found is None:
        found = mine.order_by("pk").first()
    if found is not None:
        return found
    shared = Project.objects.filter(cwd=cwd, created_by=None).first()
    if shared is not None and (
        user.is_superuser or (not shared.restricted and not shared.memberships.exists())
    ):
        return shared
    if Project.objects.filter(cwd=cwd, created_by=user).exists():
        # Their project may have been made (with their membership, in one transaction) by a
        # concurrent first push of theirs after `mine` was read: read again before refusing.
        found = mine.order_by("pk").first()
        if found is not None:
            return found
        raise ProjectUnavailable(cwd)
    return None


def project_for_new_session(cwd: str, user: Any) -> tuple[Project, bool]:
    """The project a new session from folder `cwd` goes into, and whether it was created here.

    No import, upload or push puts a session into a project whose members do not include its
    author:
    1. Without a user (a command: import_sessions, --watch, demo): the folder's shared project
       (`created_by` empty), created if need be.
    2. A user's session goes into a project of that folder they are a member of (one they own
       first), else into the folder's shared project if it is open (no members: everyone sees
       it), else into a project of their own for the folder, created here: restricted at once,
       with them as its owner. A teammate's project of the same folder is never used by
       someone else, and a command's sessions never go into a user's project.
    """
    # Two new sessions from one folder at once: the second sees the project the first made.
    lock_until_commit(NEW_PROJECT, cwd)
    found = project_choice(cwd, user)
    if found is not None:
        return found, False
    if user is None or not user.is_authenticated:
        return Project.objects.get_or_create(cwd=cwd, created_by=None)
    own = Project.objects.create(cwd=cwd, created_by=user, restricted=True)
    ProjectMembership.objects.create(
        project=own, user=user, role=ProjectMembership.Role.OWNER, added_by=user
    )
    return own, True


class SessionQuerySet(_VisibleToQuerySet["Session"]):
    """`visible_to(user)`: sessions of the projects this user may see."""

    project_field = "project_id"


class Session(models.Model):
    """One Pi session (one header id), with figures kept current by the import service."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="sessions")
    session_id = models.CharField(max_length=255, unique=True)
    # The last path the file was read from (CLI / watcher); uploads keep their file name here.
    source_path = models.TextField(blank=True)
    header = OrderedJSONField(default=dict)  # as migrated; key order kept for export
    parent_session = models.TextField(blank=True)
    name = models.TextField(blank=True)  # last session_info name, as Pi's getSessionName
    first_message = models.TextField(blank=True)  # first user text, shown when there is no name
    file_version = models.PositiveSmallIntegerField(default=3)  # version of the file as read
    leaf_entry_id = models.CharField(max_length=100, blank=True)  # last entry in file order
    size_bytes = models.BigIntegerField(default=0)
    entry_count = models.PositiveIntegerField(default=0)
    message_count = models.PositiveIntegerField(default=0)
    compaction_count = models.PositiveIntegerField(default=0)
    branch_count = models.PositiveIntegerField(default=0)  # tree leaves: 1 for a linear session
    problem_count = models.PositiveIntegerField(default=0)
    tokens_estimated = models.BigIntegerField(default=0)  # sum of per-entry estimates
    # Sums of usage.totalTokens / usage.cost.total of assistant messages and (Pi 1.x) of summaries'
    # and usage entries' model calls.
    usage_tokens = models.BigIntegerField(default=0)
    cost_total = models.FloatField(default=0.0)
    first_activity = models.DateTimeField(null=True, blank=True)
    last_activity = models.DateTimeField(null=True, blank=True)
    models_used = models.JSONField(default=list)  # "provider/model", in order of first use
    current_revision = models.ForeignKey(
        "SessionRevision", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="imported_sessions",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = SessionQuerySet.as_manager()

    class Meta:
        ordering = ("-last_activity", "-id")
        indexes = (
            # The library lists a project's sessions newest first.
            models.Index(fields=["project", "-last_activity"], name="library_session_proj_act"),
        )

    def __str__(self) -> str:
        return self.title

    @property
    def title(self) -> str:
        return self.name or self.first_message[:120] or self.session_id


class SessionRevision(models.Model):
    """One version of a session's file: its original bytes (a blob) and how far they were read.

    While Pi appends, the same revision grows: `bytes_read` advances, the blob gets the new bytes.
    `fingerprint` hashes the first and the last 64 KiB read (and the length), which is enough to
    tell an append from a rewrite without re-reading a large file on every sync.
    """

    class Status(models.TextChoices):
        CURRENT = "current"
        SUPERSEDED = "superseded"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.CURRENT)
    reason = models.CharField(max_length=200, blank=True)  # why this revision exists
    source_path = models.TextField(blank=True)
    blob_path = models.TextField()  # relative to settings.CONTEXTLAB_BLOB_DIR
    blob_sha256 = models.CharField(max_length=64)  # of the bytes stored by the first import
    bytes_read = models.BigIntegerField(default=0)  # offset after the last complete line read
    fingerprint = models.CharField(max_length=64)
    original_version = models.PositiveSmallIntegerField(default=3)
    lines_read = models.PositiveIntegerField(default=0)  # physical lines consumed (incl. header)
    next_seq = models.PositiveIntegerField(default=0)
    # Streaming migration state of legacy (v1/v2) files, so appended lines migrate like the rest.
    migration_state = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("session", "number")
        constraints = (
            models.UniqueConstraint(fields=["session", "number"], name="library_revision_number"),
            # At most one current revision per session: the sync relies on it to pick its target.
            models.UniqueConstraint(
                fields=["session"],
                condition=Q(status="current"),
                name="library_revision_one_current",
            ),
        )

    def __str__(self) -> str:
        return f"{self.session_id} r{self.number}"

    @property
    def blob_file(self) -> Path:
        return Path(settings.CONTEXTLAB_BLOB_DIR) / self.blob_path

    def open_blob(self) -> IO[bytes]:
        """The original bytes of this revision's file, as far as they were read."""
        return self.blob_file.open("rb")


class EntryQuerySet(models.QuerySet["Entry"]):
    def for_session(self, session: Session) -> EntryQuerySet:
        """Entries of the session's current revision, in file order."""
        return self.filter(revision_id=session.current_revision_id).order_by("seq")


class Entry(models.Model):
    """One line of a session file (never the header), as the migrated v3 entry Pi would hold.

    `data` is the whole entry, unknown fields and types included, so nothing the file says is lost
    even where Pi 0.80 would not interpret it (Pi 1.x `context_edit` entries, `system` messages);
    its key order is kept too (PostgreSQL `json`, see OrderedJSONField for why not jsonb).
    """

    class Origin(models.TextChoices):
        FILE = "file"  # read from the session file
        CONTEXTLAB = "contextlab"  # appended by contextlab (compaction / branch-summary jobs)

    # Neither foreign key has a database constraint. Django's deferred FK constraints check every
    # row again at COMMIT (a lookup and a key-share lock on the parent per row): for one import of
    # the real 1,018-entry session that was 4 ms of its ~33 ms, run after the rows are stored,
    # when nothing else overlaps it. Entries are only written by library.importer (import, sync)
    # and jobs.services (appended entries), in the same transaction that creates or locks their
    # revision, and deleted by Django's CASCADE (done by the ORM, not the database, either way);
    # tests/library/test_models.py checks both paths leave no entry without its revision.
    # `session` is a copy of revision.session (searches and deletes by session without a join).
    session = models.ForeignKey(
        Session, on_delete=models.CASCADE, related_name="entries", db_constraint=False
    )
    # No index of its own: the (revision, seq) unique index leads with it.
    revision = models.ForeignKey(
        SessionRevision,
        on_delete=models.CASCADE,
        related_name="entries",
        db_index=False,
        db_constraint=False,
    )
    seq = models.PositiveIntegerField()  # file order within the revision, from 0
    line_no = models.PositiveIntegerField(null=True, blank=True)  # 1-based; header is line 1
    entry_id = models.CharField(max_length=100)
    # NULL (a root, as Pi writes it) must stay distinct from a parent id that is an empty string.
    parent_id = models.CharField(max_length=100, null=True, blank=True)  # noqa: DJ001
    type = models.CharField(max_length=64)
    role = models.CharField(max_length=64, blank=True)  # message.role for `message` entries
    timestamp = models.DateTimeField(null=True, blank=True)
    data = OrderedJSONField()
    tokens = models.PositiveIntegerField(default=0)  # Pi's estimateTokens of what it contributes
    depth = models.PositiveIntegerField(default=0)  # distance from its root in the tree
    # Plain text of the entry for full-text search (tool results included), capped per entry
    # because PostgreSQL's tsvector holds at most 1 MB, and its tsvector. Both are filled after the
    # rows are stored (contextlab.library.search.index_revision): PG's text parser runs at a few
    # MB/s, and writing the text twice at import time doubled what a large import sends and logs.
    search_text = models.TextField(blank=True)
    # The text's words, followed by the parts of its identifiers (library.search explains it).
    search_vector = SearchVectorField(null=True, blank=True)  # unused on SQLite (LIKE search)
    search_indexed = models.BooleanField(default=False)
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.FILE)

    objects = EntryQuerySet.as_manager()

    class Meta:
        constraints = (
            # File order is the main read path (for_session, engine_entries): this unique index
            # also serves that ordered scan.
            models.UniqueConstraint(fields=["revision", "seq"], name="library_entry_rev_seq"),
        )
        indexes = (
            # Permalinks and leaf lookups address entries by their Pi id within a revision.
            # Not unique: damaged files can repeat an id and we keep both lines.
            models.Index(fields=["revision", "entry_id"], name="library_entry_rev_id"),
            # Children of a node (lazy tree loading, branch counting while syncing appends).
            models.Index(fields=["revision", "parent_id"], name="library_entry_rev_parent"),
            # The search indexer's work queue: only rows still to index, so it stays tiny.
            models.Index(
                fields=["revision"],
                condition=Q(search_indexed=False),
                name="library_entry_unindexed_q",
            ),
        )
        # The full-text GIN index on search_vector (PostgreSQL only) is created in migration 0003.

    def __str__(self) -> str:
        return f"{self.type} {self.entry_id}"

    @property
    def place(self) -> str:
        """Where a search hit is, in words: which kind of message, a tool result, a summary."""
        return PLACES.get((self.type, self.role)) or PLACES.get((self.type, "")) or self.type


class SearchWord(models.Model):
    """One word of the library's search vectors (PostgreSQL only), under a trigram index:
    substring search (`eadFileUt`) looks here for the words that hold the piece, then for the
    entries whose vectors hold those words. One row per distinct word of the whole library, not
    per entry: indexing an entry adds only the words the library has not seen yet. Words of
    deleted sessions stay (they match no entry; the table only grows by new words)."""

    word = models.TextField(primary_key=True)

    class Meta:
        db_table = "library_searchword"

    def __str__(self) -> str:
        return self.word


PLACES = {
    ("message", "user"): "user message",
    ("message", "assistant"): "assistant message",
    ("message", "toolResult"): "tool result",
    ("message", "bashExecution"): "bash command and output",
    ("message", "custom"): "custom message",
    ("message", "branchSummary"): "branch summary",
    ("message", "compactionSummary"): "compaction summary",
    ("compaction", ""): "compaction summary",
    ("branch_summary", ""): "branch summary",
    ("custom_message", ""): "custom message",
    ("session_info", ""): "session name",
    ("label", ""): "label",
    ("model_change", ""): "model change",
    ("custom", ""): "extension data",
}


class ImportProblem(models.Model):
    """Something in a file that Pi would skip or misread, with where it is and why.

    `transient` problems describe the file's current state rather than its content (a torn last
    line that Pi may still be writing); each sync of the revision replaces them.
    """

    session = models.ForeignKey(
        Session, null=True, blank=True, on_delete=models.CASCADE, related_name="problems"
    )
    revision = models.ForeignKey(
        SessionRevision, null=True, blank=True, on_delete=models.CASCADE, related_name="problems"
    )
    path = models.TextField()
    line = models.PositiveIntegerField(null=True, blank=True)
    reason = models.TextField()
    transient = models.BooleanField(default=False)
    # For files that produced no session (no header, empty): where their bytes were kept, and who
    # imported them through the dashboard (None for commands: only staff see those).
    blob_path = models.TextField(blank=True)
    reported_to = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("id",)

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.reason}"

    @property
    def blob_file(self) -> Path | None:
        """Where the bytes of a file that yielded no session were kept, if they were."""
        return Path(settings.CONTEXTLAB_BLOB_DIR) / self.blob_path if self.blob_path else None
