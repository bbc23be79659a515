"""Compaction and branch summaries in the dialect of the Pi that wrote the session: what is
summarised, the requests sent, how the replies are read and joined, and the entry Pi appends.

The one entry point for every caller (the jobs, ``manage.py compact`` / ``branch-summary`` with
and without ``--dry-run``, the API's preview). The dialect is told per leaf
(``contextlab.pi.turn.turn_dialect``: Pi 1.x once a persisted system message is on the path) or
chosen; the rules are Pi 0.80.2's (``contextlab.pi.compaction`` / ``branch_summary``, also used
for 0.73 with its texts) or Pi 1.6.0's (``contextlab.pi.dialects.pi_1_x_compaction``). See
docs/pi-dialects.md, "Summaries".

    plan = plan_compaction(entries, leaf_id, SummaryOptions(keep_recent_tokens=20000),
                           model=model)
    plan.preview                    # the ``compact --dry-run --json`` object
    for call in plan.calls:         # send call.body(model); then
        failure = summary_failure(plan, call, stop_reason, error_message)
    summary, details = join_summary(plan, texts)
    entry = build_entry(plan, taken_ids, moment, summary, details, usage=entry_usage(usages))

``model`` is the pi-ai model the summaries are sent to, with its limits (``contextWindow``,
``maxTokens``); None when they are unknown (a Pi 1.x request then shows ``maxTokens`` null).
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import reduce
from typing import Any, Literal

from contextlab.pi import branch_summary, compaction
from contextlab.pi.context import model_for_transform
from contextlab.pi.dialects import Dialect, pi_1_x, pi_1_x_compaction
from contextlab.pi.dialects.detect import DialectChoice
from contextlab.pi.entries import Json
from contextlab.pi.providers.pi_ai import release_key
from contextlab.pi.providers.pi_ai import resolve as resolve_pi_ai
from contextlab.pi.providers.summary import combine_usage, summary_request_body
from contextlab.pi.request import LimitOverrides, ModelLookup, limits_model
from contextlab.pi.session import SessionTree
from contextlab.pi.tokens import DEFAULT_KEEP_RECENT_TOKENS, DEFAULT_RESERVE_TOKENS
from contextlab.pi.turn import dialect_for, turn_dialect
from contextlab.pi.writer import (
    Pi1xSessionWriter,
    SessionWriter,
    iso_timestamp,
    leaf_after_navigation,
    summarizer_thinking_level,
)

__all__ = [
    "ALREADY_COMPACTED",
    "NOTHING_TO_COMPACT",
    "NOTHING_TO_SUMMARISE",
    "SummaryCall",
    "SummaryError",
    "SummaryOptions",
    "SummaryPlan",
    "build_entry",
    "entry_usage",
    "join_summary",
    "plan_branch_summary",
    "plan_compaction",
    "summary_failure",
    "summary_model",
]

# Why AgentSession.compact refuses (agent-session.js, the same in 0.80.2 and 1.6.0).
ALREADY_COMPACTED = "Already compacted"
NOTHING_TO_COMPACT = "Nothing to compact (session too small)"
# contextlab's: Pi navigates without a summary when the branch left holds nothing of its own.
NOTHING_TO_SUMMARISE = "Nothing to summarise: the target is on the current branch"
# What the model is asked to do in each call, as Pi names it in its errors (compaction.js,
# branch-summarization.js); 0.80.2 reports a failed branch summary by the reply's error alone.
_LABELS = {
    "history": "Summarization",
    "turn_prefix": "Turn prefix summarization",
    "branch": "Branch summarization",
}
_FALLBACK_ERROR = "Unknown error"
_BRANCH_FALLBACK_ERROR_0X = "Summarization failed"

Role = Literal["history", "turn_prefix", "branch"]


class SummaryError(Exception):
    """An entry the summary starts from is not in the session."""

    def __init__(self, entry_id: str) -> None:
        super().__init__(f"Entry {entry_id} is not in the session")
        self.entry_id = entry_id


@dataclass(frozen=True)
class SummaryOptions:
    """What the user chose: Pi's settings (``compaction.*``, ``branchSummary.reserveTokens``) and
    the ``/compact <text>`` or custom branch-summary prompt."""

    reserve_tokens: int = DEFAULT_RESERVE_TOKENS
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS
    custom_instructions: str | None = None
    replace_instructions: bool = False  # a branch summary's instructions replace Pi's prompt
    thinking_level: str | None = None  # the summariser's (None: the session's at the leaf)


@dataclass
class SummaryCall:
    """One request Pi sends: ``history`` / ``turn_prefix`` (generateSummary /
    generateTurnPrefixSummary) or ``branch`` (generateBranchSummary)."""

    role: Role
    request: Json  # {systemPrompt, messages, maxTokens}, as Pi builds it
    messages: list[Json]  # the agent messages behind it (what the offline summariser reads)
    previous_summary: str | None = None
    thinking_level: str | None = None  # handed to the summariser (the model's reasoning gate)
    variant: str | None = None  # the pi-ai 1.x generation; None: Pi 0.80.2's (and 0.73's)
    tool_choice: str | None = None  # a 0.x release's ``toolChoice`` (``summary_tool_choice``)

    def body(self, model: Json) -> Json:
        """The provider body pi-ai sends to ``model`` for this call."""
        return summary_request_body(
            model,
            self.request,
            thinking_level=self.thinking_level,
            variant=self.variant,
            tool_choice=self.tool_choice,
        )


@dataclass
class SummaryPlan:
    kind: Literal["compaction", "branch_summary"]
    choice: DialectChoice
    preview: Json  # the --dry-run --json object (the dialect's keys)
    calls: list[SummaryCall] = field(default_factory=list)
    read_files: list[str] = field(default_factory=list)
    modified_files: list[str] = field(default_factory=list)
    leaf_id: str | None = None  # the session's leaf when the summary is written
    parent_id: str | None = None  # where the entry goes (the leaf after navigation)
    first_kept_entry_id: str | None = None
    tokens_before: int | float | None = None
    previous_summary: str | None = None
    system_message: Json | None = None  # Pi 1.x: the replayed system state at the leaf
    split_turn: bool = False
    nothing: str | None = None  # why nothing will be appended

    @property
    def pi_1x(self) -> bool:
        return self.choice.dialect == "1.x"

    @property
    def dialect(self) -> Dialect:
        return dialect_for(self.choice)


def _path(tree: SessionTree, leaf_id: str | None) -> list[Json]:
    """The path to ``leaf_id`` (None: before the first entry, an empty path)."""
    if leaf_id is None:
        return []
    path = tree.path(leaf_id)
    if not path:
        raise SummaryError(leaf_id)
    return path


def summary_model(
    entries: Sequence[Json],
    leaf_id: str | None,
    *,
    choice: DialectChoice,
    by_id: Mapping[Any, Json] | None = None,
    model_lookup: ModelLookup | None = None,
    limits: LimitOverrides | None = None,
) -> Json | None:
    """The model a preview plans against. A Pi 1.x turn: the session's model at the leaf with
    its limits, as the ``context`` command resolves them (``model_lookup``: models.json, then the
    catalogue; ``limits`` override them); None while they are unknown. A Pi 0.x turn: only the
    limits given (0 where none: no cap, and Pi's 128000 fallback for a branch's budget)."""
    if choice.dialect != "1.x":
        return {
            "contextWindow": (limits.context_window if limits else None) or 0,
            "maxTokens": (limits.max_tokens if limits else None) or 0,
        }
    projection = pi_1_x.build_session_projection(entries, leaf_id, by_id)
    found = model_for_transform(
        projection.model, messages=projection.messages, catalog_lookup=model_lookup
    )
    model = limits_model(found, limits)
    if model is None or not model.get("contextWindow") or not model.get("maxTokens"):
        return None
    return model


def _limit(model: Json | None, key: str) -> int:
    value = model.get(key) if model else None
    return int(value) if isinstance(value, int | float) else 0


# --------------------------------------------------------------------------------------------
# Compaction (AgentSession.compact)
# --------------------------------------------------------------------------------------------


def plan_compaction(
    entries: Sequence[Json],
    leaf_id: str | None,
    options: SummaryOptions = SummaryOptions(),
    *,
    model: Json | None = None,
    chosen: str | None = None,
    tree: SessionTree | None = None,
    now_ms: int | None = None,
) -> SummaryPlan:
    """A manual ``/compact`` at ``leaf_id``: ``prepareCompaction`` and the request(s) ``compact``
    sends, in the leaf's dialect (``chosen``: a ``--dialect`` or profile value overrides it).
    ``now_ms`` stamps the preview's Pi 1.x ``systemMessage`` (the entry carries its own time)."""
    tree = tree or SessionTree(list(entries))
    path = _path(tree, leaf_id)
    choice, _ = turn_dialect(entries, leaf_id, tree.by_id, chosen=chosen)
    if choice.dialect == "1.x":
        plan = _plan_compaction_1x(path, options, model, choice)
        if plan.system_message is not None and now_ms is not None:
            plan.preview["systemMessage"] = {**plan.system_message, "timestamp": now_ms}
    else:
        plan = _plan_compaction_0x(path, options, model, choice)
    plan.leaf_id = plan.parent_id = leaf_id
    if path and path[-1].get("type") == "compaction":
        plan.nothing = ALREADY_COMPACTED
    elif plan.first_kept_entry_id is None:
        plan.nothing = NOTHING_TO_COMPACT
    return plan


def _release(choice: DialectChoice) -> str | None:
    return choice.release.chosen if choice.release is not None else None


def summary_tool_choice(release: str | None) -> str | None:
    """``completeSummarization`` (dist/core/compaction/compaction.js) of 0.84.3 alone asks for
    ``toolChoice: "none"`` on every summarising call."""
    return "none" if release == "0.84.3" else None


def branch_summary_max_tokens_0x(release: str | None, model: Json | None) -> int:
    """``generateBranchSummary``'s maxTokens (dist/core/compaction/branch-summarization.js):
    2048 to 0.84.4, ``min(4096, model.maxTokens)`` (a model without one: 4096) from 0.85.0."""
    if release is None or release_key(release) < (0, 85, 0):
        return branch_summary.BRANCH_SUMMARY_MAX_TOKENS
    cap = _limit(model, "maxTokens")
    return min(4096, cap) if cap > 0 else 4096


def _plan_compaction_0x(
    path: list[Json], options: SummaryOptions, model: Json | None, choice: DialectChoice
) -> SummaryPlan:
    dialect = dialect_for(choice)
    preview = compaction.compaction_preview(
        path,
        compaction.CompactionOptions(
            reserve_tokens=options.reserve_tokens,
            keep_recent_tokens=options.keep_recent_tokens,
            # 0.73 did not cap the summary budgets by the model's maxTokens.
            model_max_tokens=0 if choice.dialect == "0.73" else _limit(model, "maxTokens"),
            custom_instructions=options.custom_instructions or None,
        ),
        dialect,
    )
    plan = SummaryPlan("compaction", choice, preview.to_json())
    prep = preview.preparation
    if prep is None:
        return plan
    plan.read_files, plan.modified_files = list(prep.read_files), list(prep.modified_files)
    plan.first_kept_entry_id, plan.tokens_before = prep.first_kept_entry_id, prep.tokens_before
    plan.previous_summary = prep.previous_summary
    plan.split_turn = bool(prep.is_split_turn and prep.turn_prefix_messages)
    # Pi passes the session's thinking level to the summariser (used only by reasoning models).
    thinking = options.thinking_level or summarizer_thinking_level(path)
    if preview.request is not None:
        plan.calls.append(
            SummaryCall(
                "history",
                preview.request,
                prep.messages_to_summarize,
                prep.previous_summary,
                thinking,
                tool_choice=summary_tool_choice(_release(choice)),
            )
        )
    if preview.turn_prefix_request is not None:
        plan.calls.append(
            SummaryCall(
                "turn_prefix",
                preview.turn_prefix_request,
                prep.turn_prefix_messages,
                None,
                thinking,
                tool_choice=summary_tool_choice(_release(choice)),
            )
        )
    return plan


def _plan_compaction_1x(
    path: list[Json], options: SummaryOptions, model: Json | None, choice: DialectChoice
) -> SummaryPlan:
    variant = choice.variant or "1.6"
    prep = pi_1_x_compaction.prepare_compaction(path, keep_recent_tokens=options.keep_recent_tokens)
    projection = pi_1_x.projection_of_path(path)
    system_message = pi_1_x.current_system_message(projection.messages)
    preview: Json = {
        "firstKeptEntryId": None,
        "tokensBefore": None,
        "isSplitTurn": None,
        "request": None,
        "turnPrefixRequest": None,
    }
    plan = SummaryPlan("compaction", choice, preview, system_message=system_message)
    if prep is not None:
        thinking = options.thinking_level or projection.thinking_level
        requests = pi_1_x_compaction.compaction_requests(
            prep,
            model or {"contextWindow": 0, "maxTokens": 0},
            thinking_level=thinking,
            custom_instructions=options.custom_instructions or None,
            variant=variant,
            reserve_tokens=options.reserve_tokens,
        )
        by_kind = {r.kind: r.request(None if model is None else r.max_tokens) for r in requests}
        preview.update(
            {
                "firstKeptEntryId": prep.first_kept_entry_id,
                "tokensBefore": prep.tokens_before,
                "isSplitTurn": prep.is_split_turn,
                "request": by_kind.get("history"),
                "turnPrefixRequest": by_kind.get("turnPrefix"),
                "previousSummary": prep.previous_summary,
                "summarizedEntryIds": prep.summarized_entry_ids,
                "turnPrefixEntryIds": prep.turn_prefix_entry_ids,
                "readFiles": prep.read_files,
                "modifiedFiles": prep.modified_files,
            }
        )
        plan.read_files, plan.modified_files = list(prep.read_files), list(prep.modified_files)
        plan.first_kept_entry_id = prep.first_kept_entry_id
        plan.tokens_before = prep.tokens_before
        plan.previous_summary = prep.previous_summary
        plan.split_turn = prep.is_split_turn and bool(prep.turn_prefix_messages)
        level = thinking if isinstance(thinking, str) else None
        if "history" in by_kind:
            plan.calls.append(
                SummaryCall(
                    "history",
                    by_kind["history"],
                    prep.messages_to_summarize,
                    prep.previous_summary,
                    level,
                    variant,
                )
            )
        if "turnPrefix" in by_kind:
            plan.calls.append(
                SummaryCall(
                    "turn_prefix",
                    by_kind["turnPrefix"],
                    prep.turn_prefix_messages,
                    None,
                    level,
                    variant,
                )
            )
    preview["systemMessage"] = system_message
    return plan


# --------------------------------------------------------------------------------------------
# Branch summaries (AgentSession.navigateTree with a summary)
# --------------------------------------------------------------------------------------------


def plan_branch_summary(
    entries: Sequence[Json],
    old_leaf: str,
    target: str,
    options: SummaryOptions = SummaryOptions(),
    *,
    model: Json | None = None,
    chosen: str | None = None,
    tree: SessionTree | None = None,
) -> SummaryPlan:
    """Leaving ``old_leaf`` for ``target`` with a summary: the entries collected from the
    abandoned branch, the request ``generateBranchSummary`` sends, and where the leaf lands (a
    user or custom message sends its text back to the editor: the leaf is its parent). The
    dialect is the branch left's."""
    tree = tree or SessionTree(list(entries))
    for entry_id in (target, old_leaf):
        if entry_id not in tree.by_id:
            raise SummaryError(entry_id)
    choice, dialect = turn_dialect(entries, old_leaf, tree.by_id, chosen=chosen)
    if choice.dialect == "1.x":
        plan = _plan_branch_1x(tree, old_leaf, target, options, model, choice)
    else:
        preview = branch_summary.branch_summary_preview(
            tree,
            old_leaf,
            target,
            branch_summary.BranchSummaryOptions(
                reserve_tokens=options.reserve_tokens,
                context_window=_limit(model, "contextWindow"),
                custom_instructions=options.custom_instructions or None,
                replace_instructions=options.replace_instructions,
            ),
            dialect,
        )
        plan = SummaryPlan(
            "branch_summary",
            choice,
            preview.to_json(),
            read_files=list(preview.read_files),
            modified_files=list(preview.modified_files),
        )
        if preview.request is not None:
            # Pi 0.80.2 sends a branch summary without the thinking level.
            release = _release(choice)
            request = {
                **preview.request,
                "maxTokens": branch_summary_max_tokens_0x(release, model),
            }
            plan.preview["request"] = request
            plan.calls.append(
                SummaryCall(
                    "branch",
                    request,
                    preview.messages,
                    tool_choice=summary_tool_choice(release),
                )
            )
    plan.leaf_id = old_leaf
    plan.parent_id = leaf_after_navigation(tree.by_id[target])
    if not plan.preview["entryIds"]:
        plan.nothing = NOTHING_TO_SUMMARISE
        plan.calls = []
    return plan


def _plan_branch_1x(
    tree: SessionTree,
    old_leaf: str,
    target: str,
    options: SummaryOptions,
    model: Json | None,
    choice: DialectChoice,
) -> SummaryPlan:
    variant = choice.variant or "1.6"
    if old_leaf == target:
        entries: list[Json] = []
        common: str | None = old_leaf
    else:
        entries, common = pi_1_x_compaction.collect_entries_for_branch_summary(
            tree, old_leaf, target
        )
    limits = model or {"contextWindow": 0, "maxTokens": 0}
    budget = pi_1_x_compaction.branch_token_budget(limits, options.reserve_tokens)
    prepared = pi_1_x_compaction.prepare_branch_entries(entries, budget, variant)
    read_files, modified_files = compaction.compute_file_lists(prepared.file_ops)
    thinking = (
        options.thinking_level or pi_1_x.projection_of_path(tree.path(old_leaf)).thinking_level
    )
    request = None
    plan = SummaryPlan(
        "branch_summary", choice, {}, read_files=read_files, modified_files=modified_files
    )
    if prepared.messages:
        summary = pi_1_x_compaction.branch_request(
            prepared.messages,
            limits,
            thinking_level=thinking,
            custom_instructions=options.custom_instructions or None,
            replace_instructions=options.replace_instructions,
            variant=variant,
        )
        request = summary.request(None if model is None else summary.max_tokens)
        # Before 1.5 a branch summary is sent without the thinking level.
        sends_level = resolve_pi_ai(variant).branch_summary_edits
        level = thinking if isinstance(thinking, str) and sends_level else None
        plan.calls.append(SummaryCall("branch", request, prepared.messages, None, level, variant))
    plan.preview = {
        "commonAncestorId": common,
        "entryIds": [e.get("id") for e in entries],
        "request": request,
        "summarizedEntryIds": prepared.entry_ids,
        "readFiles": read_files,
        "modifiedFiles": modified_files,
        "tokenBudget": budget,
        "totalTokens": prepared.total_tokens,
    }
    return plan


# --------------------------------------------------------------------------------------------
# Replies, the joined summary, the entry
# --------------------------------------------------------------------------------------------


def summary_failure(
    plan: SummaryPlan, call: SummaryCall, stop_reason: str, error_message: str | None = None
) -> str | None:
    """Why Pi would not keep ``call``'s reply (its error text), or None: an error or aborted
    reply always; Pi 1.x also refuses one cut at the token cap (its text is incomplete) and one
    that calls a tool."""
    label = _LABELS[call.role]
    if stop_reason in ("error", "aborted"):
        if call.role == "branch" and not plan.pi_1x:
            return error_message or _BRANCH_FALLBACK_ERROR_0X
        return f"{label} failed: {error_message or _FALLBACK_ERROR}"
    if plan.pi_1x and stop_reason == "length":
        return pi_1_x.summary_rejected_text(label)
    if plan.pi_1x and stop_reason == "toolUse":
        return f"{label} attempted to call a tool"
    return None


def join_summary(plan: SummaryPlan, texts: Mapping[str, str]) -> tuple[str, Json]:
    """The summary and ``details`` Pi stores from the replies' texts (by call role):
    ``compact`` joins a split turn's two summaries (Pi 1.x puts the previous summary where there
    was no history to summarise) and appends the file lists; ``generateBranchSummary`` prefixes
    its preamble, or writes its fixed text when no message was left to summarise."""
    dialect = plan.dialect
    details: Json = {"readFiles": plan.read_files, "modifiedFiles": plan.modified_files}
    if plan.kind == "compaction":
        if plan.split_turn:
            history = texts.get("history", plan.previous_summary if plan.pi_1x else None)
            summary = compaction.join_split_turn(history, texts["turn_prefix"], dialect)
        else:
            summary = texts["history"]
        summary += compaction.format_file_operations(plan.read_files, plan.modified_files, dialect)
        return summary, details
    if "branch" not in texts:
        # Entries but no messages (all tool results / settings): Pi's fixed text, no call.
        empty: Json = {"readFiles": [], "modifiedFiles": []}
        return branch_summary.join_branch_summary(None, [], [], dialect), empty
    summary = branch_summary.join_branch_summary(
        texts["branch"], plan.read_files, plan.modified_files, dialect
    )
    return summary, details


def entry_usage(usages: Sequence[Json]) -> Json | None:
    """The usage a Pi 1.x entry records: its replies' usage summed (None: no model answered)."""
    if not usages:
        return None
    return reduce(combine_usage, usages[1:], dict(usages[0]))


def build_entry(
    plan: SummaryPlan,
    taken: Container[str],
    moment: datetime,
    summary: str,
    details: Json,
    *,
    usage: Json | None = None,
) -> Json:
    """The entry Pi's ``SessionManager`` appends for ``plan`` at ``moment``, keys in its order and
    a fresh id not in ``taken``; Pi 1.x's carries ``usage`` (when a model answered) and, for a
    compaction, ``systemMessage`` stamped with the entry's time."""
    timestamp = iso_timestamp(moment)
    if plan.pi_1x:
        writer: SessionWriter = Pi1xSessionWriter(taken, plan.leaf_id)
        extra: dict[str, Any] = {"usage": usage}
    else:
        writer, extra = SessionWriter(taken, plan.leaf_id), {}
    if plan.kind == "branch_summary":
        return dict(
            writer.branch_with_summary(
                plan.parent_id, timestamp=timestamp, summary=summary, details=details, **extra
            )
        )
    assert plan.first_kept_entry_id is not None and plan.tokens_before is not None
    if plan.pi_1x:
        extra["system_message"] = plan.system_message
    writer.branch(plan.parent_id)  # a compaction is a child of the leaf it summarises
    return dict(
        writer.append_compaction(
            timestamp=timestamp,
            summary=summary,
            first_kept_entry_id=plan.first_kept_entry_id,
            tokens_before=plan.tokens_before,
            details=details,
            **extra,
        )
    )
