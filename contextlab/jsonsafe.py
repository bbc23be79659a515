"""JSON text for values of any nesting depth.

orjson refuses to write more than 254 levels, while JSON.parse and V8's JSON.stringify take
thousands: a session line with a 1,000-deep array in its tool arguments is valid for Pi. These
helpers use the fast encoder and, only when it gives up on depth, the same output from an explicit
stack. (The engine's json_stringify handles any depth itself.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson


def pretty(value: Any) -> str:
    """orjson's OPT_INDENT_2 text (two-space indent, ": " after keys)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except TypeError:  # orjson.JSONEncodeError: nested too deep (or not JSON at all)
        return iterative_dumps(value, scalar=_orjson_scalar, indent=2)


def pretty_head(value: dict[str, Any], key: str, limit: int) -> tuple[str, int]:
    """The first ``limit`` characters of ``pretty(value)`` and how many follow them, without
    ever holding the whole text: ``value[key]``, a list (a request's messages, tens of MB for a
    deep turn of a large session), is written only as far as the head reaches and otherwise
    measured one item at a time. The head is exactly ``pretty(value)[:limit]``."""
    items = value.get(key)
    if not isinstance(items, list) or not items:
        text = pretty(value)
        return text[:limit], max(0, len(text) - limit)
    # In pretty(value) the list sits at depth 1: "[\n", each item at depth 2 (every line of
    # its own text indented 4 more), ",\n" between items, "\n  ]" after them.
    lengths = []
    head_items = 0
    written = 0
    for item in items:
        text = pretty(item)
        lengths.append(4 + len(text) + 4 * text.count("\n"))
        written += lengths[-1] + 2
        if written < limit:
            head_items += 1
    shell = pretty({**value, key: []})  # the list as "[]"
    total = len(shell) - 2 + 2 + sum(lengths) + 2 * (len(items) - 1) + 4
    if total <= limit:
        return pretty(value), 0
    # The text of the first items that reach past the limit starts as the whole text does.
    head = pretty({**value, key: items[: head_items + 1]})[:limit]
    return head, total - limit


def sorted_bytes(value: Any) -> bytes:
    """orjson's compact OPT_SORT_KEYS bytes (a comparison key)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return iterative_dumps(value, scalar=_orjson_scalar, sort_keys=True).encode()


def _orjson_scalar(value: Any) -> str:
    return orjson.dumps(value).decode()


def iterative_dumps(
    value: Any,
    *,
    scalar: Callable[[Any], str],
    indent: int | None = None,
    sort_keys: bool = False,
) -> str:
    """JSON text of `value` built with an explicit stack (no recursion): objects and arrays
    here, every other value by `scalar`. Compact without `indent`; with it, one member per line
    in the layout of json.dumps / orjson (empty containers stay "{}" and "[]")."""
    out: list[str] = []
    # Work items: a str to write as it is, or (value, depth) to encode.
    stack: list[Any] = [(value, 0)]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        current, depth = item
        if isinstance(current, dict) and current:
            members = sorted(current.items()) if sort_keys else list(current.items())
            opener, closer = "{", "}"
            parts = [
                (f"{scalar(str(key))}:{' ' if indent else ''}", member) for key, member in members
            ]
        elif isinstance(current, list | tuple) and current:
            opener, closer = "[", "]"
            parts = [("", member) for member in current]
        elif isinstance(current, dict):
            out.append("{}")
            continue
        elif isinstance(current, list | tuple):
            out.append("[]")
            continue
        else:
            out.append(scalar(current))
            continue
        inner = "\n" + " " * (indent * (depth + 1)) if indent else ""
        outer = "\n" + " " * (indent * depth) if indent else ""
        todo: list[Any] = []
        for n, (prefix, member) in enumerate(parts):
            todo.append(("," if n else "") + inner + prefix)
            todo.append((member, depth + 1))
        todo.append(outer + closer)
        out.append(opener)
        stack.extend(reversed(todo))
    return "".join(out)
