"""Which entries of a path a request holds, and where along a path Pi sent its requests.

The rules ``buildSessionContext`` (Pi 0.x, ``contextlab.pi.context``) and
``buildSessionProjection`` (Pi 1.x, ``contextlab.pi.dialects.pi_1_x``) apply to whole entries,
stated here over the light per-entry facts a caller keeps in an index of a session (an id, an
entry type, a message role, a compaction's ``firstKeptEntryId``), so that the dashboard can tell
what a request holds without reading every entry of a 20k-entry path:

* the compaction in force is the latest on the path; it keeps the entries from its
  ``firstKeptEntryId`` (when that entry lies before it on the path) up to itself, then everything
  after it (``held_span``);
* before the kept range the projection reads settings only, and for each the last value wins:
  the thinking level, the model (a model change or any assistant message); and whether Pi 1.x
  wrote the path is told by its first system message (``settings_read_before``,
  ``settings_stub``);
* a request is the context at the entry before each assistant message: Pi asked the model with
  that entry as leaf (``is_reply``, ``request_points``, ``previous_request``).

    span = held_span(path_ids, type_of, first_kept_of)
    fetched = path_ids[span.start:]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from contextlab.pi.entries import EMITTING_TYPES, Json

__all__ = [
    "HeldSpan",
    "SettingsRead",
    "condensed_path",
    "held_span",
    "is_reply",
    "kept_start",
    "last_model_setter",
    "previous_request",
    "replaced",
    "request_points",
    "settings_read_before",
    "settings_stub",
]

# id -> the entry's type, a message entry's role ("" otherwise), a compaction's firstKeptEntryId.
Fact = Callable[[Any], Any]

# What every entry keeps in its stand-in (``settings_stub``).
_STUB_KEYS = ("type", "id", "parentId", "timestamp")


@dataclass(frozen=True)
class HeldSpan:
    """What a request at the end of a path holds: ``compaction`` is the position of the
    compaction in force (None: none on the path), ``start`` the first position the projection
    emits from (0 without a compaction)."""

    compaction: int | None
    start: int

    def held(self, ids: Sequence[Any]) -> list[Any]:
        """The entries whose text the request carries: the compaction (its summary) first, then
        the kept range and what follows it."""
        if self.compaction is None:
            return list(ids)
        kept = [ids[p] for p in range(self.start, len(ids)) if p != self.compaction]
        return [ids[self.compaction], *kept]


def kept_start(ids: Sequence[Any], compaction_at: int, first_kept: Any) -> int:
    """Where the compaction at ``compaction_at`` starts keeping entries: the position of its
    ``firstKeptEntryId`` when that entry lies before it on the path, else the compaction itself
    (nothing before it is kept)."""
    if first_kept is None:
        return compaction_at
    try:
        return ids.index(first_kept, 0, compaction_at)
    except ValueError:
        return compaction_at


def held_span(ids: Sequence[Any], type_of: Fact, first_kept_of: Fact) -> HeldSpan:
    """The span a request at the end of the root-first path ``ids`` holds."""
    for position in range(len(ids) - 1, -1, -1):
        if type_of(ids[position]) == "compaction":
            start = kept_start(ids, position, first_kept_of(ids[position]))
            return HeldSpan(position, start)
    return HeldSpan(None, 0)


def replaced(ids: Sequence[Any], span: HeldSpan, type_of: Fact) -> list[Any]:
    """The entries before the kept range that would contribute a message without the compaction
    in force: what it replaced (not sent)."""
    return [i for i in ids[: span.start] if type_of(i) in EMITTING_TYPES]


def _sets_model(entry_type: Any, role: Any) -> bool:
    return bool(entry_type == "model_change" or (entry_type == "message" and role == "assistant"))


@dataclass(frozen=True)
class SettingsRead:
    """The positions before a kept range whose entries the projection still reads."""

    thinking: int | None  # the last thinking level change
    model: int | None  # the last entry that set the model
    first_system: int | None  # the first Pi 1.x system message (it tells the turn's dialect)

    def positions(self) -> list[int]:
        """In path order."""
        return sorted(p for p in (self.thinking, self.model, self.first_system) if p is not None)


def settings_read_before(
    ids: Sequence[Any], end: int, type_of: Fact, role_of: Fact, *, first_system: bool = True
) -> SettingsRead:
    """What the projection reads of the entries before position ``end`` (the start of the
    kept range; the path's length for a whole path's settings). ``first_system=False``: the
    caller knows the path holds no system message (or needs only the settings), and the walk
    stops once both settings are found."""
    thinking = model = system = None
    for position in range(end - 1, -1, -1):
        entry_type = type_of(ids[position])
        if entry_type == "thinking_level_change":
            thinking = position if thinking is None else thinking
        elif entry_type == "model_change":
            model = position if model is None else model
        elif entry_type == "message":
            role = role_of(ids[position])
            if role == "assistant":
                model = position if model is None else model
            elif role == "system":
                system = position
        if not first_system and thinking is not None and model is not None:
            break
    return SettingsRead(thinking, model, system if first_system else None)


def last_model_setter(ids: Sequence[Any], end: int, type_of: Fact, role_of: Fact) -> int | None:
    """The position of the last entry before ``end`` that set the model (a model change or an
    assistant message): the model of a request at ``end``."""
    for position in range(end - 1, -1, -1):
        if _sets_model(type_of(ids[position]), role_of(ids[position])):
            return position
    return None


def settings_stub(entry: Json) -> Json:
    """The fields of an entry the projection reads when it does not emit it (see
    ``settings_read_before``): its settings, and a message's role."""
    stub: Json = {key: entry.get(key) for key in _STUB_KEYS}
    kind = entry.get("type")
    if kind == "thinking_level_change":
        stub["thinkingLevel"] = entry.get("thinkingLevel")
    elif kind == "model_change":
        stub["provider"] = entry.get("provider")
        stub["modelId"] = entry.get("modelId")
    elif kind == "message":
        message = entry.get("message")
        role = message.get("role") if isinstance(message, dict) else None
        light: Json = {"role": role}
        if role == "assistant" and isinstance(message, dict):
            light["provider"] = message.get("provider")
            light["model"] = message.get("model")
        stub["message"] = light
    return stub


def condensed_path(
    ids: Sequence[Any], start: int, reads: Sequence[int], whole: Callable[[Any], Json]
) -> list[Json]:
    """The path the projection needs for a request at the end of ``ids``: a ``settings_stub``
    for each position in ``reads`` (``SettingsRead.positions``), chained in path order, then the
    whole entries from ``start`` on (``whole``: id -> entry), the first re-parented to the last
    stand-in. The projection of it equals that of the whole path."""
    if start == 0:
        return [whole(i) for i in ids]
    out: list[Json] = []
    parent: Any = None
    for position in reads:
        stub = settings_stub(whole(ids[position]))
        stub["parentId"] = parent
        parent = stub["id"]
        out.append(stub)
    first = dict(whole(ids[start]))
    first["parentId"] = parent
    out.append(first)
    out.extend(whole(i) for i in ids[start + 1 :])
    return out


def is_reply(entry_type: Any, role: Any) -> bool:
    """An assistant message: the model's answer to the request at its parent."""
    return bool(entry_type == "message" and role == "assistant")


def request_points(
    ids: Iterable[Any], type_of: Fact, role_of: Fact, parent_of: Fact
) -> Iterator[tuple[Any, Any]]:
    """(request leaf, reply) for every assistant message among ``ids`` that has a parent."""
    for entry_id in ids:
        if is_reply(type_of(entry_id), role_of(entry_id)):
            parent = parent_of(entry_id)
            if parent is not None:
                yield parent, entry_id


def previous_request(ids: Sequence[Any], type_of: Fact, role_of: Fact) -> Any | None:
    """The leaf of the last request on the root-first path ``ids`` before its last entry."""
    for position in range(len(ids) - 2, 0, -1):
        if is_reply(type_of(ids[position]), role_of(ids[position])):
            return ids[position - 1]
    return None
