"""Pi's write side: the entries ``SessionManager`` appends and where the leaf goes.

Truth: ``dist/core/session-manager.js`` (``generateId``, ``appendCompaction``,
``branchWithSummary``, ``branch``, ``resetLeaf``, ``_appendEntry``) and
``AgentSession.navigateTree`` / ``AgentSession.compact`` in ``dist/core/agent-session.js``, of
Pi 0.80.2 (``SessionWriter``) and Pi 1.6.0 (``Pi1xSessionWriter``: the summaries carry their
reply's ``usage``, a compaction the replayed ``systemMessage``, a branch summary the leaf it left
as ``fromId``). See docs/pi-engine.md, "Writing entries".

``SessionWriter`` holds what Pi's ``SessionManager`` holds for writing (the ids taken, the leaf)
and returns each new entry with its keys in Pi's order; storing it (a file line, a database row)
is the caller's business. The engine reads neither the clock nor the session store: the
timestamp is an argument, the taken ids any container that answers ``in``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Container, Sequence
from datetime import UTC, datetime
from typing import Any, cast

from contextlab.pi.entries import BranchSummaryEntry, CompactionEntry, Json
from contextlab.pi.jsutil import entry_time_ms, js_truthy

__all__ = [
    "ENTRY_KEY_ORDER",
    "ENTRY_KEY_ORDER_1X",
    "Pi1xSessionWriter",
    "SessionWriter",
    "generate_id",
    "iso_timestamp",
    "leaf_after_navigation",
    "ordered_entry",
    "summarizer_thinking_level",
]

# The key order of the entries Pi writes (the object literals of appendCompaction and
# branchWithSummary; JSON.stringify prints keys in insertion order). Stores that do not keep
# key order (PostgreSQL's jsonb) re-apply it with ``ordered_entry``. Pi 1.6.0's: ``usage`` after
# ``details``, a compaction's ``systemMessage`` last.
ENTRY_KEY_ORDER_1X: dict[str, tuple[str, ...]] = {
    "compaction": (
        "type",
        "id",
        "parentId",
        "timestamp",
        "summary",
        "firstKeptEntryId",
        "tokensBefore",
        "details",
        "usage",
        "fromHook",
        "systemMessage",
    ),
    "branch_summary": (
        "type",
        "id",
        "parentId",
        "timestamp",
        "fromId",
        "summary",
        "details",
        "usage",
        "fromHook",
    ),
}
# Pi 0.80.2's are 1.6.0's without the keys 1.x added, so 1.6.0's order entries of either version.
_ADDED_IN_1X = frozenset({"usage", "systemMessage"})
ENTRY_KEY_ORDER: dict[str, tuple[str, ...]] = {
    kind: tuple(key for key in order if key not in _ADDED_IN_1X)
    for kind, order in ENTRY_KEY_ORDER_1X.items()
}


def _random_id() -> str:
    return str(uuid.uuid4())


def generate_id(taken: Container[str], random_uuid: Callable[[], str] = _random_id) -> str:
    """``generateId(byId)``: 8 hex chars of a random UUID not used in the session (100 tries),
    else a whole UUID."""
    for _ in range(100):
        candidate = random_uuid()[:8]
        if candidate not in taken:
            return candidate
    return random_uuid()


def iso_timestamp(moment: datetime) -> str:
    """``new Date().toISOString()`` of ``moment``: UTC, milliseconds, ``Z``."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def ordered_entry(data: Json) -> Json:
    """``data`` with the keys Pi writes for its type in Pi's order, any others after them."""
    order = ENTRY_KEY_ORDER_1X.get(data.get("type", ""))
    if order is None:
        return data
    ordered = {key: data[key] for key in order if key in data}
    ordered.update({k: v for k, v in data.items() if k not in ordered})
    return ordered


def leaf_after_navigation(target: Json) -> str | None:
    """Where ``navigateTree`` puts the leaf when the user picks ``target`` in the tree.

    A user message or a custom message sends its text back to the editor, so the leaf is its
    parent (None: before the first entry); any other entry becomes the leaf itself.
    """
    message = target.get("message")
    is_user = (
        target.get("type") == "message"
        and isinstance(message, dict)
        and message.get("role") == "user"
    )
    if is_user or target.get("type") == "custom_message":
        parent = target.get("parentId")
        return parent if isinstance(parent, str) else None
    target_id = target.get("id")
    return target_id if isinstance(target_id, str) else None


def summarizer_thinking_level(path: Sequence[Json]) -> str | None:
    """The thinking level ``AgentSession.compact`` hands the summariser: the session's (the
    last ``thinking_level_change`` on the path), None when it is off or unset."""
    level: Any = None
    for entry in path:
        if entry.get("type") == "thinking_level_change":
            level = entry.get("thinkingLevel")
    return level if js_truthy(level) and level != "off" else None


class SessionWriter:
    """What ``SessionManager`` does when it appends: a fresh id, the current leaf as parent,
    the leaf moved to the new entry. ``taken`` answers whether an id is in the session; the ids
    this writer hands out are added to it only through the caller's store."""

    def __init__(
        self,
        taken: Container[str],
        leaf_id: str | None,
        *,
        random_uuid: Callable[[], str] = _random_id,
    ) -> None:
        self.taken = taken
        self.leaf_id = leaf_id
        self._random_uuid = random_uuid
        self._new: set[str] = set()

    def __contains__(self, entry_id: object) -> bool:
        """Whether ``entry_id`` is taken: in the session, or handed out by this writer."""
        return entry_id in self._new or entry_id in self.taken

    def _new_id(self) -> str:
        entry_id = generate_id(self, self._random_uuid)
        self._new.add(entry_id)
        return entry_id

    def branch(self, entry_id: str | None) -> None:
        """``branch(id)`` (or ``resetLeaf()`` for None): the next entry is a child of it."""
        self.leaf_id = entry_id

    def append_compaction(
        self,
        *,
        timestamp: str,
        summary: str,
        first_kept_entry_id: str,
        tokens_before: int | float,
        details: Any = None,
        from_hook: bool = False,
    ) -> CompactionEntry:
        """``appendCompaction``: a child of the leaf, which then moves to it.

        Pi writes ``fromHook: false`` (not omitted) for a summary it generated itself.
        """
        entry: CompactionEntry = {
            "type": "compaction",
            "id": self._new_id(),
            "parentId": self.leaf_id,
            "timestamp": timestamp,
            "summary": summary,
            "firstKeptEntryId": first_kept_entry_id,
            "tokensBefore": tokens_before,
            "details": details,
            "fromHook": from_hook,
        }
        self.leaf_id = entry["id"]
        return entry

    def branch_with_summary(
        self,
        branch_from_id: str | None,
        *,
        timestamp: str,
        summary: str,
        details: Any = None,
        from_hook: bool = False,
    ) -> BranchSummaryEntry:
        """``branchWithSummary``: the leaf goes to ``branch_from_id`` (None: the root), the summary
        is appended there (``fromId`` ``"root"`` for None) and becomes the leaf."""
        self.branch(branch_from_id)
        entry: BranchSummaryEntry = {
            "type": "branch_summary",
            "id": self._new_id(),
            "parentId": branch_from_id,
            "timestamp": timestamp,
            "fromId": branch_from_id if branch_from_id is not None else "root",
            "summary": summary,
            "details": details,
            "fromHook": from_hook,
        }
        self.leaf_id = entry["id"]
        return entry


class Pi1xSessionWriter(SessionWriter):
    """Pi 1.6.0's ``SessionManager`` appends: as Pi 0.80.2's, and

    - a compaction carries ``usage`` (the summary replies', omitted when there was none) and
      ``systemMessage``: the system state replayed at the leaf (``getCurrentSystemMessage``),
      stamped with the compaction's own time;
    - a branch summary carries ``usage`` and names as ``fromId`` the leaf it was written from
      (this writer's leaf before it branches), not the entry it is attached to.
    """

    def append_compaction(
        self,
        *,
        timestamp: str,
        summary: str,
        first_kept_entry_id: str,
        tokens_before: int | float,
        details: Any = None,
        from_hook: bool = False,
        usage: Json | None = None,
        system_message: Json | None = None,
    ) -> CompactionEntry:
        entry = super().append_compaction(
            timestamp=timestamp,
            summary=summary,
            first_kept_entry_id=first_kept_entry_id,
            tokens_before=tokens_before,
            details=details,
            from_hook=from_hook,
        )
        if usage is not None:
            entry["usage"] = usage
        if system_message is not None:
            # {...systemMessage, timestamp: new Date(timestamp).getTime()}: the key keeps its place.
            stamp = entry_time_ms(timestamp)
            entry["systemMessage"] = {
                **system_message,
                "timestamp": int(stamp) if stamp is not None else None,
            }
        return cast(CompactionEntry, ordered_entry(dict(entry)))

    def branch_with_summary(
        self,
        branch_from_id: str | None,
        *,
        timestamp: str,
        summary: str,
        details: Any = None,
        from_hook: bool = False,
        usage: Json | None = None,
    ) -> BranchSummaryEntry:
        from_id = self.leaf_id if self.leaf_id is not None else "root"
        entry = super().branch_with_summary(
            branch_from_id,
            timestamp=timestamp,
            summary=summary,
            details=details,
            from_hook=from_hook,
        )
        entry["fromId"] = from_id
        if usage is not None:
            entry["usage"] = usage
        return cast(BranchSummaryEntry, ordered_entry(dict(entry)))
