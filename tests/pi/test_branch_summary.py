"""Branch-summary rules of Pi 0.80.2 (docs/pi-engine.md, "Branch summaries"); the oracle suite
checks them against Pi over hundreds of (from, to) pairs."""

from __future__ import annotations

from typing import Any

from contextlab.pi.branch_summary import (
    BRANCH_SUMMARY_MAX_TOKENS,
    BranchSummaryOptions,
    branch_summary_preview,
    collect_entries_for_branch_summary,
    prepare_branch_entries,
    token_budget,
)
from contextlab.pi.dialects import DEFAULT_DIALECT
from contextlab.pi.session import SessionTree


def entry(
    entry_id: str, parent: str | None, kind: str = "message", **fields: Any
) -> dict[str, Any]:
    return {
        "type": kind,
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-01T00:00:00.000Z",
        **fields,
    }


def user(entry_id: str, parent: str | None, text: str) -> dict[str, Any]:
    return entry(entry_id, parent, message={"role": "user", "content": text, "timestamp": 1})


def assistant(entry_id: str, parent: str, text: str, path: str | None = None) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if path:
        content.append({"type": "toolCall", "id": "c", "name": "edit", "arguments": {"path": path}})
    return entry(
        entry_id,
        parent,
        message={"role": "assistant", "content": content, "stopReason": "stop", "timestamp": 1},
    )


def tool_result(entry_id: str, parent: str) -> dict[str, Any]:
    message = {
        "role": "toolResult",
        "toolCallId": "c",
        "toolName": "edit",
        "content": [{"type": "text", "text": "ok"}],
        "isError": False,
        "timestamp": 1,
    }
    return entry(entry_id, parent, message=message)


def tree() -> SessionTree:
    # root - a1 - u2 (abandoned: a3 edit, r4, compaction c5, u6)   and   root - a1 - u7 (target)
    return SessionTree(
        [
            user("root", None, "start"),
            assistant("a1", "root", "ok"),
            user("u2", "a1", "try plan A"),
            assistant("a3", "u2", "editing", path="src/x.py"),
            tool_result("r4", "a3"),
            entry(
                "c5",
                "r4",
                "compaction",
                summary="COMPACTED",
                firstKeptEntryId="a3",
                tokensBefore=10,
            ),
            user("u6", "c5", "more A"),
            user("u7", "a1", "plan B instead"),
        ]
    )


def test_it_collects_up_to_the_common_ancestor_through_compactions():
    entries, common = collect_entries_for_branch_summary(tree(), "u6", "u7")
    assert common == "a1"
    assert [e["id"] for e in entries] == ["u2", "a3", "r4", "c5", "u6"]


def test_it_collects_nothing_when_the_target_is_on_the_current_branch():
    entries, common = collect_entries_for_branch_summary(tree(), "u6", "u2")
    assert common == "u2"
    assert [e["id"] for e in entries] == ["a3", "r4", "c5", "u6"]
    assert collect_entries_for_branch_summary(tree(), None, "u2") == ([], None)


def test_it_skips_tool_results_and_keeps_compaction_summaries():
    entries, _ = collect_entries_for_branch_summary(tree(), "u6", "u7")
    prepared = prepare_branch_entries(entries)
    assert [m["role"] for m in prepared.messages] == [
        "user",
        "assistant",
        "compactionSummary",
        "user",
    ]
    assert prepared.entry_ids == ["u2", "a3", "c5", "u6"]
    assert list(prepared.file_ops.edited) == ["src/x.py"]


def test_it_lets_a_summary_past_the_budget_while_under_ninety_percent():
    entries = [
        entry("b", None, "branch_summary", fromId="x", summary="s" * 400),  # 100 tokens
        user("u", "b", "u" * 40),  # 10 tokens
    ]
    assert prepare_branch_entries(entries, 50).entry_ids == ["b", "u"]
    assert prepare_branch_entries(entries, 11).entry_ids == ["u"]  # 10 >= 0.9 * 11


def test_it_budgets_from_the_context_window_or_pis_fallback():
    assert token_budget(context_window=0, reserve_tokens=16384) == 128000 - 16384
    assert token_budget(context_window=50000, reserve_tokens=1000) == 49000


def test_it_builds_the_request_with_default_or_custom_instructions():
    t = tree()
    default = branch_summary_preview(t, "u6", "u7").request
    assert default is not None
    body = default["messages"][0]["content"][0]["text"]
    assert body.startswith("<conversation>\n[User]: try plan A\n\n[Assistant]: editing\n\n")
    assert body.endswith("\n</conversation>\n\n" + DEFAULT_DIALECT.branch_summary_prompt)
    assert default["maxTokens"] == BRANCH_SUMMARY_MAX_TOKENS
    assert default["systemPrompt"] == DEFAULT_DIALECT.summarization_system_prompt

    focus = branch_summary_preview(t, "u6", "u7", BranchSummaryOptions(custom_instructions="why"))
    assert focus.request["messages"][0]["content"][0]["text"].endswith(
        DEFAULT_DIALECT.branch_summary_prompt + "\n\nAdditional focus: why"
    )
    replaced = branch_summary_preview(
        t,
        "u6",
        "u7",
        BranchSummaryOptions(custom_instructions="only this", replace_instructions=True),
    )
    assert replaced.request["messages"][0]["content"][0]["text"].endswith(
        "</conversation>\n\nonly this"
    )


def test_it_sends_nothing_when_the_branch_has_no_messages():
    t = SessionTree(
        [
            user("root", None, "x"),
            entry("m", "root", "model_change", provider="p", modelId="m"),
            user("v", "root", "y"),
        ]
    )
    preview = branch_summary_preview(t, "m", "v")
    assert preview.entry_ids == ["m"] and preview.request is None
    assert branch_summary_preview(t, "v", "v").to_json()["entryIds"] == []
