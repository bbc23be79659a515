"""Export back to Pi: the stored session as the JSONL file Pi opens, with what contextlab
appended."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain

from contextlab.jobs.services.errors import JobError
from contextlab.library.models import Entry, Session
from contextlab.pi.jsutil import json_stringify
from contextlab.pi.session import parse_session_bytes
from contextlab.pi.writer import ordered_entry

__all__ = ["session_export_chunks", "session_export_filename"]


def session_export_chunks(session: Session) -> Iterator[bytes]:
    """The session as a Pi JSONL v3 file, including the entries contextlab appended.

    1. A v3 file: its original bytes as read (so an untouched session exports byte for byte).
    2. A legacy (v1/v2) file: what Pi writes when it opens and migrates it — every kept line
       migrated, ``JSON.stringify`` per line (the engine's migration, with the same ids the
       library stored, so appended entries still point at the right parents).
    3. Then each entry contextlab appended, in order, keys as Pi writes them.
    """
    revision = session.current_revision
    if revision is None:
        raise JobError(f"Session {session.session_id} has no stored file")
    with revision.open_blob() as fh:
        if revision.original_version >= 3:
            remaining = revision.bytes_read
            while remaining > 0:
                chunk = fh.read(min(1 << 20, remaining))
                if not chunk:
                    break
                remaining -= len(chunk)
                yield chunk
        else:
            # Pi's migration needs the whole file (a compaction's ``firstKeptEntryIndex`` names
            # an earlier line): parsed whole, but written out a line at a time, in writes of
            # about 1 MB, never as one text.
            parsed = parse_session_bytes(fh.read(revision.bytes_read), source=revision.source_path)
            values = [parsed.header] if parsed.header is not None else []
            batch: list[bytes] = []
            size = 0
            for value in chain(values, parsed.entries):
                line = (json_stringify(value) + "\n").encode("utf-8", "surrogatepass")
                batch.append(line)
                size += len(line)
                if size >= 1 << 20:
                    yield b"".join(batch)
                    batch, size = [], 0
            if batch:
                yield b"".join(batch)
            del parsed, values, batch
    added = (
        Entry.objects.filter(revision=revision, origin=Entry.Origin.CONTEXTLAB)
        .order_by("seq")
        .values_list("data", flat=True)
        # A server-side cursor: thousands of appended entries are never all in memory at once.
        .iterator(chunk_size=500)
    )
    for data in added:
        yield (json_stringify(ordered_entry(data)) + "\n").encode("utf-8")


def session_export_filename(session: Session) -> str:
    """Pi's file name: ``<header timestamp with : and . as ->_<session id>.jsonl``."""
    stamp = str(session.header.get("timestamp", "")).replace(":", "-").replace(".", "-")
    return f"{stamp}_{session.session_id}.jsonl" if stamp else f"{session.session_id}.jsonl"
