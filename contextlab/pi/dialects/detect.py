"""Which Pi dialect produced a turn, told from the session file where it can be, chosen where not.

* 1.x vs 0.x, per turn: Pi 1.x persists its prompt as ``system`` message entries (and a
  compaction's ``systemMessage``); a turn whose path holds one was sent by 1.x. A 0.x session
  resumed under 1.x switches at its first system message.
* 0.73 vs 0.80: not in general (same format, entry types and keys, no version recorded): the
  chosen dialect is used, 0.80 by default, and the choice says so.
* Within 1.x the file does not say which pi-ai generation shaped the body: 1.6 unless chosen.

    choice = detect_turn_dialect(entries, leaf_id, chosen="0.73")
    choice.dialect, choice.detected, choice.reason
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from contextlab.pi.context import session_path
from contextlab.pi.dialects.release_detect import (
    DEFAULT_0X as DEFAULT_0X_RELEASE,
)
from contextlab.pi.dialects.release_detect import (
    DEFAULT_1X as DEFAULT_1X_RELEASE,
)
from contextlab.pi.dialects.release_detect import (
    ReleaseFinding,
    detect_release,
    release_features,
    release_span,
)
from contextlab.pi.dialects.release_table import parse_release
from contextlab.pi.entries import Json
from contextlab.pi.providers.pi_ai import VARIANTS, release_key
from contextlab.pi.session import SessionTree

__all__ = [
    "CHOICES",
    "DialectChoice",
    "choice_for",
    "detect_turn_dialect",
    "detected_choice",
    "dialects_per_entry",
    "first_system_message_id",
    "is_1x_entry",
    "parse_choice",
]

DEFAULT_0X = "0.80"
DEFAULT_1X_VARIANT = "1.6"
# What a user (``--dialect``, a project's profile) may choose: a dialect, or a 1.x generation.
CHOICES = ("0.73", "0.80", "1.x", *VARIANTS)


@dataclass(frozen=True)
class DialectChoice:
    dialect: str  # "0.73", "0.80" or "1.x"
    detected: bool  # told from the file (True) or chosen / defaulted (False)
    reason: str
    variant: str | None = None  # the pi-ai generation of a 1.x turn
    # Which release wrote the turn (``release_detect``): candidates, the one used, why.
    # (Not compared: ``dialects_per_entry`` labels entries without it.)
    release: ReleaseFinding | None = field(default=None, compare=False)

    def as_dict(self) -> Json:
        out: Json = {"dialect": self.dialect, "detected": self.detected, "reason": self.reason}
        if self.variant is not None:
            out["variant"] = self.variant
        return out


def parse_choice(value: str | None) -> tuple[str | None, str | None]:
    """``--dialect`` value or a release X.Y.Z (``--pi-version``) -> (dialect, 1.x variant);
    ``ValueError`` for an unknown one."""
    if value is None:
        return None, None
    if value not in CHOICES and value.count(".") == 2:
        return _release_dialect(parse_release(value))
    if value not in CHOICES:
        raise ValueError(f"unknown dialect {value!r}; expected one of {', '.join(CHOICES)}")
    if value in VARIANTS:
        return "1.x", value
    return value, None


def _release_dialect(release: str) -> tuple[str, str | None]:
    """The dialect label of a release, and its pi-ai generation when it persists its prompt
    (a release name: ``providers.pi_ai.resolve`` takes it)."""
    if "systemMessages" in release_features(release):
        return "1.x", ("1.6" if release == "1.6.0" else release)
    return ("0.73" if release_key(release) < (0, 74, 0) else "0.80"), None


def is_1x_entry(entry: Mapping[str, Any]) -> bool:
    """A system message entry, or a compaction carrying ``systemMessage``: only Pi 1.x writes
    them."""
    message = entry.get("message")
    if entry.get("type") == "message" and isinstance(message, dict):
        return message.get("role") == "system"
    return entry.get("type") == "compaction" and isinstance(entry.get("systemMessage"), dict)


def first_system_message_id(
    entries: Sequence[Json],
    leaf_id: Any,
    by_id: Mapping[Any, Json] | None = None,
    leaf_path: Sequence[Json] | None = None,
) -> Any:
    """The id of the first entry on the leaf's path that only Pi 1.x writes, or None
    (``leaf_path``: that path, when the caller has walked it already)."""
    if leaf_path is None:
        leaf_path = session_path(entries, leaf_id, by_id)
    for entry in leaf_path:
        if is_1x_entry(entry):
            return entry.get("id")
    return None


def choice_for(first: Any, chosen: str | None = None) -> DialectChoice:
    """The dialect of a turn whose path holds ``first`` as its first entry only Pi 1.x writes
    (None: no such entry), or ``chosen`` (a value of ``CHOICES``) when the caller chose."""
    dialect, variant = parse_choice(chosen)
    if dialect is not None:
        if dialect == "1.x":
            variant = variant or DEFAULT_1X_VARIANT
        found = f"a 1.x system message ({first})" if first is not None else "no system message"
        return DialectChoice(dialect, False, f"chosen; the path holds {found}", variant)
    if first is not None:
        return DialectChoice(
            "1.x",
            True,
            f"the path holds Pi 1.x system message {first}; pi-ai generation "
            f"{DEFAULT_1X_VARIANT} assumed (the file does not record it)",
            DEFAULT_1X_VARIANT,
        )
    return DialectChoice(
        DEFAULT_0X,
        False,
        "no system message on the path: a Pi 0.x turn; 0.73 and 0.80 cannot be told apart from "
        f"the file, {DEFAULT_0X} assumed",
    )


def detect_turn_dialect(
    entries: Sequence[Json],
    leaf_id: Any,
    by_id: Mapping[Any, Json] | None = None,
    *,
    chosen: str | None = None,
    chosen_by: str = "--pi-version",
    leaf_path: list[Json] | None = None,
) -> DialectChoice:
    """The dialect of the request sent with the context at ``leaf_id`` (``leaf_path``: its path,
    when the caller walked it already).

    ``chosen`` (a value of ``CHOICES``, or a release X.Y.Z) overrides detection (``chosen_by``
    says who chose it: the release's ``why`` names it); otherwise a path with a system
    message is 1.x (variant 1.6, which the file cannot confirm), and one without is 0.80 by default
    (0.73 cannot be told from the file).
    """
    parse_choice(chosen)
    # The leaf's path, walked once for both questions (a deep turn's is thousands of entries).
    if leaf_path is None:
        leaf_path = session_path(entries, leaf_id, by_id)
    choice = choice_for(first_system_message_id(entries, leaf_id, by_id, leaf_path), chosen)
    found = detect_release(
        entries, leaf_id, by_id, chosen=chosen, chosen_by=chosen_by, leaf_path=leaf_path
    )
    if chosen is not None:
        return replace(choice, release=found)
    return detected_choice(choice, found)


def detected_choice(choice: DialectChoice, found: ReleaseFinding) -> DialectChoice:
    """The turn's dialect for detection's release ``found`` (``choice``: the dialect's own)."""
    if found.chosen in (DEFAULT_0X_RELEASE, DEFAULT_1X_RELEASE):
        return replace(choice, release=found)
    # The file rules out the release assumed by default: the detected one builds the turn.
    dialect, variant = _release_dialect(found.chosen)
    return DialectChoice(
        dialect,
        True,
        f"the file points to Pi {release_span(found.candidates)}; {found.chosen} used",
        variant,
        found,
    )


def dialects_per_entry(
    entries: Sequence[Json], tree: Any = None, *, chosen: str | None = None
) -> dict[Any, DialectChoice]:
    """``detect_turn_dialect`` for every entry as leaf, in one walk of the tree (for a chart or
    an inspector that labels every request): an entry is 1.x once a system message (or a
    compaction carrying one) is on its path."""
    parse_choice(chosen)
    tree = tree or SessionTree(entries)
    out: dict[Any, DialectChoice] = {}
    stack: list[tuple[Any, Any]] = [(r, None) for r in reversed(tree.roots)]
    while stack:
        entry_id, first = stack.pop()
        entry = tree.by_id[entry_id]
        if first is None and is_1x_entry(entry):
            first = entry_id
        out[entry_id] = choice_for(first, chosen)
        for child in reversed(tree.children(entry_id)):
            stack.append((child, first))
    return out
