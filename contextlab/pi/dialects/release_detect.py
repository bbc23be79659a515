"""Which Pi release wrote a turn: narrowed from what the session file holds, chosen where it cannot.

Every release's code is probed for what it can write (``releases_data.FEATURES``, generated from
each release's dist by ``tools/gen_release_table.py``). On the path to a leaf:

* a field or entry present (``usage.reasoning``, ``rawStopReason``, a ``usage`` or
  ``context_edit`` entry, a system message, ``usage`` on a compaction, ``durationMs``,
  ``cost.totalFromProvider``) rules out every release whose code cannot write it;
* some are written every time the code exists, so their absence rules releases out too: a path
  with a user message and no system message was not sent by a release that persists its prompt
  (0.86 on); the newest chat-completions reply with parsed usage but no ``usage.reasoning``, or no
  ``rawStopReason``, was not written by a release whose pi-ai always sets them; the newest tool
  result without ``durationMs`` likewise, and the newest compaction or branch summary Pi wrote
  itself (not ``fromHook``) without ``usage``;
* a 1.x session's system messages save each tool's declaration, snippet and guidelines, and the
  default prompt's preamble and tools section: the releases whose own built-in tools or prompt
  read otherwise are ruled out.

The candidates are the releases left. The chosen one is the caller's (``--pi-version``, a
project's profile), else the release the engine was first proved against when it is a candidate
(0.80.2 for a 0.x turn, 1.6.0 for a 1.x one), else the newest of the most candidates alike. A
prompt captured by contextlab's Pi extension narrows a 0.x turn's candidates to those whose own
prompt is the captured one (``fit_captured_prompt``, from ``turn.build_turn``) before that
choice::

    found = detect_release(entries, leaf_id)
    found.candidates, found.chosen, found.why
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from contextlab.pi.context import session_path
from contextlab.pi.dialects import releases_data as data
from contextlab.pi.dialects.release_table import RELEASES, parse_release, release_values
from contextlab.pi.entries import Json
from contextlab.pi.held import condensed_path, held_span, settings_read_before
from contextlab.pi.providers.pi_ai import pi_ai_for_release

__all__ = [
    "CHOICE_RELEASES",
    "ReleaseFinding",
    "detect_release",
    "features_of_path",
    "fit_captured_prompt",
    "release_span",
    "saved_tools",
    "sends_alike",
]

DEFAULT_0X = "0.80.2"
DEFAULT_1X = "1.6.0"
# The release a ``--dialect`` name stands for.
CHOICE_RELEASES = {
    "0.73": "0.73.1",
    "0.80": "0.80.2",
    "1.x": "1.6.0",
    "1.0": "1.0.3",
    "1.3": "1.3.0",
    "1.5": "1.5.2",
    "1.6": "1.6.0",
}


@dataclass(frozen=True)
class ReleaseFinding:
    candidates: tuple[str, ...]
    chosen: str
    why: str
    # What the file told (the ``why`` after the choice), for a later narrowing to re-tell.
    told: str = field(default="", compare=False)

    def as_dict(self) -> Json:
        return {"candidates": list(self.candidates), "chosen": self.chosen, "why": self.why}


@cache
def release_features(version: str) -> frozenset[str]:
    """The features release ``version``'s code can write."""
    values = release_values(version)
    return frozenset(name for name in data.FEATURES if values.get(f"FEATURES.{name}"))


def _message(entry: Mapping[str, Any]) -> Mapping[str, Any] | None:
    message = entry.get("message")
    if entry.get("type") == "message" and isinstance(message, dict):
        return message
    return None


def features_of_path(path: Sequence[Json]) -> tuple[set[str], set[str], list[str]]:
    """(features present, features whose absence is telling, the reasons) on a path."""
    present: set[str] = set()
    absent: set[str] = set()
    reasons: list[str] = []

    def saw(name: str, entry: Mapping[str, Any]) -> None:
        if name not in present:
            present.add(name)
            reasons.append(f"{data.FEATURES[name]} ({entry.get('id')})")

    has_user = False
    last_summary: Mapping[str, Any] | None = None
    last_reply: Mapping[str, Any] | None = None
    last_result: Mapping[str, Any] | None = None
    for entry in path:
        kind = entry.get("type")
        if kind == "context_edit":
            saw("contextEdit", entry)
        elif kind == "usage":
            saw("usageEntry", entry)
        elif kind in ("compaction", "branch_summary"):
            if isinstance(entry.get("usage"), dict):
                saw("summaryUsage", entry)
            if not entry.get("fromHook"):
                last_summary = entry
        if kind == "compaction" and isinstance(entry.get("systemMessage"), dict):
            saw("systemMessages", entry)
        message = _message(entry)
        if message is None:
            continue
        role = message.get("role")
        if role == "system":
            saw("systemMessages", entry)
        elif role == "user":
            has_user = True
        elif role == "assistant":
            usage = message.get("usage")
            if isinstance(usage, dict):
                if "reasoning" in usage:
                    saw("usageReasoning", entry)
                cost = usage.get("cost")
                if isinstance(cost, dict) and "totalFromProvider" in cost:
                    saw("totalFromProvider", entry)
            if "rawStopReason" in message:
                saw("rawStopReason", entry)
            if "durationMs" in message:
                saw("durationMs", entry)
            last_reply = message
        elif role == "toolResult":
            if "durationMs" in message:
                saw("durationMs", entry)
            last_result = message
    if has_user and "systemMessages" not in present:
        absent.add("systemMessages")
        reasons.append("no system message before a user message: the prompt was not persisted")
    if last_reply is not None and last_reply.get("api") == "openai-completions":
        usage = last_reply.get("usage")
        parsed = isinstance(usage, dict) and (usage.get("input") or 0) > 0
        stopped = last_reply.get("stopReason") in ("stop", "length", "toolUse")
        if parsed and "usageReasoning" not in present:
            absent.add("usageReasoning")
            reasons.append("the newest chat-completions reply has usage without reasoning")
        cost = usage.get("cost") if isinstance(usage, dict) else None
        if parsed and isinstance(cost, dict) and "totalFromProvider" not in present:
            absent.add("totalFromProvider")
            reasons.append("the newest chat-completions reply's cost has no totalFromProvider")
        if stopped and "rawStopReason" not in present:
            absent.add("rawStopReason")
            reasons.append("the newest chat-completions reply has no rawStopReason")
    if last_summary is not None and "summaryUsage" not in present:
        # Pi's own summary (not an extension's) carries the summarising call's usage from 0.81.1
        # (dist/core/agent-session.js passes it to appendCompaction / branchWithSummary).
        absent.add("summaryUsage")
        reasons.append(f"the newest {last_summary.get('type')} has no usage")
    if last_result is not None and "durationMs" not in present:
        absent.add("durationMs")
        reasons.append("the newest tool result has no durationMs")
    return present, absent, reasons


def held_path(path: Sequence[Json]) -> list[Json]:
    """The path as a request's projection reads it (``contextlab.pi.held``): the entries from
    the kept range of the compaction in force on, and before it only the settings' stand-ins.
    A release is told from this much, so that the command (which reads the whole file) and the
    dashboard (which fetches only this much of a large session) tell the same release."""
    ids = [entry.get("id") for entry in path]
    by_id = {entry.get("id"): entry for entry in path}

    def type_of(entry_id: Any) -> Any:
        return by_id[entry_id].get("type")

    def role_of(entry_id: Any) -> Any:
        message = _message(by_id[entry_id])
        return message.get("role") if message is not None else ""

    def first_kept_of(entry_id: Any) -> Any:
        return by_id[entry_id].get("firstKeptEntryId")

    span = held_span(ids, type_of, first_kept_of)
    if span.start == 0:
        return list(path)
    reads = settings_read_before(ids, span.start, type_of, role_of).positions()
    return condensed_path(ids, span.start, reads, by_id.__getitem__)


def saved_state(path: Sequence[Json]) -> tuple[dict[str, Mapping[str, Any]], dict[str, str]]:
    """The tool declarations and prompt sections the path's system messages leave in force
    (``toolsAdded`` / ``toolsRemoved`` and ``sections`` patched by name in order, ``null``
    deleting one; a compaction's ``systemMessage`` restarts them), by name."""
    tools: dict[str, Mapping[str, Any]] = {}
    sections: dict[str, str] = {}
    for entry in path:
        message = _message(entry)
        if entry.get("type") == "compaction" and isinstance(entry.get("systemMessage"), dict):
            message, tools, sections = entry["systemMessage"], {}, {}
        if message is None or message.get("role") != "system":
            continue
        for tool in message.get("toolsRemoved") or []:
            if isinstance(tool, dict):
                tools.pop(str(tool.get("name")), None)
        for tool in message.get("toolsAdded") or []:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                tools[tool["name"]] = tool
        patch = message.get("sections")
        for name, text in patch.items() if isinstance(patch, dict) else ():
            if isinstance(text, str):
                sections[name] = text
            else:
                sections.pop(name, None)
    return tools, sections


def saved_tools(path: Sequence[Json]) -> dict[str, Mapping[str, Any]]:
    return saved_state(path)[0]


def _declares(version: str, tool: Mapping[str, Any], sections: Mapping[str, str]) -> bool:
    """Whether ``tool`` is release ``version``'s own built-in declaration of its name: the
    description and parameters of the table's ``TOOL.<name>`` (from the release's dist), its
    prompt snippet in the saved ``tools`` section and its guidelines in the ``rules`` one."""
    own = release_values(version).get(f"TOOL.{tool.get('name')}")
    if not isinstance(own, dict):
        return False
    if (own.get("description"), own.get("parameters")) != (
        tool.get("description"),
        tool.get("parameters"),
    ):
        return False
    listed = sections.get("tools")
    snippet = own.get("promptSnippet")
    if listed is not None and snippet and f"\n- {tool.get('name')}: {snippet}\n" not in listed:
        return False
    rules = sections.get("rules")
    lines = set(rules.split("\n")) if rules is not None else set()
    return rules is None or all(f"- {g}" in lines for g in own.get("promptGuidelines") or ())


_SavedState = tuple[dict[str, Mapping[str, Any]], dict[str, str]]


def _by_saved_tools(
    candidates: tuple[str, ...], state: _SavedState
) -> tuple[tuple[str, ...], str | None]:
    """The candidates whose built-in tool declarations are the ones the session saved (a 1.x
    system message writes each tool's full declaration, its snippet and guidelines into the
    prompt sections: pi-coding-agent dist/core/tools/*.js, e.g. 1.5.0 rewrote edit's
    guidelines). A saved tool no candidate declares so is an extension's own
    and tells nothing. ``state``: the path's ``saved_state``."""
    narrowed = candidates
    told = []
    tools, sections = state
    for name, tool in sorted(tools.items()):
        if not any(f"TOOL.{name}" in release_values(v) for v in narrowed):
            continue
        fitting = tuple(v for v in narrowed if _declares(v, tool, sections))
        if fitting and fitting != narrowed:
            narrowed = fitting
            told.append(name)
    if not told:
        return candidates, None
    return narrowed, (
        f"the saved declarations of {', '.join(told)} are those of {release_span(narrowed)}"
    )


def _writes_sections(version: str, sections: Mapping[str, str]) -> bool:
    """Whether release ``version`` writes the saved default prompt's fixed parts: its own
    ``preamble`` (the table's ``PROMPT_1X.preamble``, from dist/core/system-prompt.js) and the
    line closing its ``tools`` section. A release the table holds no such parts for fits."""
    values = release_values(version)
    preamble, footer = values.get("PROMPT_1X.preamble"), values.get("PROMPT_1X.tools_footer")
    if preamble is None or footer is None:
        return True
    return sections.get("preamble") == preamble and sections["tools"].endswith(
        f"{footer}\n</tools>"
    )


def _by_saved_prompt(
    candidates: tuple[str, ...], state: _SavedState
) -> tuple[tuple[str, ...], str | None]:
    """The candidates whose default prompt begins and lists its tools as the saved one does (a
    prompt with a ``tools`` section is Pi's own, not a SYSTEM.md; 1.5.0 rewrote both). Sections
    no candidate writes so are an extension's and tell nothing. ``state``: the path's
    ``saved_state``."""
    sections = state[1]
    if "tools" not in sections:
        return candidates, None
    fitting = tuple(v for v in candidates if _writes_sections(v, sections))
    if not fitting or fitting == candidates:
        return candidates, None
    return fitting, f"the saved preamble and tools section are those of {release_span(fitting)}"


def _fits(version: str, present: Iterable[str], absent: Iterable[str]) -> bool:
    has = release_features(version)
    return all(f in has for f in present) and not any(f in has for f in absent)


def release_span(candidates: Sequence[str]) -> str:
    """``0.80.3–0.83.0`` (or the one release)."""
    if not candidates:
        return "none"
    return candidates[0] if len(candidates) == 1 else f"{candidates[0]}–{candidates[-1]}"


def detect_release(
    entries: Sequence[Json],
    leaf_id: Any,
    by_id: Mapping[Any, Json] | None = None,
    *,
    chosen: str | None = None,
    chosen_by: str = "--pi-version",
    leaf_path: Sequence[Json] | None = None,
) -> ReleaseFinding:
    """The releases that can have sent the request at ``leaf_id``, and the one used.

    ``chosen`` (a release X.Y.Z, or a ``--dialect`` name) wins; ``chosen_by`` says who chose it.
    ``leaf_path``: ``session_path(entries, leaf_id)``, when the caller has walked it already.
    """
    if leaf_path is None:
        leaf_path = session_path(entries, leaf_id, by_id)
    path = held_path(leaf_path)
    present, absent, reasons = features_of_path(path)
    candidates = tuple(v for v in RELEASES if _fits(v, present, absent))
    told = "; ".join(reasons) if reasons else "nothing on the path tells the releases apart"
    if not candidates:
        candidates = tuple(v for v in RELEASES if _fits(v, present, ()))
        told += " (no release fits every absence: only what is present counts)"
    if not candidates:
        candidates = RELEASES
        told += " (no release writes all of it: every release kept)"
    state = saved_state(path)
    for narrow in (_by_saved_tools, _by_saved_prompt):
        candidates, narrowed = narrow(candidates, state)
        if narrowed:
            told += f"; {narrowed}"
    if chosen is not None:
        release = CHOICE_RELEASES.get(chosen) or parse_release(chosen)
        fits = (
            ""
            if release in candidates
            else f", although the file points to {release_span(candidates)}"
        )
        return ReleaseFinding(candidates, release, f"chosen ({chosen_by}){fits}; {told}")
    return _pick(candidates, told, transcript="systemMessages" in present)


def _pick(candidates: tuple[str, ...], told: str, *, transcript: bool) -> ReleaseFinding:
    """Detection's choice among ``candidates`` (no caller's choice)."""
    default = DEFAULT_1X if transcript else DEFAULT_0X
    groups = alike_groups(candidates)
    differ = (
        f"; the candidates send {len(groups)} different requests"
        f" ({', '.join(release_span(g) for g in groups)})"
        if len(groups) > 1
        else ""
    )
    if len(candidates) == 1:
        # Nothing is assumed: "1.6.0 assumed among 1.6.0" said the opposite of what happened.
        pick, how = candidates[0], f"{candidates[0]}, the only release that fits"
    elif default in candidates:
        pick, how = default, f"{default} assumed among {release_span(candidates)}"
    else:
        # The largest group of candidates that build the same request (the newer on a tie).
        group = max(reversed(groups), key=len)
        pick = group[-1]
        how = f"{pick}, of the most candidates alike ({release_span(group)})"
    return ReleaseFinding(candidates, pick, f"{how}{differ}; {told}", told)


def fit_captured_prompt(found: ReleaseFinding, fits: Callable[[str], bool]) -> ReleaseFinding:
    """``found`` (detection's, for a Pi 0.x turn) narrowed to the candidates whose own prompt
    for the turn is the captured one byte for byte, and chosen among them as detection does.

    ``fits(release)`` builds and compares the prompt; it is asked only when the candidates send
    differently (``alike_groups``), and once per group of candidates whose table values differ
    in limits at most (``_prompt_print``: their prompts are the same). When no candidate's
    prompt is the captured one, detection's choice stays and ``why`` says so."""
    if len(alike_groups(found.candidates)) < 2 or not found.told:
        return found
    by_print: dict[str, list[str]] = {}
    for version in found.candidates:
        by_print.setdefault(_prompt_print(version), []).append(version)
    kept = {v for group in by_print.values() if fits(group[0]) for v in group}
    fitting = tuple(v for v in found.candidates if v in kept)
    if not fitting:
        span = release_span(found.candidates)
        return replace(found, why=f"{found.why}; the captured prompt matches none of {span}")
    told = f"{found.told}; the captured prompt fits {release_span(fitting)}"
    return _pick(fitting, told, transcript=False)


@cache
def _request_shaping(version: str) -> dict[str, object]:
    """What shapes a release's request: every text, tool, prompt rule and limit of the table (not
    what it can write into a session, ``FEATURES.*``, nor its package name)."""
    values = release_values(version)
    return {k: v for k, v in values.items() if not k.startswith("FEATURES.") and k != "PACKAGE"}


@cache
def _fingerprint(version: str) -> str:
    """``_request_shaping`` and the pi-ai generation, as one comparable text (kept: a repr of
    every text of the release, which the inspector asks for on every turn)."""
    return repr(sorted(_request_shaping(version).items())) + pi_ai_for_release(version).name


@cache
def _prompt_print(version: str) -> str:
    """What can shape a Pi 0.x release's system prompt, as one comparable text: the request's
    table values but its limits (the prompt's rules, tools, skill and trust texts are among
    them; its pi-ai generation shapes only the payload)."""
    shaping = _request_shaping(version)
    return repr(sorted((k, v) for k, v in shaping.items() if not k.startswith("LIMITS.")))


def request_differences(version: str, other: str) -> list[str]:
    """What shapes the two releases' requests differently: the table's entries whose values
    differ (sorted), then ``pi-ai A vs B`` where their pi-ai generations differ; empty when they
    build the same requests from the same file."""
    mine, theirs = _request_shaping(version), _request_shaping(other)
    keys = sorted(key for key in set(mine) | set(theirs) if mine.get(key) != theirs.get(key))
    ai, other_ai = pi_ai_for_release(version).name, pi_ai_for_release(other).name
    if ai != other_ai:
        keys.append(f"pi-ai {ai} vs {other_ai}")
    return keys


def sends_alike(version: str, other: str) -> bool:
    """Whether two releases build the same requests from the same file (the same table values
    and pi-ai generation)."""
    return _fingerprint(version) == _fingerprint(other)


def alike_groups(candidates: Sequence[str]) -> list[tuple[str, ...]]:
    """The candidates grouped by fingerprint, each group in release order, groups by first."""
    by_print: dict[str, list[str]] = {}
    for version in candidates:
        by_print.setdefault(_fingerprint(version), []).append(version)
    return [tuple(group) for group in by_print.values()]
