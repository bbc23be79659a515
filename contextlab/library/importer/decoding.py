"""Lines to entries: each line decoded as Pi reads it (orjson where it cannot differ from
JSON.parse, else the engine's decode_entry), and the probe for the session header."""

from __future__ import annotations

import hashlib
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
