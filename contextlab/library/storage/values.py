"""Values from a session file made storable: text for text columns, timestamps as datetimes,
an entry's JSON for the `data` column."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

import orjson

from contextlab.pi.jsutil import json_parse_deep
from contextlab.pi.session import Problem, entry_time_ms


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
    nor orjson will store them: those (only those) become U+FFFD. orjson also refuses values
    nested deeper than 254 levels, which JSON.parse reads (any depth): those are written by
    _dump_deep, with the same bytes orjson would give.
    """
    try:
        return orjson.dumps(entry), None
    except TypeError:  # lone surrogates, or nested deeper than orjson writes
        pass
    data, altered = _dump_deep(entry)
    if not altered:
        return data, None
    problem = Problem(
        line_no or 0,
        "lone UTF-16 surrogates stored as U+FFFD in the database "
        "(the original bytes are kept in the file's blob)",
    )
    return data, problem


_END = object()


def _dump_deep(value: Any) -> tuple[bytes, bool]:
    """orjson.dumps of a value of any depth, with an explicit stack; lone surrogates in its
    strings become U+FFFD (then `altered` is True). Scalars are still written by orjson."""
    parts: list[bytes] = []
    altered = False
    # Open containers: [iterator over members, is an object, no member written yet].
    stack: list[list[Any]] = []

    def scalar(item: Any) -> bytes:
        nonlocal altered
        try:
            return orjson.dumps(item)
        except TypeError:
            if not isinstance(item, str):
                raise
            altered = True
            return orjson.dumps(_sanitize(item))

    def write(item: Any) -> None:
        if isinstance(item, dict):
            parts.append(b"{")
            stack.append([iter(item.items()), True, True])
        elif isinstance(item, list):
            parts.append(b"[")
            stack.append([iter(item), False, True])
        else:
            parts.append(scalar(item))

    write(value)
    while stack:
        frame = stack[-1]
        member: Any = next(frame[0], _END)
        if member is _END:
            parts.append(b"}" if frame[1] else b"]")
            stack.pop()
            continue
        if not frame[2]:
            parts.append(b",")
        frame[2] = False
        if frame[1]:
            key, member = member
            parts.append(scalar(key))
            parts.append(b":")
        write(member)
    return b"".join(parts), altered


def loads_entry(raw: bytes | str) -> Any:
    """An entry's stored JSON text decoded (orjson; past its 1,024 levels, load_data)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return load_data(raw)


def load_data(raw: bytes | bytearray | str) -> Any:
    """psycopg's loader of the `json` columns: json.loads, and for text nested deeper than
    Python's recursion allows (a line Pi read, stored as it was), the engine's iterative parse."""
    try:
        return json.loads(raw)
    except RecursionError:
        text = raw if isinstance(raw, str) else bytes(raw).decode("utf-8")
        return json_parse_deep(text)
