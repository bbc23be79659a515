"""Import and sync of Pi session files into the library (one service for CLI, watcher and upload).

Parsing and migration are the engine's (contextlab.pi.session); this module does the storage side:
streaming the bytes, line boundaries and offsets, torn last lines, fingerprints, revisions, the
blob copy of the original bytes, and the rows.

Memory stays flat in the file size: the file is read in 1 MiB chunks and entries are written in
batches. What grows with the session is a small map per entry (id -> parent, depth), needed to
place every entry in the tree; a line is held whole only while it is decoded.
"""

from __future__ import annotations

import hashlib
import math
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import orjson
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Max

from contextlab.library.models import Entry, ImportProblem, Project, Session, SessionRevision
from contextlab.library.search import index_revision
from contextlab.pi.entries import message_of_entry
from contextlab.pi.session import (
    Migrator,
    Problem,
    decode_entry,
    entry_time_ms,
    js_trim,
    pi_keeps,
)
from contextlab.pi.tokens import estimate_tokens

CHUNK_BYTES = 1 << 20
PROBE_CHUNK_BYTES = 16 << 10
FINGERPRINT_WINDOW = 64 * 1024
BATCH_ROWS = 1000
BATCH_BYTES = 8 << 20
# Into an open COPY, small sends: PostgreSQL stores them while the next lines are decoded.
STREAM_ROWS = 64
STREAM_BYTES = 128 << 10

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
NEWER_PI_ENTRY_TYPES = frozenset({"context_edit"})  # Pi 1.x


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


# ------------------------------------------------------------------------------------------------
# Bytes: lines, fingerprints, blobs
# ------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class RawLine:
    line_no: int  # 1-based physical line number
    start: int  # byte offset of the line's first byte
    end: int  # byte offset just after its newline (or after its last byte if it has none)
    raw: bytes | None  # None when the line exceeded CONTEXTLAB_MAX_LINE_BYTES
    size: int
    complete: bool  # ended by a newline


def iter_lines(
    f: IO[bytes],
    offset: int,
    line_no: int,
    sink: BlobSink | None = None,
    chunk_bytes: int = CHUNK_BYTES,
) -> Iterator[RawLine]:
    """Split a byte stream into lines from `offset`, reading fixed-size chunks.

    The last piece without a newline is yielded with complete=False: the caller decides whether it
    is a finished last line or a torn one that Pi is still writing. Every chunk read is also
    handed to `sink` (the blob copy), so the file is read once.
    """
    f.seek(offset)
    limit = settings.CONTEXTLAB_MAX_LINE_BYTES  # longer lines are counted, not held
    parts: list[bytes] = []
    size = 0
    line_start = offset
    pos = offset
    reread = False  # the line outgrew one chunk: its pieces were let go, it is read again
    while True:
        chunk = f.read(chunk_bytes)
        if not chunk:
            break
        if sink is not None:
            sink.write(pos, chunk)
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            piece_end = len(chunk) if nl < 0 else nl
            piece_len = piece_end - start
            size += piece_len
            if reread or size > chunk_bytes:
                # A long line: joining its pieces would hold it twice; read it in one piece
                # once its end is found instead (from the page cache, just read).
                parts, reread = [], True
            else:
                parts.append(chunk[start:piece_end])
            if nl < 0:
                break
            raw = None
            if size <= limit:
                if reread:
                    resume = f.tell()
                    f.seek(line_start)
                    raw = f.read(size)
                    f.seek(resume)
                else:
                    raw = b"".join(parts) if len(parts) != 1 else parts[0]
            yield RawLine(line_no, line_start, pos + nl + 1, raw, size, True)
            parts, size, reread = [], 0, False
            line_no += 1
            line_start = pos + nl + 1
            start = nl + 1
        pos += len(chunk)
    if size:
        raw = None
        if size <= limit:
            if reread:
                f.seek(line_start)
                raw = f.read(size)
            else:
                raw = b"".join(parts)
        yield RawLine(line_no, line_start, pos, raw, size, False)


def fingerprint(f: IO[bytes], length: int) -> str:
    """Hash of the first and last 64 KiB of f[:length], and the length.

    Pi only ever appends; the two cases that are not appends are a shorter file (caught by the
    size) and a rewrite, which changes the header line (migration, a reset) and so the head.
    The tail window also catches a replaced file of the same head. Reading 128 KiB keeps a sync
    of a multi-GB file cheap.
    """
    digest = hashlib.sha256(str(length).encode() + b"|")
    f.seek(0)
    digest.update(f.read(min(length, FINGERPRINT_WINDOW)))
    tail_start = max(0, length - FINGERPRINT_WINDOW)
    f.seek(tail_start)
    digest.update(f.read(length - tail_start))
    return digest.hexdigest()


def _blob_dir() -> Path:
    return Path(settings.CONTEXTLAB_BLOB_DIR)


def _session_blob_path(session_id: str, number: int) -> str:
    # Session ids come from files: hash them rather than trusting them in a path.
    key = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()
    return f"sessions/{key[:2]}/{key[:32]}/r{number}.jsonl"


class BlobSink:
    """Copies the chunks of a file to a revision's blob as they are read, keeping the blob exactly
    the bytes consumed: `finish(end)` cuts off a torn tail that was read but not consumed.

    For a new blob the sha256 of those bytes is computed on the way (the hash state before the
    last chunk is kept, so the tail can be excluded without reading anything again).
    """

    def __init__(self, target: Path, start: int, *, new: bool) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        self.path = target
        self.out = target.open("wb" if new else "r+b" if target.exists() else "wb")
        # An earlier failed sync may have left bytes past the recorded offset: write over them.
        self.out.seek(0 if new else start)
        self.out.truncate()
        self.digest = hashlib.sha256() if new else None
        self._before_last: Any = None
        self._last: tuple[int, bytes] | None = None

    def write(self, pos: int, chunk: bytes) -> None:
        self.out.write(chunk)
        if self.digest is not None:
            self._before_last = self.digest.copy()
            self._last = (pos, chunk)
            self.digest.update(chunk)

    def finish(self, end: int) -> str:
        """Keep exactly f[start:end]; return the sha256 of a new blob ("" for appends)."""
        self.out.truncate(end)  # blob offsets are file offsets
        self.out.close()
        if self.digest is None:
            return ""
        if self._last is None or self._last[0] + len(self._last[1]) <= end:
            return self.digest.hexdigest()
        pos, chunk = self._last
        if pos <= end:
            digest = self._before_last
            digest.update(chunk[: end - pos])
            return digest.hexdigest()
        # A torn tail longer than a chunk (rare): hash what was kept from the blob itself.
        digest = hashlib.sha256()
        with self.path.open("rb") as kept:
            for block in iter(lambda: kept.read(CHUNK_BYTES), b""):
                digest.update(block)
        return digest.hexdigest()

    def abort(self) -> None:
        self.out.close()


# ------------------------------------------------------------------------------------------------
# Lines -> entries
# ------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Decoded:
    line: RawLine
    value: dict[str, Any] | None  # the parsed object, when usable
    pi_keeps: bool  # Pi's loader would keep this line (counts for v1 firstKeptEntryIndex)
    problems: list[Problem]
    # The line itself (UTF-8, as orjson has checked), when it can be stored as the entry's JSON:
    # kept as bytes, since the rows go to PostgreSQL as bytes.
    exact: bytes | None = None


_TRAILING_SPACE = b" \t\r"
_SAFE_INT = 2**53  # beyond it JSON.parse (and the engine) read a double, orjson an exact int


def _needs_engine(value: Any) -> bool:
    """Whether JSON.parse would read this differently from orjson: an integer past 2**53 (a
    double in JavaScript) or an integer-like key (JavaScript puts those first in an object)."""
    # A walk over the parsed containers: a long tool output is one string, so this costs per
    # node, not per byte (a regex over the raw line cost more than the parse itself). Strings,
    # most of the nodes, are passed over without being stacked; min() of an object's keys
    # rules out digit-led keys at C speed for most objects ("0".."9" sort below letters).
    if type(value) is int:
        return not -_SAFE_INT <= value <= _SAFE_INT
    stack = [value]
    pop = stack.pop
    push = stack.append
    while stack:
        node = pop()
        if type(node) is dict:
            if node and not min(node) > "9":
                for key in node:
                    if key[:1].isdigit():
                        return True
            children = node.values()
        elif type(node) is list:
            children = node
        else:
            continue
        for child in children:
            kind = type(child)
            if kind is str:
                continue
            if kind is dict or kind is list:
                push(child)
            elif kind is int and not -_SAFE_INT <= child <= _SAFE_INT:
                return True
    return False


def _fast_decode(raw: bytes) -> dict[str, Any] | None:
    """orjson for the common line; None sends the line to the engine's decode_entry.

    Taken only where orjson and the engine's JSON.parse semantics cannot differ: valid UTF-8
    (orjson refuses anything else), no lone surrogates (refused too), no integer that could pass
    2**53, no integer-like object key, and an object passing the same shape checks as
    decode_entry (a string `type`, a string `id`, a string-or-null `parentId`).
    tests/library/test_import.py checks the two agree.
    """
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict) or _needs_engine(value):
        return None
    kind = value.get("type")
    if not isinstance(kind, str) or not kind:
        return None
    if "id" in value and not isinstance(value["id"], str):
        return None
    parent = value.get("parentId")
    if kind != "session" and parent is not None and not isinstance(parent, str):
        return None
    return value


def decode_line(line: RawLine) -> Decoded | None:
    """Decode one line as Pi would read it; None for blank lines (Pi skips them silently)."""
    if line.raw is None:
        reason = (
            f"line of {line.size} bytes is longer than CONTEXTLAB_MAX_LINE_BYTES "
            f"({settings.CONTEXTLAB_MAX_LINE_BYTES}); not read, kept in the blob"
        )
        return Decoded(line, None, False, [Problem(line.line_no, reason)])
    fast = _fast_decode(line.raw)
    if fast is not None:
        return Decoded(line, fast, True, [], line.raw.rstrip(_TRAILING_SPACE))
    problems: list[Problem] = []
    try:
        text = line.raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Pi's StringDecoder replaces invalid bytes with U+FFFD and reads on.
        text = line.raw.decode("utf-8", "replace")
        problems.append(
            Problem(
                line.line_no,
                f"invalid UTF-8 at byte {exc.start + 1} of the line "
                "(read with U+FFFD replacement, as Pi does)",
            )
        )
    if not js_trim(text):
        return Decoded(line, None, False, problems) if problems else None
    result = decode_entry(text, line.line_no)
    if isinstance(result, Problem):
        problems.append(result)
        return Decoded(line, None, pi_keeps(text), problems)
    return Decoded(line, result, True, problems)


@dataclass
class Probe:
    header: dict[str, Any] | None
    header_line: int  # 0 without a header
    session_id: str | None
    first_has_id: bool  # the first kept line (no header) already has a string id: treat as v3
    problems: list[Problem]


def probe_header(f: IO[bytes]) -> Probe:
    """Find the first line Pi keeps: the header, or proof that there is none."""
    # Small reads: the header is usually the first few hundred bytes of a file read whole later.
    for line in iter_lines(f, 0, 1, chunk_bytes=PROBE_CHUNK_BYTES):
        decoded = decode_line(line)
        if decoded is None or not decoded.pi_keeps:
            continue
        if not line.complete and decoded.value is None:
            break  # a torn first line: nothing usable yet
        value = decoded.value
        if value is not None and value.get("type") == "session":
            if isinstance(value.get("id"), str):
                return Probe(value, line.line_no, value["id"], False, [])
            problem = Problem(
                line.line_no, 'session header has no string "id" (Pi would reject the file)'
            )
            return Probe(value, line.line_no, _headerless_id(line), False, [problem])
        problem = Problem(
            line.line_no, "the first line is not a session header (Pi would reject the whole file)"
        )
        has_id = value is not None and isinstance(value.get("id"), str)
        return Probe(None, 0, _headerless_id(line), has_id, [problem])
    return Probe(None, 0, None, False, [])


def _headerless_id(line: RawLine) -> str:
    # Stable while the file grows: derived from the first kept line only.
    return "noheader-" + hashlib.sha256(line.raw or b"").hexdigest()[:24]


def clean_text(text: str) -> str:
    """A string from a file, made storable in a text column (the exact value stays in `data`)."""
    if text.isascii() and "\x00" not in text:
        return text
    text = text.replace("\x00", "\ufffd")
    return _sanitize(text) if _has_surrogate(text) else text


def entry_datetime(value: Any) -> datetime | None:
    """`new Date(value)` of an entry's timestamp as a UTC datetime (None where JavaScript gets
    NaN or the instant is outside datetime's range)."""
    parsed = pi_iso_datetime(value)
    return parsed if parsed is not None else _ms_to_datetime(entry_time_ms(value))


def pi_iso_datetime(value: Any) -> datetime | None:
    """The instant of a timestamp in Pi's own form (toISOString: `2025-11-21T00:16:51.814Z`),
    read directly; None for anything else. PostgreSQL reads that text as the same instant."""
    if (
        type(value) is str
        and len(value) == 24
        and value[10] == "T"
        and value[19] == "."
        and value[23] == "Z"
        and value.isascii()
    ):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return None
        if 1 < parsed.year < 9999:
            return parsed
    return None


def _ms_to_datetime(ms: float | None) -> datetime | None:
    if ms is None or not math.isfinite(ms):
        return None
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def entry_as_message(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The message an entry puts into a context (the engine's rule), for its token estimate."""
    return message_of_entry(entry, "estimate")


def entry_tokens(entry: dict[str, Any]) -> int:
    """Pi's estimateTokens of what the entry contributes; 0 where Pi gets NaN or throws."""
    message = entry_as_message(entry)
    if message is None:
        return 0
    try:
        tokens = estimate_tokens(message)
    except (TypeError, AttributeError, KeyError, ValueError):
        return 0  # a malformed message: Pi would throw here
    return int(tokens) if isinstance(tokens, int) or math.isfinite(tokens) else 0


def _sanitize(value: Any) -> Any:
    if isinstance(value, str):
        if _has_surrogate(value):
            value = "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in value)
        return value
    if isinstance(value, list):
        return [_sanitize(v) for v in value]
    if isinstance(value, dict):
        return {_sanitize(k): _sanitize(v) for k, v in value.items()}
    return value


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def dump_data(entry: dict[str, Any], line_no: int | None) -> tuple[bytes, Problem | None]:
    """The entry as JSON text (UTF-8) for the database, and a problem if it had to be altered.

    JSON.parse accepts lone surrogates (\\ud800) that UTF-8 cannot carry, so neither PostgreSQL
    nor orjson will store them: those (only those) become U+FFFD.
    """
    try:
        return orjson.dumps(entry), None
    except TypeError:
        pass
    problem = Problem(
        line_no or 0,
        "lone UTF-16 surrogates stored as U+FFFD in the database "
        "(the original bytes are kept in the file's blob)",
    )
    return orjson.dumps(_sanitize(entry)), problem


# ------------------------------------------------------------------------------------------------
# Tree bookkeeping and session figures
# ------------------------------------------------------------------------------------------------


class TreeState:
    """Depths, duplicate ids, unknown parents and cycles, computed while entries stream by.

    For an append the entries already stored are looked up in the database on first use (usually
    just the parent of the first new line).
    """

    def __init__(self, revision: SessionRevision | None) -> None:
        self.revision = revision
        self.parents: dict[str, str | None] = {}
        self.depths: dict[str, int] = {}
        self.has_children: set[str] = set()
        self.first_line: dict[str, int] = {}
        self.pending: list[tuple[str, str, int]] = []  # (id, parent, line) with parent unseen
        self._stored_miss: set[str] = set()

    def _load(self, entry_id: str) -> bool:
        if entry_id in self.depths:
            return True
        if self.revision is None or entry_id in self._stored_miss:
            return False
        row = (
            Entry.objects.filter(revision=self.revision, entry_id=entry_id)
            .order_by("-seq")
            .values_list("parent_id", "depth", "line_no")
            .first()
        )
        if row is None:
            self._stored_miss.add(entry_id)
            return False
        self.parents[entry_id], self.depths[entry_id] = row[0], row[1]
        self.first_line[entry_id] = row[2] or 0
        if Entry.objects.filter(revision=self.revision, parent_id=entry_id).exists():
            self.has_children.add(entry_id)
        return True

    def add(
        self, entry_id: str, parent: str | None, line_no: int
    ) -> tuple[int, int, list[Problem]]:
        """Place an entry; returns (depth, change in the number of leaves, problems)."""
        problems: list[Problem] = []
        if self._load(entry_id):
            problems.append(
                Problem(
                    line_no,
                    f"duplicate entry id {entry_id!r} (first on line {self.first_line[entry_id]}; "
                    "Pi's lookups keep the last one)",
                )
            )
        else:
            self.first_line[entry_id] = line_no
        self._stored_miss.discard(entry_id)
        leaves = 1
        depth = 0
        if parent is not None and parent != entry_id:
            if self._load(parent):
                depth = self.depths[parent] + 1
                if parent not in self.has_children:
                    self.has_children.add(parent)
                    leaves -= 1
            else:
                self.pending.append((entry_id, parent, line_no))
        self.parents[entry_id] = parent
        self.depths[entry_id] = depth
        return depth, leaves, problems

    def finish(self) -> tuple[dict[str, int], int, list[Problem]]:
        """Resolve parents that were not seen when their child was.

        Returns (entry ids whose depth changed -> new depth, change in leaves, problems). A parent
        that appears later is a forward reference (Pi's tree still links it); one that never
        appears makes the child a root, as Pi shows it. Forward references are the only way to
        build a parentId cycle, so cycles are looked for here.
        """
        problems: list[Problem] = []
        leaves = 0
        forward = False
        for entry_id, parent, line_no in self.pending:
            if self._load(parent):
                forward = True
                if parent not in self.has_children:
                    self.has_children.add(parent)
                    leaves -= 1
            else:
                problems.append(
                    Problem(
                        line_no,
                        f"parent {parent!r} of entry {entry_id!r} does not exist "
                        "(shown as a root, as Pi does)",
                    )
                )
        if not forward:
            return {}, leaves, problems
        changed: dict[str, int] = {}
        reported: set[str] = set()
        for entry_id, _parent, line_no in self.pending:
            cycle = self._cycle_from(entry_id)
            if cycle and not reported.intersection(cycle):
                reported.update(cycle)
                chain = " -> ".join([*cycle, cycle[0]])
                problems.append(
                    Problem(line_no, f"parentId cycle: {chain} (Pi would loop forever on it)")
                )
        for entry_id in list(self.depths):
            depth = self._depth_of(entry_id)
            if depth != self.depths[entry_id]:
                changed[entry_id] = depth
        self.depths.update(changed)
        return changed, leaves, problems

    def _cycle_from(self, start: str) -> list[str]:
        seen: dict[str, int] = {}
        order: list[str] = []
        current: str | None = start
        while current is not None and current in self.parents:
            if current in seen:
                return order[seen[current] :]
            seen[current] = len(order)
            order.append(current)
            parent = self.parents[current]
            current = parent if parent != current else None
        return []

    def _depth_of(self, entry_id: str) -> int:
        # Walk to a root (or to the first repeat on a cycle); depth = ancestors seen.
        seen: set[str] = set()
        depth = -1
        current: str | None = entry_id
        while current is not None and current not in seen and current in self.parents:
            seen.add(current)
            depth += 1
            parent = self.parents[current]
            current = parent if parent != current else None
        return max(depth, 0)


@dataclass
class Figures:
    """A session's summary figures, updated entry by entry (so appends need no full re-read)."""

    entry_count: int = 0
    message_count: int = 0
    compaction_count: int = 0
    branch_count: int = 0
    tokens_estimated: int = 0
    usage_tokens: int = 0
    cost_total: float = 0.0
    name: str = ""
    first_message: str = ""
    leaf_entry_id: str = ""
    first_activity: datetime | None = None
    last_activity: datetime | None = None
    models_used: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, session: Session) -> Figures:
        return cls(
            entry_count=session.entry_count,
            message_count=session.message_count,
            compaction_count=session.compaction_count,
            branch_count=session.branch_count,
            tokens_estimated=session.tokens_estimated,
            usage_tokens=session.usage_tokens,
            cost_total=session.cost_total,
            name=session.name,
            first_message=session.first_message,
            leaf_entry_id=session.leaf_entry_id,
            first_activity=session.first_activity,
            last_activity=session.last_activity,
            models_used=list(session.models_used),
        )

    def apply_to(self, session: Session) -> None:
        for name in self.__dataclass_fields__:
            setattr(session, name, getattr(self, name))

    def add(self, entry: dict[str, Any], when: datetime | None, tokens: int) -> None:
        self.entry_count += 1
        self.tokens_estimated += tokens
        self.leaf_entry_id = entry["id"]
        if when is not None:
            if self.first_activity is None or when < self.first_activity:
                self.first_activity = when
            if self.last_activity is None or when > self.last_activity:
                self.last_activity = when
        kind = entry.get("type")
        if kind == "message":
            self.message_count += 1
            message = entry.get("message")
            if isinstance(message, dict):
                self._add_message(message)
        elif kind == "compaction":
            self.compaction_count += 1
        elif kind == "session_info":
            # Pi's getSessionName: the last session_info in file order; empty clears it.
            raw = entry.get("name")
            self.name = js_trim(raw) if isinstance(raw, str) else ""
        elif kind == "model_change":
            self._add_model(entry.get("provider"), entry.get("modelId"))

    def _add_message(self, message: dict[str, Any]) -> None:
        role = message.get("role")
        if role == "user" and not self.first_message:
            self.first_message = _user_text(message.get("content"))[:500]
        elif role == "assistant":
            self._add_model(message.get("provider"), message.get("model"))
            usage = message.get("usage")
            if isinstance(usage, dict):
                total = usage.get("totalTokens")
                if isinstance(total, int | float) and math.isfinite(total):
                    self.usage_tokens += int(total)
                cost = usage.get("cost")
                if isinstance(cost, dict):
                    value = cost.get("total")
                    if isinstance(value, int | float) and math.isfinite(value):
                        self.cost_total += float(value)

    def _add_model(self, provider: Any, model: Any) -> None:
        if isinstance(model, str) and model:
            name = f"{provider}/{model}" if isinstance(provider, str) and provider else model
            if name not in self.models_used:
                self.models_used.append(name)


def _user_text(content: Any) -> str:
    # As Pi's buildSessionInfo: a string, or the text blocks joined with " ".
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        )
    return ""


# ------------------------------------------------------------------------------------------------
# Writing rows
# ------------------------------------------------------------------------------------------------

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
        return self._copy

    def close(self, error: BaseException | None = None) -> None:
        """Flush and end the open COPY (abort it if the import failed)."""
        if error is None:
            self.flush()
        if self._copy_cm is not None:
            cm, self._copy_cm, self._copy = self._copy_cm, None, None
            if error is None:
                cm.__exit__(None, None, None)
            else:
                cm.__exit__(type(error), error, error.__traceback__)


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


# ------------------------------------------------------------------------------------------------
# The import
# ------------------------------------------------------------------------------------------------


ProgressCallback = Callable[[int], None]


@dataclass
class _Run:
    """One pass over a file's lines into one revision."""

    session: Session
    revision: SessionRevision
    migrator: Migrator | None
    tree: TreeState
    figures: Figures
    writer: EntryWriter
    header_line: int
    problems: list[Problem] = field(default_factory=list)
    transient: list[Problem] = field(default_factory=list)
    seq: int = 0

    def feed(self, decoded: Decoded) -> None:
        line = decoded.line
        self.problems.extend(decoded.problems)
        value = decoded.value
        if line.line_no == self.header_line:
            return
        migrating = self.migrator is not None and self.migrator.migrates
        if value is None:
            if decoded.pi_keeps and migrating:
                self.migrator.skip()  # type: ignore[union-attr]
            return
        if value.get("type") == "session":
            if migrating:
                self.migrator.skip()  # type: ignore[union-attr]
            self.problems.append(
                Problem(line.line_no, "a second session header (ignored, as Pi does)")
            )
            return
        if migrating:
            self.migrator.feed(value, line.line_no)  # type: ignore[union-attr]
        entry_id = value.get("id")
        if not isinstance(entry_id, str):
            self.problems.append(Problem(line.line_no, 'entry has no "id" (a v3 entry needs one)'))
            return
        kind = value["type"]
        if kind not in PI_ENTRY_TYPES and kind not in NEWER_PI_ENTRY_TYPES:
            self.problems.append(
                Problem(
                    line.line_no,
                    f"unknown entry type {kind!r} (kept whole; Pi 0.80.2 does not interpret it)",
                )
            )
        parent = value.get("parentId")
        parent = parent if isinstance(parent, str) else None
        depth, leaves, problems = self.tree.add(entry_id, parent, line.line_no)
        self.problems.extend(problems)
        stamp = value.get("timestamp")
        when = pi_iso_datetime(stamp)
        # For COPY: Pi's own text where it has that form (formatting the datetime again cost
        # more than anything else in a row), else the datetime.
        stored_time: datetime | str | None = stamp
        if when is None:
            stored_time = when = entry_datetime(stamp)
        tokens = entry_tokens(value)
        self.figures.add(value, when, tokens)
        self.figures.branch_count += leaves
        message = value.get("message")
        role = message.get("role") if kind == "message" and isinstance(message, dict) else ""
        if decoded.exact is not None and not migrating:
            data = decoded.exact  # the line as written: its exact JSON text, nothing to redo
        else:
            data, problem = dump_data(value, line.line_no)
            if problem is not None:
                self.problems.append(problem)
        # Everything needed from the parsed entry is taken: let it go before the row is built
        # (for a line of 100 MB, its decoded text is another 100 MB held meanwhile).
        decoded.value = value = message = None
        row = (
            self.session.pk,
            self.revision.pk,
            self.seq,
            line.line_no,
            clean_text(entry_id[:100]),
            clean_text(parent[:100]) if parent is not None else None,
            clean_text(kind[:64]),
            clean_text(role[:64]) if isinstance(role, str) else "",
            stored_time,
            data,
            tokens,
            depth,
            "file",
            "",  # search text and vector: filled by search.index_revision after the import
            False,
        )
        self.writer.add(row, len(data))
        self.seq += 1

    def finish(self) -> None:
        self.writer.close()
        changed, leaves, problems = self.tree.finish()
        self.figures.branch_count += leaves
        self.problems.extend(problems)
        for entry_id, depth in changed.items():
            Entry.objects.filter(revision=self.revision, entry_id=entry_id).update(depth=depth)


def import_session_file(
    *,
    path: str | os.PathLike[str] | None = None,
    fileobj: IO[bytes] | None = None,
    name: str | None = None,
    user: Any = None,
    progress: ProgressCallback | None = None,
    index_search: bool = True,
    revise: str | None = None,
) -> ImportResult:
    """Import or sync one session file (a path, or an uploaded file object).

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
    4. Unless index_search=False, fill the new entries' search vectors (after the rows are
       committed, so readers see the entries even while a large file is still being indexed).
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
        handle = fileobj  # type: ignore[assignment]
    started = time.perf_counter()
    try:
        result = _import(handle, display, user, progress, revise)
    finally:
        if path is not None:
            handle.close()
    result.seconds = time.perf_counter() - started
    if index_search and result.session is not None and result.new_entries:
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
) -> ImportResult:
    size = _file_size(f)
    probe = probe_header(f)
    if probe.session_id is None:
        return _import_without_session(f, display, size, user)
    for _attempt in range(2):
        try:
            with transaction.atomic():
                _relax_commit()
                return _import_into_session(f, display, size, probe, user, progress, revise)
        except IntegrityError:
            # Another process created the same session (or revision) meanwhile: go again, now
            # as an update of what it stored.
            continue
    with transaction.atomic():
        return _import_into_session(f, display, size, probe, user, progress, revise)


def _relax_commit() -> None:
    """Do not wait for the WAL flush at commit: an import lost to a server crash is simply read
    again from the file by the next sync (the stored offset never got ahead of the rows)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")


def _import_without_session(f: IO[bytes], display: str, size: int, user: Any) -> ImportResult:
    """A file with no line Pi could use (empty, blank, only bad lines, or a torn first line)."""
    problems: list[Problem] = []
    torn = False
    for line in iter_lines(f, 0, 1):
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
    if size == 0:
        problems.insert(0, Problem(0, "empty file: no session header"))
    elif not problems:
        problems.append(Problem(0, "no session header and no entries (only blank lines)"))
    else:
        problems.append(Problem(0, "no line of this file is usable: no session was created"))
    blob_path = ""
    if size:
        digest = hashlib.sha256()
        f.seek(0)
        for chunk in iter(lambda: f.read(CHUNK_BYTES), b""):
            digest.update(chunk)
        blob_path = f"unusable/{digest.hexdigest()}.jsonl"
        if not (_blob_dir() / blob_path).exists():
            _copy_to_blob(f, 0, size, _blob_dir() / blob_path, new=True)
    _record_orphan_problems(display, problems, blob_path=blob_path, user=user)
    return ImportResult(display, Status.FAILED, problems=problems)


def _record_orphan_problems(
    display: str, problems: list[Problem], *, blob_path: str, user: Any = None
) -> None:
    reported_to = user if user is not None and user.is_authenticated else None
    with transaction.atomic():
        # Re-importing the same unusable file must not pile up copies of its problems.
        ImportProblem.objects.filter(session=None, path=display, reported_to=reported_to).delete()
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
        header = probe.header or {}
        cwd = header.get("cwd") if isinstance(header.get("cwd"), str) else ""
        project, _ = Project.objects.get_or_create(cwd=clean_text(cwd))
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
        blob_path=_session_blob_path(session.session_id, number),
        blob_sha256="",
        fingerprint="",
        original_version=migrator.version,
    )
    session.header = migrator.header or {}
    parent_session = session.header.get("parentSession")
    session.parent_session = parent_session if isinstance(parent_session, str) else ""
    session.file_version = migrator.version
    session.current_revision = revision
    run = _Run(
        session=session,
        revision=revision,
        migrator=migrator,
        tree=TreeState(None),
        figures=Figures(),
        writer=EntryWriter(session, revision, stream=True),
        header_line=probe.header_line,
        problems=list(probe.problems),
    )
    # The header's own timestamp counts as activity (a session with no entries yet).
    header_time = entry_datetime(session.header.get("timestamp"))
    run.figures.first_activity = run.figures.last_activity = header_time
    sink = BlobSink(revision.blob_file, 0, new=True)
    try:
        end = _stream(f, 0, 1, run, progress, sink)
    except BaseException as exc:
        run.writer.close(exc)
        sink.abort()
        raise
    revision.blob_sha256 = sink.finish(end)
    run.finish()
    if previous is not None:
        _carry_added_entries(previous, run)
    revision.bytes_read = end
    revision.lines_read = run.revision.lines_read
    revision.next_seq = run.seq
    revision.fingerprint = fingerprint(f, end)
    revision.save()
    _save_problems(session, revision, display, run)
    # A new revision has exactly the problems just saved: no need to count or read them back.
    stored = len(run.problems) + len(run.transient)
    _save_session(session, run, display, end, problem_count=stored)
    return _result(display, status, session, run.writer.written, end, has_problems=bool(stored))


def _carry_added_entries(previous: SessionRevision, run: _Run) -> None:
    """Entries contextlab appended (compactions, branch summaries) are not in the file: bring them
    to the new revision, after the file's entries as an export writes them, where their parent
    still exists."""
    added = Entry.objects.filter(revision=previous, origin=Entry.Origin.CONTEXTLAB).order_by("seq")
    for entry in added:
        parent = entry.parent_id
        if parent is not None and parent not in run.tree.depths:
            run.problems.append(
                Problem(
                    0,
                    f"entry {entry.entry_id!r} added by contextlab stays in revision "
                    f"{previous.number}: its parent {parent!r} is not in the new file",
                )
            )
            continue
        depth, leaves, _ = run.tree.add(entry.entry_id, parent, 0)
        run.figures.add(entry.data, entry.timestamp, entry.tokens)
        run.figures.branch_count += leaves
        Entry.objects.create(
            session=run.session,
            revision=run.revision,
            seq=run.seq,
            line_no=None,
            entry_id=entry.entry_id,
            parent_id=parent,
            type=entry.type,
            role=entry.role,
            timestamp=entry.timestamp,
            data=entry.data,
            tokens=entry.tokens,
            depth=depth,
            origin=Entry.Origin.CONTEXTLAB,
        )
        run.seq += 1


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
    run = _Run(
        session=session,
        revision=revision,
        migrator=None,
        tree=TreeState(revision),
        figures=Figures.of(session),
        writer=EntryWriter(session, revision),
        header_line=probe.header_line,
        seq=revision.next_seq,
    )
    # Appends are small: their bytes are copied to the blob once the lines are read.
    end = _stream(f, start, revision.lines_read + 1, run, progress, None)
    run.finish()
    ImportProblem.objects.filter(revision=revision, transient=True).delete()
    if end == start:
        _save_problems(session, revision, display, run)
        session.problem_count = ImportProblem.objects.filter(revision=revision).count()
        Session.objects.filter(pk=session.pk).update(problem_count=session.problem_count)
        return _result(display, Status.UNCHANGED, session, 0, 0)
    _copy_to_blob(f, start, end, revision.blob_file, new=False)
    revision.bytes_read = end
    revision.next_seq = run.seq
    revision.fingerprint = fingerprint(f, end)
    revision.source_path = display
    revision.save()
    _save_problems(session, revision, display, run)
    _save_session(session, run, display, end)
    return _result(display, Status.APPENDED, session, run.writer.written, end - start)


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


def _copy_to_blob(f: IO[bytes], start: int, end: int, target: Path, *, new: bool) -> str:
    """Copy f[start:end] to the blob `target` (a new one, from 0; or an existing one, from
    `start`); returns the sha256 of a new blob ("" for an append)."""
    sink = BlobSink(target, start, new=new)
    f.seek(start)
    pos = start
    while pos < end:
        chunk = f.read(min(CHUNK_BYTES, end - pos))
        if not chunk:
            break
        sink.write(pos, chunk)
        pos += len(chunk)
    return sink.finish(end)


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
