"""contextlab rebuilds, from the session file alone, every request real Pi 0.80.2 sent.

The corpus (tests/conformance/corpus/<scenario>/, recorded by ``python -m
tests.conformance.recorder``) holds real Pi sessions, the exact HTTP body of every chat-completions
request Pi sent while recording them, and the session leaf at the moment each was sent. For every
agent request this test:

1. recreates the scenario's resource files (AGENTS.md/CLAUDE.md files, skills, settings) at the
   absolute paths they had when recording, since Pi's prompt names them;
2. runs ``manage.py context SESSION --leaf ID --agent-dir DIR --pi-root DIR --date D --tools ...
   --json`` (the command-line contract in docs/pi-engine.md): system prompt, model, thinking
   level and the ``sent`` messages come from our engine (contextlab.pi.request);
3. turns them into a chat-completions body with our port of pi-ai's provider
   (contextlab.pi.providers.openai_completions), the built-in tool definitions from our dialect, and
   the thinking level as the reasoning effort, exactly as the coding agent calls ``streamSimple``;
4. compares with the recorded bytes — first part by part (system message, messages, tools, other
   fields) for a readable failure, then the whole body byte for byte.

Summarisation requests (manual compaction, tree navigation with a summary) are rebuilt the same
way from the session at their leaf and the recorded user action (custom instructions, navigation
target) with the compaction and branch-summary engines (contextlab.pi.compaction,
contextlab.pi.branch_summary).
"""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from contextlab.pi.branch_summary import BranchSummaryOptions, branch_summary_preview
from contextlab.pi.compaction import CompactionOptions, compaction_preview
from contextlab.pi.dialects import PI_0_80
from contextlab.pi.prompt import build_system_prompt
from contextlab.pi.providers.openai_completions import (
    build_request_body,
    get_compat,
    simple_options,
)
from contextlab.pi.request import TurnParts, steps_of
from contextlab.pi.resources import discover_resources
from contextlab.pi.session import SessionTree, parse_session_file

CORPUS = Path(__file__).resolve().parent / "corpus"


def _scenarios() -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(CORPUS.glob("*/manifest.json"))]


SCENARIOS = _scenarios()
AGENT_REQUESTS = [
    (manifest["scenario"], request)
    for manifest in SCENARIOS
    for request in manifest["requests"]
    if request["kind"] == "agent"
]

# Summarisation requests grouped by the user action that sent them: a split-turn compaction sends
# two at once (history and turn prefix, in parallel, so in no fixed order).
SUMMARY_GROUPS: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
for _manifest in SCENARIOS:
    for _request in _manifest["requests"]:
        if _request["kind"] == "summary":
            _key = (_manifest["scenario"], _request["leafId"], _request["operation"]["op"])
            SUMMARY_GROUPS.setdefault(_key, []).append(_request)


def _write_if_changed(path: Path, data: bytes) -> None:
    if path.exists() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    # Atomic so that parallel workers recreating the same tree never see a half-written file.
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def recreate_resources(manifest: dict[str, Any]) -> None:
    """Lay the recorded resource files out at their recorded absolute paths."""
    source = CORPUS / manifest["scenario"] / "fs"
    root = Path(manifest["scenarioRoot"])
    for path in sorted(source.rglob("*")):
        if path.is_file():
            _write_if_changed(root / path.relative_to(source), path.read_bytes())
    # Anything Pi would also have picked up must not exist above the scenario root.
    for ancestor in root.parents:
        for name in ("AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD", ".agents"):
            if (ancestor / name).exists():
                pytest.skip(f"{ancestor / name} exists and would change the recorded prompt")


@pytest.fixture(scope="module")
def prepared() -> dict[str, dict[str, Any]]:
    for manifest in SCENARIOS:
        recreate_resources(manifest)
    return {m["scenario"]: m for m in SCENARIOS}


def _recorded_body(scenario: str, request_info: dict[str, Any]) -> str:
    return (CORPUS / scenario / request_info["body"]).read_bytes().decode("utf-8")


@pytest.mark.parametrize(
    ("scenario", "request_info"),
    AGENT_REQUESTS,
    ids=[f"{scenario}-{r['seq']}" for scenario, r in AGENT_REQUESTS],
)
def test_it_rebuilds_the_system_message_pi_sent(
    prepared: dict[str, dict[str, Any]], scenario: str, request_info: dict[str, Any]
) -> None:
    manifest = prepared[scenario]
    resources = discover_resources(
        cwd=manifest["cwd"], agent_dir=manifest["agentDir"], home=manifest["home"]
    )
    prompt = build_system_prompt(
        cwd=manifest["cwd"],
        date=manifest["recordedDate"],
        pi_root=manifest["piPackageDir"],
        tools=manifest["activeTools"],
        resources=resources,
    )
    model = next(m for m in manifest["models"] if m["id"] == request_info["model"]["id"])
    role = (
        "developer"
        if model["reasoning"] and get_compat(model)["supportsDeveloperRole"]
        else "system"
    )
    system = json.loads(_recorded_body(scenario, request_info))["messages"][0]
    assert system == {"role": role, "content": prompt.text}


def run_context(
    manifest: dict[str, Any],
    leaf_id: str,
    session_file: Path,
    *extra: str,
    tools: list[str] | None = None,
) -> dict[str, Any]:
    """``manage.py context --json`` at ``leaf_id`` with the recording's inputs (its agent dir, Pi
    package and date; its active tools unless ``tools`` are given) and the ``extra`` options."""
    out = io.StringIO()
    call_command(
        "context",
        str(session_file),
        "--leaf",
        leaf_id,
        "--agent-dir",
        manifest["agentDir"],
        "--pi-root",
        manifest["piPackageDir"],
        "--date",
        manifest["recordedDate"],
        "--tools",
        ",".join(manifest["activeTools"] if tools is None else tools),
        *extra,
        "--json",
        stdout=out,
    )
    result: dict[str, Any] = json.loads(out.getvalue())
    return result


def engine_body(manifest: dict[str, Any], result: dict[str, Any]) -> str:
    model_ref = result["model"]
    assert model_ref is not None, "the engine found no model for this leaf"
    model = next(
        m
        for m in manifest["models"]
        if m["provider"] == model_ref["provider"] and m["id"] == model_ref["modelId"]
    )
    tools = [t for name in manifest["activeTools"] if (t := PI_0_80.tool(name)) is not None]
    return steps_of(PI_0_80).chat_completions_body(
        model,
        TurnParts(
            system_prompt=result["systemPrompt"],
            messages=result["sent"],
            tools=tools,
            thinking_level=result["thinkingLevel"],
            dialect=PI_0_80,
        ),
    )


def describe_difference(expected: dict[str, Any], got: dict[str, Any]) -> str:
    """Name the first part of the body that differs, with both values."""
    problems = []
    exp_messages, got_messages = expected.get("messages", []), got.get("messages", [])
    if exp_messages[:1] != got_messages[:1]:
        exp_system = exp_messages[0] if exp_messages else None
        got_system = got_messages[0] if got_messages else None
        problems.append(f"system message\n  expected {exp_system!r}\n  got      {got_system!r}")
    if len(exp_messages) != len(got_messages):
        problems.append(f"message count: expected {len(exp_messages)}, got {len(got_messages)}")
    for i, (exp, act) in enumerate(zip(exp_messages[1:], got_messages[1:], strict=False), start=1):
        if json.dumps(exp) != json.dumps(act):
            problems.append(f"messages[{i}]\n  expected {exp!r}\n  got      {act!r}")
            break
    if json.dumps(expected.get("tools")) != json.dumps(got.get("tools")):
        problems.append("tools differ")
    for key in sorted(set(expected) | set(got)):
        if key not in ("messages", "tools") and expected.get(key) != got.get(key):
            problems.append(f"{key}: expected {expected.get(key)!r}, got {got.get(key)!r}")
    if list(expected) != list(got):
        problems.append(f"key order: expected {list(expected)}, got {list(got)}")
    return "\n".join(problems) or "same JSON, different serialisation"


@pytest.mark.parametrize(
    ("scenario", "request_info"),
    AGENT_REQUESTS,
    ids=[f"{scenario}-{r['seq']}" for scenario, r in AGENT_REQUESTS],
)
def test_it_rebuilds_the_request_pi_sent_from_the_session(
    prepared: dict[str, dict[str, Any]],
    scenario: str,
    request_info: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    manifest = prepared[scenario]
    # HOME decides ~/.agents/skills; the engine must see the recording's HOME, not ours.
    monkeypatch.setenv("HOME", manifest["home"])
    monkeypatch.setenv("PI_CODING_AGENT_DIR", manifest["agentDir"])
    monkeypatch.setenv("TZ", manifest["tz"])
    session_copy = tmp_path / "session.jsonl"
    shutil.copyfile(CORPUS / scenario / "session.jsonl", session_copy)

    result = run_context(manifest, request_info["leafId"], session_copy)
    assert result["leafId"] == request_info["leafId"]
    assert result["model"] == {
        "provider": request_info["model"]["provider"],
        "modelId": request_info["model"]["id"],
    }
    body = engine_body(manifest, result)
    expected = (CORPUS / scenario / request_info["body"]).read_bytes().decode("utf-8")
    if body != expected:
        pytest.fail(describe_difference(json.loads(expected), json.loads(body)))


def test_it_covers_every_feature_the_issue_asks_for() -> None:
    entries = []
    for manifest in SCENARIOS:
        lines = (CORPUS / manifest["scenario"] / "session.jsonl").read_text().splitlines()
        entries.extend(json.loads(line) for line in lines[1:])
    types = {e["type"] for e in entries}
    assert {
        "compaction",
        "branch_summary",
        "custom_message",
        "model_change",
        "thinking_level_change",
        "label",
        "session_info",
    } <= types
    roles = {e["message"]["role"] for e in entries if e["type"] == "message"}
    assert {"user", "assistant", "toolResult", "bashExecution"} <= roles
    bash = [
        e["message"]
        for e in entries
        if e["type"] == "message" and e["message"]["role"] == "bashExecution"
    ]
    assert any(m.get("excludeFromContext") for m in bash)
    assert any(m.get("truncated") and m.get("fullOutputPath") for m in bash)
    compactions = [e for e in entries if e["type"] == "compaction"]
    assert any("Turn Context (split turn)" in c["summary"] for c in compactions)
    assert any("updated compaction" in c["summary"] for c in compactions)
    results = [
        e["message"]
        for e in entries
        if e["type"] == "message" and e["message"]["role"] == "toolResult"
    ]
    texts = ["".join(b.get("text", "") for b in m["content"]) for m in results]
    assert any("Use offset=" in t for t in texts)
    assert any("Full output:" in t for t in texts)
    assert any("Command exited with code" in t for t in texts)
    assert len(AGENT_REQUESTS) >= 25


def _summary_body(model: dict[str, Any], request: dict[str, Any], reasoning: str | None) -> str:
    context = {"systemPrompt": request["systemPrompt"], "messages": request["messages"]}
    options = simple_options(model, reasoning=reasoning, max_tokens=request["maxTokens"])
    return build_request_body(model, context, options)


@pytest.mark.parametrize(
    ("scenario", "leaf_id", "op"),
    list(SUMMARY_GROUPS),
    ids=[
        f"{scenario}-{group[0]['seq']}-{op}" for (scenario, _, op), group in SUMMARY_GROUPS.items()
    ],
)
def test_it_rebuilds_the_summarisation_requests_pi_sent(
    prepared: dict[str, dict[str, Any]],
    scenario: str,
    leaf_id: str,
    op: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    manifest = prepared[scenario]
    group = SUMMARY_GROUPS[(scenario, leaf_id, op)]
    operation = group[0]["operation"]
    monkeypatch.setenv("HOME", manifest["home"])
    session_copy = tmp_path / "session.jsonl"
    shutil.copyfile(CORPUS / scenario / "session.jsonl", session_copy)
    tree = SessionTree(parse_session_file(session_copy).entries)
    at_leaf = run_context(manifest, leaf_id, session_copy)
    model = next(m for m in manifest["models"] if m["id"] == at_leaf["model"]["modelId"])
    settings = json.loads((CORPUS / scenario / "fs" / "agent" / "settings.json").read_text())

    if op == "compact":
        preview = compaction_preview(
            tree.path(leaf_id),
            CompactionOptions(
                keep_recent_tokens=settings["compaction"]["keepRecentTokens"],
                model_max_tokens=model["maxTokens"],
                custom_instructions=operation["customInstructions"],
            ),
        )
        requests = [r for r in (preview.request, preview.turn_prefix_request) if r is not None]
        # compact() passes the session's thinking level to reasoning models.
        thinking = at_leaf["thinkingLevel"]
        reasoning = thinking if model["reasoning"] and thinking != "off" else None
    else:
        assert operation["oldLeafId"] == leaf_id
        branch = branch_summary_preview(
            tree,
            leaf_id,
            operation["targetId"],
            BranchSummaryOptions(
                context_window=model["contextWindow"],
                custom_instructions=operation["customInstructions"],
                replace_instructions=operation["replaceInstructions"],
            ),
        )
        requests = [branch.request] if branch.request is not None else []
        reasoning = None  # branch summaries never ask for reasoning

    rebuilt = sorted(_summary_body(model, r, reasoning) for r in requests)
    recorded = sorted(_recorded_body(scenario, r) for r in group)
    assert len(rebuilt) == len(recorded)
    for got, expected in zip(rebuilt, recorded, strict=True):
        if got != expected:
            pytest.fail(describe_difference(json.loads(expected), json.loads(got)))
