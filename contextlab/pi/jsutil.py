"""JavaScript semantics that Pi's output depends on, reproduced exactly.

Pi is TypeScript running on Node. Wherever its output depends on how JavaScript measures,
prints or orders things, Python's defaults differ; every such rule lives here:

- string length and slicing count UTF-16 code units (``.length``, ``.slice``);
- ``JSON.stringify`` prints numbers the ECMAScript way (``1`` not ``1.0``, ``0.00001`` not
  ``1e-05``), and so do ``String(value)`` and template literals;
- ``Array.prototype.sort()`` without a comparator orders strings by UTF-16 code units;
- ``new Date(iso).getTime()`` gives integer milliseconds, or NaN (here: ``None``);
- ``Number.prototype.toFixed`` rounds the exact binary value half-up;
- ``String.prototype.trim`` and the regex ``\\s`` use another whitespace set than ``str.strip``;
- truthiness: ``[]`` and ``{}`` are truthy, NaN is falsy.

Strings that went through a UTF-16 cut may hold lone surrogates; they are represented in Python
as surrogate code points (``'surrogatepass'``), the way JavaScript holds them.
"""

from __future__ import annotations

import calendar
import json
import math
import posixpath
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from json.encoder import encode_basestring as _encode_string
from typing import Any

__all__ = [
    "JS_WHITESPACE",
    "JS_WHITESPACE_CLASS",
    "array_join_item",
    "date_parse_ms",
    "entry_date_ms",
    "entry_time_ms",
    "int_if_whole",
    "js_key_order",
    "js_len",
    "js_number",
    "js_slice",
    "js_sort_any",
    "js_sorted",
    "js_string",
    "js_trim",
    "js_truthy",
    "json_parse",
    "json_stringify",
    "json_type_name",
    "number_to_string",
    "object_entries",
    "path_is_under",
    "path_join",
    "path_normalize",
    "path_relative",
    "path_resolve",
    "to_fixed",
    "utf8_len",
    "utf16_sort_key",
    "v8_sort_with_nan",
]


def js_len(text: str) -> int:
    """``text.length`` in JavaScript: the number of UTF-16 code units."""
    # Fast path: no astral characters means one unit per code point.
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def js_slice(text: str, start: int, end: int | None = None) -> str:
    """``text.slice(start, end)`` in UTF-16 units (may split a surrogate pair, as JS does)."""
    if text.isascii():
        return text[start:end]
    units = text.encode("utf-16-le", "surrogatepass")
    n = len(units) // 2

    def clamp(i: int) -> int:
        return max(0, n + i) if i < 0 else min(i, n)

    lo = clamp(start)
    hi = n if end is None else clamp(end)
    if hi <= lo:
        return ""
    return units[2 * lo : 2 * hi].decode("utf-16-le", "surrogatepass")


def utf8_len(text: str) -> int:
    """``Buffer.byteLength(text, 'utf-8')``: lone surrogates count as U+FFFD (3 bytes)."""
    # A lone surrogate takes 3 bytes either way (U+FFFD in Node, the surrogate itself here).
    return len(text.encode("utf-8", "surrogatepass"))


def utf16_sort_key(text: str) -> bytes:
    """Key that orders strings as JavaScript's default ``sort()`` does (UTF-16 code units)."""
    return text.encode("utf-16-be", "surrogatepass")


def js_sorted(items: list[str]) -> list[str]:
    """``[...items].sort()``."""
    return sorted(items, key=utf16_sort_key)


# ECMAScript WhiteSpace + LineTerminator (ECMA-262 §12.2-3): what String.prototype.trim() removes
# and ``\s`` matches. Python's str.strip()/isspace() differ: they take U+001C-U+001F and U+0085 and
# leave U+FEFF.
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
# The same set as the body of a regex character class (``f"[{JS_WHITESPACE_CLASS}]"``).
JS_WHITESPACE_CLASS = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


def js_trim(text: str) -> str:
    """``String.prototype.trim``."""
    return text.strip(JS_WHITESPACE)


def js_truthy(value: Any) -> bool:
    """JavaScript truthiness of a JSON value: ``0``, NaN, ``""``, ``null``, ``false`` are falsy;
    every object and array is truthy, even an empty one."""
    if value is None or value is False:
        return False
    if isinstance(value, int | float):
        return value != 0 and not (isinstance(value, float) and math.isnan(value))
    if isinstance(value, str):
        return value != ""
    return True


_REPR_RE = re.compile(r"^(-?)(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$")


def number_to_string(value: float | int) -> str:
    """``String(value)`` for a JavaScript number (ECMAScript Number::toString)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if abs(value) < 10**21:
            return str(value)
        value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    match = _REPR_RE.match(repr(value))
    if match is None:  # pragma: no cover - repr of a finite float always matches
        raise ValueError(f"unexpected float repr {value!r}")
    sign, int_part, frac_part, exp_part = match.groups()
    digits = (int_part + (frac_part or "")).lstrip("0")
    # Position of the decimal point relative to the start of `digits` (ECMAScript's n).
    point = len(int_part) + int(exp_part or 0)
    if int_part.strip("0") == "":
        # 0.000123 -> digits "123", leading zeros of the fraction move the point left.
        leading = len(frac_part or "") - len((frac_part or "").lstrip("0"))
        point = int(exp_part or 0) - leading
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    n = point
    if k <= n <= 21:
        out = digits + "0" * (n - k)
    elif 0 < n <= 21:
        out = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        exp = f"e{'+' if e >= 0 else '-'}{abs(e)}"
        out = digits + exp if k == 1 else digits[0] + "." + digits[1:] + exp
    return sign + out


def js_string(value: Any, present: bool = True) -> str:
    """``String(value)`` / `` `${value}` `` of a JSON value (``present=False``: ``undefined``).

    Arrays join their items with commas, ``null`` items as ""; objects print as
    ``[object Object]``.
    """
    if not present:
        return "undefined"
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return number_to_string(value)
    if isinstance(value, list):
        return ",".join("" if v is None else js_string(v) for v in value)
    return "[object Object]"


# Levels json_stringify walks by recursion (fast); a value nested deeper is written from an
# explicit stack instead, since V8 stringifies thousands of levels and Python's stack does not.
_RECURSIVE_LEVELS = 100


def _stringify(value: Any, out: list[str], level: int = 0) -> bool:
    """Append JSON for `value`; return False when JavaScript would omit it (undefined)."""
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_quote(value))
    elif isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            out.append("null")
        else:
            out.append(number_to_string(value))
    elif level >= _RECURSIVE_LEVELS and isinstance(value, dict | list | tuple):
        _stringify_deep(value, out)
    elif isinstance(value, dict):
        out.append("{")
        first = True
        for key, item in value.items():
            mark = len(out)
            if not first:
                out.append(",")
            out.append(_quote(str(key)))
            out.append(":")
            if _stringify(item, out, level + 1):
                first = False
            else:
                del out[mark:]
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            if not _stringify(item, out, level + 1):
                out.append("null")
        out.append("]")
    else:
        return False
    return True


def _defined(value: Any) -> bool:
    """Whether JSON.stringify writes `value` (what _stringify accepts) rather than omit it."""
    return value is None or isinstance(value, str | int | float | dict | list | tuple)


def _stringify_deep(value: dict[Any, Any] | list[Any] | tuple[Any, ...], out: list[str]) -> None:
    """_stringify of a container, from an explicit stack: the same text at any depth."""
    # Each item: (True, text to write as it is) or (False, a value to write).
    stack: list[tuple[bool, Any]] = [(False, value)]
    while stack:
        literal, current = stack.pop()
        if literal:
            out.append(current)
            continue
        todo: list[tuple[bool, Any]] = []
        if isinstance(current, dict):
            out.append("{")
            for key, item in current.items():
                if not _defined(item):
                    continue  # an undefined member is left out
                prefix = ("," if todo else "") + _quote(str(key)) + ":"
                todo.append((True, prefix))
                todo.append((False, item))
            todo.append((True, "}"))
        elif isinstance(current, list | tuple):
            out.append("[")
            for i, item in enumerate(current):
                if i:
                    todo.append((True, ","))
                todo.append((False, item) if _defined(item) else (True, "null"))
            todo.append((True, "]"))
        else:
            _stringify(current, out)  # a scalar: no recursion
            continue
        stack.extend(reversed(todo))


_ESCAPES = {
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    '"': '\\"',
    "\\": "\\\\",
}
_NEEDS_ESCAPE = re.compile(r'[\x00-\x1f"\\\ud800-\udfff]')


def _escape_char(match: re.Match[str]) -> str:
    ch = match.group(0)
    if ch in _ESCAPES:
        return _ESCAPES[ch]
    return f"\\u{ord(ch):04x}"


_SURROGATE = re.compile("[\ud800-\udfff]")


def _quote(text: str) -> str:
    if text.isascii() or _SURROGATE.search(text) is None:
        # Without surrogates JSON.stringify escapes exactly what Python's C encoder does (the
        # seven short escapes, other controls as lowercase \u00xx, nothing else); the per-match
        # Python callback below cost more than the rest of a token estimate.
        return _encode_string(text)
    # Well-formed JSON.stringify: paired surrogates stay raw, lone ones are escaped.
    text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, text) + '"'


def json_stringify(value: Any) -> str:
    """``JSON.stringify(value)`` (compact, insertion order, JavaScript number formatting)."""
    out: list[str] = []
    if not _stringify(value, out):
        return "undefined"
    return "".join(out)


def json_stringify_chunks(value: Any, *, depth: int = 2) -> Iterator[str]:
    """``json_stringify(value)`` in pieces whose concatenation is the same text: each member of
    an object and each item of an array down to ``depth`` levels is its own piece, so a large
    object (a request of thousands of messages) is written out without its whole text held."""
    if depth <= 0 or not isinstance(value, dict | list | tuple):
        yield json_stringify(value)
        return
    if isinstance(value, dict):
        yield "{"
        first = True
        for key, item in value.items():
            if not _defined(item):
                continue  # an undefined member is left out, as JSON.stringify does
            yield ("" if first else ",") + _quote(str(key)) + ":"
            yield from json_stringify_chunks(item, depth=depth - 1)
            first = False
        yield "}"
        return
    yield "["
    for i, item in enumerate(value):
        if i:
            yield ","
        if _defined(item):
            yield from json_stringify_chunks(item, depth=depth - 1)
        else:
            yield "null"
    yield "]"


class JsonPieces:
    """``json_stringify_chunks(value, depth=depth)`` as an iterable that can be gone through
    again (each pass writes the pieces anew; nothing is held between passes)."""

    def __init__(self, value: Any, *, depth: int = 2) -> None:
        self.value = value
        self.depth = depth

    def __iter__(self) -> Iterator[str]:
        return json_stringify_chunks(self.value, depth=self.depth)


_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS = timedelta(milliseconds=1)


def date_parse_ms(text: Any) -> int | None:
    """``new Date(text).getTime()`` for ISO-8601 strings; ``None`` where JavaScript gives NaN."""
    if not isinstance(text, str):
        return None
    raw = text.strip()
    try:
        parsed = datetime.fromisoformat(raw.replace("Z", "+00:00") if raw.endswith("Z") else raw)
    except ValueError:
        return None
    if parsed.tzinfo is not None:
        if 1 < parsed.year < 9999:
            # Exact integer arithmetic, three times faster than timegm(utctimetuple()) (one call
            # per imported entry); the years at the ends keep the original path.
            return (parsed - _UNIX_EPOCH) // _ONE_MS
        return calendar.timegm(parsed.utctimetuple()) * 1000 + parsed.microsecond // 1000
    if len(raw) == 10:  # a date-only form is UTC in JavaScript
        return calendar.timegm(parsed.timetuple()) * 1000
    # Date-time without offset: local time, as JavaScript reads it.
    return int(time.mktime(parsed.timetuple())) * 1000 + parsed.microsecond // 1000


def to_fixed(value: float, digits: int) -> str:
    """``value.toFixed(digits)``: the exact binary value rounded half-up."""
    quantum = Decimal(1).scaleb(-digits)
    return str(Decimal(value).quantize(quantum, rounding=ROUND_HALF_UP))


def entry_time_ms(value: Any) -> float | None:
    """``new Date(value).getTime()``; ``None`` where JavaScript gives NaN."""
    if isinstance(value, str):
        return date_parse_ms(value)
    if value is None:
        return 0  # new Date(null) is the epoch
    if isinstance(value, bool):
        return 1 if value else 0
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            return None
        return math.trunc(value) if abs(value) <= 8.64e15 else None
    return None


def entry_date_ms(entry: Any) -> float | None:
    """``new Date(entry.timestamp).getTime()`` of an entry: a missing timestamp is
    ``new Date(undefined)``, NaN (``None``), unlike null (the epoch)."""
    return entry_time_ms(entry.get("timestamp")) if "timestamp" in entry else None


# JSON.parse


def _reject_constant(name: str) -> Any:
    # Python's json accepts NaN/Infinity; JSON.parse does not.
    raise ValueError(f"{name} is not valid JSON")


def _js_int(text: str) -> int | float:
    # JSON.parse reads every number as a double: integers beyond 2**53 lose precision.
    value = int(text)
    if -(2**53) <= value <= 2**53:
        return value
    return float(text)


def json_type_name(value: Any) -> str:
    """The JSON type of a parsed value, as an error message names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return type(value).__name__


# A key JavaScript treats as an array index ("0", "17", below 2**32 - 1): JSON.parse puts such
# keys first, in ascending order, whatever their place in the text.
_INDEX_KEY = re.compile(r'"(?:0|[1-9][0-9]{0,9})"\s*:')
_MAX_INDEX = 2**32 - 2


def _is_index_key(key: str) -> bool:
    return key.isdigit() and (key == "0" or key[0] != "0") and int(key) <= _MAX_INDEX


def _js_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    index_keys = [k for k in obj if _is_index_key(k)]
    if not index_keys:
        return obj
    ordered = {k: obj[k] for k in sorted(index_keys, key=int)}
    ordered.update((k, v) for k, v in obj.items() if k not in ordered)
    return ordered


def json_parse(text: str) -> Any:
    """``JSON.parse``: doubles for numbers, no NaN, integer-like keys first (object key order).

    V8's parser is iterative: it reads any depth. Python's recurses per level, so text nested
    too deep for it is read again by json_parse_deep."""
    try:
        if _INDEX_KEY.search(text) is None:
            return json.loads(text, parse_constant=_reject_constant, parse_int=_js_int)
        return json.loads(
            text, parse_constant=_reject_constant, parse_int=_js_int, object_pairs_hook=_js_object
        )
    except RecursionError:
        return json_parse_deep(text)


# One token of JSON text after optional whitespace: a string, a number, a literal or a bracket,
# comma or colon (group 1..4). A string is checked strictly (no raw control characters, only
# JSON's escapes), as JSON.parse does; its value is then read by json.loads (one level).
_JSON_TOKEN = re.compile(
    r'[ \t\n\r]*(?:("(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*")'
    r"|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"
    r"|(true|false|null)|([\[\]{},:]))"
)
_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None}


def json_parse_deep(text: str) -> Any:
    """``JSON.parse`` of text nested at any depth (the semantics of json_parse), with an explicit
    stack instead of recursion; ValueError for what JSON.parse rejects.

    1. Read one token; a value (string, number, literal) goes to the innermost open container
       (after a key and a colon in an object), `[` or `{` opens a new one.
    2. `]` or `}` closes the innermost container: an object becomes a dict in JavaScript's key
       order (_js_object); the closed container is a value of the one around it.
    3. After the outermost value only whitespace may follow."""
    # Open containers: (items or key/value pairs, is an object, the key it is the value of).
    stack: list[tuple[list[Any], bool, str | None]] = []
    key: str | None = None
    pos = 0
    done = False
    result: Any = None
    # What may come next: "value", "value_or_close" (after an opening bracket), "key",
    # "key_or_close", "colon", "comma_or_close".
    expect = "value"
    while True:
        match = _JSON_TOKEN.match(text, pos)
        if match is None:
            if done and not text[pos:].strip(" \t\n\r"):
                return result
            raise ValueError(f"invalid JSON at position {pos}")
        string, number, literal, punct = match.groups()
        pos = match.end()
        if done:
            raise ValueError(f"unexpected text after the JSON value at position {match.start()}")
        value: Any
        has_value = False
        if punct is not None:
            if punct in "[{" and expect in ("value", "value_or_close"):
                stack.append(([], punct == "{", key))
                expect = "key_or_close" if punct == "{" else "value_or_close"
                continue
            if punct in "]}" and expect in ("value_or_close", "key_or_close", "comma_or_close"):
                items, is_object, key = stack[-1]
                if is_object != (punct == "}") or (expect == "value_or_close" and is_object):
                    raise ValueError(f"unexpected {punct!r} at position {match.start()}")
                stack.pop()
                value = _js_object(items) if is_object else items
                has_value = True
            elif punct == "," and expect == "comma_or_close":
                expect = "key" if stack[-1][1] else "value"
                continue
            elif punct == ":" and expect == "colon":
                expect = "value"
                continue
            else:
                raise ValueError(f"unexpected {punct!r} at position {match.start()}")
        elif expect in ("key", "key_or_close"):
            if string is None:
                raise ValueError(f"expected a string key at position {match.start()}")
            key = json.loads(string)
            expect = "colon"
            continue
        elif expect not in ("value", "value_or_close"):
            raise ValueError(f"unexpected value at position {match.start()}")
        if not has_value:
            if string is not None:
                value = json.loads(string)
            elif number is not None:
                value = _js_int(number) if number.lstrip("-").isdigit() else float(number)
            else:
                value = _LITERALS[literal]
        if not stack:
            result, done = value, True
            continue
        items, is_object, _ = stack[-1]
        if is_object:
            items.append((key, value))
        else:
            items.append(value)
        expect = "comma_or_close"


def js_number(value: Any) -> float:
    """ToNumber for the header's version (``"2"`` compares as 2 in JavaScript)."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    if value is None:
        return 0.0
    if isinstance(value, str):
        stripped = js_trim(value)
        if stripped == "":
            return 0.0
        try:
            return float(stripped)
        except ValueError:
            return math.nan
    return math.nan


# Arrays and objects


def v8_sort_with_nan(items: list[Any], keys: list[float | None]) -> list[Any]:
    """V8's Array.prototype.sort (TimSort) for ``(a, b) => ms(a) - ms(b)`` when some are NaN.

    With NaN the comparator is inconsistent and the result depends on the algorithm; V8 sorts an
    array shorter than 64 as one run (CountAndMakeRun, then binary insertion), ported here. For
    longer arrays with unparsable timestamps (never seen in practice) this is an approximation.
    """
    pairs = list(zip(items, keys, strict=True))

    def cmp(a: tuple[Any, float | None], b: tuple[Any, float | None]) -> float:
        if a[1] is None or b[1] is None:
            return math.nan
        return a[1] - b[1]

    n = len(pairs)
    if n < 2:
        return items[:]
    # CountAndMakeRun(0, n)
    run = 2
    order = cmp(pairs[1], pairs[0])
    descending = order < 0
    previous = pairs[1]
    for i in range(2, n):
        order = cmp(pairs[i], previous)
        if descending:
            if order >= 0:
                break
        elif order < 0:
            break
        previous = pairs[i]
        run += 1
    if descending:
        pairs[0:run] = reversed(pairs[0:run])
    # BinaryInsertionSort(0, run, n)
    for index in range(run, n):
        left, right = 0, index
        pivot = pairs[index]
        while left < right:
            mid = left + ((right - left) >> 1)
            if cmp(pivot, pairs[mid]) < 0:
                right = mid
            else:
                left = mid + 1
        pairs[left + 1 : index + 1] = pairs[left:index]
        pairs[left] = pivot
    return [item for item, _ in pairs]


def js_sort_any(items: list[Any]) -> list[Any]:
    # Array.prototype.sort() compares the String() of each item; details from a file may hold
    # non-strings.
    if all(isinstance(i, str) for i in items):
        return js_sorted(items)
    keyed = sorted(items, key=lambda i: js_string(i).encode("utf-16-be", "surrogatepass"))
    return keyed


def array_join_item(value: Any) -> str:
    # Array.prototype.join renders null and undefined as "".
    return "" if value is None else js_string(value)


_ARRAY_INDEX_KEY = re.compile(r"^(?:0|[1-9][0-9]*)$")


def js_key_order(value: Any) -> Any:
    """The value with every object's keys in JavaScript's property order (integer-like keys
    first, ascending), as ``JSON.parse`` builds them and ``JSON.stringify`` prints them.

    Built from an explicit stack: a value may nest deeper than Python's recursion limit."""
    if not isinstance(value, dict | list):
        return value
    root: dict[str, Any] | list[Any] = {} if isinstance(value, dict) else []
    # Each item: a source container and its copy, whose members are still to be filled in.
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        source, copy = stack.pop()
        members = object_entries(source) if isinstance(source, dict) else enumerate(source)
        for key, member in members:
            if isinstance(member, dict | list):
                child: dict[str, Any] | list[Any] = {} if isinstance(member, dict) else []
                stack.append((member, child))
                member = child
            if isinstance(copy, dict):
                copy[key] = member
            else:
                copy.append(member)
    return root


def object_entries(obj: Any) -> list[tuple[str, Any]]:
    """``Object.entries``: integer-like keys first in ascending order, then insertion order."""
    if isinstance(obj, list):
        return [(str(i), v) for i, v in enumerate(obj)]
    if isinstance(obj, str):
        return [(str(i), ch) for i, ch in enumerate(obj)]
    if not isinstance(obj, dict):
        return []
    integer_keys = sorted(
        (k for k in obj if _ARRAY_INDEX_KEY.match(k) and int(k) < 2**32 - 1), key=int
    )
    first = set(integer_keys)
    others = [k for k in obj if k not in first]
    return [(k, obj[k]) for k in [*integer_keys, *others]]


def int_if_whole(value: float) -> int | float:
    """A whole double as JavaScript prints it (``3`` not ``3.0``)."""
    return int(value) if float(value).is_integer() else value


# Node's POSIX path module (what Pi's resource loader joins and compares paths with)


def path_normalize(path: str) -> str:
    """path.normalize without keeping a trailing slash (what resolve/join results look like)."""
    absolute = path.startswith("/")
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts and parts[-1] != "..":
                parts.pop()
            elif not absolute:
                parts.append("..")
            continue
        parts.append(part)
    joined = "/".join(parts)
    if absolute:
        return "/" + joined
    return joined or "."


def path_join(*parts: str) -> str:
    return path_normalize("/".join(p for p in parts if p))


def path_relative(start: str, target: str) -> str:
    return posixpath.relpath(target, start) if target != start else ""


def path_is_under(target: str, root: str) -> bool:
    root = path_normalize(root)
    if target == root:
        return True
    prefix = root if root.endswith("/") else root + "/"
    return target.startswith(prefix)


def path_resolve(path: str) -> str:
    """path.resolve of one POSIX path: a relative one is taken from this process's working
    directory (as Node takes it from Pi's), then normalised without a trailing slash."""
    if not path.startswith("/"):
        path = posixpath.join(posixpath.abspath("."), path)
    return path_normalize(path)
