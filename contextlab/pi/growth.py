"""The size of every request along a path, in each turn's dialect, from per-entry figures.

The dashboard's context-growth chart must draw a 20k-entry path in a few tens of milliseconds, so
it cannot build the request at every leaf. ``request_estimates`` walks the path once with the
per-entry estimate the library stores for every entry (``message_of_entry(entry, "estimate")``
counted by Pi's ``estimateTokens``) and applies the rules of ``contextlab.pi.held``: a request is
the context at the entry before each assistant reply, and after a compaction it holds the
compaction's summary, its kept range and what follows. Each request's dialect is told as
``contextlab.pi.dialects.detect`` tells it (Pi 1.x from the first entry only 1.x writes, or the
caller's choice); a Pi 1.x request also counts what 1.x adds:

* system messages, by the 1.x estimate (their sections and the tools they declare; Pi 0.x counts
  a system message as nothing);
* a compaction's ``systemMessage`` with its summary (and the system messages it replaced in the
  kept range left out);
* ``context_edit`` entries: from the edit on, its target counts as edited (0 when omitted).

Every other message counts the same in both dialects (their ``estimateTokens`` agree), so the
caller reads whole only the entries ``needs_whole`` names and gives them to ``path_entry``.

    steps = [path_entry(i, type_, role, stored_tokens, whole=..., target=...) for ...]
    for estimate in request_estimates(steps, chosen=profile_dialect):
        estimate.leaf, estimate.tokens, estimate.choice.dialect
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from contextlab.pi.dialects import pi_1_x
from contextlab.pi.dialects.detect import DialectChoice, choice_for, is_1x_entry
from contextlab.pi.dialects.pi_1_x_request import PI_1_X
from contextlab.pi.entries import EMITTING_TYPES, Json, create_compaction_summary_message
from contextlab.pi.held import is_reply, kept_start
from contextlab.pi.request import steps_of

__all__ = [
    "WHOLE_TYPES",
    "PathEntry",
    "RequestEstimate",
    "edit_target",
    "needs_whole",
    "path_entry",
    "request_estimates",
]


class PathEntry(NamedTuple):
    """What ``request_estimates`` needs of one path entry (a tuple: a chart makes one per entry
    of a 20k-entry path)."""

    id: str
    type: str
    role: str  # a message entry's message role, else ""
    tokens: int  # estimateTokens of its message under the "estimate" rule (0: none)
    first_kept: str | None = None  # a compaction's firstKeptEntryId
    # Pi 1.x, where it counts the entry otherwise (``path_entry`` sets them): a system message's
    # or a compaction's own estimate (systemMessage + summary); whether only 1.x writes it.
    tokens_1x: int | None = None
    marks_1x: bool = False
    # A context_edit: its target and what the target's messages count once edited (0: omitted).
    edit_target: str | None = None
    edited_tokens: int = 0


class RequestEstimate(NamedTuple):
    leaf: str  # the request's leaf: the entry before the reply
    reply: str | None  # the assistant message that answered it (None: not sent yet)
    tokens: int  # the sum of estimateTokens over the messages the request held
    # The compaction that came into force since the previous request: (its id, the estimate
    # of the context it left).
    compaction: tuple[str, int] | None = None
    # Which dialect the request is read in, and why.
    choice: DialectChoice | None = None


# The entries Pi 1.x counts otherwise: ``needs_whole``.
WHOLE_TYPES = frozenset({"compaction", "context_edit"})


def needs_whole(entry_type: str, role: str) -> bool:
    """Whether ``path_entry`` needs the whole entry: those Pi 1.x counts otherwise (a type of
    ``WHOLE_TYPES``, or a system message)."""
    return entry_type in WHOLE_TYPES or (entry_type == "message" and role == "system")


def edit_target(entry: Json) -> Any:
    """A context_edit's target (the entry ``path_entry`` also needs whole), else None."""
    return entry.get("targetId") if entry.get("type") == "context_edit" else None


def _estimate_1x(messages: Sequence[Json]) -> int:
    estimate = steps_of(PI_1_X).estimate_tokens
    return int(sum(estimate(m) for m in messages))


def path_entry(
    entry_id: str,
    entry_type: str,
    role: str,
    tokens: int,
    *,
    whole: Json | None = None,
    target: Json | None = None,
) -> PathEntry:
    """One path entry's facts: its stored per-entry estimate, and for an entry ``needs_whole``
    names, what Pi 1.x counts of it (``whole``: the entry; ``target``: a context_edit's target)."""
    if whole is None:
        return PathEntry(entry_id, entry_type, role, tokens)
    first_kept = whole.get("firstKeptEntryId") if entry_type == "compaction" else None
    if not isinstance(first_kept, str):
        first_kept = None
    tokens_1x = None
    if entry_type == "compaction":
        summary = create_compaction_summary_message(whole)
        system = whole.get("systemMessage")
        tokens_1x = _estimate_1x([system, summary] if isinstance(system, dict) else [summary])
    elif entry_type == "message" and role == "system":
        tokens_1x = _estimate_1x(pi_1_x.entry_messages(whole))
    target_id = edit_target(whole)
    edited = 0
    if target is not None:
        edited = _estimate_1x(pi_1_x.project_entry(target, whole))
    return PathEntry(
        entry_id,
        entry_type,
        role,
        tokens,
        first_kept,
        tokens_1x,
        is_1x_entry(whole),
        target_id if isinstance(target_id, str) else None,
        edited,
    )


class _Totals:
    """The size of the context so far, by Pi 0.x's rules and by Pi 1.x's."""

    def __init__(self, path: Sequence[PathEntry]) -> None:
        self.zero = 0
        self.one = 0
        self.targets = {e.edit_target for e in path if e.edit_target is not None}
        # 1.x: target -> the edit in force; a held target -> what it counts now.
        self.edits: dict[str, PathEntry] = {}
        self.counted: dict[str, int] = {}

    def _one_of(self, entry: PathEntry) -> int:
        edit = self.edits.get(entry.id)
        if edit is not None:
            return edit.edited_tokens
        return entry.tokens_1x if entry.tokens_1x is not None else entry.tokens

    def add(self, entry: PathEntry) -> None:
        if entry.type in EMITTING_TYPES:
            self.zero += entry.tokens
            if entry.tokens_1x is None and not self.targets:
                self.one += entry.tokens  # nothing edits it, and 1.x counts it alike
                return
            counted = self._one_of(entry)
            if entry.id in self.targets:
                self.counted[entry.id] = counted
            self.one += counted
        elif entry.type == "context_edit" and entry.edit_target is not None:
            self.edits[entry.edit_target] = entry
            if entry.edit_target in self.counted:
                self.one += entry.edited_tokens - self.counted[entry.edit_target]
                self.counted[entry.edit_target] = entry.edited_tokens

    def compact(self, compaction: PathEntry, kept: Sequence[PathEntry]) -> None:
        """A compaction came into force: its summary (1.x: and systemMessage), the kept range
        (1.x: its edits applied, its system messages replaced by the compaction's)."""
        self.zero = compaction.tokens + sum(e.tokens for e in kept if e.type in EMITTING_TYPES)
        self.edits = {}
        self.counted = {}
        for entry in kept:
            if entry.type == "context_edit" and entry.edit_target is not None:
                self.edits[entry.edit_target] = entry
        one = self._one_of(compaction)
        if compaction.id in self.targets:
            self.counted[compaction.id] = one
        for entry in kept:
            if entry.type not in EMITTING_TYPES or entry.role == "system":
                continue
            counted = self._one_of(entry)
            if entry.id in self.targets:
                self.counted[entry.id] = counted
            one += counted
        self.one = one

    def of(self, choice: DialectChoice) -> int:
        return self.one if choice.dialect == "1.x" else self.zero


def request_estimates(
    path: Sequence[PathEntry], *, chosen: str | None = None
) -> list[RequestEstimate]:
    """The estimated size of every request along ``path`` (root first), in one pass.

    A request is the context at the entry before each assistant message (Pi always asked the
    model with that leaf); a compaction with no reply after it ends the list with the request
    Pi would send next (``reply`` None). Its size is the sum of the per-entry estimates of the
    messages the projection would hold there, in the request's dialect (``chosen``, a value of
    ``detect.CHOICES``, else told from the path): every emitting entry; after a compaction, its
    summary, the emitting entries from ``firstKeptEntryId`` up to it, and those after it.
    """
    ids = [entry.id for entry in path]
    out: list[RequestEstimate] = []
    totals = _Totals(path)
    first_1x: str | None = None
    choice = choice_for(None, chosen)
    pending: tuple[str, int, int] | None = None  # compaction id, 0.x and 1.x sizes it left
    for position, entry in enumerate(path):
        if entry.marks_1x and first_1x is None:
            first_1x = entry.id
            choice = choice_for(first_1x, chosen)
        if entry.type == "compaction":
            kept = path[kept_start(ids, position, entry.first_kept) : position]
            totals.compact(entry, kept)
            pending = (entry.id, totals.zero, totals.one)
            continue
        if is_reply(entry.type, entry.role) and position > 0:
            out.append(_estimate(path[position - 1].id, entry.id, totals, pending, choice))
            pending = None
        totals.add(entry)
    if pending is not None:
        # A compaction with no request after it yet: the request Pi would send next.
        out.append(_estimate(path[-1].id, None, totals, pending, choice))
    return out


def _estimate(
    leaf: str,
    reply: str | None,
    totals: _Totals,
    pending: tuple[str, int, int] | None,
    choice: DialectChoice,
) -> RequestEstimate:
    compaction = None
    if pending is not None:
        after = pending[2] if choice.dialect == "1.x" else pending[1]
        compaction = (pending[0], after)
    return RequestEstimate(leaf, reply, totals.of(choice), compaction, choice)
