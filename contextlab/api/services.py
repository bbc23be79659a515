"""What the REST API does besides reading: API tokens, pushing a session's lines over HTTP, and
the context of an entry (the `context` command's object for a stored session).

Everything else the API answers comes from the apps' own selectors and services; this module only
adds what has no page of its own.
"""

from __future__ import annotations

import hashlib
import io
import secrets
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from contextlab import heavy
from contextlab.api.models import ApiToken
from contextlab.budgets import check_deadline
from contextlab.inspector.selectors import session_index
from contextlab.inspector.services import is_heavy_turn, turn_context
from contextlab.jobs.tasks import enqueue_after_import
from contextlab.library.importer import import_session_file, probe_header
from contextlab.library.models import Entry, Session
from contextlab.library.search import index_revision
from contextlab.library.selectors import session_problems
from contextlab.pi.jsutil import json_stringify_chunks
from contextlab.review.models import AuditEvent
from contextlab.review.services import (
    audit_record,
    session_writable_by,
    upload_check,
    upload_record,
)

TOKEN_PREFIX = "cl_"


class ApiError(Exception):
    """A refused API request: `status` is the HTTP status, the message is shown as `detail`."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


# --- Tokens ---------------------------------------------------------------------------------


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def api_token_create(*, user: Any, name: str = "") -> tuple[ApiToken, str]:
    """A new token for `user`: (the stored row, the token itself — shown once, never stored)."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        row = ApiToken.objects.create(
            user=user, name=name.strip()[:100], key_hash=hash_token(token), prefix=token[:10]
        )
        audit_record(actor=user, verb="api_token.create", target=f"{row.prefix}… {row.name}")
    return row, token


def api_token_revoke(*, token: ApiToken, actor: Any) -> bool:
    """Revoke a token (it stops working at once); False if it already was."""
    with transaction.atomic():
        changed = ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        if changed:
            audit_record(
                actor=actor, verb="api_token.revoke", target=f"{token.prefix}… {token.name}"
            )
    token.refresh_from_db()
    return bool(changed)


def token_user(token: str) -> Any:
    """The active user a bearer token belongs to, or None."""
    if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return None
    row = (
        ApiToken.objects.active()
        .select_related("user")
        .filter(key_hash=hash_token(token), user__is_active=True)
        .first()
    )
    if row is None:
        return None
    now = timezone.now()
    # Written at most once a minute: a pushing client calls several times a second.
    if row.last_used_at is None or (now - row.last_used_at).total_seconds() > 60:
        ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
    return row.user


# --- Pushing lines --------------------------------------------------------------------------

TAIL_BYTES = 4096  # how much of the stored bytes before `offset` the answer's digest covers
PUSH_RUN_SECONDS = 600  # pushes of one session by one user this close together: one audit event
NOT_THE_WRITER = (
    "Only the account that first pushed or uploaded this session, and its project's owners, "
    "may push to it"
)


@dataclass
class PushResult:
    """The answer of `POST /sessions/{sessionId}/lines` (the contract in the README, "REST API")."""

    session_id: str
    offset: int  # bytes of the file the server holds (the next request's `offset`): a line end
    status: str  # new | appended | unchanged | revised | failed | conflict
    entries: int = 0
    new_entries: int = 0
    problems: list[dict[str, Any]] = field(default_factory=list)
    tail_bytes: int = 0  # min(offset, TAIL_BYTES)
    tail_sha256: str = hashlib.sha256(b"").hexdigest()  # of stored bytes [offset - tail, offset)

    @property
    def conflict(self) -> bool:
        return self.status == "conflict"

    def as_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "offset": self.offset,
            "status": self.status,
            "entries": self.entries,
            "newEntries": self.new_entries,
            "problems": self.problems,
            "tailBytes": self.tail_bytes,
            "tailSha256": self.tail_sha256,
        }


class _HeldThenBody(io.RawIOBase):
    """The file as the client has it: the bytes the server holds (the revision's blob up to
    `held`) followed by the request body. The import service reads it like any file, so a push
    goes through exactly what `import_sessions --watch` does with a file that grew."""

    def __init__(self, blob: Path | None, held: int, body: IO[bytes], body_size: int) -> None:
        self._blob = blob.open("rb") if held and blob is not None else None
        self._held = held
        self._body = body
        self._size = held + body_size
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, pos: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + pos)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        want = min(len(buffer), self._size - self._pos)
        if want <= 0:
            return 0
        if self._pos < self._held:
            assert self._blob is not None
            self._blob.seek(self._pos)
            data = self._blob.read(min(want, self._held - self._pos))
            if not data:  # the blob is shorter than the revision says: stop, do not invent bytes
                return 0
        else:
            self._body.seek(self._pos - self._held)
            data = self._body.read(want)
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)

    def close(self) -> None:
        if self._blob is not None:
            self._blob.close()
        super().close()


def _tail(session: Session | None, offset: int) -> tuple[int, str]:
    """(tailBytes, tailSha256): the digest of the stored bytes just before `offset`."""
    size = min(offset, TAIL_BYTES)
    if size == 0 or session is None or session.current_revision is None:
        return 0, hashlib.sha256(b"").hexdigest()
    try:
        with session.current_revision.open_blob() as blob:
            blob.seek(offset - size)
            data = blob.read(size)
    except FileNotFoundError:
        data = b""
    return size, hashlib.sha256(data).hexdigest()


def _state(session: Session | None, session_id: str, status: str) -> PushResult:
    if session is None or session.current_revision is None:
        return PushResult(session_id, 0, status)
    offset = session.current_revision.bytes_read
    tail_bytes, tail_sha256 = _tail(session, offset)
    return PushResult(
        session_id,
        offset,
        status,
        entries=session.entry_count,
        problems=[{"line": p.line or 0, "reason": p.reason} for p in session_problems(session)],
        tail_bytes=tail_bytes,
        tail_sha256=tail_sha256,
    )


def _visible_session(user: Any, session_id: str, *, lock: bool = False) -> Session | None:
    """The stored session with this id if the user may see it, else None: a session of another
    team answers as one that is not stored, revealing nothing."""
    qs = Session.objects.filter(session_id=session_id)
    # The lock is taken on the session row alone; its current revision is read by a query of
    # its own, after the lock is granted. Joined into the locking query, it would come from the
    # snapshot taken before waiting (PostgreSQL re-reads only the locked row): a push queued
    # behind another would see the revision as it was before that push.
    session = (qs.select_for_update() if lock else qs).first()
    if session is not None and not Session.objects.filter(pk=session.pk).visible_to(user).exists():
        return None
    return session


def session_push_state(*, user: Any, session_id: str) -> PushResult:
    """Where a client resumes: the server's offset for this session; ApiError 404 when the user
    has no such session (not stored, or another team's: the same answer)."""
    session = _visible_session(user, session_id)
    if session is None:
        raise ApiError(404, "Not Found")
    return _state(session, session_id, "unchanged")


class _Readable(Protocol):
    def read(self, size: int, /) -> bytes: ...


def spool_body(stream: _Readable, limit: int) -> tuple[IO[bytes], int]:
    """Copy a request body to a temporary file (in memory while small); ApiError 413 past
    `limit` bytes."""
    spooled = tempfile.SpooledTemporaryFile(max_size=8 << 20)  # noqa: SIM115 - returned
    size = 0
    while chunk := stream.read(1 << 20):
        size += len(chunk)
        if size > limit:
            spooled.close()
            raise ApiError(413, f"The body is larger than {limit} bytes: push in smaller parts")
        spooled.write(chunk)
    spooled.seek(0)
    return spooled, size


def _complete_size(body: IO[bytes], size: int) -> int:
    """The bytes of the body up to and with its last newline (0 without one): what a push
    stores. The rest, a line Pi is still writing, waits for the next push."""
    position = size
    while position > 0:
        start = max(0, position - (1 << 20))
        body.seek(start)
        chunk = body.read(position - start)
        found = chunk.rfind(b"\n")
        if found >= 0:
            body.seek(0)
            return start + found + 1
        position = start
    body.seek(0)
    return 0


def _repeats_stored(session: Session, body: IO[bytes], size: int) -> bool:
    """Whether the first `size` bytes of the body are the first `size` bytes the server holds."""
    revision = session.current_revision
    if revision is None:  # nothing stored: nothing repeated
        return False
    try:
        blob = revision.open_blob()
    except FileNotFoundError:
        return False
    with blob:
        body.seek(0)
        left = size
        while left > 0:
            want = min(left, 1 << 20)
            if body.read(want) != blob.read(want):
                body.seek(0)
                return False
            left -= want
    body.seek(0)
    return True


def _audit_push(
    *, user: Any, session: Session, status: str, start: int, result: PushResult
) -> None:
    """One "session.push" event per push run: the pushes of one session by one user less than
    PUSH_RUN_SECONDS apart extend the run's event (its range, entries and count) instead of
    adding one per request, since Pi appends a line per message. Called under the session's row
    lock, so two pushes never extend the same event at once."""
    now = timezone.now()
    last = (
        AuditEvent.objects.filter(session=session)
        .order_by("-created_at", "-id")
        .only("id", "verb", "actor_id", "data")
        .first()
    )
    if (
        last is not None
        and last.verb == "session.push"
        and last.actor_id == user.pk
        and last.data.get("to") == start
        and now.timestamp() - float(last.data.get("last_at", 0)) < PUSH_RUN_SECONDS
    ):
        data = dict(last.data)
        data.update(
            to=result.offset,
            new_entries=int(data.get("new_entries", 0)) + result.new_entries,
            pushes=int(data.get("pushes", 1)) + 1,
            last_at=now.timestamp(),
        )
        AuditEvent.objects.filter(pk=last.pk).update(data=data)
        return
    audit_record(
        actor=user,
        verb="session.push",
        session=session,
        target=session.title[:200],
        data={
            "status": status,
            "session_id": session.session_id,
            "from": start,
            "to": result.offset,
            "new_entries": result.new_entries,
            "pushes": 1,
            "last_at": now.timestamp(),
        },
    )


def session_push_lines(
    *, user: Any, session_id: str, offset: int, body: IO[bytes], body_size: int
) -> PushResult:
    """Append the bytes a client's session file has from `offset` on (the contract: README,
    "REST API").

    1. Only complete lines are stored: the body is cut after its last newline, so the offset
       answered is always a line end of the stored bytes.
    2. Lock the session row (if stored and visible to the user: another team's session answers
       as one not stored), so that two pushes of one session run one after the other. A session
       is written only by its writer (session_writable_by): anyone else gets 403.
    3. Compare `offset` with the bytes the server holds: another offset (but 0) is a conflict,
       answered with the server's offset and the digest of its tail, so the client resumes from
       there, or from 0 if its own bytes there differ.
    4. Offset 0 means "the whole file": the body must be that session's file (its header names
       it). Bytes that repeat what the server holds (all of it or a prefix) change nothing;
       otherwise the import service decides, as for any file: the stored bytes plus more ->
       appended, different bytes -> a new revision. Membership is an upload's: a session or
       project of another team -> 404, a push that creates a project makes the pusher its owner.
    5. Otherwise the file is the held bytes (the blob) followed by the body, and the import
       appends its lines.
    6. The new entries' search text is indexed after the commit, as the import command does; a
       large push (over CONTEXTLAB_API_INDEX_INLINE_BYTES) is answered at once and indexed, with
       its tree index stored, by the worker's after_import, as an upload is.
    """
    complete = _complete_size(body, body_size)
    with transaction.atomic():
        session = _visible_session(user, session_id, lock=True)
        if session is not None and not session_writable_by(user, session):
            raise ApiError(403, NOT_THE_WRITER)
        held = (
            session.current_revision.bytes_read
            if session is not None and session.current_revision is not None
            else 0
        )
        if offset != 0 and offset != held:
            return _state(session, session_id, "conflict")
        if complete == 0:
            if offset == 0 and session is None and body_size:
                reason = "torn line: the body has no complete line yet (Pi may still be writing)"
                result = _state(None, session_id, "failed")
                result.problems = [{"line": 1, "reason": reason}]
                return result
            return _state(session, session_id, "unchanged")
        if offset == 0:
            if (
                session is not None
                and complete <= held
                and _repeats_stored(session, body, complete)
            ):
                # A repeat of what is stored (a retry, or a client that has read less of the
                # file than was pushed before): nothing is replaced by fewer lines.
                return _state(session, session_id, "unchanged")
            probe = probe_header(body)
            if probe.session_id is not None and probe.session_id != session_id:
                raise ApiError(
                    400, f"The body is the file of session {probe.session_id!r}, not {session_id!r}"
                )
            fileobj: IO[bytes] = io.BufferedReader(
                _HeldThenBody(None, 0, body, complete), buffer_size=1 << 20
            )
            refusal, created_project = upload_check(user=user, fileobj=fileobj)
            if refusal:
                raise ApiError(404, "Not Found")
        else:
            assert session is not None and session.current_revision is not None
            blob = session.current_revision.blob_file
            fileobj = io.BufferedReader(
                _HeldThenBody(blob, held, body, complete), buffer_size=1 << 20
            )
            created_project = False
        name = session.source_path if session is not None else f"{session_id}.jsonl"
        with fileobj:
            outcome = import_session_file(fileobj=fileobj, name=name, user=user, index_search=False)
        stored = outcome.session
        if stored is None:
            # Nothing usable in the body (no header, only bad lines): nothing changed.
            result = _state(session, session_id, outcome.status)
            result.problems = [{"line": p.line, "reason": p.reason} for p in outcome.problems]
            return result
        revision = stored.current_revision
        assert revision is not None
        tail_bytes, tail_sha256 = _tail(stored, revision.bytes_read)
        result = PushResult(
            session_id,
            revision.bytes_read,
            outcome.status,
            entries=outcome.entries,
            new_entries=outcome.new_entries,
            problems=[{"line": p.line, "reason": p.reason} for p in outcome.problems],
            tail_bytes=tail_bytes,
            tail_sha256=tail_sha256,
        )
        if created_project or outcome.status in ("new", "revised"):
            upload_record(
                user=user, session=stored, status=outcome.status, created_project=created_project
            )
        elif outcome.status == "appended":
            _audit_push(user=user, session=stored, status=outcome.status, start=held, result=result)
    if outcome.new_entries:
        if body_size > settings.CONTEXTLAB_API_INDEX_INLINE_BYTES:
            enqueue_after_import(stored.pk)
        else:
            index_revision(stored.current_revision_id)
    return result


# --- Context --------------------------------------------------------------------------------

# Bytes gathered before a streamed answer hands a chunk to the server.
STREAM_CHUNK = 256 * 1024


def json_chunks(value: Any, *, depth: int = 2) -> Iterator[bytes]:
    """``json_stringify(value)`` as UTF-8 chunks of about STREAM_CHUNK bytes (pieces of
    ``json_stringify_chunks``), checking the request's deadline between them."""
    pending: list[bytes] = []
    size = 0
    for piece in json_stringify_chunks(value, depth=depth):
        data = piece.encode("utf-8", "surrogatepass")
        pending.append(data)
        size += len(data)
        if size >= STREAM_CHUNK:
            check_deadline("Writing this answer")
            yield b"".join(pending)
            pending, size = [], 0
    if pending:
        yield b"".join(pending)


def session_context(session: Session, leaf: str | None) -> dict[str, Any]:
    """The context of the request at ``leaf`` (an entry id, ``line:N`` with the header as line
    1, or None: the session's leaf) of a stored session: the request the session page shows,
    built by the page's own code with this server's inputs (``inspector.turns.server_inputs``:
    the resource profile, PI_PACKAGE_DIR, files under CONTEXTLAB_SERVER_ROOTS, TIME_ZONE) and
    the captured prompt, in the ``context`` command's shape (``tools`` always present).

    Only the leaf's path is read (the tree index and the entries the request holds), never the
    whole file: a 250 MB session costs what its leaf's request holds."""
    if session.current_revision is None:
        raise ApiError(404, "The session has no stored file")
    index = session_index(session)
    if leaf is None:
        entry_id = session.leaf_entry_id if session.leaf_entry_id in index.items else index.leaf_id
    elif leaf.startswith("line:"):
        number = leaf[len("line:") :]
        if not number.isdigit():
            raise ApiError(404, f"leaf {leaf}: expected line:N with a number")
        found = (
            Entry.objects.filter(revision=session.current_revision, line_no=int(number))
            .values_list("entry_id", flat=True)
            .first()
        )
        if found is None or found not in index.items:
            raise ApiError(404, f"line {number}: no entry on this line")
        entry_id = found
    else:
        if leaf not in index.items:
            raise ApiError(404, f"leaf {leaf}: no entry with this id")
        entry_id = leaf
    if entry_id is None:
        raise ApiError(404, "The session has no entries")
    # A large session's deep turn is built at a lower CPU priority (contextlab.heavy).
    return heavy.run_if(
        is_heavy_turn(index, entry_id), lambda: turn_context(session, index, entry_id)
    )
