"""Compaction as Pi 0.80.2 prepares it, and the exact summarisation request(s) it would send.

Truth: ``dist/core/compaction/compaction.js`` (``prepareCompaction``, ``findCutPoint``,
``findTurnStartIndex``, private ``findValidCutPoints``, ``generateSummary``,
``generateTurnPrefixSummary``, ``compact``), ``dist/core/compaction/utils.js`` (file operations,
``serializeConversation``), ``AgentSession.compact`` / ``_checkCompaction`` in
``dist/core/agent-session.js``; docs/pi-engine.md, "Compaction".

Nothing here calls a model: a *preview* is the preparation plus the request bodies
(``{"systemPrompt", "messages", "maxTokens"}``, messages in pi-ai form without timestamps) that
``compact()`` would hand to the provider. Summaries are joined by the caller
(``join_split_turn``, ``format_file_operations``); the texts come from the dialect.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from contextlab.pi.context import build_session_context, convert_to_llm
from contextlab.pi.dialects import DEFAULT_DIALECT, Dialect
from contextlab.pi.entries import Json, message_of_entry
from contextlab.pi.jsutil import (
    array_join_item,
    entry_date_ms,
    int_if_whole,
    js_key_order,
    js_len,
    js_slice,
    js_sort_any,
    js_string,
    js_truthy,
    json_stringify,
    number_to_string,
    object_entries,
)
from contextlab.pi.tokens import (
    DEFAULT_KEEP_RECENT_TOKENS,
    DEFAULT_RESERVE_TOKENS,
    calculate_context_tokens,
    estimate_context_tokens,
    estimate_tokens,
    should_compact,
)

__all__ = [
    "DEFAULT_COMPACTION_SETTINGS",
    "NO_PRIOR_HISTORY",
    "SPLIT_TURN_JOINER",
    "CompactionOptions",
    "CompactionPreparation",
    "CompactionPreview",
    "CompactionSettings",
    "CutPoint",
    "FileOps",
    "WhatIfCompaction",
    "add_file_op",
    "add_previous_file_lists",
    "auto_compaction_what_if",
    "compaction_preview",
    "compute_file_lists",
    "extract_file_ops_from_message",
    "find_cut_point",
    "find_turn_start_index",
    "find_valid_cut_points",
    "format_file_operations",
    "join_split_turn",
    "prepare_compaction",
    "serialize_conversation",
    "should_compact",
    "summary_request",
    "turn_prefix_request",
]

# The default dialect's texts under the names callers already import; new code reads the
# dialect it was given.
NO_PRIOR_HISTORY = DEFAULT_DIALECT.summary_texts.no_prior_history
SPLIT_TURN_JOINER = DEFAULT_DIALECT.summary_texts.split_turn_joiner


@dataclass(frozen=True)
class CompactionSettings:
    """``compaction.*`` settings (``DEFAULT_COMPACTION_SETTINGS`` in compaction.js)."""

    enabled: bool = True
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS


DEFAULT_COMPACTION_SETTINGS = CompactionSettings()


def _role(entry: Json) -> Any:
    message = entry.get("message")
    return message.get("role") if isinstance(message, dict) else None


# ---------------------------------------------------------------------------------------------
# Cut points


_CUT_ROLES = frozenset(
    {"bashExecution", "custom", "branchSummary", "compactionSummary", "user", "assistant"}
)


def find_valid_cut_points(entries: list[Json], start: int, end: int) -> list[int]:
    """Indices where the kept part may begin: messages other than tool results, and
    ``branch_summary`` / ``custom_message`` entries."""
    points: list[int] = []
    for i in range(start, end):
        entry = entries[i]
        kind = entry.get("type")
        if (kind == "message" and _role(entry) in _CUT_ROLES) or kind in (
            "branch_summary",
            "custom_message",
        ):
            points.append(i)
    return points


def find_turn_start_index(entries: list[Json], index: int, start: int) -> int:
    """The entry that starts the turn holding ``index`` (user or bash message, branch summary,
    custom message), searching down to ``start``; -1 if none."""
    for i in range(index, start - 1, -1):
        entry = entries[i]
        kind = entry.get("type")
        if kind in ("branch_summary", "custom_message"):
            return i
        if kind == "message" and _role(entry) in ("user", "bashExecution"):
            return i
    return -1


@dataclass(frozen=True)
class CutPoint:
    first_kept_entry_index: int
    turn_start_index: int
    is_split_turn: bool


def find_cut_point(
    entries: list[Json], start: int, end: int, keep_recent_tokens: float
) -> CutPoint:
    """``findCutPoint``.

    1. No valid cut point: keep everything from ``start``.
    2. Walk back from ``end - 1`` summing ``estimateTokens`` of ``message`` entries only; at the
       entry where the sum reaches ``keep_recent_tokens``, cut at the first cut point at or after
       it (none: the first cut point).
    3. Pull preceding non-message entries (settings, labels, custom messages...) into the kept
       part, stopping at a message or a compaction.
    4. A cut on anything but a user message is a split turn if a turn start precedes it.
    """
    points = find_valid_cut_points(entries, start, end)
    if not points:
        return CutPoint(start, -1, False)
    accumulated: int | float = 0
    cut = points[0]
    for i in range(end - 1, start - 1, -1):
        entry = entries[i]
        if entry.get("type") != "message":
            continue
        accumulated += estimate_tokens(entry["message"])
        if accumulated >= keep_recent_tokens:
            for point in points:
                if point >= i:
                    cut = point
                    break
            break
    while cut > start:
        previous = entries[cut - 1].get("type")
        if previous in ("compaction", "message"):
            break
        cut -= 1
    is_user = entries[cut].get("type") == "message" and _role(entries[cut]) == "user"
    turn_start = -1 if is_user else find_turn_start_index(entries, cut, start)
    return CutPoint(cut, turn_start, not is_user and turn_start != -1)


# ---------------------------------------------------------------------------------------------
# File operations (utils.js)


@dataclass
class FileOps:
    """Insertion-ordered sets of paths, like Pi's ``Set``s."""

    read: dict[str, None] = field(default_factory=dict)
    written: dict[str, None] = field(default_factory=dict)
    edited: dict[str, None] = field(default_factory=dict)

    def to_json(self) -> Json:
        return {"read": list(self.read), "written": list(self.written), "edited": list(self.edited)}


def extract_file_ops_from_message(message: Any, ops: FileOps) -> None:
    """Paths of ``read``/``write``/``edit`` tool calls in an assistant message (raw strings)."""
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return
    content = message.get("content")
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict) or block.get("type") != "toolCall":
            continue
        if "arguments" not in block or "name" not in block:
            continue
        add_file_op(block["name"], block["arguments"], ops)


def add_file_op(tool_name: Any, args: Any, ops: FileOps) -> None:
    """A ``read``/``write``/``edit`` call's ``path`` (a non-empty string) into ``ops``."""
    if not isinstance(args, dict):
        return
    path = args.get("path")
    if not isinstance(path, str) or path == "":
        return
    target = {"read": ops.read, "write": ops.written, "edit": ops.edited}.get(tool_name)
    if target is not None:
        target[path] = None


def add_previous_file_lists(ops: FileOps, details: Any) -> None:
    # A previous summary's lists: everything it modified counts as edited.
    if not isinstance(details, dict):
        return
    if isinstance(details.get("readFiles"), list):
        for f in details["readFiles"]:
            ops.read[f] = None
    if isinstance(details.get("modifiedFiles"), list):
        for f in details["modifiedFiles"]:
            ops.edited[f] = None


def compute_file_lists(ops: FileOps) -> tuple[list[str], list[str]]:
    """``(readFiles, modifiedFiles)``: read-only files and modified files, each JS-sorted."""
    modified = {**ops.edited, **ops.written}
    read_only = [f for f in ops.read if f not in modified]
    return js_sort_any(read_only), js_sort_any(list(modified))


def format_file_operations(
    read_files: list[str], modified_files: list[str], dialect: Dialect = DEFAULT_DIALECT
) -> str:
    """The ``<read-files>``/``<modified-files>`` tail Pi appends to a summary ("" when none)."""
    t = dialect.summary_texts
    sections = []
    if read_files:
        listed = "\n".join(map(js_string, read_files))
        sections.append(t.read_files_open + listed + t.read_files_close)
    if modified_files:
        listed = "\n".join(map(js_string, modified_files))
        sections.append(t.modified_files_open + listed + t.modified_files_close)
    if not sections:
        return ""
    return "\n\n" + "\n\n".join(sections)


def join_split_turn(
    history_summary: str | None, turn_prefix_summary: str, dialect: Dialect = DEFAULT_DIALECT
) -> str:
    """``compact``'s summary of a split turn: the history summary (Pi's stand-in when there was
    no history to summarise, ``None``) and the turn-prefix summary."""
    t = dialect.summary_texts
    history = t.no_prior_history if history_summary is None else history_summary
    return history + t.split_turn_joiner + turn_prefix_summary


# ---------------------------------------------------------------------------------------------
# serializeConversation


def _truncate_for_summary(text: str, dialect: Dialect) -> str:
    t = dialect.summary_texts
    max_chars = t.tool_result_max_chars
    if 2 * len(text) <= max_chars:
        return text  # at most two UTF-16 units per character: cannot be over
    length = js_len(text)
    if length <= max_chars:
        return text
    cut = number_to_string(length - max_chars)
    return js_slice(text, 0, max_chars) + t.summary_truncated_open + cut + t.summary_truncated_close


def _text_blocks(content: Any) -> str:
    if not isinstance(content, list):
        return ""
    return "".join(
        array_join_item(c.get("text"))
        for c in content
        if isinstance(c, dict) and c.get("type") == "text"
    )


def serialize_conversation(messages: list[Json], dialect: Dialect = DEFAULT_DIALECT) -> str:
    """``serializeConversation`` of LLM messages (run ``convert_to_llm`` first)."""
    t = dialect.summary_texts
    parts: list[str] = []
    for msg in messages:
        role = msg.get("role")
        if role == "user":
            content = msg.get("content")
            text = content if isinstance(content, str) else _text_blocks(content)
            if text:
                parts.append(t.serialized_user + text)
        elif role == "assistant":
            texts: list[str] = []
            thinkings: list[str] = []
            calls: list[str] = []
            content = msg.get("content")
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                kind = block.get("type")
                if kind == "text":
                    texts.append(array_join_item(block.get("text")))
                elif kind == "thinking":
                    thinkings.append(array_join_item(block.get("thinking")))
                elif kind == "toolCall":
                    args = ", ".join(
                        f"{k}={json_stringify(js_key_order(v))}"
                        for k, v in object_entries(block.get("arguments"))
                    )
                    calls.append(f"{js_string(block.get('name'))}({args})")
            if thinkings:
                parts.append(t.serialized_assistant_thinking + "\n".join(thinkings))
            if texts:
                parts.append(t.serialized_assistant + "\n".join(texts))
            if calls:
                parts.append(t.serialized_assistant_tool_calls + "; ".join(calls))
        elif role == "toolResult":
            text = _text_blocks(msg.get("content"))
            if text:
                parts.append(t.serialized_tool_result + _truncate_for_summary(text, dialect))
    return "\n\n".join(parts)


# ---------------------------------------------------------------------------------------------
# prepareCompaction


@dataclass
class CompactionPreparation:
    first_kept_entry_id: str
    first_kept_entry_index: int
    messages_to_summarize: list[Json]
    turn_prefix_messages: list[Json]
    is_split_turn: bool
    turn_start_index: int
    tokens_before: int | float
    previous_summary: str | None
    file_ops: FileOps
    boundary_start: int
    settings: CompactionSettings
    summarized_entry_ids: list[str] = field(default_factory=list)
    turn_prefix_entry_ids: list[str] = field(default_factory=list)
    read_files: list[str] = field(default_factory=list)
    modified_files: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.read_files, self.modified_files = compute_file_lists(self.file_ops)


def _messages_in(path: list[Json], start: int, end: int) -> list[tuple[str, Json]]:
    """``(entry id, message)`` for the entries of ``path[start:end]`` that contribute one."""
    out: list[tuple[str, Json]] = []
    for entry in path[start:end] if end > start else []:
        message = message_of_entry(entry, "compaction")
        if message:
            out.append((entry.get("id", ""), message))
    return out


def prepare_compaction(
    path: list[Json], settings: CompactionSettings = DEFAULT_COMPACTION_SETTINGS
) -> CompactionPreparation | None:
    """``prepareCompaction(pathEntries, settings)``; None where Pi returns undefined.

    1. Path ends with a compaction: None ("Already compacted").
    2. The last compaction on the path bounds the work: start at its ``firstKeptEntryId`` (or
       just after it when that id is not on the path); its summary is the previous summary.
    3. ``tokensBefore``: the context estimate of the whole path.
    4. Cut (``find_cut_point``); history ends at the turn start of a split turn.
    5. Nothing to summarise in either part: None ("Nothing to compact").
    6. File ops: previous compaction details (unless from a hook), then tool calls.
    """
    if path and path[-1].get("type") == "compaction":
        return None
    prev_index = -1
    for i in range(len(path) - 1, -1, -1):
        if path[i].get("type") == "compaction":
            prev_index = i
            break
    previous_summary: str | None = None
    boundary_start = 0
    if prev_index >= 0:
        prev = path[prev_index]
        previous_summary = prev.get("summary")
        kept_id = prev.get("firstKeptEntryId")
        found = next((i for i, e in enumerate(path) if e.get("id") == kept_id), -1)
        boundary_start = found if found >= 0 else prev_index + 1
    boundary_end = len(path)

    context = build_session_context(path)  # leaf omitted: the last path entry, as in Pi
    tokens_before = estimate_context_tokens(context.messages).tokens

    cut = find_cut_point(path, boundary_start, boundary_end, settings.keep_recent_tokens)
    first_kept = (
        path[cut.first_kept_entry_index] if cut.first_kept_entry_index < len(path) else None
    )
    if first_kept is None or not first_kept.get("id"):
        return None  # Pi: "Session needs migration"
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_entry_index

    summarized = _messages_in(path, boundary_start, history_end)
    prefixed = (
        _messages_in(path, cut.turn_start_index, cut.first_kept_entry_index)
        if cut.is_split_turn
        else []
    )
    to_summarize = [m for _, m in summarized]
    prefix = [m for _, m in prefixed]
    if not to_summarize and not prefix:
        return None

    ops = FileOps()
    prev = path[prev_index] if prev_index >= 0 else {}
    if prev and not js_truthy(prev.get("fromHook")) and js_truthy(prev.get("details")):
        add_previous_file_lists(ops, prev["details"])
    for message in to_summarize:
        extract_file_ops_from_message(message, ops)
    if cut.is_split_turn:
        for message in prefix:
            extract_file_ops_from_message(message, ops)

    return CompactionPreparation(
        first_kept_entry_id=first_kept["id"],
        first_kept_entry_index=cut.first_kept_entry_index,
        messages_to_summarize=to_summarize,
        turn_prefix_messages=prefix,
        is_split_turn=cut.is_split_turn,
        turn_start_index=cut.turn_start_index,
        tokens_before=tokens_before,
        previous_summary=previous_summary,
        file_ops=ops,
        boundary_start=boundary_start,
        settings=settings,
        summarized_entry_ids=[i for i, _ in summarized],
        turn_prefix_entry_ids=[i for i, _ in prefixed],
    )


# ---------------------------------------------------------------------------------------------
# The requests compact() sends


def _max_tokens(fraction: float, reserve_tokens: float, model_max_tokens: float) -> int | float:
    budget = math.floor(fraction * reserve_tokens)
    return min(budget, model_max_tokens) if model_max_tokens > 0 else budget


def _request(system_prompt: str, text: str, max_tokens: int | float) -> Json:
    return {
        "systemPrompt": system_prompt,
        "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
        "maxTokens": max_tokens,
    }


def _conversation_text(messages: list[Json], dialect: Dialect) -> str:
    """The serialised conversation as every summarisation prompt opens with it."""
    t = dialect.summary_texts
    conversation = serialize_conversation(convert_to_llm(messages, dialect), dialect)
    return t.conversation_open + conversation + t.conversation_close


def summary_request(
    messages: list[Json],
    *,
    reserve_tokens: float = DEFAULT_RESERVE_TOKENS,
    model_max_tokens: float = 0,
    custom_instructions: str | None = None,
    previous_summary: Any = None,
    dialect: Dialect = DEFAULT_DIALECT,
) -> Json:
    """``generateSummary``'s request: the initial prompt, or the update prompt when a previous
    summary exists; custom instructions appended as ``Additional focus``."""
    t = dialect.summary_texts
    has_previous = js_truthy(previous_summary)
    base = dialect.update_summarization_prompt if has_previous else dialect.summarization_prompt
    if custom_instructions:
        base = base + t.additional_focus + custom_instructions
    text = _conversation_text(messages, dialect)
    if has_previous:
        text += t.previous_summary_open + js_string(previous_summary) + t.previous_summary_close
    text += base
    return _request(
        dialect.summarization_system_prompt,
        text,
        _max_tokens(0.8, reserve_tokens, model_max_tokens),
    )


def turn_prefix_request(
    messages: list[Json],
    *,
    reserve_tokens: float = DEFAULT_RESERVE_TOKENS,
    model_max_tokens: float = 0,
    dialect: Dialect = DEFAULT_DIALECT,
) -> Json:
    """``generateTurnPrefixSummary``'s request (no instructions, no previous summary)."""
    text = _conversation_text(messages, dialect) + dialect.turn_prefix_summarization_prompt
    return _request(
        dialect.summarization_system_prompt,
        text,
        _max_tokens(0.5, reserve_tokens, model_max_tokens),
    )


@dataclass(frozen=True)
class CompactionOptions:
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS
    model_max_tokens: int = 0  # the model's maxTokens (0: no cap)
    custom_instructions: str | None = None


@dataclass
class CompactionPreview:
    preparation: CompactionPreparation | None
    request: Json | None
    turn_prefix_request: Json | None

    def to_json(self) -> Json:
        """The ``compact --dry-run --json`` object (extra keys after the contract's)."""
        prep = self.preparation
        if prep is None:
            return {
                "firstKeptEntryId": None,
                "tokensBefore": None,
                "isSplitTurn": None,
                "request": None,
                "turnPrefixRequest": None,
            }
        return {
            "firstKeptEntryId": prep.first_kept_entry_id,
            "tokensBefore": prep.tokens_before,
            "isSplitTurn": prep.is_split_turn,
            "request": self.request,
            "turnPrefixRequest": self.turn_prefix_request,
            "previousSummary": prep.previous_summary,
            "summarizedEntryIds": prep.summarized_entry_ids,
            "turnPrefixEntryIds": prep.turn_prefix_entry_ids,
            "readFiles": prep.read_files,
            "modifiedFiles": prep.modified_files,
        }


def compaction_preview(
    path: list[Json],
    options: CompactionOptions = CompactionOptions(),
    dialect: Dialect = DEFAULT_DIALECT,
) -> CompactionPreview:
    """What a manual ``/compact`` at the end of ``path`` would send, without sending it.

    As ``compact()``: a split turn with a non-empty prefix sends the history request (only if
    there is history; otherwise Pi uses ``No prior history.`` and drops the previous summary)
    and the turn-prefix request; any other case sends the history request alone.
    """
    settings = CompactionSettings(
        reserve_tokens=options.reserve_tokens, keep_recent_tokens=options.keep_recent_tokens
    )
    prep = prepare_compaction(path, settings)
    if prep is None:
        return CompactionPreview(None, None, None)
    history = summary_request(
        prep.messages_to_summarize,
        reserve_tokens=options.reserve_tokens,
        model_max_tokens=options.model_max_tokens,
        custom_instructions=options.custom_instructions,
        previous_summary=prep.previous_summary,
        dialect=dialect,
    )
    if prep.is_split_turn and prep.turn_prefix_messages:
        prefix = turn_prefix_request(
            prep.turn_prefix_messages,
            reserve_tokens=options.reserve_tokens,
            model_max_tokens=options.model_max_tokens,
            dialect=dialect,
        )
        return CompactionPreview(prep, history if prep.messages_to_summarize else None, prefix)
    return CompactionPreview(prep, history, None)


# ---------------------------------------------------------------------------------------------
# Auto-compaction what-if


@dataclass(frozen=True)
class WhatIfCompaction:
    """One auto-compaction Pi would have run after ``after_entry_id``."""

    after_entry_id: str
    context_tokens: int | float  # the (adjusted) context size that crossed the threshold
    first_kept_entry_id: str
    tokens_before: int | float
    is_split_turn: bool
    summarized_entry_ids: list[str]
    turn_prefix_entry_ids: list[str]
    estimated_tokens_after: int | float

    def to_json(self) -> Json:
        return {
            "afterEntryId": self.after_entry_id,
            "contextTokens": self.context_tokens,
            "firstKeptEntryId": self.first_kept_entry_id,
            "tokensBefore": self.tokens_before,
            "isSplitTurn": self.is_split_turn,
            "summarizedEntryIds": self.summarized_entry_ids,
            "turnPrefixEntryIds": self.turn_prefix_entry_ids,
            "estimatedTokensAfter": self.estimated_tokens_after,
        }


def _usage_tokens(message: Json) -> float:
    """``calculateContextTokens(message.usage)`` (0 without usage), as ``_checkCompaction``."""
    usage = message.get("usage")
    if not isinstance(usage, dict):
        return 0
    try:
        return float(calculate_context_tokens(usage))
    except (TypeError, KeyError):
        return 0


def _next_message_roles(path: list[Json]) -> list[Any]:
    """For each entry of ``path``, the role of the next message entry after it (or ``None``)."""
    roles: list[Any] = [None] * len(path)
    following: Any = None
    for index in range(len(path) - 1, -1, -1):
        roles[index] = following
        if path[index].get("type") == "message":
            following = _role(path[index])
    return roles


def _compaction_ms(entry: Json) -> float:
    """``new Date(compaction.timestamp).getTime()``, NaN when it does not parse."""
    ms = entry_date_ms(entry)
    return float("nan") if ms is None else float(ms)


def _not_after(message_ms: Any, compaction_ms: float | None) -> bool:
    # `message.timestamp <= new Date(compaction.timestamp).getTime()`; NaN compares false.
    if compaction_ms is None or not isinstance(message_ms, int | float):
        return False
    return bool(message_ms <= compaction_ms)


# Long on purpose: a replay of _checkCompaction along the path, whose numbered steps (docstring)
# share the running state of the walk.
def auto_compaction_what_if(
    path: list[Json],
    *,
    context_window: int,
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS,
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS,
    summary_tokens: int = 0,
) -> list[WhatIfCompaction]:
    """Where along ``path`` Pi would have auto-compacted and what each compaction would cut.

    A replay of ``AgentSession._checkCompaction`` (threshold case) without a model:

    1. Checks happen where Pi makes them: after an agent run (an assistant message that no tool
       result follows) and, for an aborted run, before the next user prompt.
    2. A message not newer than the latest compaction on the path is skipped.
    3. Context = ``calculateContextTokens(usage)``; for error or zero-usage messages,
       ``estimateContextTokens`` of the context, skipped when it has no usage or its usage
       predates the latest compaction.
    4. ``shouldCompact(context, contextWindow)`` → ``prepareCompaction`` on the path so far; the
       compaction is appended as a synthetic entry (summary of ``summary_tokens`` × 4 characters:
       no model is called) and later checks see its effect.
    5. Recorded usage after a simulated compaction was measured without it, so it is lowered by
       the tokens the compaction freed (context before minus the estimate after).

    Compactions recorded on the path stay where they are (they are history). Not modelled:
    overflow recovery after provider errors, and compaction disabled in settings.
    """
    settings = CompactionSettings(
        reserve_tokens=reserve_tokens, keep_recent_tokens=keep_recent_tokens
    )
    working: list[Json] = []
    freed = 0.0
    results: list[WhatIfCompaction] = []
    next_roles = _next_message_roles(path)
    compaction_ms: float | None = None  # of the latest compaction in `working`
    for index, entry in enumerate(path):
        working.append(entry)
        if entry.get("type") == "compaction":
            freed = 0.0  # a recorded compaction: later usage already reflects it
            compaction_ms = _compaction_ms(entry)
        if entry.get("type") != "message" or _role(entry) != "assistant":
            continue
        message = entry["message"]
        following = next_roles[index]
        if following == "toolResult":
            continue
        if message.get("stopReason") == "aborted" and following != "user":
            continue
        if _not_after(message.get("timestamp"), compaction_ms):
            continue
        direct = _usage_tokens(message)
        tokens: float
        if message.get("stopReason") in ("error", "aborted") or direct == 0:
            context = build_session_context(working, entry.get("id"))
            estimate = estimate_context_tokens(context.messages)
            if estimate.last_usage_index is None:
                continue
            usage_message = context.messages[estimate.last_usage_index]
            if _not_after(usage_message.get("timestamp"), compaction_ms):
                continue
            tokens = estimate.tokens - freed
        else:
            tokens = direct - freed
        if not should_compact(tokens, context_window, reserve_tokens):
            continue
        prep = prepare_compaction(working, settings)
        if prep is None:
            continue
        synthetic = {
            "type": "compaction",
            "id": f"what-if-{len(results) + 1}",
            "parentId": entry.get("id"),
            "timestamp": entry.get("timestamp"),
            "summary": "x" * (summary_tokens * 4),
            "firstKeptEntryId": prep.first_kept_entry_id,
            "tokensBefore": prep.tokens_before,
        }
        working.append(synthetic)
        compaction_ms = _compaction_ms(synthetic)
        after = build_session_context(working, synthetic["id"])
        tokens_after = sum(estimate_tokens(m) for m in after.messages)
        results.append(
            WhatIfCompaction(
                after_entry_id=entry.get("id", ""),
                context_tokens=int_if_whole(tokens),
                first_kept_entry_id=prep.first_kept_entry_id,
                tokens_before=prep.tokens_before,
                is_split_turn=prep.is_split_turn,
                summarized_entry_ids=prep.summarized_entry_ids,
                turn_prefix_entry_ids=prep.turn_prefix_entry_ids,
                estimated_tokens_after=tokens_after,
            )
        )
        freed += max(0.0, tokens - tokens_after)
    return results
