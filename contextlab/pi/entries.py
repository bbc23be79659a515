"""Session entries: the one ``Json`` type, typed entry shapes, and the message of an entry.

Truth: ``dist/core/session-manager.js`` (the entry types ``SessionManager`` writes,
``buildSessionContext``'s ``appendMessage``), ``dist/core/messages.js`` (``createCustomMessage``,
``createBranchSummaryMessage``, ``createCompactionSummaryMessage``),
``dist/core/compaction/compaction.js`` and ``dist/core/compaction/branch-summarization.js``
(their ``getMessageFromEntry``). See docs/pi-engine.md, "Entries and their messages".

Pi has three slightly different answers to "which message does this entry contribute" (the
context, compaction and branch summarisation each have their own); ``message_of_entry`` holds all
of them behind one ``rule`` argument so that no module keeps its own copy.

Values JavaScript would hold as ``undefined`` are represented by an absent key (``JSON.stringify``
drops them).
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from contextlab.pi.jsutil import entry_date_ms, js_truthy

__all__ = [
    "EMITTING_TYPES",
    "BranchSummaryEntry",
    "CompactionEntry",
    "CustomMessageEntry",
    "Json",
    "MessageEntry",
    "MessageRule",
    "ModelChangeEntry",
    "SessionHeader",
    "ThinkingLevelChangeEntry",
    "create_branch_summary_message",
    "create_compaction_summary_message",
    "create_custom_message",
    "message_of_entry",
]

# A JSON object as Pi reads and writes it: entries, messages, content blocks, request bodies.
# Entries stay plain dicts (a session file may hold any field, and every one is kept); the
# TypedDicts below document the fields the engine reads.
Json = dict[str, Any]


class SessionHeader(TypedDict):
    type: Literal["session"]
    id: str
    version: NotRequired[int]
    timestamp: NotRequired[str]
    cwd: NotRequired[str]
    parentSession: NotRequired[str]


class _EntryBase(TypedDict):
    id: str
    parentId: str | None
    timestamp: str


class MessageEntry(_EntryBase):
    type: Literal["message"]
    message: Json  # an AgentMessage: user, assistant, toolResult, bashExecution, custom ...


class CustomMessageEntry(_EntryBase):
    type: Literal["custom_message"]
    customType: str
    content: str | list[Json]
    display: bool
    details: NotRequired[Any]


class CompactionEntry(_EntryBase):
    type: Literal["compaction"]
    summary: str
    firstKeptEntryId: str
    tokensBefore: int | float
    details: NotRequired[Any]
    usage: NotRequired[Json]  # Pi 1.x: the summary replies' usage
    fromHook: NotRequired[bool]
    systemMessage: NotRequired[Json]  # Pi 1.x: the replayed system state at the cut


class BranchSummaryEntry(_EntryBase):
    type: Literal["branch_summary"]
    fromId: str
    summary: str
    details: NotRequired[Any]
    usage: NotRequired[Json]  # Pi 1.x: the summary reply's usage
    fromHook: NotRequired[bool]


class ThinkingLevelChangeEntry(_EntryBase):
    type: Literal["thinking_level_change"]
    thinkingLevel: str


class ModelChangeEntry(_EntryBase):
    type: Literal["model_change"]
    provider: str
    modelId: str


# --------------------------------------------------------------------------------------------
# Message constructors (dist/core/messages.js)
# --------------------------------------------------------------------------------------------


def put(out: Json, key: str, source: Json, source_key: str) -> None:
    """``out[key] = source[source_key]`` where JavaScript's would not be ``undefined``."""
    if source_key in source:
        out[key] = source[source_key]


def create_custom_message(entry: Json) -> Json:
    out: Json = {"role": "custom"}
    put(out, "customType", entry, "customType")
    put(out, "content", entry, "content")
    put(out, "display", entry, "display")
    put(out, "details", entry, "details")
    out["timestamp"] = entry_date_ms(entry)
    return out


def create_branch_summary_message(entry: Json) -> Json:
    out: Json = {"role": "branchSummary"}
    put(out, "summary", entry, "summary")
    put(out, "fromId", entry, "fromId")
    out["timestamp"] = entry_date_ms(entry)
    return out


def create_compaction_summary_message(entry: Json) -> Json:
    out: Json = {"role": "compactionSummary"}
    put(out, "summary", entry, "summary")
    put(out, "tokensBefore", entry, "tokensBefore")
    out["timestamp"] = entry_date_ms(entry)
    return out


# --------------------------------------------------------------------------------------------
# The message of an entry
# --------------------------------------------------------------------------------------------

# - "context": buildSessionContext's appendMessage (session-manager.js): a branch summary only
#   with a truthy summary; a compaction never (its summary is placed by the projection itself).
# - "compaction": compaction.js getMessageFromEntryForCompaction: every branch summary, no
#   compaction (older summaries reach a compaction as its previousSummary).
# - "branch_summary": branch-summarization.js getMessageFromEntry: compactions too, tool results
#   skipped (their context is in the assistant's tool call).
# - "estimate": what an entry adds to a context wherever it is emitted (the "context" rule, and
#   a compaction as its summary message): the per-entry token figure of the library and chart.
MessageRule = Literal["context", "compaction", "branch_summary", "estimate"]

# The entry types that may contribute a message to a context under the "context" rule (a
# branch summary only with a summary): what a projection keeps or a compaction replaces.
EMITTING_TYPES = frozenset({"message", "custom_message", "branch_summary"})


def message_of_entry(entry: Json, rule: MessageRule = "context") -> Json | None:
    """The AgentMessage ``entry`` contributes under Pi's ``rule`` (see ``MessageRule``), or None."""
    kind = entry.get("type")
    if kind == "message":
        # Pi pushes whatever the entry holds; only the estimate needs an object.
        message: Json | None = entry.get("message")
        if rule == "branch_summary" and isinstance(message, dict):
            return None if message.get("role") == "toolResult" else message
        if rule == "estimate" and not isinstance(message, dict):
            return None
        return message
    if kind == "custom_message":
        return create_custom_message(entry)
    if kind == "branch_summary":
        if rule in ("context", "estimate") and not js_truthy(entry.get("summary")):
            return None
        return create_branch_summary_message(entry)
    if kind == "compaction" and rule in ("branch_summary", "estimate"):
        return create_compaction_summary_message(entry)
    return None
