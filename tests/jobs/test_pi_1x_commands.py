"""``compact`` and ``branch-summary`` on a Pi 1.x session file: the dry run keeps the 0.x
contract and adds Pi 1.x's keys, and the real run writes the entry its dry run plans, in the
session's dialect (tests/conformance/corpus-1.6.0, recorded with the real Pi 1.6.0)."""

from __future__ import annotations

import json
import re
import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from contextlab.pi.jsutil import date_parse_ms
from contextlab.pi.session import parse_session_file
from contextlab.pi.writer import ENTRY_KEY_ORDER_1X

CORPUS_1X = Path(__file__).resolve().parents[1] / "conformance" / "corpus-1.6.0"
COMPACT_KEYS_0X = [
    "firstKeptEntryId",
    "tokensBefore",
    "isSplitTurn",
    "request",
    "turnPrefixRequest",
    "previousSummary",
    "summarizedEntryIds",
    "turnPrefixEntryIds",
    "readFiles",
    "modifiedFiles",
]
BRANCH_KEYS_0X = [
    "commonAncestorId",
    "entryIds",
    "request",
    "summarizedEntryIds",
    "readFiles",
    "modifiedFiles",
    "tokenBudget",
    "totalTokens",
]
# The branch summary Pi 1.6.0 made while recording `edits` (its manifest's navigateTree).
OLD_LEAF, TARGET = "82062459", "416afb5f"


@pytest.fixture
def edits(tmp_path):
    copy = tmp_path / "edits.jsonl"
    shutil.copyfile(CORPUS_1X / "edits" / "session.jsonl", copy)
    return copy


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def branch(edits, *args: str) -> dict:
    """``branch-summary --dry-run --json`` leaving the branch Pi 1.6.0 left while recording."""
    return json.loads(
        run(
            "branch-summary",
            str(edits),
            "--from",
            OLD_LEAF,
            "--to",
            TARGET,
            *args,
            "--dry-run",
            "--json",
        )
    )


def _without_stamp(system_message):
    return {**system_message, "timestamp": None}


@pytest.mark.parametrize("leaf", [None, "52400750", "edc06b69"])
def test_compact_on_a_1x_file_writes_the_entry_its_dry_run_plans(edits, offline_provider, leaf):
    at = ["--leaf", leaf] if leaf else []
    args = ["compact", str(edits), *at, "--keep-recent-tokens", "50"]
    plan = json.loads(run(*args, "--dry-run", "--json"))
    assert plan["dialect"] == "1.x"
    if plan.get("nothingToCompact"):
        with pytest.raises(CommandError, match=re.escape(plan["nothingToCompact"])):
            run(*args)
        return
    entry = json.loads(run(*args))
    parent = leaf or parse_session_file(edits).entries[-1]["id"]
    assert entry["parentId"] == parent
    assert entry["firstKeptEntryId"] == plan["firstKeptEntryId"]
    assert entry["tokensBefore"] == plan["tokensBefore"]
    assert entry["details"] == {
        "readFiles": plan["readFiles"],
        "modifiedFiles": plan["modifiedFiles"],
    }
    # Pi 1.6.0's keys, in its order (no usage: the offline summariser is no model), the
    # replayed system state stamped with the entry's own time.
    assert list(entry) == [k for k in ENTRY_KEY_ORDER_1X["compaction"] if k != "usage"]
    assert _without_stamp(entry["systemMessage"]) == _without_stamp(plan["systemMessage"])
    assert entry["systemMessage"]["timestamp"] == date_parse_ms(entry["timestamp"])
    assert entry["id"] not in {e["id"] for e in parse_session_file(edits).entries}


def test_branch_summary_on_a_1x_file_writes_the_entry_its_dry_run_plans(edits, offline_provider):
    args = ["branch-summary", str(edits), "--from", OLD_LEAF, "--to", TARGET]
    plan = json.loads(run(*args, "--dry-run", "--json"))
    entry = json.loads(run(*args))
    recorded = next(e for e in parse_session_file(edits).entries if e["type"] == "branch_summary")
    # Where Pi 1.6.0 put its own: under the target's parent (a user message), naming the leaf
    # it left.
    assert (entry["parentId"], entry["fromId"]) == (recorded["parentId"], recorded["fromId"])
    assert entry["details"] == {
        "readFiles": plan["readFiles"],
        "modifiedFiles": plan["modifiedFiles"],
    }
    assert list(entry) == [k for k in ENTRY_KEY_ORDER_1X["branch_summary"] if k != "usage"]


def test_the_1x_dry_runs_keep_the_0x_keys_and_add_pi_1x_s(edits):
    compact = json.loads(
        run("compact", str(edits), "--keep-recent-tokens", "50", "--dry-run", "--json")
    )
    assert list(compact) == [*COMPACT_KEYS_0X, "systemMessage", "dialect", "dialectSource"]
    assert compact["summarizedEntryIds"] and compact["readFiles"] == ["secret.txt"]
    branch_plan = branch(edits, "--model-max-tokens", "1000", "--context-window", "64000")
    assert list(branch_plan) == [*BRANCH_KEYS_0X, "dialect", "dialectSource"]
    assert branch_plan["request"]["maxTokens"] == 1000
    assert branch_plan["tokenBudget"] == 64000 - 16384
    # --dialect: the same branch planned as Pi 0.80.2 would (its fixed 2048-token budget).
    as_0_80 = branch(edits, "--dialect", "0.80")
    assert list(as_0_80) == [*BRANCH_KEYS_0X, "dialect", "dialectSource"]
    assert as_0_80["request"]["maxTokens"] == 2048
    assert as_0_80["dialectSource"]["detected"] is False


def test_the_1x_dry_runs_find_the_model_in_the_agent_dir_s_models_json(edits, tmp_path, settings):
    manifest = json.loads((CORPUS_1X / "edits" / "manifest.json").read_text())
    recorded = [r for r in manifest["requests"] if r["kind"] == "summary"]
    bodies = [json.loads((CORPUS_1X / "edits" / r["body"]).read_text()) for r in recorded]
    settings.PI_AGENT_DIR = str(tmp_path / "nowhere")
    common = ["--keep-recent-tokens", "150", "--dry-run", "--json"]
    unknown = json.loads(run("compact", str(edits), "--leaf", "edc06b69", *common))
    assert unknown["request"]["maxTokens"] is None  # fakeai is in no catalogue
    agent = tmp_path / "agent"
    agent.mkdir()
    model = next(m for m in manifest["models"] if m["id"] == "fake-reasoner")
    (agent / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "fakeai": {
                        "baseUrl": model["baseUrl"],
                        "api": model["api"],
                        "models": [
                            {
                                "id": model["id"],
                                "reasoning": True,
                                "contextWindow": model["contextWindow"],
                                "maxTokens": model["maxTokens"],
                            }
                        ],
                    }
                }
            }
        )
    )
    found = json.loads(
        run("compact", str(edits), "--leaf", "edc06b69", "--agent-dir", str(agent), *common)
    )
    assert found["request"]["maxTokens"] == bodies[0]["max_completion_tokens"]
    assert found["turnPrefixRequest"]["maxTokens"] == bodies[1]["max_completion_tokens"]
    found_branch = branch(edits, "--agent-dir", str(agent))
    assert found_branch["request"]["maxTokens"] == bodies[2]["max_completion_tokens"]
