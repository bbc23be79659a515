"""The import: one file into a session's revisions (new, appended, unchanged, revised), the
lines fed into rows, the problems and figures saved."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Max

from contextlab.library.importer.blobs import (
    CHUNK_BYTES,
    BlobSink,
    blob_dir,
    copy_to_blob,
    is_disk_full,
    session_blob_path,
    undone_on_failure,
)
from contextlab.library.importer.decoding import (
    ENTRY_ID_MAX,
    Decoded,
    Probe,
    decode_line,
    id_problem,
    looks_binary,
    probe_header,
)
from contextlab.library.importer.lines import fingerprint, iter_lines
from contextlab.library.locks import NEW_SESSION, lock_until_commit
from contextlab.library.models import (
    Entry,
    ImportProblem,
    Session,
    SessionRevision,
    project_for_new_session,
)
from contextlab.library.search import index_revision
from contextlab.library.storage.append import EntryAppender
from contextlab.library.storage.copy import EntryWriter
from contextlab.library.storage.figures import Figures
from contextlab.library.storage.tree import TreeState
from contextlab.library.storage.values import clean_text, entry_datetime
from contextlab.pi.session import Migrator, Problem

# Entry types Pi 0.80.2 writes, and those of newer Pi versions that we keep without complaint.
PI_ENTRY_TYPES = frozenset(
    {
        "message",
        "thinking_level_change",
        "model_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
    }
)
# Pi 1.x (every type of 1.6.0's SessionEntry): context edits, and usage entries (model calls outside
# the conversation, written by cache warming, on by default).
NEWER_PI_ENTRY_TYPES = frozenset({"context_edit", "usage"})


class Status:
    NEW = "new"
    APPENDED = "appended"
    UNCHANGED = "unchanged"
    REVISED = "revised"
    FAILED = "failed"


@dataclass
class ImportResult:
    """The outcome for one file; `as_json()` is the per-file object of `import_sessions --json`."""

    path: str
    status: str
    session_id: str | None = None
    entries: int = 0  # entries stored for this session (its current revision)
    new_entries: int = 0  # entries stored by this import
    problems: list[Problem] = field(default_factory=list)
    bytes_read: int = 0  # bytes consumed by this import
    session: Session | None = None
    seconds: float = 0.0  # reading and storing
    index_seconds: float = 0.0  # filling the full-text search vectors afterwards

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "sessionId": self.session_id,
            "status": self.status,
            "entries": self.entries,
            "newEntries": self.new_entries,
            "problems": [{"line": p.line, "reason": p.reason} for p in self.problems],
        }


ProgressCallback = Callable[[int], None]


@dataclass
class _Run:
    """One pass over a file's lines into one revision, appended through `appender`."""

    revision: SessionRevision
    migrator: Migrator | None
    appender: EntryAppender
    header_line: int
    problems: list[Problem] = field(default_factory=list)
    transient: list[Problem] = field(default_factory=list)
    carried: int = 0  # entries contextlab added, brought over from the previous revision

    def feed(self, decoded: Decoded) -> None:
        line = decoded.line
        self.problems.extend(decoded.problems)
        value = decoded.value
        if line.line_no == self.header_line:
            return
        migrator = self.migrator if self.migrator is not None and self.migrator.migrates else None
        migrating = migrator is not None
        if value is None:
            if decoded.pi_keeps and migrator is not None:
                migrator.skip()
            return
        if value.get("type") == "session":
            if migrator is not None:
                migrator.skip()
            self.problems.append(
                Problem(line.line_no, "a second session header (ignored, as Pi does)")
            )
            return
        if migrator is not None:
            migrator.feed(value, line.line_no)
        entry_id = value.get("id")
        if not isinstance(entry_id, str):
            self.problems.append(Problem(line.line_no, 'entry has no "id" (a v3 entry needs one)'))
            return
        parent = value.get("parentId")
        # As for session ids: no control character, since ids end up in URLs, HTML attributes
        # and download names (a CR or LF could never be sent in a header).
        bad = id_problem(entry_id, 'its "id"', ENTRY_ID_MAX, controls=True) or (
            id_problem(parent, 'its "parentId"', ENTRY_ID_MAX, controls=True)
            if isinstance(parent, str)
            else None
        )
        if bad is not None:
            self.problems.append(Problem(line.line_no, f"{bad}: the entry is not imported"))
            return
        kind = value["type"]
        if kind not in PI_ENTRY_TYPES and kind not in NEWER_PI_ENTRY_TYPES:
            self.problems.append(
                Problem(
                    line.line_no,
                    f"unknown entry type {kind!r} "
                    "(kept whole; Pi 0.80.2 and 1.6.0 do not interpret it)",
                )
            )
        # The appender takes the only reference to the parsed entry (see EntryAppender.add).
        box = [value]
        decoded.value = value = None
        self.appender.add(
            box,
            line_no=line.line_no,
            origin="file",
            problems=self.problems,
            exact=decoded.exact if not migrating else None,
        )

    def finish(self) -> None:
        self.appender.finish(self.problems)

    @property
    def figures(self) -> Figures:
        return self.appender.figures

    @property
    def seq(self) -> int:
        return self.appender.seq

    @property
    def new_entries(self) -> int:
        """Entries this pass stored from the file (not those carried over)."""
        return self.appender.writer.written - self.carried


def import_session_file(
    *,
    path: str | os.PathLike[str] | None = None,
    fileobj: IO[bytes] | None = None,
    name: str | None = None,
    user: Any = None,
    progress: ProgressCallback | None = None,
    index_search: bool = True,
    revise: str | None = None,
    within: Callable[[ImportResult], object] | None = None,
) -> ImportResult:
    """Import or sync one session file (a path, or an uploaded file object).

    `within(result)`, when given, runs inside the transaction that stores a session's entries,
    once they are stored (the callers' audit event, an upload's owner): it commits with them or
    not at all. A file that yields no session has no such transaction: it is not called.

    With `revise` (a reason), a session already stored is read again from the start into a new
    revision whatever the comparison in step 2 says: `reimport_sessions` uses it to redo an
    import from the original bytes kept in the blob store.

    1. Find the header (the first line Pi keeps) and so the session id.
    2. Compare with the stored session's current revision: same bytes -> unchanged; the stored
       bytes are a prefix of the file (size and fingerprint) -> read only the new bytes; anything
       else (shorter, replaced, rewritten in place) -> a new revision read from the start, the old
       one left as it was. Legacy (v1/v2) files that grew are also read again from the start,
       since their migration numbers entries from the top.
    3. Stream the lines (a torn last line is left for the next sync), write entries in batches,
       record problems, copy the bytes read to the revision's blob, update the session's figures.
    4. Unless index_search=False, fill the search vectors of the revision's entries not yet
       indexed (after the rows are committed, so readers see the entries even while a large
       file is still being indexed; and those a killed import left behind).
    """
    if (path is None) == (fileobj is None):
        raise ValueError("give exactly one of path or fileobj")
    display = name or (
        str(path) if path is not None else getattr(fileobj, "name", "") or "<upload>"
    )
    display = clean_text(display)  # file names need not be UTF-8
    if path is not None:
        try:
            handle: IO[bytes] = open(path, "rb")  # noqa: SIM115 - closed below
        except OSError as exc:
            problem = Problem(0, f"cannot read the file: {exc.strerror or exc}")
            _record_orphan_problems(display, [problem], blob_path="", user=user)
            return ImportResult(display, Status.FAILED, problems=[problem])
    else:
        assert fileobj is not None  # exactly one of path and fileobj (checked above)
        handle = fileobj
    started = time.perf_counter()
    try:
        result = _import(handle, display, user, progress, revise, within)
    except OSError as exc:
        if not is_disk_full(exc):
            raise
        # Nothing was stored (the transaction rolled back, the partial blob was removed).
        problem = Problem(
            0,
            "the blob store (CONTEXTLAB_BLOB_DIR) is full: nothing was stored; "
            "free some space and import the file again",
        )
        return ImportResult(display, Status.FAILED, problems=[problem])
    finally:
        if path is not None:
            handle.close()
    result.seconds = time.perf_counter() - started
    # Also when nothing new was read: entries a killed process left unindexed are picked up by
    # the next import of their file, even one that finds it unchanged (a cheap query otherwise).
    if index_search and result.session is not None:
        started = time.perf_counter()
        index_revision(result.session.current_revision_id)
        result.index_seconds = time.perf_counter() - started
    return result


def _file_size(f: IO[bytes]) -> int:
    try:
        return os.fstat(f.fileno()).st_size
    except (AttributeError, OSError, ValueError):
        f.seek(0, os.SEEK_END)
        return f.tell()


def _import(
    f: IO[bytes],
    display: str,
    user: Any,
    progress: ProgressCallback | None,
    revise: str | None = None,
    within: Callable[[ImportResult], object] | None = None,
) -> ImportResult:
    size = _file_size(f)
    if looks_binary(f):
        problem = Problem(0, "not a text file (binary data, e.g. an image): no session was created")
        return _import_without_session(f, display, size, user, rejected=[problem])
    probe = probe_header(f)
    if probe.session_id is None:
        return _import_without_session(f, display, size, user, rejected=probe.problems)

    def attempt(relax: bool) -> ImportResult:
        # A failure undoes what this attempt did to the blob store too.
        with undone_on_failure(), transaction.atomic():
            if relax:
                _relax_commit()
            result = _import_into_session(f, display, size, probe, user, progress, revise)
            if within is not None:
                within(result)
            return result

    for _attempt in range(2):
        try:
            return attempt(relax=True)
        except IntegrityError:
            # Another process created the same session (or revision) meanwhile: go again, now
            # as an update of what it stored.
            continue
    return attempt(relax=False)


def _relax_commit() -> None:
    """Do not wait for the WAL flush at commit: an import lost to a server crash is simply read
    again from the file by the next sync (the stored offset never got ahead of the rows)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")


def _import_without_session(
    f: IO[bytes], display: str, size: int, user: Any, *, rejected: list[Problem] | None = None
) -> ImportResult:
    """A file with no line Pi could use (empty, blank, only bad lines, or a torn first line), or
    one Pi would reject whole (`rejected`: why; its other lines are then not examined)."""
    problems: list[Problem] = []
    torn = False
    if rejected:
        problems = [*rejected]
        if not any("no session was created" in p.reason for p in problems):
            problems.append(Problem(0, "Pi would reject this file: no session was created"))
    for line in [] if rejected else iter_lines(f, 0, 1):
        decoded = decode_line(line)
        if decoded is None:
            continue
        if not line.complete and decoded.value is None and not decoded.pi_keeps:
            torn = True
            continue
        problems.extend(decoded.problems)
    if torn and not problems:
        problem = Problem(
            1, "torn line: the file has no complete line yet (Pi may still be writing)"
        )
        return ImportResult(display, Status.FAILED, problems=[problem])
    if rejected:
        pass
    elif size == 0:
        problems.insert(0, Problem(0, "empty file: no session header"))
    elif not problems:
        problems.append(Problem(0, "no session header and no entries (only blank lines)"))
    else:
        problems.append(Problem(0, "no line of this file is usable: no session was created"))
    blob_path = ""
    # Such a file is kept for whoever wants to see what went wrong, but only its beginning:
    # junk uploaded over and over must not fill the blob store.
    keep = min(size, max(0, settings.CONTEXTLAB_UNUSABLE_KEEP_BYTES))
    if keep:
        digest = hashlib.sha256()  # of the whole file: it names the copy of this file
        f.seek(0)
        for chunk in iter(lambda: f.read(CHUNK_BYTES), b""):
            digest.update(chunk)
        blob_path = f"unusable/{digest.hexdigest()}.jsonl"
        if not (blob_dir() / blob_path).exists():
            copy_to_blob(f, 0, keep, blob_dir() / blob_path, new=True)
    if keep < size:
        kept = f"only its first {keep:,} bytes are kept" if keep else "none of it is kept"
        problems.append(
            Problem(0, f"the file has {size:,} bytes: {kept} (CONTEXTLAB_UNUSABLE_KEEP_BYTES)")
        )
    _record_orphan_problems(display, problems, blob_path=blob_path, user=user)
    return ImportResult(display, Status.FAILED, problems=problems)


def _record_orphan_problems(
    display: str, problems: list[Problem], *, blob_path: str, user: Any = None
) -> None:
    reported_to = user if user is not None and user.is_authenticated else None
    with transaction.atomic():
        # Re-importing the same unusable file must not pile up copies of its problems, nor of
        # its bytes: the copy the replaced rows pointed to goes with them (unless still used).
        replaced = ImportProblem.objects.filter(session=None, path=display, reported_to=reported_to)
        superseded = set(replaced.exclude(blob_path="").values_list("blob_path", flat=True))
        superseded.discard(blob_path)
        replaced.delete()
        if superseded:
            transaction.on_commit(lambda: _remove_unused_unusable_blobs(superseded))
        ImportProblem.objects.bulk_create(
            ImportProblem(
                path=display,
                line=p.line or None,
                reason=p.reason,
                blob_path=blob_path,
                reported_to=reported_to,
            )
            for p in problems
        )


def _remove_unused_unusable_blobs(paths: set[str]) -> None:
    """Delete the kept copies of unusable files that no import problem points to any more (the
    same bytes uploaded by someone else, or under another name, share one copy)."""
    still_used = set(
        ImportProblem.objects.filter(blob_path__in=paths).values_list("blob_path", flat=True)
    )
    for path in paths - still_used:
        if path.startswith("unusable/"):
            (blob_dir() / path).unlink(missing_ok=True)


def _import_into_session(
    f: IO[bytes],
    display: str,
    size: int,
    probe: Probe,
    user: Any,
    progress: ProgressCallback | None,
    revise: str | None = None,
) -> ImportResult:
    assert probe.session_id is not None
    session_id = clean_text(probe.session_id[:255])
    # The row lock serialises concurrent syncs of one session (watcher, upload, another CLI).
    session = Session.objects.select_for_update().filter(session_id=session_id).first()
    if session is None:
        # No row to lock yet: a concurrent first import of this session waits here, then finds
        # the session the other one stored.
        lock_until_commit(NEW_SESSION, session_id)
        session = Session.objects.select_for_update().filter(session_id=session_id).first()
    if session is None:
        header = probe.header or {}
        raw_cwd = header.get("cwd")
        cwd = raw_cwd if isinstance(raw_cwd, str) else ""
        project, _ = project_for_new_session(clean_text(cwd), user)
        session = Session.objects.create(
            project=project,
            session_id=session_id,
            source_path=display,
            imported_by=user if user is not None and user.is_authenticated else None,
        )
        return _read_revision(f, display, size, probe, session, None, Status.NEW, progress)

    if revise is not None:
        return _read_revision(f, display, size, probe, session, revise, Status.REVISED, progress)
    revision = session.current_revision
    assert revision is not None
    if size >= revision.bytes_read and fingerprint(f, revision.bytes_read) == revision.fingerprint:
        if size == revision.bytes_read:
            # A torn tail that was cut off again: its transient problem no longer applies.
            deleted, _ = ImportProblem.objects.filter(revision=revision, transient=True).delete()
            if deleted:
                session.problem_count = ImportProblem.objects.filter(revision=revision).count()
                Session.objects.filter(pk=session.pk).update(problem_count=session.problem_count)
            return _result(display, Status.UNCHANGED, session, 0, 0)
        if revision.original_version >= 3:
            return _append(f, display, size, probe, session, revision, progress)
        reason = "legacy (v1/v2) file grew: migrated again from the start"
    elif size < revision.bytes_read:
        reason = f"file shrank from {revision.bytes_read} to {size} bytes"
    else:
        reason = "file was replaced or rewritten in place"
    return _read_revision(f, display, size, probe, session, reason, Status.REVISED, progress)


def _result(
    display: str,
    status: str,
    session: Session,
    new_entries: int,
    bytes_read: int,
    *,
    has_problems: bool = True,
) -> ImportResult:
    problems = (
        [
            Problem(p.line or 0, p.reason)
            for p in ImportProblem.objects.filter(revision_id=session.current_revision_id).order_by(
                "line", "id"
            )
        ]
        if has_problems
        else []
    )
    return ImportResult(
        path=display,
        status=status,
        session_id=session.session_id,
        entries=session.entry_count,
        new_entries=new_entries,
        problems=problems,
        bytes_read=bytes_read,
        session=session,
    )


def _read_revision(
    f: IO[bytes],
    display: str,
    size: int,
    probe: Probe,
    session: Session,
    reason: str | None,
    status: str,
    progress: ProgressCallback | None,
) -> ImportResult:
    """Read the whole file into a new revision (the first one, or one replacing the current)."""
    previous = session.current_revision
    if status == Status.NEW:
        number = 1  # the session row was created in this transaction: it has no revisions
    else:
        number = (session.revisions.aggregate(n=Max("number"))["n"] or 0) + 1
        SessionRevision.objects.filter(
            session=session, status=SessionRevision.Status.CURRENT
        ).update(status=SessionRevision.Status.SUPERSEDED)
    header = probe.header
    version_hint = None
    if header is None:
        version_hint = 3 if probe.first_has_id else 1
    migrator = Migrator(dict(header) if header is not None else None, version=version_hint)
    revision = SessionRevision.objects.create(
        session=session,
        number=number,
        reason=reason or "first import",
        source_path=display,
        blob_path=session_blob_path(session.session_id, number),
        blob_sha256="",
        fingerprint="",
        original_version=migrator.version,
    )
    session.header = migrator.header or {}
    parent_session = session.header.get("parentSession")
    session.parent_session = parent_session if isinstance(parent_session, str) else ""
    session.file_version = migrator.version
    session.current_revision = revision
    appender = EntryAppender(
        session,
        revision,
        tree=TreeState(None),
        figures=Figures(),
        writer=EntryWriter(session, revision, stream=True),
        seq=0,
    )
    run = _Run(
        revision=revision,
        migrator=migrator,
        appender=appender,
        header_line=probe.header_line,
        problems=list(probe.problems),
    )
    # The header's own timestamp counts as activity (a session with no entries yet).
    header_time = entry_datetime(session.header.get("timestamp"))
    run.figures.first_activity = run.figures.last_activity = header_time
    # Read before the stream opens its COPY: from then on until the writer is closed the
    # connection belongs to the COPY, and a query on it would wait for the COPY to end, forever.
    added = _added_entries(previous) if previous is not None else []
    sink = BlobSink(revision.blob_file, 0, new=True)
    try:
        end = _stream(f, 0, 1, run, progress, sink)
        if previous is not None:
            _carry_added_entries(previous, added, run)
    except BaseException as exc:
        appender.writer.close(exc)
        sink.abort()
        raise
    revision.blob_sha256 = sink.finish(end)
    run.finish()
    revision.bytes_read = end
    revision.lines_read = run.revision.lines_read
    revision.next_seq = run.seq
    revision.fingerprint = fingerprint(f, end)
    revision.save()
    _save_problems(session, revision, display, run)
    # A new revision has exactly the problems just saved: no need to count or read them back.
    stored = len(run.problems) + len(run.transient)
    _save_session(session, run, display, end, problem_count=stored)
    return _result(display, status, session, run.new_entries, end, has_problems=bool(stored))


def _added_entries(previous: SessionRevision) -> list[Entry]:
    """The entries contextlab appended to a revision (compactions, branch summaries), in order:
    a few per session, read whole."""
    return list(
        Entry.objects.filter(revision=previous, origin=Entry.Origin.CONTEXTLAB)
        .order_by("seq")
        .only("entry_id", "parent_id", "data")
    )


def _carry_added_entries(previous: SessionRevision, added: list[Entry], run: _Run) -> None:
    """Entries contextlab appended (compactions, branch summaries) are not in the file: bring them
    to the new revision, after the file's entries as an export writes them, where their parent
    still exists. `added` was read before the new revision's COPY began (no query runs while it
    is open)."""
    for entry in added:
        parent = entry.parent_id
        if parent is not None and parent not in run.appender.tree.depths:
            run.problems.append(
                Problem(
                    0,
                    f"entry {entry.entry_id!r} added by contextlab stays in revision "
                    f"{previous.number}: its parent {parent!r} is not in the new file",
                )
            )
            continue
        # What the tree says of an entry contextlab wrote was said when it was first appended.
        run.appender.add([entry.data], line_no=None, origin=Entry.Origin.CONTEXTLAB, problems=[])
        run.carried += 1


def _append(
    f: IO[bytes],
    display: str,
    size: int,
    probe: Probe,
    session: Session,
    revision: SessionRevision,
    progress: ProgressCallback | None,
) -> ImportResult:
    start = revision.bytes_read
    appender = EntryAppender.after_stored(session, revision)
    run = _Run(revision=revision, migrator=None, appender=appender, header_line=probe.header_line)
    # Appends are small: their bytes are copied to the blob once the lines are read.
    end = _stream(f, start, revision.lines_read + 1, run, progress, None)
    run.finish()
    ImportProblem.objects.filter(revision=revision, transient=True).delete()
    if end == start:
        _save_problems(session, revision, display, run)
        session.problem_count = ImportProblem.objects.filter(revision=revision).count()
        Session.objects.filter(pk=session.pk).update(problem_count=session.problem_count)
        return _result(display, Status.UNCHANGED, session, 0, 0)
    copy_to_blob(f, start, end, revision.blob_file, new=False)
    revision.bytes_read = end
    revision.next_seq = run.seq
    revision.fingerprint = fingerprint(f, end)
    revision.source_path = display
    revision.save()
    _save_problems(session, revision, display, run)
    _save_session(session, run, display, end)
    return _result(display, Status.APPENDED, session, run.new_entries, end - start)


def _stream(
    f: IO[bytes],
    offset: int,
    line_no: int,
    run: _Run,
    progress: ProgressCallback | None,
    sink: BlobSink | None,
) -> int:
    """Feed complete lines from `offset`; return the offset after the last line consumed."""
    end = offset
    lines_read = line_no - 1
    for line in iter_lines(f, offset, line_no, sink):
        decoded = decode_line(line)
        if not line.complete and (decoded is not None and decoded.value is None):
            # Pi writes a line and its newline at once; a last line that does not parse is one
            # being written (or a crash mid-write): leave it for the next sync.
            run.transient.append(
                Problem(
                    line.line_no,
                    "torn last line (no newline and not valid JSON yet); "
                    "it is read when it is complete",
                )
            )
            break
        if decoded is not None:
            run.feed(decoded)
        end = line.end
        lines_read = line.line_no
        if progress is not None:
            progress(line.end)
    run.revision.lines_read = lines_read
    return end


def _save_problems(session: Session, revision: SessionRevision, display: str, run: _Run) -> None:
    ImportProblem.objects.bulk_create(
        ImportProblem(
            session=session,
            revision=revision,
            path=display,
            line=p.line or None,
            reason=p.reason,
            transient=transient,
        )
        for problems, transient in ((run.problems, False), (run.transient, True))
        for p in problems
    )


def _save_session(
    session: Session, run: _Run, display: str, end: int, *, problem_count: int | None = None
) -> None:
    run.figures.apply_to(session)
    session.name = clean_text(session.name)
    session.first_message = clean_text(session.first_message)
    session.leaf_entry_id = clean_text(session.leaf_entry_id[:100])
    session.models_used = [clean_text(m) for m in session.models_used]
    session.size_bytes = end
    session.source_path = display
    session.problem_count = (
        ImportProblem.objects.filter(revision=run.revision).count()
        if problem_count is None
        else problem_count
    )
    session.save()
