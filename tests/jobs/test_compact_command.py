"""The ``compact`` and ``branch-summary`` commands' --dry-run --json contract
(docs/pi-engine.md)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from contextlab.pi.branch_summary import BranchSummaryOptions, branch_summary_preview
from contextlab.pi.compaction import CompactionOptions, compaction_preview
from contextlab.pi.session import SessionTree, parse_session_file
from tests.conformance.conftest import CORPUS_DIR, run_oracle

REPO = Path(__file__).resolve().parents[2]
CORPUS_COMPACTION = CORPUS_DIR / "compaction" / "session.jsonl"
CONTRACT_KEYS = ["firstKeptEntryId", "tokensBefore", "isSplitTurn", "request", "turnPrefixRequest"]


@pytest.fixture
def session_file(tmp_path):
    if not CORPUS_COMPACTION.exists():
        pytest.skip("the recorded corpus is not on this machine")
    copy = tmp_path / "session.jsonl"
    shutil.copyfile(CORPUS_COMPACTION, copy)
    return copy


def run(*args: str) -> dict:
    out = StringIO()
    call_command(*args, stdout=out)
    return json.loads(out.getvalue())


def test_it_prints_the_compaction_preview_of_the_leaf(session_file):
    result = run("compact", str(session_file), "--keep-recent-tokens", "100", "--dry-run", "--json")
    assert list(result)[:5] == CONTRACT_KEYS
    parsed = parse_session_file(session_file)
    tree = SessionTree(parsed.entries)
    expected = compaction_preview(
        tree.path(tree.leaf_id), CompactionOptions(keep_recent_tokens=100)
    )
    assert result == json.loads(json.dumps(expected.to_json()))
    request = result["request"] or result["turnPrefixRequest"]
    assert request["messages"][0]["role"] == "user"
    assert request["messages"][0]["content"][0]["type"] == "text"


def test_it_passes_instructions_and_limits_to_the_request(session_file):
    result = run(
        "compact",
        str(session_file),
        "--keep-recent-tokens",
        "1",
        "--reserve-tokens",
        "1000",
        "--model-max-tokens",
        "500",
        "--instructions",
        "Keep the parser notes",
        "--dry-run",
        "--json",
    )
    requests = [r for r in (result["request"], result["turnPrefixRequest"]) if r]
    assert requests
    for request in requests:
        assert request["maxTokens"] <= 500
    assert result["request"]
    text = result["request"]["messages"][0]["content"][0]["text"]
    assert text.endswith("\n\nAdditional focus: Keep the parser notes")


def test_it_accepts_a_line_number_as_leaf(session_file):
    parsed = parse_session_file(session_file)
    line = parsed.line_numbers[5]
    by_line = run("compact", str(session_file), "--leaf", f"line:{line}", "--dry-run", "--json")
    by_id = run(
        "compact", str(session_file), "--leaf", parsed.entries[5]["id"], "--dry-run", "--json"
    )
    assert by_line == by_id


def test_it_prints_nulls_when_there_is_nothing_to_compact(session_file):
    first = parse_session_file(session_file).entries[0]["id"]
    result = run("compact", str(session_file), "--leaf", first, "--dry-run", "--json")
    assert [result[k] for k in CONTRACT_KEYS] == [None] * 5


def test_it_reports_should_compact_for_a_context_window(session_file):
    def run_with_window(window: str) -> dict:
        return run(
            "compact",
            str(session_file),
            "--keep-recent-tokens",
            "100",
            "--context-window",
            window,
            "--dry-run",
            "--json",
        )

    small = run_with_window("100")
    large = run_with_window("10000000")
    assert small["tokensBefore"] is not None
    assert small["shouldCompact"] is True
    assert large["shouldCompact"] is False


def test_it_lists_auto_compactions_for_a_small_window(session_file):
    result = run(
        "compact",
        str(session_file),
        "--what-if",
        "--context-window",
        "1000",
        "--reserve-tokens",
        "100",
        "--keep-recent-tokens",
        "200",
        "--json",
    )
    # Every run in this recording reports 1050 tokens of usage: over the 900 threshold.
    assert result["compactions"]
    ids = {e["id"] for e in parse_session_file(session_file).entries}
    for c in result["compactions"]:
        assert c["afterEntryId"] in ids and c["firstKeptEntryId"] in ids
        assert c["contextTokens"] > 1000 - 100


def test_it_names_file_and_reason_for_bad_input(tmp_path, session_file):
    missing = tmp_path / "missing.jsonl"
    with pytest.raises(CommandError, match=r"missing\.jsonl: cannot read the file"):
        call_command("compact", str(missing), "--dry-run")
    with pytest.raises(CommandError, match=r"--leaf nope: no entry with this id"):
        call_command("compact", str(session_file), "--leaf", "nope", "--dry-run")
    with pytest.raises(CommandError, match=r":999: --leaf: no entry on this line"):
        call_command("compact", str(session_file), "--leaf", "line:999", "--dry-run")
    headless = tmp_path / "headless.jsonl"
    headless.write_text('{"type":"message","id":"a","parentId":null}\n')
    with pytest.raises(CommandError, match=r"headless\.jsonl:1: .*not a session header"):
        call_command("compact", str(headless), "--dry-run")


def test_it_exits_non_zero_with_one_line_from_the_shell(tmp_path):
    proc = subprocess.run(
        [sys.executable, "manage.py", "compact", str(tmp_path / "x.jsonl"), "--dry-run", "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode != 0
    assert proc.stderr.strip().count("\n") == 0
    assert "x.jsonl: cannot read the file" in proc.stderr


def test_it_prints_the_branch_summary_preview(session_file):
    parsed = parse_session_file(session_file)
    tree = SessionTree(parsed.entries)
    old, target = tree.leaf_id, parsed.entries[1]["id"]
    result = run(
        "branch-summary",
        str(session_file),
        "--from",
        old,
        "--to",
        target,
        "--instructions",
        "Only the decisions",
        "--replace-instructions",
        "--context-window",
        "50000",
        "--dry-run",
        "--json",
    )
    assert list(result)[:3] == ["commonAncestorId", "entryIds", "request"]
    expected = branch_summary_preview(
        tree,
        old,
        target,
        BranchSummaryOptions(
            context_window=50000,
            custom_instructions="Only the decisions",
            replace_instructions=True,
        ),
    )
    assert result == json.loads(json.dumps(expected.to_json()))
    assert result["commonAncestorId"] == target
    assert result["request"]["maxTokens"] == 2048
    assert result["request"]["messages"][0]["content"][0]["text"].endswith(
        "</conversation>\n\nOnly the decisions"
    )


@pytest.mark.oracle
def test_it_prints_what_pi_sends_for_every_leaf(session_file):
    parsed = parse_session_file(session_file)
    cases = [
        {
            "leafId": e["id"],
            "keepRecentTokens": 150,
            "reserveTokens": 16384,
            "modelMaxTokens": 0,
            "customInstructions": None,
        }
        for e in parsed.entries
    ]
    got = run_oracle("compaction.mjs", {"sessions": [{"file": str(session_file), "cases": cases}]})
    for case, theirs in zip(cases, got["sessions"][0], strict=True):
        ours = run(
            "compact",
            str(session_file),
            "--leaf",
            case["leafId"],
            "--keep-recent-tokens",
            "150",
            "--dry-run",
            "--json",
        )
        if not theirs["prepared"]:
            assert ours["request"] is None and ours["turnPrefixRequest"] is None
            continue
        assert ours["firstKeptEntryId"] == theirs["firstKeptEntryId"]
        assert ours["tokensBefore"] == theirs["tokensBefore"]
        sent = [r for r in (ours["request"], ours["turnPrefixRequest"]) if r]
        assert [{k: r[k] for k in ("systemPrompt", "messages", "maxTokens")} for r in sent] == [
            {k: r[k] for k in ("systemPrompt", "messages", "maxTokens")} for r in theirs["requests"]
        ]


def _variants(session_file: Path, tmp_path: Path) -> dict[str, Path]:
    """Files ``context`` opens: as recorded, with a byte-order-marked line Pi skips after the
    header, with other lines Pi skips, and with CRLF line ends."""
    lines = session_file.read_bytes().splitlines(keepends=True)
    variants = {
        "recorded": b"".join(lines),
        "bom line": b"".join([lines[0], b"\xef\xbb\xbf{}\n", *lines[1:]]),
        "skipped lines": b"".join([lines[0], b"{oops\n", b"\n", b"   \n", *lines[1:], b"0\n"]),
        "crlf": b"".join(line.replace(b"\n", b"\r\n") for line in lines),
    }
    paths = {}
    for name, data in variants.items():
        path = tmp_path / f"{name.replace(' ', '-')}.jsonl"
        path.write_bytes(data)
        paths[name] = path
    return paths


def test_compact_and_branch_summary_accept_every_file_context_accepts(session_file, tmp_path):
    """One loader for the three commands: a file ``context`` opens (the byte-order-mark line
    among them) is opened by ``compact --dry-run`` and ``branch-summary --dry-run`` too, with
    the same warnings, and the same files are refused by all three with the same message."""
    parsed = parse_session_file(session_file)
    old_leaf, target = SessionTree(parsed.entries).leaf_id, parsed.entries[1]["id"]
    recorded: dict[str, dict] = {}
    for name, path in _variants(session_file, tmp_path).items():
        outputs = {}
        warnings = {}
        for command, extra in (
            ("context", []),
            ("compact", ["--dry-run"]),
            ("branch-summary", ["--from", old_leaf, "--to", target, "--dry-run"]),
        ):
            out, err = StringIO(), StringIO()
            call_command(command, str(path), *extra, "--json", stdout=out, stderr=err)
            outputs[command] = json.loads(out.getvalue())
            warnings[command] = err.getvalue()
        assert warnings["context"] == warnings["compact"] == warnings["branch-summary"], name
        if name == "bom line":
            assert ":2: starts with a byte order mark" in warnings["compact"]
        # The lines Pi skips change nothing: every command prints what it prints for the file
        # as recorded.
        recorded = recorded or outputs
        assert outputs == recorded, name
        assert list(outputs["compact"])[:5] == CONTRACT_KEYS
        assert outputs["branch-summary"]["entryIds"], name

    # A header and no entry yet: context prints an empty request, compact says there is nothing
    # to compact (it used to refuse the file).
    header_only = tmp_path / "header-only.jsonl"
    header_only.write_bytes(session_file.read_bytes().splitlines(keepends=True)[0])
    assert run("context", str(header_only), "--json")["messages"] == []
    nothing = run("compact", str(header_only), "--dry-run", "--json")
    assert nothing["nothingToCompact"] == "Nothing to compact (session too small)"

    refused = tmp_path / "headless.jsonl"
    refused.write_bytes(b'\xef\xbb\xbf{"type":"session","id":"s"}\n{"type":"x","id":"a"}\n')
    messages = set()
    for command, extra in (
        ("context", []),
        ("compact", ["--dry-run"]),
        ("branch-summary", ["--from", "a", "--to", "a", "--dry-run"]),
    ):
        with pytest.raises(CommandError) as error:
            call_command(command, str(refused), *extra, "--json", stderr=StringIO())
        messages.add(str(error.value))
    assert len(messages) == 1 and ":2: the first line is not a session header" in messages.pop()
