"""Lines to entries: each line decoded as Pi reads it (orjson where it cannot differ from
JSON.parse, else the engine's decode_entry), and the probe for the session header."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Any

import orjson
from django.conf import settings

from contextlab.library.importer.lines import PROBE_CHUNK_BYTES, RawLine, iter_lines
from contextlab.pi.session import Problem, decode_entry, js_trim, pi_keeps


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
            children: Iterable[Any] = node.values()
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
    # orjson reads up to 1,024 levels; deeper lines go to the engine, which reads any depth as
    # JSON.parse does.
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


# The id columns' lengths (Session.session_id, Entry.entry_id / parent_id, Comment.entry_id):
# a longer id is refused with a problem for its line rather than cut (two cut ids would be one
# entry to comments), and so is an id holding NUL (PostgreSQL text cannot hold it). A session
# id also names the export file, so it may hold no control character at all (CR, LF ...).
SESSION_ID_MAX = 255
ENTRY_ID_MAX = 100


# A control character: C0 (NUL, CR, LF ...) or DEL. One C-level scan per id (a generator over
# its characters was a tenth of an import's time in profiles).
_CONTROL = re.compile("[\x00-\x1f\x7f]")


def id_problem(value: str, what: str, limit: int, *, controls: bool = False) -> str | None:
    """Why an id from a file cannot be stored as it is (None when it can); `controls`: no
    control character at all, not only NUL."""
    if len(value) > limit:
        return f"{what} is {len(value)} characters long; contextlab keeps ids of at most {limit}"
    if controls and _CONTROL.search(value):
        return f"{what} holds control characters (such as NUL, CR or LF)"
    if "\x00" in value:
        return f"{what} holds a NUL character"
    return None


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
                what = 'the session header\'s "id"'
                bad = id_problem(value["id"], what, SESSION_ID_MAX, controls=True)
                if bad is not None:
                    problem = Problem(line.line_no, f"{bad}: the file is not imported")
                    return Probe(None, 0, None, False, [problem])
                return Probe(value, line.line_no, value["id"], False, [])
            # Pi's loadEntriesFromFile returns [] for such a file (docs/pi-engine.md): nothing
            # of it is a session, so none is created here either.
            problem = Problem(
                line.line_no, 'session header has no string "id" (Pi would reject the whole file)'
            )
            return Probe(None, 0, None, False, [problem, *decoded.problems])
        problem = Problem(
            line.line_no, "the first line is not a session header (Pi would reject the whole file)"
        )
        return Probe(None, 0, None, False, [problem, *decoded.problems])
    return Probe(None, 0, None, False, [])


# Bytes that never occur in a JSONL session's first kilobytes: NUL, and C0 controls other than
# whitespace (JSON escapes them inside strings). A PNG, a JPEG, a zip or a gzip has them at once.
_BINARY_BYTES = frozenset(range(0x20)) - {0x09, 0x0A, 0x0C, 0x0D, 0x1B}
BINARY_SNIFF_BYTES = 8 << 10


def looks_binary(f: IO[bytes]) -> bool:
    """Whether the file's head is not text at all (an image, an archive), so that it gets one
    clear error rather than one per "line" of its bytes."""
    f.seek(0)
    head = f.read(BINARY_SNIFF_BYTES)
    f.seek(0)
    if not head:
        return False
    controls = sum(1 for byte in head if byte in _BINARY_BYTES)
    return b"\x00" in head or controls * 20 > len(head)
