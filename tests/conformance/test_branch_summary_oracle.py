"""Branch-summary preview, byte for byte against the real Pi 0.80.2 (oracle/branch.mjs).

For many (from, to) pairs over the same sessions as the compaction test — leaves of other
branches, ancestors, descendants, the old leaf itself, roots — and several budgets and instruction
settings, Pi's ``collectEntriesForBranchSummary`` + ``prepareBranchEntries`` and the request its
``generateBranchSummary`` hands to a fake stream function are compared with
``branch_summary_preview``.
"""

from __future__ import annotations

import random

import pytest

from contextlab.pi.branch_summary import (
    BRANCH_SUMMARY_PREAMBLE,
    BranchSummaryOptions,
    branch_summary_preview,
    join_branch_summary,
)
from contextlab.pi.session import SessionTree, parse_session_file
from tests.conformance.conftest import CORPUS_DIR, run_oracle
from tests.conformance.test_compaction_oracle import recorded_summary_requests, sessions_for_test

OPTIONS = [
    # reserveTokens, contextWindow, customInstructions, replaceInstructions
    (16384, 0, None, False),
    (16384, 18000, "Focus on files.", False),  # a budget of 1616 tokens: the 90 % rule kicks in
    (1000, 2000, "Replace everything: ünïcode 😀", True),
    (16384, 16500, None, True),  # replace without instructions keeps the default prompt
]


def pairs_for(tree: SessionTree, rng: random.Random, limit: int) -> list[tuple[str, str]]:
    ids = [e["id"] for e in tree.entries]
    leaves = [i for i in ids if not tree.children(i)]
    pairs: set[tuple[str, str]] = set()
    for old in leaves:
        for target in leaves:
            pairs.add((old, target))
        path = tree.path_ids(old)
        for target in rng.sample(path, min(3, len(path))):
            pairs.add((old, target))
    for _ in range(limit):
        pairs.add((rng.choice(ids), rng.choice(ids)))
    ordered = sorted(pairs)
    rng.shuffle(ordered)
    return ordered[:limit]


def yields_message(entry: dict) -> bool:
    if entry.get("type") == "message":
        return entry["message"].get("role") != "toolResult"
    return entry.get("type") in ("custom_message", "branch_summary", "compaction")


@pytest.mark.oracle
def test_it_matches_pi_branch_summary_preview(tmp_path):
    rng = random.Random(5)
    payload = []
    plans = []
    for path, use_digest, stride in sessions_for_test(tmp_path):
        tree = SessionTree(parse_session_file(path).entries)
        limit = 40 if stride > 1 or use_digest else 120
        cases = []
        for old, target in pairs_for(tree, rng, limit):
            reserve, window, instructions, replace = OPTIONS[len(cases) % len(OPTIONS)]
            cases.append(
                {
                    "fromId": old,
                    "targetId": target,
                    "reserveTokens": reserve,
                    "contextWindow": window,
                    "customInstructions": instructions,
                    "replaceInstructions": replace,
                }
            )
        payload.append({"file": str(path), "cases": cases})
        plans.append((path, tree, cases))
    got = run_oracle("branch.mjs", {"sessions": payload})["sessions"]

    counts = {"cases": 0, "requests": 0, "budget_cut": 0, "with_compaction": 0}
    for (path, tree, cases), results in zip(plans, got, strict=True):
        for case, theirs in zip(cases, results, strict=True):
            where = f"{path.name} {case}"
            options = BranchSummaryOptions(
                reserve_tokens=case["reserveTokens"],
                context_window=case["contextWindow"],
                custom_instructions=case["customInstructions"],
                replace_instructions=case["replaceInstructions"],
            )
            ours = branch_summary_preview(tree, case["fromId"], case["targetId"], options)
            counts["cases"] += 1
            if case["fromId"] != case["targetId"]:
                assert ours.common_ancestor_id == theirs["commonAncestorId"], where
                assert ours.entry_ids == theirs["entryIds"], where
            assert ours.messages == theirs["messages"], where
            assert ours.total_tokens == theirs["totalTokens"], where
            counts["budget_cut"] += len(ours.message_entry_ids) < sum(
                1 for i in ours.entry_ids if yields_message(tree.by_id[i])
            )
            counts["with_compaction"] += any(
                tree.by_id[i].get("type") == "compaction" for i in ours.entry_ids
            )
            requests = theirs["requests"]
            if ours.request is None:
                assert requests == [], where
                if theirs["result"] is not None:
                    assert theirs["result"] == {"summary": join_branch_summary(None, [], [])}, where
                continue
            counts["requests"] += 1
            assert len(requests) == 1, where
            pis = requests[0]
            assert ours.request["systemPrompt"] == pis["systemPrompt"], where
            assert ours.request["maxTokens"] == pis["maxTokens"], where
            assert ours.request["messages"] == pis["messages"], where
            # No reasoning option even though the fake model reasons.
            assert pis["optionKeys"] == ["apiKey", "env", "headers", "maxTokens", "signal"], where
            expected = join_branch_summary("BRANCH", ours.read_files, ours.modified_files)
            assert theirs["result"] == {
                "summary": expected,
                "readFiles": ours.read_files,
                "modifiedFiles": ours.modified_files,
            }, where
    assert counts["requests"] > 300 and counts["budget_cut"] > 10, counts
    assert counts["with_compaction"] > 20, counts
    print(counts)


# The instructions tests/conformance/recorder/driver.mjs passes to navigateTree, in order.
RECORDED_BRANCH_INSTRUCTIONS = [None, "Focus on the naming discussion."]


def test_it_reproduces_the_branch_summary_requests_pi_sent_while_recording():
    """Each recorded summary request came from navigateTree(<a user message>, {summarize}) at the
    leaf the manifest names; the summary entry Pi appended is a child of the target's parent."""
    sent = recorded_summary_requests("branches")
    parsed = parse_session_file(CORPUS_DIR / "branches" / "session.jsonl")
    tree = SessionTree(parsed.entries)
    summaries = [e for e in parsed.entries if e["type"] == "branch_summary"]
    assert len(sent) == len(summaries) == len(RECORDED_BRANCH_INSTRUCTIONS)
    for (meta, body), summary, instructions in zip(
        sent, summaries, RECORDED_BRANCH_INSTRUCTIONS, strict=True
    ):
        targets = [
            child
            for child in tree.children(summary["parentId"])
            if tree.by_id[child]["type"] == "message"
            and tree.by_id[child]["message"].get("role") == "user"
        ]
        matching = []
        for target in targets:
            preview = branch_summary_preview(
                tree, meta["leafId"], target, BranchSummaryOptions(custom_instructions=instructions)
            )
            request = preview.request
            if request is None:
                continue
            system, user = body["messages"]
            if (
                system["content"] == request["systemPrompt"]
                and user["content"] == request["messages"][0]["content"]
                and body.get("max_completion_tokens", body.get("max_tokens"))
                == request["maxTokens"]
            ):
                matching.append(target)
        # Sibling targets share the common ancestor, hence the request: any of them may match.
        assert matching, (meta, targets)
        # What Pi stored: the preamble, the model's text, the file lists we computed.
        assert summary["summary"].startswith(BRANCH_SUMMARY_PREAMBLE)
