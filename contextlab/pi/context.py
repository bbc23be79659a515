"""What Pi sends: the session context at a leaf, its LLM messages, and what the provider receives.

Truth:
- ``buildSessionContext`` in pi-coding-agent ``dist/core/session-manager.js``;
- ``convertToLlm``, ``bashExecutionToText``, ``create*Message`` in ``dist/core/messages.js``;
- ``transformMessages`` in pi-ai ``dist/api/transform-messages.js`` (tool-call ids are normalised
  only when a provider hands its normaliser in, as its ``convertMessages`` does).

Values JavaScript would hold as ``undefined`` are represented by an absent key (``JSON.stringify``
drops them); ``new Date(x).getTime()`` that is NaN becomes ``None`` (``null`` in JSON).

``iter_leaf_projections`` projects every entry as a leaf in one depth-first walk, sharing the work
of a parent with its children (Pi re-walks the whole path for each leaf).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from contextlab.pi.dialects import DEFAULT_DIALECT, Dialect
from contextlab.pi.jsutil import js_string
from contextlab.pi.models import get_model
from contextlab.pi.session import SessionTree, entry_time_ms, js_trim, js_truthy

__all__ = [
    "NO_RESULT_TEXT",
    "TOOL_IMAGE_PLACEHOLDER",
    "USER_IMAGE_PLACEHOLDER",
    "LeafProjection",
    "NormalizeToolCallId",
    "SessionContext",
    "bash_execution_to_text",
    "build_session_context",
    "convert_message",
    "convert_to_llm",
    "create_branch_summary_message",
    "create_compaction_summary_message",
    "create_custom_message",
    "iter_leaf_projections",
    "model_for_transform",
    "transform_messages",
]

# The default dialect's pi-ai texts, under the names callers already import.
USER_IMAGE_PLACEHOLDER = DEFAULT_DIALECT.message_texts.user_image_placeholder
TOOL_IMAGE_PLACEHOLDER = DEFAULT_DIALECT.message_texts.tool_image_placeholder
NO_RESULT_TEXT = DEFAULT_DIALECT.message_texts.no_result_text

_DEFAULT: Any = object()
Json = dict[str, Any]
# pi-ai's `normalizeToolCallId(id, model, assistantMessage)`, which each provider hands over.
NormalizeToolCallId = Callable[[Any, Json, Json], Any]


@dataclass
class SessionContext:
    messages: list[Json]
    thinking_level: Any = "off"
    model: Json | None = None

    def as_dict(self) -> Json:
        return {
            "messages": self.messages,
            "thinkingLevel": self.thinking_level,
            "model": self.model,
        }


# --------------------------------------------------------------------------------------------
# Message constructors (dist/core/messages.js)
# --------------------------------------------------------------------------------------------


def _put(out: Json, key: str, source: Json, source_key: str) -> None:
    # A missing field is `undefined` in JavaScript: the key disappears from JSON.
    if source_key in source:
        out[key] = source[source_key]


def _date_ms(value: Any, present: bool = True) -> float | None:
    if not present:
        return None  # new Date(undefined) is NaN
    return entry_time_ms(value)


def create_custom_message(entry: Json) -> Json:
    out: Json = {"role": "custom"}
    _put(out, "customType", entry, "customType")
    _put(out, "content", entry, "content")
    _put(out, "display", entry, "display")
    _put(out, "details", entry, "details")
    out["timestamp"] = _date_ms(entry.get("timestamp"), "timestamp" in entry)
    return out


def create_branch_summary_message(entry: Json) -> Json:
    out: Json = {"role": "branchSummary"}
    _put(out, "summary", entry, "summary")
    _put(out, "fromId", entry, "fromId")
    out["timestamp"] = _date_ms(entry.get("timestamp"), "timestamp" in entry)
    return out


def create_compaction_summary_message(entry: Json) -> Json:
    out: Json = {"role": "compactionSummary"}
    _put(out, "summary", entry, "summary")
    _put(out, "tokensBefore", entry, "tokensBefore")
    out["timestamp"] = _date_ms(entry.get("timestamp"), "timestamp" in entry)
    return out


def _message_of(entry: Json) -> Json | None:
    """``appendMessage`` of buildSessionContext: the message an entry contributes, if any."""
    kind = entry.get("type")
    if kind == "message":
        return entry.get("message")
    if kind == "custom_message":
        return create_custom_message(entry)
    if kind == "branch_summary" and js_truthy(entry.get("summary")):
        return create_branch_summary_message(entry)
    return None


# --------------------------------------------------------------------------------------------
# buildSessionContext
# --------------------------------------------------------------------------------------------


def _walk_path(leaf: Json, by_id: dict[str, Json]) -> list[Json]:
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


def _settings_step(entry: Json, state: list[Any]) -> None:
    """Fold one path entry into [thinkingLevel, model, compaction] as buildSessionContext does."""
    kind = entry.get("type")
    if kind == "thinking_level_change":
        state[0] = entry.get("thinkingLevel")
    elif kind == "model_change":
        model: Json = {}
        _put(model, "provider", entry, "provider")
        _put(model, "modelId", entry, "modelId")
        state[1] = model
    elif kind == "message":
        message = entry.get("message")
        if isinstance(message, dict) and message.get("role") == "assistant":
            model = {}
            _put(model, "provider", message, "provider")
            _put(model, "modelId", message, "model")
            state[1] = model
    elif kind == "compaction":
        state[2] = entry


def _messages_for_path(path: list[Json], compaction: Json | None) -> list[Json]:
    messages: list[Json] = []
    if compaction is None:
        for entry in path:
            message = _message_of(entry)
            if message is not None:
                messages.append(message)
        return messages
    messages.append(create_compaction_summary_message(compaction))
    index = next(i for i, e in enumerate(path) if e is compaction)
    first_kept = compaction.get("firstKeptEntryId", _DEFAULT)
    found = False
    for entry in path[:index]:
        if not found and "id" in entry and entry.get("id") == first_kept:
            found = True
        if found:
            message = _message_of(entry)
            if message is not None:
                messages.append(message)
    for entry in path[index + 1 :]:
        message = _message_of(entry)
        if message is not None:
            messages.append(message)
    return messages


def build_session_context(
    entries: list[Json],
    leaf_id: Any = _DEFAULT,
    by_id: dict[str, Json] | None = None,
) -> SessionContext:
    """Pi's ``buildSessionContext(entries, leafId, byId)``.

    1. ``leaf_id=None`` (explicit) gives an empty context; an omitted or unknown leaf falls back
       to the last entry.
    2. The path is walked from the leaf to the root and reversed.
    3. Thinking level, model (model changes and every assistant message) and the last compaction
       are folded over the path.
    4. Without a compaction every path entry contributes its message; with one, its summary
       comes first, then entries from ``firstKeptEntryId`` up to the compaction, then the rest.
    """
    if by_id is None:
        by_id = {}
        for entry in entries:
            by_id[entry.get("id")] = entry  # type: ignore[index]  # JS Map takes undefined too
    if leaf_id is None:
        return SessionContext([], "off", None)
    leaf = by_id.get(leaf_id) if leaf_id is not _DEFAULT and js_truthy(leaf_id) else None
    if leaf is None:
        leaf = entries[-1] if entries else None
    if leaf is None:
        return SessionContext([], "off", None)
    path = _walk_path(leaf, by_id)
    state: list[Any] = ["off", None, None]
    for entry in path:
        _settings_step(entry, state)
    return SessionContext(_messages_for_path(path, state[2]), state[0], state[1])


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
    _put(out, "timestamp", message, "timestamp")
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


def _replace_images(content: Any, placeholder: str) -> list[Any]:
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
        out["content"] = _replace_images(message["content"], placeholder)
        return out
    if role == "toolResult":
        out = dict(message)
        content = message.get("content")
        placeholder = dialect.message_texts.tool_image_placeholder
        out["content"] = _replace_images(content if content is not None else [], placeholder)
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
                _put(text_block, "text", block, "text")
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


def _first_pass(
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


class _OrphanTracker:
    """Second pass of transformMessages: skip error/aborted replies, synthesise missing results."""

    __slots__ = ("no_result_text", "pending", "result", "seen")

    def __init__(self, no_result_text: str) -> None:
        self.no_result_text = no_result_text
        self.result: list[Json] = []
        self.pending: list[Json] = []
        self.seen: set[Any] = set()

    def copy(self) -> _OrphanTracker:
        other = _OrphanTracker(self.no_result_text)
        other.result = list(self.result)
        other.pending = self.pending
        other.seen = set(self.seen)
        return other

    def synthetic(self, now_ms: Any) -> list[Json]:
        out: list[Json] = []
        for call in self.pending:
            if call.get("id") not in self.seen:
                result: Json = {"role": "toolResult"}
                _put(result, "toolCallId", call, "id")
                _put(result, "toolName", call, "name")
                result["content"] = [{"type": "text", "text": self.no_result_text}]
                result["isError"] = True
                result["timestamp"] = now_ms
                out.append(result)
        return out

    def flush(self, now_ms: Any) -> None:
        if self.pending:
            self.result.extend(self.synthetic(now_ms))
            self.pending = []
            self.seen = set()

    def push(self, message: Json, now_ms: Any) -> None:
        role = message.get("role")
        if role == "assistant":
            self.flush(now_ms)
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
            self.flush(now_ms)
            self.result.append(message)
        else:
            self.result.append(message)

    def finish(self, now_ms: Any) -> list[Json]:
        return self.result + self.synthetic(now_ms)


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
        now_ms = _latest_timestamp(messages)
    supports_images = "image" in (model.get("input") or [])
    ids = None if normalize_tool_call_id is None else _ToolCallIds(normalize_tool_call_id)
    tracker = _OrphanTracker(dialect.message_texts.no_result_text)
    for message in messages:
        tracker.push(_first_pass(message, model, supports_images, dialect, ids), now_ms)
    return tracker.finish(now_ms)


def _latest_timestamp(messages: Iterable[Json]) -> Any:
    latest: Any = None
    for message in messages:
        stamp = message.get("timestamp") if isinstance(message, dict) else None
        if not isinstance(stamp, int | float) or isinstance(stamp, bool):
            continue
        if math.isfinite(stamp) and (latest is None or stamp > latest):
            latest = stamp
    return latest


# --------------------------------------------------------------------------------------------
# Every entry as leaf, sharing work along the tree
# --------------------------------------------------------------------------------------------


@dataclass
class LeafProjection:
    leaf_id: str
    context: SessionContext
    llm: list[Json]
    sent: list[Json] | None


class _Frame:
    """Projection state after one path entry; a child starts from a copy of its parent's."""

    __slots__ = ("llm", "model_key", "raw", "state", "tracker", "transform_model")

    def __init__(self) -> None:
        self.state: list[Any] = ["off", None, None]
        self.raw: list[Json] = []
        self.llm: list[Json] = []
        self.tracker: _OrphanTracker | None = None
        self.model_key: Any = _DEFAULT
        self.transform_model: Json | None = None


def _model_key(model: Json | None) -> Any:
    return None if model is None else (model.get("provider"), model.get("modelId"))


def iter_leaf_projections(
    entries: list[Json],
    *,
    tree: SessionTree | None = None,
    with_sent: bool = True,
    now_ms: Any = None,
    dialect: Dialect = DEFAULT_DIALECT,
    catalog_lookup: Any = None,
) -> Iterator[LeafProjection]:
    """Project every entry as the leaf, in one depth-first walk of the tree.

    Yields, for each entry reachable from a root (depth first, Pi's child order), the same
    ``SessionContext`` as ``build_session_context(entries, entry_id)``, its ``convert_to_llm``
    messages and (``with_sent``) ``transform_messages`` of them for the leaf's model.

    1. A child starts from a copy of its parent's state and appends its own message (converted
       once per entry, transformed once per entry and model).
    2. A compaction rebuilds the messages from the path (as Pi does for every leaf).
    3. A change of the transform's model re-runs the transform over the leaf's messages.

    Synthetic tool results are stamped with ``now_ms``; when it is ``None``, with the newest
    message timestamp of the whole session (one stand-in for every leaf).
    """
    tree = tree or SessionTree(entries)
    if now_ms is None and with_sent:
        now_ms = _latest_timestamp(m for e in entries for m in (_message_of(e),) if m is not None)
    converted: dict[int, Json | None] = {}
    transformed: dict[tuple[int, int], Json] = {}
    # Messages built per entry, kept alive so the id()-keyed caches stay valid.
    emitted: dict[int, Json | None] = {}
    keep_alive: list[Any] = []

    def message_of(entry: Json) -> Json | None:
        key = id(entry)
        if key not in emitted:
            emitted[key] = _message_of(entry)
        return emitted[key]

    def convert(message: Json) -> Json | None:
        key = id(message)
        if key not in converted:
            keep_alive.append(message)
            converted[key] = convert_message(message, dialect)
        return converted[key]

    def first_pass(message: Json, frame: _Frame) -> Json:
        model = frame.transform_model
        assert model is not None
        key = (id(message), id(model))
        out = transformed.get(key)
        if out is None:
            out = _first_pass(message, model, "image" in (model.get("input") or []), dialect)
            transformed[key] = out
        return out

    path: list[Json] = []

    def step(parent: _Frame | None, entry: Json) -> _Frame:
        frame = _Frame()
        if parent is not None:
            frame.state = list(parent.state)
            frame.model_key = parent.model_key
            frame.transform_model = parent.transform_model
        previous_compaction = frame.state[2]
        _settings_step(entry, frame.state)
        message = message_of(entry)
        rebuilt = frame.state[2] is not previous_compaction
        if rebuilt:
            frame.raw = _messages_for_path(path, frame.state[2])
            keep_alive.append(frame.raw)
            frame.llm = [c for m in frame.raw for c in (convert(m),) if c is not None]
        else:
            frame.raw = list(parent.raw) if parent is not None else []
            frame.llm = list(parent.llm) if parent is not None else []
            if message is not None:
                frame.raw.append(message)
                converted_message = convert(message)
                if converted_message is not None:
                    frame.llm.append(converted_message)
        if not with_sent:
            return frame
        key = _model_key(frame.state[1])
        assumed = frame.transform_model is not None and frame.transform_model.get("assumed")
        if (
            key != frame.model_key
            or frame.transform_model is None
            or (
                # An assumed model takes its api from the context's messages: follow them.
                assumed
                and (rebuilt or (isinstance(message, dict) and message.get("role") == "assistant"))
            )
        ):
            resolved = model_for_transform(
                frame.state[1], messages=frame.raw, catalog_lookup=catalog_lookup
            )
            if resolved != frame.transform_model:
                frame.model_key = key
                frame.transform_model = resolved
                keep_alive.append(resolved)
                return frame  # tracker rebuilt lazily for the new model
        if rebuilt or parent is None or parent.tracker is None:
            return frame
        if message is not None and frame.llm and frame.llm[-1] is convert(message):
            tracker = parent.tracker.copy()
            tracker.push(first_pass(frame.llm[-1], frame), now_ms)
            frame.tracker = tracker
        else:
            frame.tracker = parent.tracker
        return frame

    def sent_of(frame: _Frame) -> list[Json]:
        if frame.tracker is None:
            tracker = _OrphanTracker(dialect.message_texts.no_result_text)
            for message in frame.llm:
                tracker.push(first_pass(message, frame), now_ms)
            frame.tracker = tracker
        return frame.tracker.finish(now_ms)

    stack: list[tuple[str, _Frame | None, int]] = [(r, None, 0) for r in reversed(tree.roots)]
    while stack:
        entry_id, parent_frame, depth = stack.pop()
        del path[depth:]
        entry = tree.by_id[entry_id]
        path.append(entry)
        frame = step(parent_frame, entry)
        sent = sent_of(frame) if with_sent else None
        context = SessionContext(list(frame.raw), frame.state[0], frame.state[1])
        yield LeafProjection(entry_id, context, list(frame.llm), sent)
        for child in reversed(tree.children(entry_id)):
            stack.append((child, frame, depth + 1))
