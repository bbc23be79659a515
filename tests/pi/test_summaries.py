"""The engine's summaries in the session's dialect, against what the real Pi 1.6.0 recorded
(tests/conformance/corpus-1.6.0: its summary request bodies, and the compaction and branch summary
entries it appended), and Pi 0.80.2's rules for a 0.x leaf."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from contextlab.pi import summaries
from contextlab.pi.compaction import format_file_operations
from contextlab.pi.dialects import pi_1_x
from contextlab.pi.dialects.pi_1_x import data as pi_1_x_texts
from contextlab.pi.jsutil import date_parse_ms, json_stringify
from contextlab.pi.session import parse_session_file

CORPUS_1X = Path(__file__).resolve().parents[1] / "conformance" / "corpus-1.6.0"
CORPUS_0X = Path(__file__).resolve().parents[1] / "conformance" / "corpus"
KEEP_RECENT_TOKENS = 150  # the recorded agent dir's settings.json
SPLIT_TURN_JOINER = "\n\n---\n\n**Turn Context (split turn):**\n\n"


def _manifest(scenario: str) -> dict[str, Any]:
    return json.loads((CORPUS_1X / scenario / "manifest.json").read_text())


def _model(manifest: dict[str, Any], model_id: str) -> dict[str, Any]:
    return next(m for m in manifest["models"] if m["id"] == model_id)


def _summary_groups() -> list[tuple[str, str, list[dict[str, Any]]]]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for path in sorted(CORPUS_1X.glob("*/manifest.json")):
        manifest = json.loads(path.read_text())
        for request in manifest["requests"]:
            if request["kind"] == "summary":
                key = (manifest["scenario"], request["leafId"])
                groups.setdefault(key, []).append(request)
    return [(scenario, leaf, requests) for (scenario, leaf), requests in groups.items()]


SUMMARIES = _summary_groups()


def _moment(timestamp: str) -> datetime:
    ms = date_parse_ms(timestamp)
    assert ms is not None
    return datetime.fromtimestamp(ms / 1000).astimezone()


@pytest.mark.parametrize(
    ("scenario", "leaf", "requests_"), SUMMARIES, ids=[f"{s}-{leaf}" for s, leaf, _ in SUMMARIES]
)
def test_each_summary_pi_1_6_0_made_is_planned_sent_joined_and_written_as_pi_did(
    scenario, leaf, requests_
):
    manifest = _manifest(scenario)
    session = parse_session_file(CORPUS_1X / scenario / "session.jsonl")
    model = _model(manifest, requests_[0]["model"]["id"])
    operation = requests_[0]["operation"] or {"op": "compact", "customInstructions": None}
    if operation["op"] == "navigateTree":
        plan = summaries.plan_branch_summary(
            session.entries,
            operation["oldLeafId"],
            operation["targetId"],
            summaries.SummaryOptions(
                custom_instructions=operation["customInstructions"],
                replace_instructions=operation["replaceInstructions"],
            ),
            model=model,
        )
        written = [
            e
            for e in session.entries
            if e["type"] == "branch_summary" and e["fromId"] == operation["oldLeafId"]
        ]
    else:
        plan = summaries.plan_compaction(
            session.entries,
            leaf,
            summaries.SummaryOptions(
                keep_recent_tokens=KEEP_RECENT_TOKENS,
                custom_instructions=operation["customInstructions"],
            ),
            model=model,
        )
        written = [
            e for e in session.entries if e["type"] == "compaction" and e["parentId"] == leaf
        ]
    assert plan.pi_1x and plan.nothing is None
    recorded = [(CORPUS_1X / scenario / r["body"]).read_text() for r in requests_]
    # Pi sends the calls in order and stops at the first reply it refuses.
    assert [json_stringify(c.body(model)) for c in plan.calls[: len(recorded)]] == recorded
    if not written:
        # The reply was cut at the token cap: Pi refuses it with its text and writes nothing.
        call = plan.calls[len(recorded) - 1]
        assert summaries.summary_failure(plan, call, "length") == manifest["rejectedSummary"]
        return
    entry = written[0]
    assert all(summaries.summary_failure(plan, c, "stop") is None for c in plan.calls)
    # The replies' texts, taken back out of the summary Pi joined from them.
    if plan.kind == "compaction":
        body = entry["summary"].removesuffix(
            format_file_operations(plan.read_files, plan.modified_files)
        )
        parts = body.split(SPLIT_TURN_JOINER) if plan.split_turn else [body]
        texts = dict(zip([c.role for c in plan.calls], parts[-len(plan.calls) :], strict=True))
    else:
        body = (
            entry["summary"]
            .removeprefix(pi_1_x_texts.BRANCH_SUMMARY_PREAMBLE)
            .removesuffix(format_file_operations(plan.read_files, plan.modified_files))
        )
        texts = {"branch": body}
    summary, details = summaries.join_summary(plan, texts)
    assert (summary, details) == (entry["summary"], entry["details"])
    taken = {e["id"] for e in session.entries}
    ours = summaries.build_entry(
        plan,
        taken,
        _moment(entry["timestamp"]),
        summary,
        details,
        usage=entry["usage"],
    )
    assert ours["id"] not in taken
    ours["id"] = entry["id"]  # Pi's was random too
    # Key for key, in Pi's order: the replayed system state stamped with the entry's own time.
    assert json_stringify(ours) == json_stringify(entry)


def test_a_split_turn_with_no_history_keeps_the_previous_summary_in_pi_1x():
    plan = summaries.SummaryPlan(
        "compaction",
        pi_1_x_choice(),
        {},
        previous_summary="EARLIER",
        split_turn=True,
    )
    summary, _ = summaries.join_summary(plan, {"turn_prefix": "PREFIX"})
    assert summary == "EARLIER" + SPLIT_TURN_JOINER + "PREFIX"
    zero = summaries.SummaryPlan(
        "compaction", zero_x_choice(), {}, previous_summary="EARLIER", split_turn=True
    )
    assert summaries.join_summary(zero, {"turn_prefix": "PREFIX"})[0].startswith(
        "No prior history."
    )


def pi_1_x_choice():  # type: ignore[no-untyped-def]
    from contextlab.pi.dialects.detect import detect_turn_dialect

    return detect_turn_dialect([], None, {}, chosen="1.x")


def zero_x_choice():  # type: ignore[no-untyped-def]
    from contextlab.pi.dialects.detect import detect_turn_dialect

    return detect_turn_dialect([], None, {})


def test_pi_0_80_keeps_a_summary_cut_at_the_token_cap_and_pi_1x_refuses_it():
    zero = summaries.SummaryPlan("compaction", zero_x_choice(), {})
    one = summaries.SummaryPlan("compaction", pi_1_x_choice(), {})
    history = summaries.SummaryCall("history", {}, [])
    prefix = summaries.SummaryCall("turn_prefix", {}, [])
    branch = summaries.SummaryCall("branch", {}, [])
    assert summaries.summary_failure(zero, history, "length") is None
    assert summaries.summary_failure(one, prefix, "length") == pi_1_x.summary_rejected_text(
        "Turn prefix summarization"
    )
    assert summaries.summary_failure(zero, history, "error", "boom") == "Summarization failed: boom"
    assert summaries.summary_failure(zero, branch, "error", None) == "Summarization failed"
    assert (
        summaries.summary_failure(one, branch, "error", None)
        == "Branch summarization failed: Unknown error"
    )


def test_a_0x_leaf_is_planned_by_pi_0_80_rules_and_written_without_1x_keys():
    path = CORPUS_0X / "compaction" / "session.jsonl"
    session = parse_session_file(path)
    leaf = session.entries[-1]["id"]
    plan = summaries.plan_compaction(
        session.entries, leaf, summaries.SummaryOptions(keep_recent_tokens=10)
    )
    assert plan.choice.dialect == "0.80" and plan.nothing is None
    assert "systemMessage" not in plan.preview
    entry = summaries.build_entry(
        plan, set(), datetime.now().astimezone(), "S", {}, usage={"input": 1}
    )
    assert "usage" not in entry and "systemMessage" not in entry
