"""What Pi sends: the session context at a leaf, its LLM messages, and what the provider receives.

Truth:
- ``buildSessionContext`` in pi-coding-agent ``dist/core/session-manager.js``;
- ``convertToLlm``, ``bashExecutionToText``, ``create*Message`` in ``dist/core/messages.js``;
- ``transformMessages`` in pi-ai ``dist/api/transform-messages.js`` (tool-call ids are normalised
  only when a provider hands its normaliser in, as its ``convertMessages`` does).

Values JavaScript would hold as ``undefined`` are represented by an absent key (``JSON.stringify``
drops them); ``new Date(x).getTime()`` that is NaN becomes ``None`` (``null`` in JSON).

The request at a leaf as a whole (prompt, tools, model, request time) is assembled by
``contextlab.pi.request``, which calls these steps.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contextlab.pi.dialects import DEFAULT_DIALECT, Dialect
from contextlab.pi.entries import (
    Json,
    create_branch_summary_message,
    create_compaction_summary_message,
    create_custom_message,
    message_of_entry,
    put,
)
from contextlab.pi.jsutil import js_string, js_trim, js_truthy
from contextlab.pi.models import get_model

__all__ = [
    "NO_RESULT_TEXT",
    "TOOL_IMAGE_PLACEHOLDER",
    "USER_IMAGE_PLACEHOLDER",
    "NormalizeToolCallId",
    "SessionContext",
    "bash_execution_to_text",
    "build_session_context",
    "context_of_path",
    "convert_message",
    "convert_to_llm",
    "create_branch_summary_message",
    "create_compaction_summary_message",
    "create_custom_message",
    "dropped_by",
    "model_for_transform",
    "replace_images",
    "sent_role",
    "session_path",
    "transform_messages",
]

# The default dialect's pi-ai texts, under the names callers already import.
USER_IMAGE_PLACEHOLDER = DEFAULT_DIALECT.message_texts.user_image_placeholder
TOOL_IMAGE_PLACEHOLDER = DEFAULT_DIALECT.message_texts.tool_image_placeholder
NO_RESULT_TEXT = DEFAULT_DIALECT.message_texts.no_result_text

_DEFAULT: Any = object()
# pi-ai's `normalizeToolCallId(id, model, assistantMessage)`, which each provider hands over.
NormalizeToolCallId = Callable[[Any, Json, Json], Any]


@dataclass
class SessionContext:
    """What ``buildSessionContext`` returns; ``owners`` (ours) names, for each message, the entry
    it came from (the compaction entry for the compaction summary)."""

    messages: list[Json]
    thinking_level: Any = "off"
    model: Json | None = None
    owners: list[Json] = field(default_factory=list, repr=False)
    # The dialect's own projection, where it keeps more than this (Pi 1.x: per entry, its
    # messages after context edits).
    projection: Any = field(default=None, repr=False, compare=False)

    def as_dict(self) -> Json:
        return {
            "messages": self.messages,
            "thinkingLevel": self.thinking_level,
            "model": self.model,
        }


# --------------------------------------------------------------------------------------------
# buildSessionContext
# --------------------------------------------------------------------------------------------


def _walk_path(leaf: Json, by_id: Mapping[Any, Json]) -> list[Json]:
    path: list[Json] = []
    seen: set[int] = set()
    current: Json | None = leaf
    while current is not None and id(current) not in seen:
        # Pi loops forever on a parentId cycle; we stop at the first repeat.
        seen.add(id(current))
        path.append(current)
        parent = current.get("parentId")
        current = by_id.get(parent) if js_truthy(parent) and isinstance(parent, str) else None
    path.reverse()
    return path


def settings_step(entry: Json, state: list[Any]) -> None:
    """Fold one path entry into [thinkingLevel, model, compaction] as buildSessionContext does."""
    kind = entry.get("type")
    if kind == "thinking_level_change":
        state[0] = entry.get("thinkingLevel")
    elif kind == "model_change":
        model: Json = {}
        put(model, "provider", entry, "provider")
        put(model, "modelId", entry, "modelId")
        state[1] = model
    elif kind == "message":
        message = entry.get("message")
        if isinstance(message, dict) and message.get("role") == "assistant":
            model = {}
            put(model, "provider", message, "provider")
            put(model, "modelId", message, "model")
            state[1] = model
    elif kind == "compaction":
        state[2] = entry


def messages_for_path(path: list[Json], compaction: Json | None) -> tuple[list[Json], list[Json]]:
    """The messages of ``path`` under its last ``compaction``, and the entry each came from."""
    messages: list[Json] = []
    owners: list[Json] = []

    def append(entry: Json) -> None:
        message = message_of_entry(entry, "context")
        if message is not None:
            messages.append(message)
            owners.append(entry)

    if compaction is None:
        for entry in path:
            append(entry)
        return messages, owners
    messages.append(create_compaction_summary_message(compaction))
    owners.append(compaction)
    index = next(i for i, e in enumerate(path) if e is compaction)
    first_kept = compaction.get("firstKeptEntryId", _DEFAULT)
    found = False
    for entry in path[:index]:
        if not found and "id" in entry and entry.get("id") == first_kept:
            found = True
        if found:
            append(entry)
    for entry in path[index + 1 :]:
        append(entry)
    return messages, owners


def session_path(
    entries: Sequence[Json], leaf_id: Any = _DEFAULT, by_id: Mapping[Any, Json] | None = None
) -> list[Json]:
    """The path root -> leaf as ``buildSessionContext`` walks it.

    ``leaf_id=None`` (explicit) gives an empty path; an omitted or unknown leaf falls back to the
    last entry. The path is walked from the leaf to the root and reversed.
    """
    if by_id is None:
        by_id = {entry.get("id"): entry for entry in entries}  # a JS Map takes undefined too
    if leaf_id is None:
        return []
    leaf = by_id.get(leaf_id) if leaf_id is not _DEFAULT and js_truthy(leaf_id) else None
    if leaf is None:
        leaf = entries[-1] if entries else None
    if leaf is None:
        return []
    return _walk_path(leaf, by_id)


def context_of_path(path: list[Json]) -> SessionContext:
    """``buildSessionContext`` from the walked path.

    1. Thinking level, model (model changes and every assistant message) and the last compaction
       are folded over the path.
    2. Without a compaction every path entry contributes its message; with one, its summary
       comes first, then entries from ``firstKeptEntryId`` up to the compaction, then the rest.
    """
    state: list[Any] = ["off", None, None]
    for entry in path:
        settings_step(entry, state)
    messages, owners = messages_for_path(path, state[2])
    return SessionContext(messages, state[0], state[1], owners)


def build_session_context(
    entries: Sequence[Json],
    leaf_id: Any = _DEFAULT,
    by_id: dict[str, Json] | None = None,
) -> SessionContext:
    """Pi's ``buildSessionContext(entries, leafId, byId)``: ``session_path`` then
    ``context_of_path``."""
    return context_of_path(session_path(entries, leaf_id, by_id))


# --------------------------------------------------------------------------------------------
# convertToLlm
# --------------------------------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def bash_execution_to_text(message: Json, dialect: Dialect = DEFAULT_DIALECT) -> str:
    t = dialect.message_texts
    command = js_string(message.get("command"), "command" in message)
    text = t.bash_ran_open + command + t.bash_ran_close
    output = message.get("output")
    if js_truthy(output):
        text += t.bash_output_open + js_string(output) + t.bash_output_close
    else:
        text += t.bash_no_output
    exit_code = message.get("exitCode")
    if js_truthy(message.get("cancelled")):
        text += t.bash_cancelled
    elif exit_code is not None and not (_is_number(exit_code) and exit_code == 0):
        text += t.bash_exit_code + js_string(exit_code)
    if js_truthy(message.get("truncated")) and js_truthy(message.get("fullOutputPath")):
        full_output_path = js_string(message.get("fullOutputPath"))
        text += t.bash_output_truncated_open + full_output_path + t.bash_output_truncated_close
    return text


def _with_timestamp(out: Json, message: Json) -> Json:
    put(out, "timestamp", message, "timestamp")
    return out


def convert_message(message: Any, dialect: Dialect = DEFAULT_DIALECT) -> Json | None:
    """One message through ``convertToLlm``; ``None`` when it is dropped."""
    if not isinstance(message, dict):
        return None
    role = message.get("role")
    if role in ("user", "assistant", "toolResult"):
        return message
    if role == "bashExecution":
        if js_truthy(message.get("excludeFromContext")):
            return None
        text = bash_execution_to_text(message, dialect)
        return _with_timestamp(
            {"role": "user", "content": [{"type": "text", "text": text}]}, message
        )
    if role == "custom":
        out: Json = {"role": "user"}
        if "content" in message:
            content = message["content"]
            out["content"] = (
                [{"type": "text", "text": content}] if isinstance(content, str) else content
            )
        return _with_timestamp(out, message)
    if role == "branchSummary":
        text = (
            dialect.branch_summary_prefix
            + js_string(message.get("summary"), "summary" in message)
            + dialect.branch_summary_suffix
        )
        return _with_timestamp(
            {"role": "user", "content": [{"type": "text", "text": text}]}, message
        )
    if role == "compactionSummary":
        text = (
            dialect.compaction_summary_prefix
            + js_string(message.get("summary"), "summary" in message)
            + dialect.compaction_summary_suffix
        )
        return _with_timestamp(
            {"role": "user", "content": [{"type": "text", "text": text}]}, message
        )
    return None


def dropped_by(message: Any) -> str | None:
    """Which step drops this AgentMessage on its way to the provider: ``"convertToLlm"`` (a
    ``!!`` bash execution, excluded from context), ``"transformMessages"`` (an error or aborted
    reply), or None when it is sent."""
    if not isinstance(message, dict):
        return "convertToLlm"
    role = message.get("role")
    if role == "bashExecution" and js_truthy(message.get("excludeFromContext")):
        return "convertToLlm"
    if role == "assistant" and message.get("stopReason") in ("error", "aborted"):
        return "transformMessages"
    if role not in _LLM_ROLES and role not in _CONVERTED_ROLES:
        return "convertToLlm"
    return None


def sent_role(message: Any) -> str | None:
    """The role the provider sees for this AgentMessage after ``convertToLlm`` (summaries,
    custom messages and bash executions become user messages)."""
    role = message.get("role") if isinstance(message, dict) else None
    if role in _LLM_ROLES:
        return str(role)
    return "user" if role in _CONVERTED_ROLES else None


_LLM_ROLES = frozenset({"user", "assistant", "toolResult"})
_CONVERTED_ROLES = frozenset({"bashExecution", "custom", "branchSummary", "compactionSummary"})


def convert_to_llm(messages: Iterable[Any], dialect: Dialect = DEFAULT_DIALECT) -> list[Json]:
    """Pi's ``convertToLlm``: the seven roles to user/assistant/toolResult messages."""
    out: list[Json] = []
    for message in messages:
        converted = convert_message(message, dialect)
        if converted is not None:
            out.append(converted)
    return out


# --------------------------------------------------------------------------------------------
# transformMessages (pi-ai)
# --------------------------------------------------------------------------------------------


def model_for_transform(
    model: Json | None,
    *,
    messages: Iterable[Json] = (),
    catalog_lookup: Any = None,
) -> Json:
    """The pi-ai model object ``transform_messages`` needs for a context's ``{provider, modelId}``.

    Looked up in pi-ai's built-in catalog (``contextlab.pi.models``). For a model the catalog does
    not know (custom models from ``models.json``, retired ids) we assume:
    - ``api``: the ``api`` recorded on the latest assistant message of that provider and model
      (Pi records it on every reply), else ``None``;
    - ``input``: ``["text", "image"]`` (no image placeholders), because claiming an image was
      dropped when we cannot know would be the worse lie.
    Such a model carries ``"assumed": True``.
    """
    if catalog_lookup is None:
        catalog_lookup = get_model
    if model is None:
        return {
            "provider": None,
            "api": None,
            "id": None,
            "input": ["text", "image"],
            "assumed": True,
        }
    provider, model_id = model.get("provider"), model.get("modelId")
    found: Json | None = catalog_lookup(provider, model_id)
    if found is not None:
        return found
    api = None
    for message in messages:
        if (
            isinstance(message, dict)
            and message.get("role") == "assistant"
            and message.get("provider") == provider
            and message.get("model") == model_id
            and "api" in message
        ):
            api = message["api"]
    return {
        "provider": provider,
        "api": api,
        "id": model_id,
        "input": ["text", "image"],
        "assumed": True,
    }


def replace_images(content: Any, placeholder: str) -> list[Any]:
    """``transformMessages``' image downgrade: each run of images becomes one placeholder."""
    result: list[Any] = []
    previous_was_placeholder = False
    for block in content:
        if isinstance(block, dict) and block.get("type") == "image":
            if not previous_was_placeholder:
                result.append({"type": "text", "text": placeholder})
            previous_was_placeholder = True
            continue
        result.append(block)
        previous_was_placeholder = isinstance(block, dict) and block.get("text") == placeholder
    return result


def _downgrade_images(message: Json, supports_images: bool, dialect: Dialect) -> Json:
    if supports_images:
        return message
    role = message.get("role")
    if role == "user" and isinstance(message.get("content"), list):
        out = dict(message)
        placeholder = dialect.message_texts.user_image_placeholder
        out["content"] = replace_images(message["content"], placeholder)
        return out
    if role == "toolResult":
        out = dict(message)
        content = message.get("content")
        placeholder = dialect.message_texts.tool_image_placeholder
        out["content"] = replace_images(content if content is not None else [], placeholder)
        return out
    return message


class _ToolCallIds:
    """The ``normalizeToolCallId`` callback and the map of ids it changed (one transform run)."""

    __slots__ = ("mapping", "normalize")

    def __init__(self, normalize: NormalizeToolCallId) -> None:
        self.normalize = normalize
        self.mapping: dict[Any, Any] = {}

    def tool_result(self, message: Json) -> Json:
        # `normalizedId && normalizedId !== msg.toolCallId`
        original = message.get("toolCallId")
        normalized = self.mapping.get(original, _DEFAULT)
        if normalized is _DEFAULT or not js_truthy(normalized) or normalized == original:
            return message
        out = dict(message)
        out["toolCallId"] = normalized
        return out

    def tool_call(self, block: Json, model: Json, message: Json) -> Json:
        original = block.get("id")
        normalized = self.normalize(original, model, message)
        if normalized == original:
            return block
        self.mapping[original] = normalized
        out = dict(block)
        out["id"] = normalized
        return out


def _transform_assistant(message: Json, model: Json, ids: _ToolCallIds | None = None) -> Json:
    same_model = (
        message.get("provider", _DEFAULT) == model.get("provider", _DEFAULT)
        and message.get("api", _DEFAULT) == model.get("api", _DEFAULT)
        and message.get("model", _DEFAULT) == model.get("id", _DEFAULT)
    )
    content: list[Any] = []
    for block in message.get("content") or []:
        if not isinstance(block, dict):
            content.append(block)
            continue
        kind = block.get("type")
        if kind == "thinking":
            if js_truthy(block.get("redacted")):
                if same_model:
                    content.append(block)
                continue
            if same_model and js_truthy(block.get("thinkingSignature")):
                content.append(block)
                continue
            thinking = block.get("thinking")
            if not js_truthy(thinking) or (isinstance(thinking, str) and js_trim(thinking) == ""):
                continue
            if same_model:
                content.append(block)
            else:
                content.append({"type": "text", "text": thinking})
        elif kind == "text":
            if same_model:
                content.append(block)
            else:
                text_block: Json = {"type": "text"}
                put(text_block, "text", block, "text")
                content.append(text_block)
        elif kind == "toolCall":
            if not same_model and js_truthy(block.get("thoughtSignature")):
                block = {k: v for k, v in block.items() if k != "thoughtSignature"}
            if not same_model and ids is not None:
                block = ids.tool_call(block, model, message)
            content.append(block)
        else:
            content.append(block)
    out = dict(message)
    out["content"] = content
    return out


def first_pass(
    message: Json,
    model: Json,
    supports_images: bool,
    dialect: Dialect,
    ids: _ToolCallIds | None = None,
) -> Json:
    message = _downgrade_images(message, supports_images, dialect)
    role = message.get("role")
    if role == "assistant":
        return _transform_assistant(message, model, ids)
    if role == "toolResult" and ids is not None:
        return ids.tool_result(message)
    return message


class OrphanTracker:
    """Second pass of transformMessages: skip error/aborted replies, synthesise missing results.

    Pi stamps every synthetic result of one call with the same ``Date.now()``; a tracker shared
    along the tree (``iter_leaf_projections``) cannot know that time while it walks, so results
    are stamped when ``finish`` hands the list out (``stamped``: their positions).
    """

    __slots__ = ("no_result_text", "pending", "result", "seen", "stamped")

    def __init__(self, no_result_text: str) -> None:
        self.no_result_text = no_result_text
        self.result: list[Json] = []
        self.pending: list[Json] = []
        self.seen: set[Any] = set()
        self.stamped: list[int] = []

    def copy(self) -> OrphanTracker:
        other = OrphanTracker(self.no_result_text)
        other.result = list(self.result)
        other.pending = self.pending
        other.seen = set(self.seen)
        other.stamped = list(self.stamped)
        return other

    def synthetic(self, now_ms: Any) -> list[Json]:
        out: list[Json] = []
        for call in self.pending:
            if call.get("id") not in self.seen:
                result: Json = {"role": "toolResult"}
                put(result, "toolCallId", call, "id")
                put(result, "toolName", call, "name")
                result["content"] = [{"type": "text", "text": self.no_result_text}]
                result["isError"] = True
                result["timestamp"] = now_ms
                out.append(result)
        return out

    def flush(self) -> None:
        if self.pending:
            missing = self.synthetic(None)
            start = len(self.result)
            self.stamped.extend(range(start, start + len(missing)))
            self.result.extend(missing)
            self.pending = []
            self.seen = set()

    def push(self, message: Json) -> None:
        role = message.get("role")
        if role == "assistant":
            self.flush()
            if message.get("stopReason") in ("error", "aborted"):
                return
            calls = [
                b
                for b in message.get("content") or []
                if isinstance(b, dict) and b.get("type") == "toolCall"
            ]
            if calls:
                self.pending = calls
                self.seen = set()
            self.result.append(message)
        elif role == "toolResult":
            self.seen.add(message.get("toolCallId"))
            self.result.append(message)
        elif role == "user":
            self.flush()
            self.result.append(message)
        else:
            self.result.append(message)

    def finish(self, now_ms: Any) -> list[Json]:
        out = self.result + self.synthetic(now_ms)
        for position in self.stamped:
            # The timestamp key is the last one: replacing it keeps Pi's key order.
            out[position] = {**out[position], "timestamp": now_ms}
        return out


def transform_messages(
    messages: Iterable[Json],
    model: Json,
    now_ms: Any = None,
    dialect: Dialect = DEFAULT_DIALECT,
    normalize_tool_call_id: NormalizeToolCallId | None = None,
) -> list[Json]:
    """pi-ai's ``transformMessages(messages, model, normalizeToolCallId)``.

    1. Images become placeholders when ``model["input"]`` lacks ``"image"``.
    2. Assistant messages from another provider/api/model lose redacted and empty thinking and
       turn thinking into text; ``thoughtSignature`` is dropped from their tool calls, whose ids
       go through ``normalize_tool_call_id(id, model, assistant_message)`` when given (a
       provider's normaliser); a later result of a call whose id changed follows it.
    3. Error and aborted assistant messages are skipped; tool calls without a result before the
       next assistant or user message (or the end) get a ``"No result provided"`` error result.

    Pi stamps synthetic results with ``Date.now()``; we take ``now_ms`` (never the clock). When it
    is ``None`` we use the newest timestamp among the messages, the closest deterministic stand-in
    for "the time of the request".
    """
    messages = list(messages)
    if now_ms is None:
        now_ms = latest_timestamp(messages)
    supports_images = "image" in (model.get("input") or [])
    ids = None if normalize_tool_call_id is None else _ToolCallIds(normalize_tool_call_id)
    tracker = OrphanTracker(dialect.message_texts.no_result_text)
    for message in messages:
        tracker.push(first_pass(message, model, supports_images, dialect, ids))
    return tracker.finish(now_ms)


def latest_timestamp(messages: Iterable[Json]) -> Any:
    latest: Any = None
    for message in messages:
        stamp = message.get("timestamp") if isinstance(message, dict) else None
        if not isinstance(stamp, int | float) or isinstance(stamp, bool):
            continue
        if math.isfinite(stamp) and (latest is None or stamp > latest):
            latest = stamp
    return latest
