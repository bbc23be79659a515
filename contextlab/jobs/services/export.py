"""Export back to Pi: the stored session as the JSONL file Pi opens, with what contextlab
appended."""

from __future__ import annotations

from collections.abc import Iterator

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
            parsed = parse_session_bytes(fh.read(revision.bytes_read), source=revision.source_path)
            lines = []
            if parsed.header is not None:
                lines.append(json_stringify(parsed.header))
            lines.extend(json_stringify(entry) for entry in parsed.entries)
            yield ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass") if lines else b""
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
