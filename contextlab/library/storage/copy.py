"""Entry rows written in batches: COPY on PostgreSQL (text format, rows formatted here), bulk_create
elsewhere."""

from __future__ import annotations

from typing import Any

import orjson
from django.db import connection

from contextlab.library.models import Entry, Session, SessionRevision
from contextlab.library.storage.values import pi_iso_datetime

BATCH_ROWS = 1000
BATCH_BYTES = 8 << 20
# Into an open COPY, small sends: PostgreSQL stores them while the next lines are decoded.
STREAM_ROWS = 64
STREAM_BYTES = 128 << 10


ENTRY_COLUMNS = (
    "session_id",
    "revision_id",
    "seq",
    "line_no",
    "entry_id",
    "parent_id",
    "type",
    "role",
    "timestamp",
    "data",
    "tokens",
    "depth",
    "origin",
    "search_text",
    "search_indexed",
)


class EntryWriter:
    """Buffers entry rows and writes them in batches: COPY on PostgreSQL, bulk_create elsewhere.

    With `stream=True` (a whole file into a new revision, when nothing else uses the connection
    meanwhile) one COPY stays open for the whole file: PostgreSQL parses and stores one batch
    while Python decodes the next, instead of both waiting at the end of every batch.
    """

    def __init__(
        self, session: Session, revision: SessionRevision, *, stream: bool = False
    ) -> None:
        self.session = session
        self.revision = revision
        self.rows: list[tuple[Any, ...]] = []
        self.bytes = 0
        self.written = 0
        self.stream = stream and connection.vendor == "postgresql"
        self._copy_cm: Any = None
        self._copy: Any = None

    def add(self, row: tuple[Any, ...], size: int) -> None:
        rows, size_limit = (STREAM_ROWS, STREAM_BYTES) if self.stream else (BATCH_ROWS, BATCH_BYTES)
        if size >= size_limit and self.rows:
            self.flush()  # a large row goes alone: no copy of it joined to the others
        self.rows.append(row)
        self.bytes += size
        if len(self.rows) >= rows or self.bytes >= size_limit:
            self.flush()

    def flush(self) -> None:
        if not self.rows:
            return
        if connection.vendor == "postgresql":
            # Rows formatted here for COPY (column types known: no per-field adaptation by
            # psycopg, a third of a small import's time). The entry's JSON goes from the file to
            # the socket as it was read, only escaped for COPY.
            if self.stream:
                _write_rows(self._open(), self.rows)
            else:
                with connection.cursor() as cursor, cursor.cursor.copy(_COPY_SQL) as copy:
                    _write_rows(copy, self.rows)
        else:
            Entry.objects.bulk_create(
                [
                    Entry(**dict(zip(ENTRY_COLUMNS, _sqlite_row(row), strict=True)))
                    for row in self.rows
                ]
            )
        self.written += len(self.rows)
        self.rows, self.bytes = [], 0

    def _open(self) -> Any:
        if self._copy is None:
            connection.ensure_connection()
            self._copy_cm = connection.connection.cursor().copy(_COPY_SQL)
            self._copy = self._copy_cm.__enter__()
            # psycopg holds the connection's lock for the whole COPY: a query made through Django
            # meanwhile would wait on this very process forever. Refuse it at once instead.
            connection.execute_wrappers.append(_no_query_during_copy)
        return self._copy

    def close(self, error: BaseException | None = None) -> None:
        """Flush and end the open COPY (abort it if the import failed)."""
        if error is None:
            self.flush()
        if self._copy_cm is not None:
            cm, self._copy_cm, self._copy = self._copy_cm, None, None
            connection.execute_wrappers.remove(_no_query_during_copy)
            if error is None:
                cm.__exit__(None, None, None)
            else:
                cm.__exit__(type(error), error, error.__traceback__)


class QueryDuringCopy(RuntimeError):
    """A query on the connection while an EntryWriter's COPY holds it (a bug: it would hang)."""


def _no_query_during_copy(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
    raise QueryDuringCopy(f"a query while a COPY holds the connection: {sql[:200]}")


# COPY's text format, not binary: PostgreSQL (15 at least) batches the rows of a COPY into 1000-row
# multi-inserts, counting their size only from the text format's line buffer. In binary it
# therefore stored a whole 1,000-entry session in one go after the last row arrived (heap, TOAST,
# indexes), most of an import's wait; in text it stores every ~64 KB while Python decodes on.
_COPY_SQL = f"COPY library_entry ({', '.join(ENTRY_COLUMNS)}) FROM STDIN"
_COPY_NULL = b"\\N"


def _copy_escape(raw: bytes) -> bytes:
    """Bytes as a field of COPY's text format: backslash and the row's separators escaped."""
    return (
        raw.replace(b"\\", b"\\\\")
        .replace(b"\t", b"\\t")
        .replace(b"\n", b"\\n")
        .replace(b"\r", b"\\r")
    )


def _copy_json(raw: bytes) -> bytes:
    """An entry's JSON text as a COPY field. It has no raw newline (it was one line of the file,
    or orjson's output), so only backslashes and JSON's other whitespace, tab and CR, remain."""
    return raw.replace(b"\\", b"\\\\").replace(b"\t", b"\\t").replace(b"\r", b"\\r")


def _copy_text(value: str) -> bytes:
    raw = value.encode("utf-8")
    if value.isprintable() and "\\" not in value:
        return raw  # ids, types, roles: the usual case, nothing to escape
    return _copy_escape(raw)


# The last three fields of a row read from a file (origin "file", no search text yet, not
# indexed): most rows, formatted once.
_FILE_ROW_TAIL = b"\tfile\t\tf\n"


def _copy_row(row: tuple[Any, ...]) -> bytes:
    """One row of ENTRY_COLUMNS as a line of COPY's text format."""
    (session, revision, seq, line_no, entry_id, parent, kind, role, when, data, tokens, depth,
     origin, search_text, indexed) = row  # fmt: skip
    if origin == "file" and not search_text and not indexed:
        tail = _FILE_ROW_TAIL
    else:
        tail = b"\t%b\t%b\t%b\n" % (
            _copy_text(origin),
            _copy_text(search_text),
            b"t" if indexed else b"f",
        )
    return b"%d\t%d\t%d\t%b\t%b\t%b\t%b\t%b\t%b\t%b\t%d\t%d%b" % (
        session,
        revision,
        seq,
        _COPY_NULL if line_no is None else b"%d" % line_no,
        _copy_text(entry_id),
        _COPY_NULL if parent is None else _copy_text(parent),
        _copy_text(kind),
        _copy_text(role) if role else b"",
        _COPY_NULL
        if when is None
        else when.encode("ascii")
        if type(when) is str
        else when.isoformat().encode("ascii"),
        _copy_json(data),
        tokens,
        depth,
        tail,
    )


_DATA_FIELD = ENTRY_COLUMNS.index("data")
LARGE_JSON_BYTES = 1 << 20  # entries whose JSON is larger go to COPY a slice at a time


def _write_rows(copy: Any, rows: list[tuple[Any, ...]]) -> None:
    """Send rows to an open COPY. An entry's JSON over LARGE_JSON_BYTES is escaped and sent a
    slice at a time, so that no whole copy of it is made (escaped, or inside its row): a line of
    100 MB then costs the import about its own size in memory, not several times that."""
    if all(len(row[_DATA_FIELD]) <= LARGE_JSON_BYTES for row in rows):
        copy.write(b"".join(map(_copy_row, rows)))
        return
    for row in rows:
        data = row[_DATA_FIELD]
        if len(data) <= LARGE_JSON_BYTES:
            copy.write(_copy_row(row))
            continue
        # The row with its JSON left empty, cut where the JSON goes: fields are separated by
        # tabs, and a tab inside a field is always escaped.
        fields = _copy_row((*row[:_DATA_FIELD], b"", *row[_DATA_FIELD + 1 :])).split(b"\t")
        copy.write(b"\t".join(fields[:_DATA_FIELD]) + b"\t")
        view = memoryview(data)
        for start in range(0, len(data), LARGE_JSON_BYTES):
            # Each escape maps one byte to its escaped form: slices can be cut anywhere.
            copy.write(_copy_json(bytes(view[start : start + LARGE_JSON_BYTES])))
        copy.write(b"\t" + b"\t".join(fields[_DATA_FIELD + 1 :]))


def _sqlite_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    values = list(row)
    values[_DATA_FIELD] = orjson.loads(values[_DATA_FIELD])
    when = values[ENTRY_COLUMNS.index("timestamp")]
    if isinstance(when, str):
        values[ENTRY_COLUMNS.index("timestamp")] = pi_iso_datetime(when)
    return tuple(values)
