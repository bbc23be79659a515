"""Pi session files: parse, migrate (v1/v2 -> v3) and navigate the entry tree.

Truth: ``dist/core/session-manager.js`` of Pi 0.80.2 (``loadEntriesFromFile``,
``migrateToCurrentVersion``, ``SessionManager._buildIndex/getTree/getBranch/getSessionName``).

Where we deliberately differ from Pi (each for the inspector's sake, none changes a projection):

- Pi draws random ids for legacy (v1) entries on every load; ours are derived from the header id
  and the line number, so the same file always gets the same ids.
- Pi silently skips bad lines and rejects a whole file whose first parsed line is not a header;
  we report every bad line as a ``Problem`` (line number and reason) and keep what we can.
- Pi keeps any truthy JSON value as an "entry" (``123``, ``[]``, objects without ``type``); we
  report those as problems and leave them out (they never contribute anything to a context).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextlab.pi.entries import Json
from contextlab.pi.jsutil import (
    entry_date_ms,
    entry_time_ms,
    js_number,
    js_trim,
    js_truthy,
    json_parse,
    json_type_name,
    v8_sort_with_nan,
)

__all__ = [
    "CURRENT_SESSION_VERSION",
    "Migrator",
    "Problem",
    "SessionFile",
    "SessionFileError",
    "SessionTree",
    "decode_entry",
    "entry_time_ms",
    "js_trim",
    "js_truthy",
    "load_session_file",
    "parse_session_bytes",
    "parse_session_file",
    "pi_keeps",
    "resolve_entry",
]

CURRENT_SESSION_VERSION = 3


@dataclass(frozen=True)
class Problem:
    """A line of a session file that could not be used as Pi would use it."""

    line: int
    reason: str
    fatal: bool = False  # Pi rejects the whole file, not just this line

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


# --------------------------------------------------------------------------------------------
# Decoding one line
# --------------------------------------------------------------------------------------------


def _is_pi_entry(value: Any) -> bool:
    """Whether Pi's loader would keep this parsed value (it keeps every truthy value)."""
    return js_truthy(value)


def decode_entry(raw: bytes | str, line_no: int) -> Json | Problem:
    """Decode one JSONL line into an entry object, or say precisely why it cannot be used.

    The object is returned as parsed: unknown entry types and unknown fields are kept intact.
    Checks: UTF-8, JSON syntax (as strict as ``JSON.parse``), a JSON object, a string ``type``,
    and, where present, a string ``id`` and a string-or-null ``parentId``.
    """
    if isinstance(raw, bytes | bytearray):
        try:
            text = bytes(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            return Problem(line_no, f"invalid UTF-8 at byte {exc.start + 1} of the line")
    else:
        text = raw
    if text.startswith("\ufeff"):
        return Problem(line_no, "starts with a byte order mark (JSON.parse rejects the line)")
    try:
        value = json_parse(text)
    except json.JSONDecodeError as exc:
        return Problem(line_no, f"invalid JSON: {exc.msg} at column {exc.colno}")
    except (ValueError, RecursionError) as exc:
        return Problem(line_no, f"invalid JSON: {exc}")
    if not isinstance(value, dict):
        return Problem(line_no, f"not a JSON object (got {json_type_name(value)})")
    kind = value.get("type")
    if "type" not in value:
        return Problem(line_no, 'missing "type" field')
    if not isinstance(kind, str) or not kind:
        return Problem(line_no, f'"type" must be a non-empty string, got {json_type_name(kind)}')
    if "id" in value and not isinstance(value["id"], str):
        return Problem(line_no, f'"id" must be a string, got {json_type_name(value["id"])}')
    if kind != "session" and "parentId" in value:
        parent = value["parentId"]
        if parent is not None and not isinstance(parent, str):
            return Problem(
                line_no, f'"parentId" must be a string or null, got {json_type_name(parent)}'
            )
    return value


# --------------------------------------------------------------------------------------------
# Migration
# --------------------------------------------------------------------------------------------


class Migrator:
    """Streaming, deterministic version of Pi's ``migrateToCurrentVersion``.

    Feed every parsed entry (header excluded) in file order; each is migrated in place and
    returned. Rules, as in Pi:

    1. v1 -> v2: every entry gets ``id`` and ``parentId`` (the previous entry's id, a single
       chain), keys appended at the end. A compaction's numeric ``firstKeptEntryIndex`` indexes the
       whole parsed array with the header at index 0; if it names an entry (not the header) that
       already has an id, ``firstKeptEntryId`` is appended; the index is deleted either way.
    2. v2 -> v3: a message with role ``hookMessage`` becomes role ``custom``.
    3. The header's ``version`` becomes 3 (appended at the end if it was absent).

    Ids: Pi uses ``randomUUID().slice(0, 8)``; we use the first 8 hex digits of
    ``sha256("<header id>:<line number>")``, re-hashed with a counter on collision, so a file
    always migrates to the same ids.
    """

    def __init__(self, header: Json | None, *, version: Any = None) -> None:
        self.header = header
        raw_version = version if version is not None else (header or {}).get("version")
        if raw_version is None:
            raw_version = 1
        number = js_number(raw_version)
        self._needs_v2 = number < 2
        self._needs_v3 = number < 3
        self.version: int = int(number) if math.isfinite(number) and number == int(number) else 0
        self._seed = str((header or {}).get("id", ""))
        self._ids: set[str] = set()
        self._prev_id: str | None = None
        # Pi's parsed array: header at index 0, then every kept line in order.
        self._parsed: list[Json | None] = [header] if header is not None else []
        if header is not None and self._needs_v3:
            header["version"] = CURRENT_SESSION_VERSION

    @property
    def migrates(self) -> bool:
        return self._needs_v3

    def skip(self) -> None:
        """Count a line Pi keeps but we drop, so later ``firstKeptEntryIndex`` values align."""
        self._parsed.append(None)

    def _new_id(self, line_no: int) -> str:
        attempt = 0
        while True:
            key = f"{self._seed}:{line_no}"
            if attempt:
                key += f":{attempt}"
            candidate = hashlib.sha256(key.encode("utf-8")).hexdigest()[:8]
            if candidate not in self._ids:
                self._ids.add(candidate)
                return candidate
            attempt += 1

    def feed(self, entry: Json, line_no: int) -> Json:
        self._parsed.append(entry)
        if entry.get("type") == "session":
            return entry
        if self._needs_v2:
            entry_id = self._new_id(line_no)
            entry["id"] = entry_id
            entry["parentId"] = self._prev_id
            self._prev_id = entry_id
            if entry.get("type") == "compaction" and "firstKeptEntryIndex" in entry:
                index = entry["firstKeptEntryIndex"]
                if isinstance(index, int | float) and not isinstance(index, bool):
                    target = None
                    if index == int(index) and 0 <= index < len(self._parsed):
                        target = self._parsed[int(index)]
                    # A forward reference has no id yet in Pi either (undefined, not written).
                    if target is not None and target.get("type") != "session" and "id" in target:
                        entry["firstKeptEntryId"] = target["id"]
                    del entry["firstKeptEntryIndex"]
        if self._needs_v3 and entry.get("type") == "message":
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "hookMessage":
                message["role"] = "custom"
        return entry


# --------------------------------------------------------------------------------------------
# Whole files
# --------------------------------------------------------------------------------------------


@dataclass
class SessionFile:
    header: Json | None
    entries: list[Json]
    line_numbers: list[int]
    problems: list[Problem]
    original_version: int
    source: str = "<bytes>"
    line_of: dict[int, int] = field(default_factory=dict, repr=False)

    def entry_at_line(self, line_no: int) -> Json | None:
        """The entry read from line ``line_no`` (header = line 1), or None."""
        if not self.line_of:
            self.line_of = {n: i for i, n in enumerate(self.line_numbers)}
        index = self.line_of.get(line_no)
        return None if index is None else self.entries[index]


def _split_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    for index, line in enumerate(data.split(b"\n")):
        yield index + 1, line


def _decode_lines(data: bytes, problems: list[Problem]) -> list[tuple[int, Json | None]]:
    """Every line Pi keeps, by position among Pi's parsed values: the entry, or None for a
    value Pi keeps but we cannot use (reported in ``problems``, as is every line Pi skips)."""
    pi_positions: list[tuple[int, Json | None]] = []
    for line_no, raw in _split_lines(data):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            text = raw.decode("utf-8", "replace")
            problems.append(
                Problem(
                    line_no,
                    f"invalid UTF-8 at byte {exc.start + 1} of the line "
                    "(read with U+FFFD replacement, as Pi does)",
                )
            )
        if not js_trim(text):
            continue
        result = decode_entry(text, line_no)
        if isinstance(result, Problem):
            problems.append(result)
            if pi_keeps(text):
                pi_positions.append((line_no, None))
            continue
        pi_positions.append((line_no, result))
    return pi_positions


def _find_header(
    pi_positions: list[tuple[int, Json | None]], problems: list[Problem]
) -> Json | None:
    """The header: Pi's first parsed value, when it is a session header; otherwise Pi rejects
    the whole file, which is reported as a fatal problem."""
    first = pi_positions[0] if pi_positions else None
    if first is not None and first[1] is not None and first[1].get("type") == "session":
        header = first[1]
        if not isinstance(header.get("id"), str):
            problems.append(
                Problem(
                    first[0],
                    'session header has no string "id" (Pi would reject the file)',
                    fatal=True,
                )
            )
        return header
    if first is not None:
        problems.append(
            Problem(
                first[0],
                "the first line is not a session header (Pi would reject the whole file)",
                fatal=True,
            )
        )
    elif not problems:
        problems.append(Problem(1, "empty file: no session header", fatal=True))
    return None


def parse_session_bytes(data: bytes, source: str = "<bytes>") -> SessionFile:
    """Parse and migrate a whole session file, reporting every line that cannot be used.

    1. Each line is decoded (bytes that are not UTF-8 are replaced by U+FFFD, as Pi's
       ``StringDecoder`` does, and reported); blank lines are skipped silently, as Pi does.
    2. The first usable line must be the header (``type: "session"`` with a string ``id``);
       otherwise Pi would reject the whole file: we say so and keep the entries.
    3. Entries are migrated to v3 as they stream by (``Migrator``); a v3 entry without ``id``
       is reported and left out.
    """
    problems: list[Problem] = []
    pi_positions = _decode_lines(data, problems)
    header = _find_header(pi_positions, problems)
    version_hint = None
    if header is None:
        # Without a header Pi would treat the file as v1 and replace every id; keep ids that exist.
        has_ids = any(
            isinstance(e.get("id"), str)
            for _, e in pi_positions
            if e is not None and e.get("type") != "session"
        )
        version_hint = CURRENT_SESSION_VERSION if has_ids else 1
    migrator = Migrator(header, version=version_hint)
    original_version = migrator.version

    entries: list[Json] = []
    line_numbers: list[int] = []
    for line_no, value in pi_positions:
        if value is None:
            migrator.skip()
            continue
        if value is header:
            continue
        if value.get("type") == "session":
            migrator.skip()
            problems.append(Problem(line_no, "a second session header (ignored, as Pi does)"))
            continue
        migrator.feed(value, line_no)
        if not isinstance(value.get("id"), str):
            problems.append(Problem(line_no, 'entry has no "id" (a v3 entry needs one)'))
            continue
        entries.append(value)
        line_numbers.append(line_no)
    problems.sort(key=lambda p: p.line)
    return SessionFile(
        header=header,
        entries=entries,
        line_numbers=line_numbers,
        problems=problems,
        original_version=original_version,
        source=source,
    )


def pi_keeps(text: str) -> bool:
    """Whether Pi's loader keeps this line: JSON that parses to an entry-like object."""
    try:
        return _is_pi_entry(json_parse(text))
    except (ValueError, RecursionError):
        return False


def parse_session_file(path: str | Path) -> SessionFile:
    data = Path(path).read_bytes()
    return parse_session_bytes(data, source=str(path))


class SessionFileError(ValueError):
    """A session file Pi would not open, or an entry reference that names nothing in it; the
    message reads ``<file>:<line>: <reason>`` (or ``<file>: <option> <value>: <reason>``)."""


def load_session_file(
    path: str | Path, warn: Callable[[str], None] | None = None
) -> tuple[SessionFile, SessionTree]:
    """Open a session file as Pi opens it, for the command-line tools (one loader for all).

    1. An unreadable file, and a file Pi rejects whole (``Problem.fatal``: no header, no usable
       line), raise ``SessionFileError``.
    2. Every line Pi skips (invalid JSON or UTF-8, a byte order mark, ...) is handed to ``warn``
       as ``<file>:<line>: <reason> (skipped, as Pi does)`` and left out.
    """
    name = str(path)
    try:
        parsed = parse_session_file(path)
    except OSError as exc:
        raise SessionFileError(f"{name}: cannot read the file: {exc.strerror or exc}") from exc
    fatal = [p for p in parsed.problems if p.fatal]
    if fatal:
        raise SessionFileError(f"{name}:{fatal[0].line}: {fatal[0].reason}")
    for problem in parsed.problems:
        if warn is not None:
            warn(f"{name}:{problem.line}: {problem.reason} (skipped, as Pi does)")
    return parsed, SessionTree(parsed.entries)


def resolve_entry(parsed: SessionFile, tree: SessionTree, value: str, option: str) -> str:
    """The entry id named by ``value``: an id, or ``line:N`` (the entry read from line N, the
    header being line 1); ``option`` names the command-line option in errors."""
    if value.startswith("line:"):
        number = value[len("line:") :]
        if not number.isdigit():
            raise SessionFileError(
                f"{parsed.source}: {option} {value}: expected line:N with a number"
            )
        entry = parsed.entry_at_line(int(number))
        if entry is None:
            raise SessionFileError(f"{parsed.source}:{number}: {option}: no entry on this line")
        return str(entry["id"])
    if value not in tree.by_id:
        raise SessionFileError(f"{parsed.source}: {option} {value}: no entry with this id")
    return value


# --------------------------------------------------------------------------------------------
# The tree
# --------------------------------------------------------------------------------------------


class SessionTree:
    """Navigation over the (migrated, header-less) entries of one session, as Pi navigates it.

    ``children`` are ordered as ``SessionManager.getTree`` orders them (by timestamp, stable);
    ``roots`` are entries with ``parentId`` null, equal to their own id, or unknown (orphans), in
    file order; ``leaf_id`` is the last entry in file order (where Pi resumes). Duplicate ids
    resolve as Pi's ``Map`` does (the last one wins); the shadowed entries are left out of the tree.
    """

    def __init__(self, entries: Iterable[Json]) -> None:
        self.entries: list[Json] = list(entries)
        self.by_id: dict[str, Json] = {}
        self.index_of: dict[str, int] = {}
        for index, entry in enumerate(self.entries):
            self.by_id[entry["id"]] = entry
            self.index_of[entry["id"]] = index
        self.leaf_id: str | None = self.entries[-1]["id"] if self.entries else None
        self.labels: dict[Any, Any] = {}
        self.label_timestamps: dict[Any, Any] = {}
        name: str | None = None
        for entry in self.entries:
            kind = entry.get("type")
            if kind == "label":
                target = entry.get("targetId")
                if js_truthy(entry.get("label")):
                    self.labels[target] = entry.get("label")
                    self.label_timestamps[target] = entry.get("timestamp")
                else:
                    self.labels.pop(target, None)
                    self.label_timestamps.pop(target, None)
            elif kind == "session_info":
                raw = entry.get("name")
                name = (js_trim(raw) or None) if isinstance(raw, str) else None
        self.name: str | None = name

        self.roots: list[str] = []
        unsorted: dict[str, list[str]] = {}
        for index, entry in enumerate(self.entries):
            entry_id = entry["id"]
            if self.index_of[entry_id] != index:
                continue  # shadowed by a later entry with the same id
            parent = entry.get("parentId")
            if parent is None or parent == entry_id or parent not in self.by_id:
                self.roots.append(entry_id)
            else:
                unsorted.setdefault(parent, []).append(entry_id)
        self._children: dict[str, list[str]] = {}
        for parent, ids in unsorted.items():
            if len(ids) == 1:
                self._children[parent] = ids
                continue
            keys = [entry_date_ms(self.by_id[i]) for i in ids]
            if any(k is None for k in keys):
                self._children[parent] = v8_sort_with_nan(ids, keys)
            else:
                valid = [k if k is not None else 0.0 for k in keys]
                order = sorted(range(len(ids)), key=valid.__getitem__)
                self._children[parent] = [ids[i] for i in order]
        self._depth: dict[str, int] = {}

    def children(self, entry_id: str | None) -> list[str]:
        """Ids of the children of ``entry_id`` (``None``: the roots), in Pi's display order."""
        if entry_id is None:
            return list(self.roots)
        return list(self._children.get(entry_id, ()))

    def parent(self, entry_id: str) -> str | None:
        """The parent id as Pi follows it when walking a path (falsy or unknown: none)."""
        entry = self.by_id.get(entry_id)
        if entry is None:
            return None
        parent = entry.get("parentId")
        if not isinstance(parent, str) or not parent or parent not in self.by_id:
            return None
        return parent

    def path(self, entry_id: str | None) -> list[Json]:
        """Entries from the root to ``entry_id`` (root first), like ``getBranch``.

        Pi has no cycle protection (a parentId cycle hangs it); we stop at the first repeat.
        """
        if entry_id is None or entry_id not in self.by_id:
            return []
        out: list[Json] = []
        seen: set[str] = set()
        current: str | None = entry_id
        while current is not None and current not in seen:
            seen.add(current)
            out.append(self.by_id[current])
            current = self.parent(current)
        out.reverse()
        return out

    def path_ids(self, entry_id: str | None) -> list[str]:
        return [e["id"] for e in self.path(entry_id)]

    def depth(self, entry_id: str) -> int:
        """Number of ancestors of ``entry_id`` (a root has depth 0), memoised for big trees."""
        if entry_id in self._depth:
            return self._depth[entry_id]
        chain: list[str] = []
        seen: set[str] = set()
        current: str | None = entry_id
        base = -1
        while current is not None:
            if current in self._depth:
                base = self._depth[current]
                break
            if current in seen:
                break
            seen.add(current)
            chain.append(current)
            current = self.parent(current)
        for node in reversed(chain):
            base += 1
            self._depth[node] = base
        return self._depth[entry_id]

    def common_ancestor(self, a: str, b: str) -> str | None:
        """The deepest entry on both paths (``a`` itself if it is an ancestor of ``b``)."""
        on_a = set(self.path_ids(a))
        for entry in reversed(self.path(b)):
            if entry["id"] in on_a:
                return str(entry["id"])
        return None

    def label(self, entry_id: str) -> Any:
        return self.labels.get(entry_id)

    def walk(self) -> Iterator[tuple[str, int]]:
        """Depth-first (pre-order) over the tree in display order: ``(id, depth)``."""
        stack: list[tuple[str, int]] = [(r, 0) for r in reversed(self.roots)]
        while stack:
            entry_id, depth = stack.pop()
            yield entry_id, depth
            for child in reversed(self._children.get(entry_id, ())):
                stack.append((child, depth + 1))
