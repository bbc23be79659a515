"""The API's request and response shapes (pydantic, through django-ninja). Keys are camelCase, as
in Pi's files and the commands' JSON."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema

from contextlab.library.forms import SORTS

PAGE_MAX = 500
SEARCH_MAX = 100


class ErrorOut(Schema):
    detail: str


class ValidationErrorOut(Schema):
    detail: list[dict[str, Any]]


class ProjectOut(Schema):
    id: int
    cwd: str
    name: str
    restricted: bool  # has members: only they see it
    role: str | None  # the caller's role in it (owner / member), None if not a member


class SessionOut(Schema):
    sessionId: str
    id: int
    projectId: int
    cwd: str
    title: str
    name: str
    firstMessage: str
    fileVersion: int
    leafEntryId: str
    sizeBytes: int
    entryCount: int
    messageCount: int
    compactionCount: int
    branchCount: int
    problemCount: int
    tokensEstimated: int
    usageTokens: int
    costTotal: float
    firstActivity: datetime | None
    lastActivity: datetime | None
    modelsUsed: list[Any]
    reviewLabels: list[str]


class SessionPage(Schema):
    count: int
    items: list[SessionOut]


class ProblemOut(Schema):
    line: int
    reason: str


class SessionDetailOut(SessionOut):
    header: dict[str, Any]
    parentSession: str
    revision: int | None
    problems: list[ProblemOut]


class RevisionOut(Schema):
    number: int
    status: str
    reason: str
    sourcePath: str
    bytesRead: int
    blobSha256: str
    originalVersion: int
    entries: int
    problems: int
    current: bool
    createdAt: datetime
    updatedAt: datetime


class EntryOut(Schema):
    entryId: str
    parentId: str | None
    type: str
    role: str
    seq: int
    lineNo: int | None
    timestamp: datetime | None
    depth: int
    tokens: int
    origin: str
    data: dict[str, Any]


class EntryPage(Schema):
    count: int
    items: list[EntryOut]


class ContextOut(Schema):
    """`manage.py context --json`'s object (see contextlab.inspector's context command)."""

    leafId: str | None
    systemPrompt: str
    layers: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    sent: list[dict[str, Any]]
    model: dict[str, Any] | None
    thinkingLevel: Any
    # The tool declarations sent with the prompt ({name, description, parameters}), always
    # present (a captured request's own when the Pi extension captured it).
    tools: list[dict[str, Any]]


class SearchHit(Schema):
    sessionId: str
    entryId: str
    type: str
    role: str
    seq: int
    snippetHtml: str


class PushOut(Schema):
    """The answer of a push: `offset` is how many bytes of the file the server holds."""

    sessionId: str
    offset: int
    status: str
    entries: int
    newEntries: int
    problems: list[ProblemOut]
    # min(offset, 4096), and the lowercase hex SHA-256 of the stored bytes [offset - tailBytes,
    # offset): a client whose own bytes there differ sends its file again from 0.
    tailBytes: int
    tailSha256: str


class JobIn(Schema):
    kind: Literal["compaction", "branch_summary"]
    # Compaction: where to compact (default: the session's leaf). Branch summary: the leaf being
    # left (default: the session's leaf); `target` is where the leaf goes.
    leaf: str | None = Field(None, max_length=100)
    target: str | None = Field(None, max_length=100)
    customInstructions: str | None = Field(None, max_length=20_000)
    replaceInstructions: bool = False
    reserveTokens: int | None = Field(None, ge=0, le=10_000_000)
    keepRecentTokens: int | None = Field(None, ge=0, le=10_000_000)


class PreviewOut(Schema):
    kind: str
    leafEntryId: str
    targetEntryId: str
    plan: dict[str, Any]
    nothing: str | None
    calls: int


class JobOut(Schema):
    id: int
    kind: str
    sessionId: str
    status: str
    progress: int
    progressMessage: str
    attempts: int
    maxAttempts: int
    error: str
    leafEntryId: str
    targetEntryId: str
    parameters: dict[str, Any]
    preview: dict[str, Any]
    resultEntryIds: list[Any]
    usage: dict[str, Any]
    cost: float
    createdAt: datetime
    startedAt: datetime | None
    finishedAt: datetime | None


class CancelOut(Schema):
    cancelled: bool
    job: JobOut


class CommentIn(Schema):
    entryId: str = Field(..., min_length=1, max_length=100)
    body: str = Field(..., max_length=20_000)


class CommentEdit(Schema):
    body: str = Field(..., max_length=20_000)


class CommentOut(Schema):
    id: int
    entryId: str
    author: str | None
    body: str
    createdAt: datetime
    editedAt: datetime | None


class LabelIn(Schema):
    name: str = Field(..., max_length=100)


class LabelOut(Schema):
    name: str
    added: bool


class LabelRemovedOut(Schema):
    name: str
    removed: bool


# --- Query parameters -------------------------------------------------------------------


class SessionFilters(Schema):
    """The library's filters."""

    q: str | None = Field(None, max_length=200, description="name or first message contains")
    project: int | None = Field(None, ge=1, description="project id")
    model: str | None = Field(None, max_length=200, description='"provider/model" contains')
    flag: str | None = Field(None, pattern="^(problems|compacted|branched)$")
    reviewLabel: str | None = Field(None, max_length=40)
    sort: str | None = Field(None, pattern="^(" + "|".join(SORTS) + ")$")
    limit: int = Field(100, ge=1, le=PAGE_MAX)
    offset: int = Field(0, ge=0)


class Paging(Schema):
    limit: int = Field(100, ge=1, le=PAGE_MAX)
    offset: int = Field(0, ge=0)


class SearchQuery(Schema):
    q: str = Field(..., min_length=1, max_length=500, description='words, "phrases", or, -not')
    limit: int = Field(50, ge=1, le=SEARCH_MAX)


class CommentFilter(Schema):
    entry: str | None = Field(None, max_length=100, description="only this entry's")
