"""Pi 1.x compaction requests: what Pi 1.6.0 would send to summarise a session at a leaf.

Ported from ``@earendil-works/pi-coding-agent@1.6.0`` ``dist/core/compaction/compaction.js``
(``prepareCompaction`` over the session projection, ``findProjectedCutPoint``,
``estimateTokens``, ``estimateProjectedContextTokens``, the summary prompt texts) and
``dist/core/compaction/utils.js`` (``serializeConversation`` without thinking); MIT licence,
(c) Mario Zechner / Earendil Works.

Differences from 0.80.2 (``contextlab.pi.compaction``): the cut is chosen over the projection
(context edits applied, system messages never summarised), a trailing run of entries omitted by
recovery edits is not kept, the turn-prefix prompt puts the conversation first and carries the
custom instructions, summaries set no maxTokens of their own (pi-ai's clamp applies), file
operations also come from the nested calls a tool result records, and the entry carries
``systemMessage`` (the replayed system state at the leaf). A branch summary applies the context
edits of the branch it summarises.

Earlier 1.x releases differ (``variant``: a ``providers.pi_ai.PiAi`` or a name it resolves; read
in 1.0.3, 1.3.0, 1.4.0 and 1.5.2's ``dist/core/compaction/``): to 1.3.0 each summary has a budget
of its own (``summary_budget``) and the turn prefix no custom instructions; 1.0.3 serialises
thinking; to 1.4.0 a branch summary ignores context edits and the thinking level, and the cut of
a long tool result may split a surrogate pair.

    plan = prepare_compaction(path_entries, keep_recent_tokens=20000)
    requests = compaction_requests(plan, model, thinking_level="medium")
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contextlab.pi.branch_summary import (
    BranchEntries,
    add_branch_summaries_file_lists,
    collect_entries_for_branch_summary,
)
from contextlab.pi.compaction import (
    FileOps,
    add_file_op,
    add_previous_file_lists,
    compute_file_lists,
    extract_file_ops_from_message,
)
from contextlab.pi.context import (
    create_branch_summary_message,
    create_compaction_summary_message,
    create_custom_message,
)
from contextlab.pi.dialects import pi_1_x
from contextlab.pi.dialects.release_table import RELEASES, release_values
from contextlab.pi.entries import Json
from contextlab.pi.jsutil import js_len, js_slice, js_truthy, json_stringify
from contextlab.pi.providers.options import (
    assistant_chars,
    calculate_context_tokens,
    turn_max_tokens,
)
from contextlab.pi.providers.pi_ai import PiAi, release_key, resolve
from contextlab.pi.providers.summary import summary_reasoning, summary_request_body
from contextlab.pi.providers.transcript import content_text

# Pi 1.6.0's summary prompts, from the release table (releases_data.py).
BRANCH_SUMMARY_PROMPT = pi_1_x.data.BRANCH_SUMMARY_PROMPT
SUMMARIZATION_PROMPT = pi_1_x.data.SUMMARIZATION_PROMPT
SUMMARIZATION_SYSTEM_PROMPT = pi_1_x.data.SUMMARIZATION_SYSTEM_PROMPT
TURN_PREFIX_SUMMARIZATION_PROMPT = pi_1_x.data.TURN_PREFIX_SUMMARIZATION_PROMPT
UPDATE_SUMMARIZATION_PROMPT = pi_1_x.data.UPDATE_SUMMARIZATION_PROMPT

__all__ = [
    "CompactionPlan",
    "SummaryRequest",
    "branch_request",
    "branch_summary_request",
    "collect_entries_for_branch_summary",
    "compaction_requests",
    "estimate_tokens",
    "extract_file_ops",
    "prepare_branch_entries",
    "prepare_compaction",
    "serialize_conversation",
]

TOOL_RESULT_MAX_CHARS = 2000
# generateBranchSummary's own maxTokens up to 1.3.
BRANCH_SUMMARY_BUDGET = 4096
_CLAMPED: Any = object()
ESTIMATED_IMAGE_CHARS = 4800


# --- estimates (compaction.js: chars / 4, unlike pi-ai's chars / 3.5) ------------------------


def _content_chars(content: Any) -> int:
    if isinstance(content, str):
        return js_len(content)
    chars = 0
    for block in content or []:
        if block.get("type") == "text" and block.get("text"):
            chars += js_len(block["text"])
        elif block.get("type") == "image":
            chars += ESTIMATED_IMAGE_CHARS
    return chars


def _ceil4(chars: int) -> int:
    return -(-chars // 4)


def estimate_tokens(message: Mapping[str, Any]) -> int:
    role = message.get("role")
    if role == "system":
        chars = _content_chars(message.get("content"))
        for section in (message.get("sections") or {}).values():
            if section:
                chars += js_len(section)
        if message.get("toolsAdded"):
            chars += js_len(json_stringify(message["toolsAdded"]))
        return _ceil4(chars)
    if role in ("user", "custom", "toolResult"):
        return _ceil4(_content_chars(message.get("content")))
    if role == "assistant":
        return _ceil4(assistant_chars(message, calls_only=True))
    if role == "bashExecution":
        return _ceil4(js_len(message.get("command", "")) + js_len(message.get("output", "")))
    if role in ("branchSummary", "compactionSummary"):
        return _ceil4(js_len(message.get("summary", "")))
    return 0


def _valid_usage(message: Mapping[str, Any]) -> Mapping[str, Any] | None:
    if message.get("role") != "assistant" or "usage" not in message:
        return None
    usage = message.get("usage")
    if message.get("stopReason") in ("aborted", "error") or not usage:
        return None
    return usage if calculate_context_tokens(usage) > 0 else None


def estimate_projected_context_tokens(
    projection: pi_1_x.Projection, branch_entries: Sequence[Json]
) -> int:
    """``estimateProjectedContextTokens``: the last valid usage plus estimates of what follows,
    unless a context edit or compaction came after the entry that reported it; then the
    estimate of the replayed system message and every other message."""
    messages = projection.messages
    usage_index = None
    for index in range(len(messages) - 1, -1, -1):
        if _valid_usage(messages[index]) is not None:
            usage_index = index
            break
    if usage_index is not None:
        usage = _valid_usage(messages[usage_index])
        assert usage is not None
        tokens = calculate_context_tokens(usage) + sum(
            estimate_tokens(m) for m in messages[usage_index + 1 :]
        )
        position = 0
        usage_entry_id = None
        for entry, entry_messages in projection.entries:
            if usage_index < position + len(entry_messages):
                usage_entry_id = entry.get("id")
                break
            position += len(entry_messages)
        ids = [e.get("id") for e in branch_entries]
        usage_entry_index = ids.index(usage_entry_id) if usage_entry_id in ids else -1
        invalidating = -1
        for i in range(len(branch_entries) - 1, -1, -1):
            if branch_entries[i].get("type") in ("context_edit", "compaction"):
                invalidating = i
                break
        if usage_entry_index > invalidating:
            return int(tokens)
    head = pi_1_x.current_system_message(messages)
    total = estimate_tokens(head) if head is not None else 0
    return total + sum(estimate_tokens(m) for m in messages if m.get("role") != "system")


# --- the cut over the projection -------------------------------------------------------------

_CUT_POINT_ROLES = (
    "user",
    "assistant",
    "bashExecution",
    "custom",
    "branchSummary",
    "compactionSummary",
)
_TURN_START_ROLES = ("user", "bashExecution", "custom", "branchSummary", "compactionSummary")


def _is_turn_start(entry: Json, messages: list[Json]) -> bool:
    if entry.get("type") == "compaction":
        return False
    return any(m.get("role") in _TURN_START_ROLES for m in messages)


def _find_cut_point(
    projected: list[tuple[Json, list[Json]]], start: int, end: int, keep_recent_tokens: int
) -> tuple[int, int, bool]:
    cut_points = [
        i
        for i in range(start, end)
        if projected[i][0].get("type") != "compaction"
        and any(m.get("role") in _CUT_POINT_ROLES for m in projected[i][1])
    ]
    if not cut_points:
        return start, -1, False
    accumulated = 0
    exceeded = False
    cut = cut_points[0]
    for i in range(end - 1, start - 1, -1):
        tokens = sum(estimate_tokens(m) for m in projected[i][1])
        if tokens == 0:
            continue
        accumulated += tokens
        if accumulated >= keep_recent_tokens:
            exceeded = True
            cut = next((c for c in cut_points if c >= i), cut_points[-1])
            break
    suffix = projected[cut + 1 : end]

    def visible(entry: Json) -> bool:
        return entry.get("type") != "context_edit" and bool(pi_1_x.entry_messages(entry))

    omitted_ids = {e.get("id") for e, ms in suffix if visible(e) and not ms}
    external_replacement = any(
        e.get("type") == "context_edit"
        and e.get("replacement") is not None
        and e.get("targetId") not in omitted_ids
        for e, _ in suffix
    )
    recovery_suffix = (
        exceeded
        and not external_replacement
        and any(
            e.get("type") == "message"
            and (e.get("message") or {}).get("role") == "assistant"
            and visible(e)
            and not ms
            for e, ms in suffix
        )
        and all(e.get("type") != "compaction" and (not visible(e) or not ms) for e, ms in suffix)
    )
    if recovery_suffix:
        cut += 1
    while cut > start:
        previous, previous_messages = projected[cut - 1]
        if previous.get("type") == "compaction" or previous_messages:
            break
        cut -= 1
    if _is_turn_start(*projected[cut]):
        return cut, -1, False
    turn_start = -1
    for i in range(cut, start - 1, -1):
        if _is_turn_start(*projected[i]):
            turn_start = i
            break
    return cut, turn_start, turn_start != -1


@dataclass
class CompactionPlan:
    """``prepareCompaction``'s preparation, with the entries behind each part and the file lists
    ``compact`` appends."""

    first_kept_entry_id: Any
    messages_to_summarize: list[Json]
    turn_prefix_messages: list[Json]
    is_split_turn: bool
    tokens_before: int
    previous_summary: str | None
    # What the compaction entry would carry as ``systemMessage`` (its timestamp is the entry's).
    system_message: Json | None = field(default=None)
    summarized_entry_ids: list[Any] = field(default_factory=list)
    turn_prefix_entry_ids: list[Any] = field(default_factory=list)
    read_files: list[str] = field(default_factory=list)
    modified_files: list[str] = field(default_factory=list)


def extract_file_ops(message: Any, ops: FileOps) -> None:
    """``extractFileOpsFromMessage`` of Pi 1.x: an assistant's tool calls, and the calls a tool
    result records as ``nestedCalls`` (made from a codemode script)."""
    if isinstance(message, dict) and message.get("role") == "toolResult":
        nested = message.get("nestedCalls")
        calls = nested.get("calls") if isinstance(nested, dict) else None
        for call in calls if isinstance(calls, list) else []:
            if isinstance(call, dict):
                add_file_op(call.get("name"), call.get("arguments"), ops)
        return
    extract_file_ops_from_message(message, ops)


def _summarisable(span: Sequence[tuple[Json, list[Json]]]) -> tuple[list[Any], list[Json]]:
    """``getMessagesFromProjectedEntryForCompaction`` over ``span``: (the entries that
    contribute, their messages); compactions and system messages are not conversation."""
    ids: list[Any] = []
    messages: list[Json] = []
    for entry, entry_messages in span:
        if entry.get("type") == "compaction":
            continue
        kept = [m for m in entry_messages if m.get("role") != "system"]
        if kept:
            ids.append(entry.get("id"))
            messages.extend(kept)
    return ids, messages


def prepare_compaction(
    path_entries: Sequence[Json], *, keep_recent_tokens: int
) -> CompactionPlan | None:
    """``prepareCompaction(pathEntries, settings)`` for the branch ending at the leaf."""
    if path_entries and path_entries[-1].get("type") == "compaction":
        return None
    projection = pi_1_x.build_session_projection(path_entries)
    projected = projection.entries
    previous_index = next(
        (i for i, (e, ms) in enumerate(projected) if e.get("type") == "compaction" and ms), -1
    )
    previous_summary = None
    start = 0
    if previous_index >= 0:
        previous_summary = projected[previous_index][0].get("summary")
        start = previous_index + 1
    tokens_before = estimate_projected_context_tokens(projection, path_entries)
    cut, turn_start, split = _find_cut_point(projected, start, len(projected), keep_recent_tokens)
    if cut >= len(projected) or not projected[cut][0].get("id"):
        return None
    history_end = turn_start if split else cut
    summarized_ids, to_summarize = _summarisable(projected[start:history_end])
    prefix_ids, prefix = _summarisable(projected[turn_start:cut]) if split else ([], [])
    if not to_summarize and not prefix:
        return None
    # extractFileOperations: the previous compaction's lists (unless an extension wrote it),
    # then the tool calls of what is summarised, the turn prefix's too.
    ops = FileOps()
    if previous_index >= 0:
        previous = projected[previous_index][0]
        if not js_truthy(previous.get("fromHook")) and js_truthy(previous.get("details")):
            add_previous_file_lists(ops, previous["details"])
    for message in [*to_summarize, *prefix]:
        extract_file_ops(message, ops)
    read_files, modified_files = compute_file_lists(ops)
    return CompactionPlan(
        projected[cut][0]["id"],
        to_summarize,
        prefix,
        split,
        tokens_before,
        previous_summary,
        pi_1_x.current_system_message(projection.messages),
        summarized_ids,
        prefix_ids,
        read_files,
        modified_files,
    )


# --- prompts and requests --------------------------------------------------------------------


def _truncate_for_summary(text: str, max_chars: int, pi_ai: PiAi) -> str:
    length = js_len(text)
    if length <= max_chars:
        return text
    head = js_slice(text, 0, max_chars)
    # sliceHead (1.5 on): never split a surrogate pair; before, text.slice cut through one.
    if pi_ai.summary_slice_head and head and 0xD800 <= ord(head[-1]) <= 0xDBFF:
        head = head[:-1]
    return f"{head}\n\n[... {length - max_chars} more characters truncated]"


def serialize_conversation(messages: Sequence[Json], variant: PiAi | str = "1.6") -> str:
    """``serializeConversation`` of Pi 1.x: thinking omitted (1.0.3 wrote it first, as
    ``[Assistant thinking]``)."""
    pi_ai = resolve(variant)
    parts = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if role == "user":
            text = content_text(content, "")
            if text:
                parts.append(f"[User]: {text}")
        elif role == "assistant":
            calls = []
            thinking = [
                str(b.get("thinking"))
                for b in content or []
                if b.get("type") == "thinking" and pi_ai.summary_serialises_thinking
            ]
            if thinking:
                parts.append(f"[Assistant thinking]: {chr(10).join(thinking)}")
            for block in content or []:
                if block.get("type") == "toolCall":
                    arguments = block.get("arguments") or {}
                    rendered = ", ".join(f"{k}={json_stringify(v)}" for k, v in arguments.items())
                    calls.append(f"{block.get('name')}({rendered})")
            if any(b.get("type") == "text" for b in content or []):
                parts.append(f"[Assistant]: {content_text(content)}")
            if calls:
                parts.append(f"[Assistant tool calls]: {'; '.join(calls)}")
        elif role == "toolResult":
            text = content_text(content, "")
            if text:
                truncated = _truncate_for_summary(text, TOOL_RESULT_MAX_CHARS, pi_ai)
                parts.append(f"[Tool result]: {truncated}")
    return "\n\n".join(parts)


def _release_text(name: str, default: str, variant: PiAi | str) -> str:
    """A summarisation prompt as release ``variant`` has it (the release table's ``name``, from
    its dist/core/compaction/compaction.js: 0.86.1 and 0.87.0 still had 0.x's turn-prefix
    prompt); ``default`` (1.6.0's) for a generation named otherwise."""
    if isinstance(variant, str) and variant in RELEASES:
        text = release_values(variant).get(name)
        if isinstance(text, str):
            return text
    return default


def history_prompt(
    messages: Sequence[Json],
    previous_summary: str | None,
    custom_instructions: str | None,
    variant: PiAi | str = "1.6",
) -> str:
    base = (
        _release_text("UPDATE_SUMMARIZATION_PROMPT", UPDATE_SUMMARIZATION_PROMPT, variant)
        if previous_summary
        else _release_text("SUMMARIZATION_PROMPT", SUMMARIZATION_PROMPT, variant)
    )
    if custom_instructions:
        base = f"{base}\n\nAdditional focus: {custom_instructions}"
    conversation = serialize_conversation(pi_1_x.convert_to_llm(messages), variant)
    text = f"<conversation>\n{conversation}\n</conversation>\n\n"
    if previous_summary:
        text += f"<previous-summary>\n{previous_summary}\n</previous-summary>\n\n"
    return text + base


def turn_prefix_prompt(
    messages: Sequence[Json], custom_instructions: str | None, variant: PiAi | str = "1.6"
) -> str:
    """The turn-prefix prompt; the custom instructions go after it from 1.4 on."""
    conversation = serialize_conversation(pi_1_x.convert_to_llm(messages), variant)
    prompt = _release_text(
        "TURN_PREFIX_SUMMARIZATION_PROMPT", TURN_PREFIX_SUMMARIZATION_PROMPT, variant
    )
    if isinstance(variant, str) and variant in RELEASES and release_key(variant) < (0, 87, 1):
        # generateTurnPrefixSummary (dist/core/compaction/compaction.js) to 0.87.0 framed it as
        # the history prompt does.
        return f"<conversation>\n{conversation}\n</conversation>\n\n{prompt}"
    text = f"# Conversation\n{conversation}\n\n# Instructions\n{prompt}"
    if custom_instructions and resolve(variant).turn_prefix_focus:
        text = f"{text}\n\nAdditional focus: {custom_instructions}"
    return text


@dataclass
class SummaryRequest:
    kind: str  # "history", "turnPrefix" or "branch"
    prompt: str
    max_tokens: int
    reasoning_effort: str | None
    body: str | None  # the HTTP body (JSON text) for an openai-completions / anthropic model

    def request(self, max_tokens: int | None = _CLAMPED) -> Json:
        """``{systemPrompt, messages, maxTokens}``: the summarisation context with its output cap
        (the clamp; ``max_tokens`` stands in for it, e.g. None when the model is unknown)."""
        return {
            "systemPrompt": SUMMARIZATION_SYSTEM_PROMPT,
            "messages": [{"role": "user", "content": [{"type": "text", "text": self.prompt}]}],
            "maxTokens": self.max_tokens if max_tokens is _CLAMPED else max_tokens,
        }


def summary_request(
    kind: str,
    prompt: str,
    model: Mapping[str, Any],
    thinking_level: Any,
    variant: PiAi | str = "1.6",
    *,
    budget: int | None = None,
) -> SummaryRequest:
    """A summarisation call as pi-ai sends it: the summarisation system prompt, the prompt as
    the one user message, pi-ai's clamp of the call's ``budget`` (to 1.3; from 1.4 none: the
    model's ``maxTokens``), the thinking level as reasoning for a reasoning model."""
    messages: list[Json] = [
        {"role": "system", "content": SUMMARIZATION_SYSTEM_PROMPT, "timestamp": 0},
        {"role": "user", "content": [{"type": "text", "text": prompt}], "timestamp": 0},
    ]
    limits = {**model, "maxTokens": int(model.get("maxTokens") or 0)}
    max_tokens = int(turn_max_tokens(limits, messages, variant, requested=budget) or 0)
    out = SummaryRequest(
        kind, prompt, max_tokens, summary_reasoning(model, thinking_level, variant), None
    )
    if model.get("api") in ("openai-completions", "anthropic-messages"):
        body = summary_request_body(
            dict(model), out.request(), thinking_level=thinking_level, variant=variant
        )
        out.body = json_stringify(body)
    return out


def compaction_requests(
    plan: CompactionPlan,
    model: Mapping[str, Any],
    *,
    thinking_level: Any,
    custom_instructions: str | None = None,
    variant: PiAi | str = "1.6",
    reserve_tokens: int = 16384,
) -> list[SummaryRequest]:
    """The summarisation requests ``compact`` sends for ``plan``: the history (unless a split turn
    has nothing before its prefix) and, for a split turn, the turn prefix; to 1.3 each with its
    budget (``summary_budget``)."""
    out = []
    split = plan.is_split_turn and bool(plan.turn_prefix_messages)
    if not split or plan.messages_to_summarize:
        prompt = history_prompt(
            plan.messages_to_summarize, plan.previous_summary, custom_instructions, variant
        )
        budget = summary_budget(model, 0.8 * reserve_tokens, variant)
        out.append(
            summary_request("history", prompt, model, thinking_level, variant, budget=budget)
        )
    if split:
        prompt = turn_prefix_prompt(plan.turn_prefix_messages, custom_instructions, variant)
        budget = summary_budget(model, 0.5 * reserve_tokens, variant)
        out.append(
            summary_request("turnPrefix", prompt, model, thinking_level, variant, budget=budget)
        )
    return out


def summary_budget(model: Mapping[str, Any], budget: float, variant: PiAi | str) -> int | None:
    """A summary's own ``maxTokens`` up to 1.3 (``generateSummaryWithUsage``,
    ``generateTurnPrefixSummary``, ``generateBranchSummary``): ``floor(budget)`` capped by the
    model's positive ``maxTokens``; None from 1.4 (pi-ai's clamp of ``model.maxTokens`` only)."""
    if resolve(variant).summary_max_tokens == "none":
        return None
    model_max = model.get("maxTokens") or 0
    return int(min(math.floor(budget), model_max)) if model_max > 0 else math.floor(budget)


# --- branch summaries (dist/core/compaction/branch-summarization.js) -------------------------


def _branch_message(entry: Json, edit: Json | None) -> Json | None:
    kind = entry.get("type")
    if kind == "message":
        if (entry.get("message") or {}).get("role") == "toolResult":
            return None
        if edit is not None:
            projected = pi_1_x.project_entry(entry, edit)
            return projected[0] if projected else None
        message = entry.get("message")
        return message if isinstance(message, dict) else None
    if kind == "custom_message":
        if edit is not None:
            projected = pi_1_x.project_entry(entry, edit)
            return projected[0] if projected else None
        return create_custom_message(entry)
    if kind == "branch_summary":
        return create_branch_summary_message(entry)
    if kind == "compaction":
        return create_compaction_summary_message(entry)
    return None


def prepare_branch_entries(
    entries: Sequence[Json], token_budget: float = 0, variant: PiAi | str = "1.6"
) -> BranchEntries:
    """``prepareBranchEntries``: the file lists of earlier branch summaries (not from
    extensions), then newest first until the budget is spent (tool results skipped, context
    edits applied from 1.5; a summary that does not fit is kept while under 90 %), oldest
    first."""
    ops = FileOps()
    add_branch_summaries_file_lists(entries, ops)
    edits = {
        e.get("targetId"): e
        for e in entries
        if e.get("type") == "context_edit" and resolve(variant).branch_summary_edits
    }
    messages: list[Json] = []
    ids: list[Any] = []
    total = 0
    for entry in reversed(entries):
        message = _branch_message(entry, edits.get(entry.get("id")))
        if message is None:
            continue
        extract_file_ops(message, ops)
        tokens = estimate_tokens(message)
        if token_budget > 0 and total + tokens > token_budget:
            if entry.get("type") in ("compaction", "branch_summary") and total < token_budget * 0.9:
                messages.insert(0, message)
                ids.insert(0, entry.get("id"))
                total += tokens
            break
        messages.insert(0, message)
        ids.insert(0, entry.get("id"))
        total += tokens
    return BranchEntries(messages, ops, total, ids)


def branch_token_budget(model: Mapping[str, Any], reserve_tokens: int) -> int:
    """``(model.contextWindow || 128000) - reserveTokens``."""
    return int(model.get("contextWindow") or 128000) - reserve_tokens


def branch_request(
    messages: Sequence[Json],
    model: Mapping[str, Any],
    *,
    thinking_level: Any,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    variant: PiAi | str = "1.6",
) -> SummaryRequest:
    """The request ``generateBranchSummary`` sends for the prepared ``messages``: to 1.3 with a
    budget of 4096 (capped by the model's), to 1.4 without the thinking level."""
    if replace_instructions and custom_instructions:
        instructions = custom_instructions
    elif custom_instructions:
        instructions = f"{BRANCH_SUMMARY_PROMPT}\n\nAdditional focus: {custom_instructions}"
    else:
        instructions = BRANCH_SUMMARY_PROMPT
    conversation = serialize_conversation(pi_1_x.convert_to_llm(messages), variant)
    prompt = f"<conversation>\n{conversation}\n</conversation>\n\n{instructions}"
    level = thinking_level if resolve(variant).branch_summary_edits else None
    budget = summary_budget(model, BRANCH_SUMMARY_BUDGET, variant)
    return summary_request("branch", prompt, model, level, variant, budget=budget)


def branch_summary_request(
    entries: Sequence[Json],
    model: Mapping[str, Any],
    *,
    thinking_level: Any,
    reserve_tokens: int = 16384,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    variant: PiAi | str = "1.6",
) -> SummaryRequest | None:
    """The request ``generateBranchSummary`` sends for ``entries`` (None: nothing to summarise,
    Pi writes "No content to summarize" without a request)."""
    prepared = prepare_branch_entries(entries, branch_token_budget(model, reserve_tokens), variant)
    if not prepared.messages:
        return None
    return branch_request(
        prepared.messages,
        model,
        thinking_level=thinking_level,
        custom_instructions=custom_instructions,
        replace_instructions=replace_instructions,
        variant=variant,
    )
