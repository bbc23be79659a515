"""What changed between two requests: the messages (compared as Pi holds them), and the system
prompt: Pi 1.x's by persisted section and tool declaration, Pi 0.x's rebuilt text line by line."""

from __future__ import annotations

import bisect
import difflib
import hashlib
from typing import Any

from contextlab import jsonsafe
from contextlab.pi.dialects.pi_1_x import named_changes
from contextlab.pi.dialects.pi_1_x_request import content_layer_title
from contextlab.pi.request import PiRequest, steps_of

Estimate = Any  # message -> tokens, the dialect's estimate


def message_key(message: dict[str, Any]) -> bytes:
    return jsonsafe.sorted_bytes(message)


def message_identity(message: dict[str, Any], role: str | None = None) -> tuple[Any, ...]:
    """Which message this is, whatever its content and position: the same message in two
    requests (on two branches, before and after a compaction, edited by a Pi 1.x context edit)
    has the same identity. A tool result is its tool call's id; any other message, its role
    and the time Pi stamped on it (a summary or a custom message converted to a user message
    keeps its own); without a time, an assistant message is its tool calls' ids. A message
    without any of these is its content. ``role``: the role the provider sees (default: the
    message's own)."""
    role = role or str(message.get("role"))
    if role == "toolResult" and message.get("toolCallId"):
        return ("toolResult", str(message["toolCallId"]))
    stamp = message.get("timestamp")
    if isinstance(stamp, int | float | str) and not isinstance(stamp, bool) and stamp != "":
        return (role, "at", stamp)
    content = message.get("content")
    if role == "assistant" and isinstance(content, list):
        calls = tuple(
            str(b.get("id"))
            for b in content
            if isinstance(b, dict) and b.get("type") == "toolCall" and b.get("id")
        )
        if calls:
            return ("assistant", *calls)
    return (role, "content", hashlib.sha1(message_key(message)).hexdigest())


def numbered(keys: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The keys made unique: the n-th occurrence of a key gets n appended (a message sent twice
    is two messages, matched in order)."""
    seen: dict[tuple[Any, ...], int] = {}
    out = []
    for key in keys:
        n = seen.get(key, 0)
        seen[key] = n + 1
        out.append((*key, n))
    return out


def align(left: list[tuple[Any, ...]], right: list[tuple[Any, ...]]) -> list[tuple[int, int]]:
    """The pairs (i, j) with ``left[i] == right[j]`` (unique keys, see ``numbered``) that keep
    both orders: the longest such chain (patience sorting, O(n log n)). Messages keep their
    order in every request Pi builds, so this is every common message but for a reordering."""
    where = {key: j for j, key in enumerate(right)}
    pairs = [(i, where[key]) for i, key in enumerate(left) if key in where]
    # Longest increasing subsequence of the j's.
    tails: list[int] = []  # tails[l]: index in pairs of the smallest tail of a chain of l + 1
    tail_js: list[int] = []  # their j's, for the binary search
    back: list[int] = [-1] * len(pairs)
    for n, (_, j) in enumerate(pairs):
        lo = bisect.bisect_left(tail_js, j)
        if lo > 0:
            back[n] = tails[lo - 1]
        if lo == len(tails):
            tails.append(n)
            tail_js.append(j)
        else:
            tails[lo] = n
            tail_js[lo] = j
    chain: list[tuple[int, int]] = []
    n = tails[-1] if tails else -1
    while n >= 0:
        chain.append(pairs[n])
        n = back[n]
    chain.reverse()
    return chain


def first_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list) and content and isinstance(content[0], dict):
        return str(content[0].get("text") or "")
    return content if isinstance(content, str) else ""


def summary_line(message: dict[str, Any], estimate: Estimate) -> dict[str, Any]:
    """One line of a message for a diff: role, first text, the dialect's estimate (the Messages
    tab's figure, so a message counts the same in both)."""
    role = str(message.get("role"))
    text = first_text(message) or str(message.get("summary") or "")
    if not text and role == "system":
        sections = message.get("sections")
        text = "sections " + ", ".join(sections) if isinstance(sections, dict) and sections else ""
    if not text and isinstance(message.get("content"), list):
        kinds = [str(b.get("type")) for b in message["content"] if isinstance(b, dict)]
        text = ", ".join(kinds)
    return {"role": role, "text": text[:240], "tokens": estimate(message)}


def _parts(request: PiRequest) -> dict[str, tuple[str, Any, int]]:
    """The persisted parts of a Pi 1.x prompt by title: (text, the entry that set it, tokens)."""
    out: dict[str, tuple[str, Any, int]] = {}
    counts: dict[str, int] = {}
    for layer in request.prompt.layers if request.prompt else ():
        title = content_layer_title(layer.name)
        counts[title] = counts.get(title, 0) + 1
        if counts[title] > 1:
            title = f"{title} {counts[title]}"
        out[title] = (layer.text, layer.entry_id, layer.tokens)
    return out


def prompt_changes(before: PiRequest, after: PiRequest) -> dict[str, Any]:
    """How the system prompt changed from ``before`` to ``after``: for two Pi 1.x requests the
    sections added, changed and removed (by name, each with the entry that patched it) and the
    tool declarations (``by_section``); for any two, the text line by line (``lines``: a
    unified diff)."""
    old = before.prompt.text if before.prompt else ""
    new = after.prompt.text if after.prompt else ""
    out: dict[str, Any] = {
        "changed": old != new,
        "dates": (before.prompt_date, after.prompt_date),
        "by_section": False,
        "sections": [],
        "tools": [],
        "lines": [],
    }
    out["lines"] = [
        ({"-": "del", "+": "ins", "@": "hunk"}.get(line[:1], "eq"), line.rstrip("\n"))
        for line in difflib.unified_diff(
            old.splitlines(), new.splitlines(), "before", "after", lineterm="", n=2
        )
    ][2:]
    in_session = steps_of(before.dialect).prompt_in_session
    if in_session and steps_of(after.dialect).prompt_in_session:
        out["by_section"] = True
        for change in named_changes(_parts(before), _parts(after)):
            text, entry_id, tokens = change.pop("value")
            out["sections"].append({**change, "entry_id": entry_id, "tokens": tokens, "text": text})
        tools_before = {t.get("name"): t for t in before.tools}
        tools_after = {t.get("name"): t for t in after.tools}
        for change in named_changes(tools_before, tools_after):
            change.pop("value")
            origins = after.tool_origins if change["change"] != "removed" else before.tool_origins
            out["tools"].append({**change, "entry_id": origins.get(change["name"])})
        out["changed"] = bool(out["sections"] or out["tools"]) or out["changed"]
    return out


def same_json(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` are surely written as the same JSON (sorted keys): the same
    types all the way down, floats by their text (0.0 is not -0.0). False when they differ, or
    may (a tuple beside a list, a nesting too deep to walk): then compare their ``message_key``.

    Two requests a turn apart share most messages, often as two objects decoded from one entry
    whose strings are one object: comparing them costs a walk of their containers, not a
    serialisation of tens of MB."""
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    try:
        if kind is dict:
            return len(a) == len(b) and all(
                key in b and same_json(value, b[key]) for key, value in a.items()
            )
        if kind is list:
            return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    except RecursionError:
        return False
    if kind is float:
        return a == b and repr(a) == repr(b)
    return kind in _SCALARS and a == b


_SCALARS = (str, int, bool, type(None))


def _fingerprint(message: Any) -> tuple[str, ...]:
    """Equal for two messages with the same JSON (a coarse first test: which messages of one
    request could be a message of the other)."""
    if not isinstance(message, dict):
        return ("",)
    return (
        repr(message.get("role")),
        repr(message.get("timestamp")),
        repr(message.get("toolCallId")),
    )


def _not_in(
    ours: list[dict[str, Any]], theirs: list[dict[str, Any]], digest_of: Any
) -> list[dict[str, Any]]:
    """The messages of ``ours`` whose ``message_key`` no message of ``theirs`` has, in order.

    A message object in both lists is in both; the others are digested with only those of
    ``theirs`` that could equal them (the same fingerprint): a deep turn's previous request
    shares thousands of messages with it, not digested at all."""
    held = {id(m) for m in theirs}
    rest = [m for m in ours if id(m) not in held]
    if not rest:
        return []
    wanted = {_fingerprint(m) for m in rest}
    keys = {digest_of(m) for m in theirs if _fingerprint(m) in wanted}
    return [m for m in rest if digest_of(m) not in keys]


def request_diff(before: PiRequest, after: PiRequest) -> dict[str, Any]:
    """Messages added and gone from ``before`` to ``after`` (compared as Pi holds them, before
    convertToLlm, by their JSON text with sorted keys), how many of the sent ones are unchanged
    from the start, and the prompt."""
    # Digests, not the keys themselves: a deep turn's messages are tens of MB of JSON, and
    # holding their keys held that several times at once (a diff of a 500 MB session's deep
    # turn peaked at 1 GB). A message object met twice (sent as held) is serialised once, and
    # only messages that could differ are serialised at all (same_json, _not_in).
    digests: dict[int, bytes] = {}

    def digest_of(message: dict[str, Any]) -> bytes:
        known = digests.get(id(message))
        if known is None:
            known = hashlib.blake2b(message_key(message), digest_size=16).digest()
            digests[id(message)] = known
        return known

    sent_before, sent_after = before.sent, after.sent
    common = 0
    for old_message, new_message in zip(sent_before, sent_after, strict=False):
        if not (
            same_json(old_message, new_message) or digest_of(old_message) == digest_of(new_message)
        ):
            break
        common += 1
    old, new = before.agent_messages, after.agent_messages
    estimate_before = steps_of(before.dialect).estimate_tokens
    estimate_after = steps_of(after.dialect).estimate_tokens
    prompt = prompt_changes(before, after)
    return {
        "common_prefix": common,
        "added": [summary_line(m, estimate_after) for m in _not_in(new, old, digest_of)],
        "removed": [summary_line(m, estimate_before) for m in _not_in(old, new, digest_of)],
        "before_count": len(before.sent),
        "after_count": len(after.sent),
        # The messages as Pi holds them (what "added" and "left" count), beside the ones sent
        # (after convertToLlm: a bash execution excluded from context, a 1.x system message
        # moved into the prompt, and so on are not sent).
        "before_messages": len(old),
        "after_messages": len(new),
        "prompt": prompt,
        "prompt_changed": prompt["changed"],
        "prompt_dates": prompt["dates"],
    }
