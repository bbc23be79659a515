"""Branch summaries (tree navigation) as Pi 0.80.2 prepares them, and the exact request.

Truth: ``dist/core/compaction/branch-summarization.js`` (``collectEntriesForBranchSummary``,
``prepareBranchEntries``, ``generateBranchSummary``) and ``AgentSession.navigateTree`` in
``dist/core/agent-session.js``; docs/pi-engine.md, "Branch summaries".

Unlike Pi's docs, the code does not stop at compaction entries (their summaries become input),
skips tool results, and caps the summary at a fixed 2048 tokens with no reasoning option.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from contextlab.pi.compaction import (
    FileOps,
    add_previous_file_lists,
    compute_file_lists,
    extract_file_ops_from_message,
    format_file_operations,
    serialize_conversation,
)
from contextlab.pi.context import convert_to_llm
from contextlab.pi.dialects import DEFAULT_DIALECT, Dialect
from contextlab.pi.entries import Json, message_of_entry
from contextlab.pi.jsutil import js_truthy
from contextlab.pi.session import SessionTree
from contextlab.pi.tokens import DEFAULT_RESERVE_TOKENS, estimate_tokens

__all__ = [
    "BRANCH_SUMMARY_MAX_TOKENS",
    "BRANCH_SUMMARY_PREAMBLE",
    "DEFAULT_CONTEXT_WINDOW",
    "NO_CONTENT_SUMMARY",
    "NO_SUMMARY_GENERATED",
    "BranchEntries",
    "BranchSummaryOptions",
    "BranchSummaryPreview",
    "add_branch_summaries_file_lists",
    "branch_request",
    "branch_summary_preview",
    "collect_entries_for_branch_summary",
    "format_file_operations",
    "join_branch_summary",
    "prepare_branch_entries",
    "token_budget",
]

# The default dialect's texts under the names callers already import; new code reads the
# dialect it was given.
BRANCH_SUMMARY_PREAMBLE = DEFAULT_DIALECT.branch_summary_preamble
NO_CONTENT_SUMMARY = DEFAULT_DIALECT.summary_texts.no_content_summary
NO_SUMMARY_GENERATED = DEFAULT_DIALECT.summary_texts.no_summary_generated
BRANCH_SUMMARY_MAX_TOKENS = 2048
DEFAULT_CONTEXT_WINDOW = 128000  # used when the model reports none (model.contextWindow || ...)


def collect_entries_for_branch_summary(
    tree: SessionTree, old_leaf_id: str | None, target_id: str
) -> tuple[list[Json], str | None]:
    """``collectEntriesForBranchSummary``: ``(entries, commonAncestorId)``.

    The common ancestor is the deepest entry of the target's path that is also on the old
    leaf's path; entries are the old leaf and its ancestors up to (not including) it, oldest
    first, compactions included.
    """
    if not old_leaf_id:
        return [], None
    common = tree.common_ancestor(old_leaf_id, target_id)
    entries: list[Json] = []
    seen: set[str] = set()
    current: str | None = old_leaf_id
    # Pi follows raw parentIds until the ancestor or a missing entry; a cycle (which hangs Pi)
    # stops here at the first repeat.
    while current and current != common and current not in seen:
        entry = tree.by_id.get(current)
        if entry is None:
            break
        seen.add(current)
        entries.append(entry)
        parent = entry.get("parentId")
        current = parent if isinstance(parent, str) else None
    entries.reverse()
    return entries, common


def _branch_message(entry: Json) -> Json | None:
    return message_of_entry(entry, "branch_summary")


@dataclass
class BranchEntries:
    messages: list[Json]
    file_ops: FileOps
    total_tokens: int | float
    entry_ids: list[str] = field(default_factory=list)  # entries whose message was kept


def add_branch_summaries_file_lists(entries: Sequence[Json], ops: FileOps) -> None:
    """The file lists of the branch summaries Pi wrote itself (not an extension) among
    ``entries``: a summary of a branch holding summaries keeps their files."""
    for entry in entries:
        if (
            entry.get("type") == "branch_summary"
            and not js_truthy(entry.get("fromHook"))
            and js_truthy(entry.get("details"))
        ):
            add_previous_file_lists(ops, entry["details"])


def prepare_branch_entries(entries: list[Json], token_budget: float = 0) -> BranchEntries:
    """``prepareBranchEntries``.

    1. File lists of earlier branch summaries (not from hooks) in the span.
    2. Newest to oldest: each entry's message (tool results skipped), its file ops taken before
       the budget check; over the budget stop, but a compaction or branch summary still goes in
       while under 90 % of it.
    """
    ops = FileOps()
    add_branch_summaries_file_lists(entries, ops)
    messages: list[Json] = []
    ids: list[str] = []
    total: int | float = 0
    for entry in reversed(entries):
        message = _branch_message(entry)
        if not message:
            continue
        extract_file_ops_from_message(message, ops)
        tokens = estimate_tokens(message)
        if token_budget > 0 and total + tokens > token_budget:
            if entry.get("type") in ("compaction", "branch_summary") and total < token_budget * 0.9:
                messages.append(message)
                ids.append(entry["id"])
                total += tokens
            break
        messages.append(message)
        ids.append(entry["id"])
        total += tokens
    # Collected newest first; Pi unshifts, so the result is oldest first.
    messages.reverse()
    ids.reverse()
    return BranchEntries(messages, ops, total, ids)


def token_budget(
    *, context_window: float = 0, reserve_tokens: float = DEFAULT_RESERVE_TOKENS
) -> float:
    """``(model.contextWindow || 128000) - reserveTokens``."""
    return (context_window or DEFAULT_CONTEXT_WINDOW) - reserve_tokens


def branch_request(
    messages: list[Json],
    *,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    dialect: Dialect = DEFAULT_DIALECT,
) -> Json:
    """``generateBranchSummary``'s request for prepared messages."""
    t = dialect.summary_texts
    if replace_instructions and custom_instructions:
        instructions = custom_instructions
    elif custom_instructions:
        instructions = dialect.branch_summary_prompt + t.additional_focus + custom_instructions
    else:
        instructions = dialect.branch_summary_prompt
    conversation = serialize_conversation(convert_to_llm(messages, dialect), dialect)
    text = t.conversation_open + conversation + t.conversation_close + instructions
    return {
        "systemPrompt": dialect.summarization_system_prompt,
        "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
        "maxTokens": BRANCH_SUMMARY_MAX_TOKENS,
    }


def join_branch_summary(
    model_text: str | None,
    read_files: list[str],
    modified_files: list[str],
    dialect: Dialect = DEFAULT_DIALECT,
) -> str:
    """The summary ``generateBranchSummary`` stores: the preamble, the model's text and the file
    lists; ``model_text`` None when Pi made no call (no message to summarise)."""
    t = dialect.summary_texts
    if model_text is None:
        return t.no_content_summary
    summary = dialect.branch_summary_preamble + model_text
    summary += format_file_operations(read_files, modified_files, dialect)
    return summary or t.no_summary_generated


@dataclass(frozen=True)
class BranchSummaryOptions:
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS  # branchSummary.reserveTokens
    context_window: int = 0  # the model's contextWindow (0: Pi's 128000 fallback)
    custom_instructions: str | None = None
    replace_instructions: bool = False


@dataclass
class BranchSummaryPreview:
    common_ancestor_id: str | None
    entry_ids: list[str]
    request: Json | None
    messages: list[Json]
    message_entry_ids: list[str]
    read_files: list[str]
    modified_files: list[str]
    token_budget: float
    total_tokens: int | float

    def to_json(self) -> Json:
        """The ``branch-summary --dry-run --json`` object (extra keys after the contract's)."""
        return {
            "commonAncestorId": self.common_ancestor_id,
            "entryIds": self.entry_ids,
            "request": self.request,
            "summarizedEntryIds": self.message_entry_ids,
            "readFiles": self.read_files,
            "modifiedFiles": self.modified_files,
            "tokenBudget": self.token_budget,
            "totalTokens": self.total_tokens,
        }


def branch_summary_preview(
    tree: SessionTree,
    old_leaf_id: str | None,
    target_id: str,
    options: BranchSummaryOptions = BranchSummaryOptions(),
    dialect: Dialect = DEFAULT_DIALECT,
) -> BranchSummaryPreview:
    """What ``navigateTree(target, {summarize: true})`` from ``old_leaf_id`` would send.

    ``request`` is None when Pi sends nothing: the target is the old leaf (no-op), nothing was
    collected, or no entry yields a message (Pi then stores ``No content to summarize``).
    """
    if target_id == old_leaf_id:
        entries: list[Json] = []
        common: str | None = old_leaf_id
    else:
        entries, common = collect_entries_for_branch_summary(tree, old_leaf_id, target_id)
    budget = token_budget(
        context_window=options.context_window, reserve_tokens=options.reserve_tokens
    )
    prepared = prepare_branch_entries(entries, budget)
    read_files, modified_files = compute_file_lists(prepared.file_ops)
    request = None
    if prepared.messages:
        request = branch_request(
            prepared.messages,
            custom_instructions=options.custom_instructions,
            replace_instructions=options.replace_instructions,
            dialect=dialect,
        )
    return BranchSummaryPreview(
        common_ancestor_id=common,
        entry_ids=[e["id"] for e in entries],
        request=request,
        messages=prepared.messages,
        message_entry_ids=prepared.entry_ids,
        read_files=read_files,
        modified_files=modified_files,
        token_budget=budget,
        total_tokens=prepared.total_tokens,
    )
