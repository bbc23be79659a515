"""Pi 1.x (npm @earendil-works/pi-coding-agent@1.6.0; 1.0.3 to 1.5.2 differ only as
docs/pi-dialects.md records): the prompt persisted in the session as ``system`` messages.

Ported from ``dist/core/session-manager.js`` (``buildSessionProjection``, ``projectContextEntry``,
``buildContextEntries``) and ``dist/core/messages.js`` (``convertToLlm``); MIT licence, (c) Mario
Zechner / Earendil Works. pi-ai's ``maxTokens`` clamp and estimate (``clamp_max_tokens``,
``estimate_context_tokens``) are ``contextlab.pi.providers.options``', re-exported here.

Everything a 1.x request holds comes from the session file: the prompt and tool declarations are
the replay of the system messages on the projected path, ``context_edit`` entries rewrite or omit
messages, and a compaction restarts the projection at ``[systemMessage, summary, kept...]``. Only
the model's limits (context window, maxTokens) come from outside (the catalogue or the caller).

    projection = build_session_projection(entries, leaf_id)
    llm = convert_to_llm(projection.messages)

The request itself (prompt, tools, sent messages, maxTokens, body) is built by
``contextlab.pi.request.build_request`` with this dialect's steps (``pi_1_x_request``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from contextlab.pi import context as pi_context
from contextlab.pi.context import (
    create_branch_summary_message,
    create_compaction_summary_message,
    create_custom_message,
    session_path,
)
from contextlab.pi.dialects.pi_0_80 import PI_0_80, dialect_texts
from contextlab.pi.dialects.release_table import ReleaseTexts
from contextlab.pi.entries import Json
from contextlab.pi.jsutil import js_truthy
from contextlab.pi.providers import openai_completions
from contextlab.pi.providers.options import clamp_max_tokens, estimate_context_tokens
from contextlab.pi.providers.pi_ai import PiAi, resolve
from contextlab.pi.providers.transcript import (
    collapse_system_messages,
    content_text,
    current_system_message,
    current_tools,
    system_message_text,
    transform_messages,
)
from contextlab.pi.session import SessionTree

__all__ = [
    "Projection",
    "PromptSection",
    "build_session_projection",
    "clamp_max_tokens",
    "convert_to_llm",
    "current_system_message",
    "current_tools",
    "estimate_context_tokens",
    "is_system_message_entry",
    "iter_leaf_projections_1x",
    "length_stopped_tool_call_text",
    "message_for_display",
    "named_changes",
    "projection_of_path",
    "prompt_patch_changes",
    "prompt_sections",
    "sent_messages",
    "summary_rejected_text",
    "system_message_text",
    "tool_origins",
]

# Pi 1.6.0's texts, from the release table (releases_data.py).
data = ReleaseTexts("1.6.0")
LENGTH_STOPPED_TOOL_CALL_OPEN = data.LENGTH_STOPPED_TOOL_CALL_OPEN
LENGTH_STOPPED_TOOL_CALL_CLOSE = data.LENGTH_STOPPED_TOOL_CALL_CLOSE
SUMMARY_TOKEN_CAP_SUFFIX = data.SUMMARY_TOKEN_CAP_SUFFIX

_DEFAULT: Any = object()


def length_stopped_tool_call_text(tool_name: str) -> str:
    """The error result Pi 1.x (pi-agent-core's agent loop) gives each tool call of a reply that
    stopped on ``length``: the call is not executed."""
    return LENGTH_STOPPED_TOOL_CALL_OPEN + tool_name + LENGTH_STOPPED_TOOL_CALL_CLOSE


def summary_rejected_text(label: str) -> str:
    """The error of a summary that stopped on ``length`` (no entry is written); ``label`` is e.g.
    "Summarization" or "Turn prefix summarization"."""
    return label + SUMMARY_TOKEN_CAP_SUFFIX


def is_system_message_entry(entry: Mapping[str, Any]) -> bool:
    message = entry.get("message")
    return (
        entry.get("type") == "message"
        and isinstance(message, dict)
        and message.get("role") == "system"
    )


# --- buildSessionProjection (dist/core/session-manager.js) ------------------------------------


def _context_settings(path: Iterable[Json]) -> tuple[Any, Json | None]:
    """``getSessionContextSettings``: the thinking level and model, folded as in 0.80."""
    state: list[Any] = ["off", None, None]
    for entry in path:
        pi_context.settings_step(entry, state)
    return state[0], state[1]


def context_entries(path: list[Json]) -> list[Json]:
    """``buildContextEntries``: after the latest compaction on the path, the compaction itself,
    the kept entries from ``firstKeptEntryId`` (system messages before the cut skipped: the
    compaction's ``systemMessage`` replaces them), then everything after it."""
    compaction = None
    for entry in path:
        if entry.get("type") == "compaction":
            compaction = entry
    if compaction is None:
        return path
    index = next(i for i, e in enumerate(path) if e is compaction)
    out = [compaction]
    found = False
    for entry in path[:index]:
        if entry.get("id") == compaction.get("firstKeptEntryId"):
            found = True
        if found and not is_system_message_entry(entry):
            out.append(entry)
    out.extend(path[index + 1 :])
    return out


def entry_messages(entry: Json) -> list[Json]:
    """``sessionEntryToContextMessages``."""
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if not isinstance(message, dict):
            return []
        role = message.get("role")
        if role == "system" and message.get("content") is None:
            return [{**message, "content": ""}]
        if role in ("user", "assistant", "toolResult") and message.get("content") is None:
            return [{**message, "content": []}]
        return [message]
    if kind == "custom_message":
        custom = dict(entry)
        if custom.get("content") is None:
            custom["content"] = []
        return [create_custom_message(custom)]
    if kind == "branch_summary" and js_truthy(entry.get("summary")):
        return [create_branch_summary_message(entry)]
    if kind == "compaction":
        summary = create_compaction_summary_message(entry)
        system = entry.get("systemMessage")
        return [system, summary] if isinstance(system, dict) else [summary]
    return []


def project_entry(entry: Json, edit: Json | None) -> list[Json]:
    """``projectContextEntry``: the entry's messages with its latest context edit applied."""
    messages = entry_messages(entry)
    if edit is None:
        return messages
    replacement = edit.get("replacement")
    if replacement is None:
        return []
    out = []
    for message in messages:
        role = message.get("role")
        if role not in ("user", "assistant", "toolResult", "custom"):
            out.append(message)
            continue
        content = replacement.get("content") if isinstance(replacement, dict) else None
        if role in ("assistant", "toolResult") and isinstance(content, str):
            content = [{"type": "text", "text": content}]
        out.append({**message, "content": content})
    return out


@dataclass
class Projection:
    """``buildSessionProjection``: per context entry its messages, and the flat list."""

    entries: list[tuple[Json, list[Json]]]
    messages: list[Json]
    thinking_level: Any = "off"
    model: Json | None = None
    # Entry id -> the context_edit entry that applies to it (latest on the context entries).
    edits: dict[Any, Json] = field(default_factory=dict)


def build_session_projection(
    entries: Sequence[Json], leaf_id: Any = _DEFAULT, by_id: Mapping[Any, Json] | None = None
) -> Projection:
    if by_id is None:
        by_id = {e.get("id"): e for e in entries}
    return projection_of_path(
        session_path(entries, leaf_id, by_id) if leaf_id is not _DEFAULT else session_path(entries)
    )


def projection_of_path(path: list[Json]) -> Projection:
    """``buildSessionProjection`` of an already walked path (root first)."""
    thinking, model = _context_settings(path)
    chosen = context_entries(path)
    edits: dict[Any, Json] = {}
    for entry in chosen:
        if entry.get("type") == "context_edit":
            edits[entry.get("targetId")] = entry
    projected: list[tuple[Json, list[Json]]] = []
    for index, entry in enumerate(chosen):
        if entry.get("type") == "compaction" and index > 0:
            projected.append((entry, []))
        else:
            projected.append((entry, project_entry(entry, edits.get(entry.get("id")))))
    messages = [m for _, ms in projected for m in ms]
    return Projection(projected, messages, thinking, model, edits)


# --- convertToLlm (dist/core/messages.js) ----------------------------------------------------


# Pi 1.x's fixed texts where they differ from 0.80's (wrappers, summary prompts); the tools and
# the prompt are the session's own. ``pi_1_x_request`` adds the request steps to it.
TEXTS_1X = replace(
    PI_0_80,
    version="1.x",
    **dialect_texts(data),
    tools=(),
    default_active_tools=(),
    prompt=None,
)


def convert_message(message: Any) -> Json | None:
    """Pi 1.x's ``convertToLlm`` of one message: 0.80's, with 1.x's wrappers, and system
    messages passed through."""
    if isinstance(message, dict) and message.get("role") == "system":
        return message
    return pi_context.convert_message(message, TEXTS_1X)


def convert_to_llm(messages: Iterable[Any]) -> list[Json]:
    """Pi 1.x ``convertToLlm``: as 0.80.2, and system messages pass through."""
    return [c for c in (convert_message(m) for m in messages) if c is not None]


# --- the context command's view of a 1.x turn -----------------------------------------------


def message_for_display(message: Json) -> Json:
    """A converted message as the ``context`` command prints it: a system message keeps its
    content and sections, and names the tools it adds or removes (``tools`` holds them in full)."""
    if message.get("role") != "system":
        return message
    out = dict(message)
    for key in ("toolsAdded", "toolsRemoved"):
        if key in out:
            out[key] = [t.get("name") for t in out[key] or [] if isinstance(t, dict)]
    return out


def sent_messages(
    messages: Sequence[Json], model: Mapping[str, Any], variant: PiAi | str = "1.6"
) -> list[Json]:
    """What pi-ai hands to the provider besides the prompt and tools: the transcript with its
    system messages collapsed into the leading one (dropped here: ``systemPrompt``/``tools`` show
    it) after ``transformMessages`` (ids as the openai-completions provider normalises them)."""
    pi_ai = resolve(variant)
    transformed = transform_messages(
        collapse_system_messages(messages),
        model,
        pi_ai,
        lambda id_: openai_completions.normalize_tool_call_id(id_, model, pi_ai),
    )
    return [m for m in transformed if m.get("role") != "system"]


# --- every entry as leaf, sharing work along the tree ---------------------------------------


@dataclass
class LeafProjection1x:
    """One leaf's 1.x projection: ``convertToLlm`` messages and the replayed prompt and tools."""

    leaf_id: Any
    messages: list[Json]
    thinking_level: Any
    model: Json | None
    system_prompt: str
    tools: list[Json]


class _Frame1x:
    __slots__ = (
        "edits",
        "llm",
        "model",
        "prompt",
        "sections",
        "system_content",
        "thinking",
        "tools",
    )

    def __init__(self) -> None:
        self.thinking: Any = "off"
        self.model: Json | None = None
        self.llm: list[Json] = []
        self.edits: dict[Any, Json] = {}
        self.system_content: list[str] = []
        self.sections: dict[str, Any] = {}
        self.tools: dict[Any, Json] = {}
        self.prompt = ""


def _replay_into(frame: _Frame1x, message: Mapping[str, Any]) -> None:
    text = content_text(message.get("content", ""))
    if text:
        frame.system_content = [*frame.system_content, text]
    sections = message.get("sections") or {}
    if sections:
        frame.sections = dict(frame.sections)
        for name, value in sections.items():
            if value is None:
                frame.sections.pop(name, None)
            else:
                frame.sections[name] = value
    if message.get("toolsRemoved") or message.get("toolsAdded"):
        frame.tools = dict(frame.tools)
        for tool in message.get("toolsRemoved") or []:
            frame.tools.pop(tool.get("name"), None)
        for tool in message.get("toolsAdded") or []:
            frame.tools[tool.get("name")] = tool
    parts = ["\n\n".join(frame.system_content), *frame.sections.values()]
    frame.prompt = "\n\n".join(p for p in parts if p)


def iter_leaf_projections_1x(
    entries: Sequence[Json], tree: Any = None
) -> Iterator[LeafProjection1x]:
    """Every entry as leaf, in one depth-first walk (``SessionTree`` order), each equal to
    ``build_session_projection`` + ``convert_to_llm`` + the system replay at that leaf.

    A child starts from its parent's state and appends its own messages; an entry that changes
    earlier messages (a compaction, a context edit) rebuilds the leaf's projection from the path,
    as Pi does for every leaf.
    """
    tree = tree or SessionTree(entries)
    by_id = tree.by_id
    converted: dict[int, Json | None] = {}

    def convert(message: Json) -> Json | None:
        key = id(message)
        if key not in converted:
            converted[key] = convert_message(message)
        return converted[key]

    def append(frame: _Frame1x, messages: Iterable[Json]) -> None:
        for message in messages:
            llm = convert(message)
            if llm is None:
                continue
            frame.llm.append(llm)
            if llm.get("role") == "system":
                _replay_into(frame, llm)

    def rebuild(entry_id: Any) -> _Frame1x:
        frame = _Frame1x()
        projection = build_session_projection(entries, entry_id, by_id)
        frame.thinking, frame.model = projection.thinking_level, projection.model
        frame.edits = projection.edits
        append(frame, projection.messages)
        return frame

    def step(parent: _Frame1x | None, entry: Json) -> _Frame1x:
        kind = entry.get("type")
        if parent is None or kind == "compaction" or kind == "context_edit":
            return rebuild(entry.get("id"))
        frame = _Frame1x()
        frame.thinking, frame.model = parent.thinking, parent.model
        frame.edits = parent.edits
        frame.system_content, frame.sections = parent.system_content, parent.sections
        frame.tools, frame.prompt = parent.tools, parent.prompt
        frame.llm = list(parent.llm)
        state = [frame.thinking, frame.model, None]
        pi_context.settings_step(entry, state)
        frame.thinking, frame.model = state[0], state[1]
        edit = frame.edits.get(entry.get("id"))
        append(frame, entry_messages(entry) if edit is None else project_entry(entry, edit))
        return frame

    stack: list[tuple[Any, _Frame1x | None]] = [(r, None) for r in reversed(tree.roots)]
    while stack:
        entry_id, parent = stack.pop()
        entry = by_id[entry_id]
        frame = step(parent, entry)
        yield LeafProjection1x(
            entry_id,
            list(frame.llm),
            frame.thinking,
            frame.model,
            frame.prompt,
            list(frame.tools.values()),
        )
        for child in reversed(tree.children(entry_id)):
            stack.append((child, frame))


def named_changes(before: Mapping[Any, Any], after: Mapping[Any, Any]) -> list[dict[str, Any]]:
    """What changed from ``before`` to ``after`` by name (prompt sections, tools): each as
    ``{"name", "change": "added" | "changed" | "removed", "value"}``, added and changed in
    ``after``'s order, then removed in ``before``'s."""
    out: list[dict[str, Any]] = []
    for name, value in after.items():
        if name not in before:
            out.append({"name": name, "change": "added", "value": value})
        elif before[name] != value:
            out.append({"name": name, "change": "changed", "value": value})
    out.extend(
        {"name": name, "change": "removed", "value": value}
        for name, value in before.items()
        if name not in after
    )
    return out


def prompt_patch_changes(
    before: _Frame1x | None, message: Mapping[str, Any]
) -> tuple[_Frame1x, list[dict[str, Any]], list[dict[str, Any]]]:
    """The system state after the system message ``message`` is replayed onto ``before`` (None:
    the first on the path), with the sections and the tools it changed (``named_changes``)."""
    frame = _Frame1x()
    if before is not None:
        frame.system_content, frame.sections = before.system_content, before.sections
        frame.tools, frame.prompt = before.tools, before.prompt
    _replay_into(frame, message)
    old_sections: Mapping[str, Any] = before.sections if before is not None else {}
    old_tools: Mapping[Any, Json] = before.tools if before is not None else {}
    sections = named_changes(old_sections, frame.sections)
    text = content_text(message.get("content", ""))
    if text:  # appended to the prompt's content: a part without a name
        sections.insert(0, {"name": "", "change": "added", "value": text})
    return frame, sections, named_changes(old_tools, frame.tools)


# --- where each part of the prompt came from ------------------------------------------------


@dataclass(frozen=True)
class PromptSection:
    """One part of a replayed 1.x prompt and the entry that last set it (a system message entry,
    or the compaction whose ``systemMessage`` carried it)."""

    name: str  # a section name, or "" for appended ``content``
    text: str
    entry_id: Any


def prompt_sections(projection: Projection) -> list[PromptSection]:
    """The parts of the prompt ``system_message_text(current_system_message(...))`` joins, in its
    order (content first, then sections in first-seen order), each with its origin."""
    content: list[PromptSection] = []
    sections: dict[str, PromptSection] = {}
    for entry, messages in projection.entries:
        for message in messages:
            if message.get("role") != "system":
                continue
            text = content_text(message.get("content", ""))
            if text:
                content.append(PromptSection("", text, entry.get("id")))
            for name, value in (message.get("sections") or {}).items():
                if value is None:
                    sections.pop(name, None)
                else:
                    # A patched name keeps its place (a dict keeps insertion order).
                    sections[name] = PromptSection(name, value, entry.get("id"))
    return [*content, *sections.values()]


def tool_origins(projection: Projection) -> dict[Any, Any]:
    """Tool name -> the entry whose system message last declared it (current tools only)."""
    origins: dict[Any, Any] = {}
    for entry, messages in projection.entries:
        for message in messages:
            if message.get("role") != "system":
                continue
            for tool in message.get("toolsRemoved") or []:
                origins.pop(tool.get("name"), None)
            for tool in message.get("toolsAdded") or []:
                origins[tool.get("name")] = entry.get("id")
    return origins
