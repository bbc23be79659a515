"""The ``context`` command's contract (docs/pi-engine.md): keys, leaf addressing, defaults,
errors."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from contextlab.pi.context import build_session_context, convert_to_llm
from contextlab.pi.session import parse_session_file
from tests.conformance.conftest import CORPUS_DIR, run_oracle
from tests.conftest import REPO

NOON = "2025-06-30T23:30:00.000Z"  # already July 1st east of UTC


def write_session(tmp_path: Path) -> tuple[Path, Path]:
    cwd = tmp_path / "project"
    cwd.mkdir()
    (cwd / "AGENTS.md").write_text("Project rules: be brief.\n")
    agent = tmp_path / "agent"
    agent.mkdir()
    lines = [
        {"type": "session", "version": 3, "id": "s1", "timestamp": NOON, "cwd": str(cwd)},
        {
            "type": "model_change",
            "id": "m1",
            "parentId": None,
            "timestamp": NOON,
            "provider": "anthropic",
            "modelId": "claude-sonnet-4-5",
        },
        {
            "type": "message",
            "id": "u1",
            "parentId": "m1",
            "timestamp": NOON,
            "message": {"role": "user", "content": "hello ☃ 😀", "timestamp": 1751326200000},
        },
        {
            "type": "message",
            "id": "a1",
            "parentId": "u1",
            "timestamp": NOON,
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"n": 1e-7}}
                ],
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "stopReason": "toolUse",
                "timestamp": 1751326201000,
            },
        },
        {
            "type": "label",
            "id": "l1",
            "parentId": "a1",
            "timestamp": NOON,
            "targetId": "u1",
            "label": "start",
        },
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    return path, agent


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("context", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_it_prints_the_contract_keys_for_the_resume_leaf(tmp_path, monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    path, agent = write_session(tmp_path)
    text = run(str(path), "--agent-dir", str(agent), "--json")
    result = json.loads(text)
    assert list(result) == [
        "leafId",
        "systemPrompt",
        "layers",
        "messages",
        "sent",
        "model",
        "thinkingLevel",
        "tools",
        "piRelease",
    ]
    # Pi 0.80's default tool set, declared as the agent hands it to pi-ai
    assert [t["name"] for t in result["tools"]] == ["read", "bash", "edit", "write"]
    assert all(list(t) == ["name", "description", "parameters"] for t in result["tools"])
    assert result["leafId"] == "l1"  # the last line, a label
    assert result["model"] == {"provider": "anthropic", "modelId": "claude-sonnet-4-5"}
    assert result["thinkingLevel"] == "off"
    parsed = parse_session_file(path)
    assert result["messages"] == convert_to_llm(build_session_context(parsed.entries).messages)
    # the orphan tool call gets Pi's synthetic result in what the provider received
    assert result["sent"][-1]["content"] == [{"type": "text", "text": "No result provided"}]
    assert "".join(layer["text"] for layer in result["layers"]) == result["systemPrompt"]
    assert "Project rules: be brief." in result["systemPrompt"]
    assert "Current date: 2025-06-30" in result["systemPrompt"]
    # JavaScript number formatting and raw non-ASCII, as JSON.stringify prints them
    assert '"arguments":{"n":1e-7}' in text
    assert "hello ☃ 😀" in text


def test_it_takes_the_date_from_the_leaf_in_local_time(tmp_path, monkeypatch):
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    path, agent = write_session(tmp_path)
    result = json.loads(run(str(path), "--agent-dir", str(agent), "--json"))
    assert "Current date: 2025-07-01" in result["systemPrompt"]
    result = json.loads(run(str(path), "--agent-dir", str(agent), "--date", "2030-01-02", "--json"))
    assert "Current date: 2030-01-02" in result["systemPrompt"]


def test_it_addresses_leaves_by_id_and_by_line(tmp_path):
    path, agent = write_session(tmp_path)
    by_id = json.loads(run(str(path), "--leaf", "u1", "--agent-dir", str(agent), "--json"))
    by_line = json.loads(run(str(path), "--leaf", "line:3", "--agent-dir", str(agent), "--json"))
    assert by_id == by_line
    assert by_id["leafId"] == "u1"
    assert [m["role"] for m in by_id["messages"]] == ["user"]


def test_it_limits_the_prompt_to_the_tools_given(tmp_path):
    path, agent = write_session(tmp_path)
    result = json.loads(run(str(path), "--tools", "read,grep", "--agent-dir", str(agent), "--json"))
    assert "- grep:" in result["systemPrompt"]
    assert "- bash:" not in result["systemPrompt"]


def test_it_renders_headings_per_layer_without_json(tmp_path):
    path, agent = write_session(tmp_path)
    text = run(str(path), "--agent-dir", str(agent))
    assert text.startswith("# Context at leaf l1")
    assert "\n## " in text
    assert "## Messages sent (3)" in text


@pytest.mark.parametrize(
    ("content", "leaf", "expected"),
    [
        (None, None, "cannot read the file"),
        (b'{"type":"message","id":"a","parentId":null}\n', None, ":1: the first line is not"),
        (None, "zzz", "--leaf zzz: no entry with this id"),
        (None, "line:99", ":99: --leaf: no entry on this line"),
        (None, "line:x", "expected line:N"),
    ],
)
def test_it_fails_with_one_line_naming_file_line_and_reason(tmp_path, content, leaf, expected):
    path, agent = write_session(tmp_path)
    if content is None and leaf is None:
        path = tmp_path / "missing.jsonl"
    elif content is not None:
        path.write_bytes(content)
    args = [str(path), "--agent-dir", str(agent), "--json"]
    if leaf:
        args[1:1] = ["--leaf", leaf]
    with pytest.raises(CommandError) as error:
        run(*args)
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    assert expected in message


def test_it_skips_a_line_pi_skips_even_when_its_reason_says_reject(tmp_path):
    # A byte order mark makes JSON.parse reject that one line; Pi reads on without it.
    path, agent = write_session(tmp_path)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([*lines[:2], b"\xef\xbb\xbf{}\n", *lines[2:]]))
    err = io.StringIO()
    out = io.StringIO()
    call_command("context", str(path), "--agent-dir", str(agent), "--json", stdout=out, stderr=err)
    assert ":3: starts with a byte order mark" in err.getvalue() and "skipped" in err.getvalue()
    assert json.loads(out.getvalue())["leafId"] == "l1"


def test_it_exits_non_zero_from_the_shell(tmp_path):
    missing = tmp_path / "nope.jsonl"
    proc = subprocess.run(
        [sys.executable, str(REPO / "manage.py"), "context", str(missing), "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert proc.returncode != 0
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(missing) in lines[0]


@pytest.mark.oracle
def test_it_prints_messages_and_sent_byte_for_byte_as_pi(tmp_path):
    source = CORPUS_DIR / "interactive" / "session.jsonl"
    if not source.exists():
        pytest.skip("the interactive corpus session is not recorded")
    agent = CORPUS_DIR / "interactive" / "fs" / "agent"
    copy = tmp_path / "session.jsonl"
    shutil.copyfile(source, copy)
    parsed = parse_session_file(copy)
    indexes = list(range(0, len(parsed.entries), max(1, len(parsed.entries) // 6)))
    pi = run_oracle(
        "project.mjs",
        {"file": str(copy), "agentDir": str(agent), "mode": "full", "leaves": indexes},
    )
    sent_compared = 0
    for result in pi["results"]:
        leaf = parsed.entries[result["index"]]["id"]
        text = run(str(copy), "--leaf", leaf, "--agent-dir", str(agent), "--json")
        assert f',"messages":{result["llm"]},"sent":' in text
        if "No result provided" not in result["sent"]:  # Pi stamps those with Date.now()
            assert f',"sent":{result["sent"]},"model":' in text
            sent_compared += 1
    assert sent_compared > 0
