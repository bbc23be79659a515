"""The 0.73 dialect against the real Pi 0.73.1 (``@mariozechner/pi-coding-agent``).

1. The strings of 0.73.1's row of the release table (``releases_data.py``) are what the extractor
   reads from the installed 0.73.1, and every one the 0.73 dialect does not override equals
   0.80.2's (so reusing 0.80.2's is exact).
2. Every agent request 0.73.1 sent while recording ``corpus-0.73.1/`` (``python -m
   tests.conformance.recorder.record_versions 0.73.1``) is rebuilt byte for byte from the session
   and the recorded resource files with ``manage.py context --dialect 0.73``: markdown project
   context, the exploration guideline once grep/find/ls are active, no date-less prompt, and
   ``max_completion_tokens = min(model.maxTokens, 32000)``.
3. The compaction request 0.73.1 sent carries its own summarisation system prompt.
4. Without ``--dialect`` the command cannot tell 0.73 from 0.80 and says so.
5. Every entry of the 0.73.1 corpus, of the 0.80.2 corpus (which 0.73.1 opens too) and of the
   hand-written edge-case sessions as leaf projects as Pi 0.73.1's own ``buildSessionContext`` +
   ``convertToLlm`` + ``transformMessages`` (``oracle-0.73.1/project.mjs``).
"""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from contextlab.pi.dialects import PI_0_80
from contextlab.pi.dialects.pi_0_73 import PI_0_73
from contextlab.pi.dialects.release_table import ReleaseTexts
from contextlab.pi.providers.openai_completions import build_request_body, simple_options
from tests.conformance import projection_sessions as edge_sessions
from tests.conformance.conftest import (
    CORPUS_DIR,
    ORACLES,
    corpus_sessions,
    node_binary,
    oracle_available,
)
from tests.conformance.test_projection import check_edge_session, check_session
from tests.conformance.test_requests import _write_if_changed, run_context
from tests.environment import unavailable

CORPUS = Path(__file__).resolve().parent / "corpus-0.73.1"
EXTRACTOR = Path(__file__).resolve().parents[2] / "tools" / "extract_pi_strings.mjs"
pi_0_73_data = ReleaseTexts("0.73.1")
pi_0_80_data = ReleaseTexts("0.80.2")
OVERRIDDEN = {
    "SUMMARIZATION_SYSTEM_PROMPT",
    "TRUST_STORE_UNREADABLE",
    "TRUST_STORE_NOT_OBJECT",
    "PROJECT_CONTEXT_HEADING",
    "PROJECT_CONTEXT_PREAMBLE",
    "PROJECT_CONTEXT_FILE",
    "BASH_WITH_EXPLORERS_GUIDELINE",
}
MANIFESTS = [json.loads(p.read_text()) for p in sorted(CORPUS.glob("*/manifest.json"))]
AGENT_REQUESTS = [
    (m["scenario"], r) for m in MANIFESTS for r in m["requests"] if r["kind"] == "agent"
]


@pytest.mark.oracle
def test_the_0_73_strings_are_read_from_pi_0_73_1_and_the_rest_equal_0_80_2():
    node = node_binary()
    if node is None or not oracle_available("0.73.1"):
        unavailable("Node 24 or the pinned Pi 0.73.1 oracle is not installed")
    out = subprocess.run(
        [node, str(EXTRACTOR), "node_modules/@mariozechner/pi-coding-agent"],
        cwd=ORACLES["0.73.1"][0],
        capture_output=True,
        check=True,
        timeout=120,
    )
    extracted = json.loads(out.stdout)
    for name, value in extracted.items():
        # A text 0.73.1 does not have (null) is not in its row.
        assert getattr(pi_0_73_data, name, None) == value, name
        if name not in OVERRIDDEN:
            assert getattr(pi_0_80_data, name, None) == value, f"{name} differs from 0.80.2"
    assert PI_0_73.summarization_system_prompt != PI_0_80.summarization_system_prompt
    assert PI_0_73.tools == PI_0_80.tools


@pytest.fixture
def prepared(monkeypatch) -> dict[str, dict[str, Any]]:
    for manifest in MANIFESTS:
        source = CORPUS / manifest["scenario"] / "fs"
        root = Path(manifest["scenarioRoot"])
        for path in sorted(source.rglob("*")):
            if path.is_file():
                _write_if_changed(root / path.relative_to(source), path.read_bytes())
        # ~/.agents/skills is read from HOME, as Pi does.
        monkeypatch.setenv("HOME", manifest["home"])
    return {m["scenario"]: m for m in MANIFESTS}


def _context(
    manifest: dict[str, Any], leaf_id: str, tools: list[str], *extra: str
) -> dict[str, Any]:
    session_file = CORPUS / manifest["scenario"] / "session.jsonl"
    return run_context(manifest, leaf_id, session_file, *extra, tools=tools)


@pytest.mark.parametrize(
    ("scenario", "request_"), AGENT_REQUESTS, ids=[f"{s}-{r['seq']}" for s, r in AGENT_REQUESTS]
)
def test_it_rebuilds_every_request_pi_0_73_1_sent(prepared, scenario, request_):
    manifest = prepared[scenario]
    result = _context(manifest, request_["leafId"], request_["tools"], "--dialect", "0.73")
    assert result["dialect"] == "0.73" and result["dialectSource"]["detected"] is False
    model = next(m for m in manifest["models"] if m["id"] == result["model"]["modelId"])
    tools = [
        {"name": t["name"], "description": t["description"], "parameters": t["parameters"]}
        for name in request_["tools"]
        if (t := PI_0_73.tool(name)) is not None
    ]
    thinking = result["thinkingLevel"]
    options = simple_options(
        model, reasoning=None if thinking == "off" else thinking, max_tokens=result["maxTokens"]
    )
    context = {"systemPrompt": result["systemPrompt"], "messages": result["sent"], "tools": tools}
    recorded = (CORPUS / scenario / request_["body"]).read_text()
    ours = build_request_body(model, context, options)
    assert json.loads(ours)["messages"][0] == json.loads(recorded)["messages"][0]
    assert ours == recorded
    assert "# Project Context" in result["systemPrompt"]


def test_the_0_73_prompt_differs_from_what_0_80_would_have_sent(prepared):
    manifest = MANIFESTS[0]
    request_ = next(
        r for r in manifest["requests"] if r["kind"] == "agent" and "grep" in r["tools"]
    )
    old = _context(manifest, request_["leafId"], request_["tools"], "--dialect", "0.73")
    default = _context(manifest, request_["leafId"], request_["tools"])
    assert "dialect" not in default  # 0.x output unchanged without --dialect
    assert "<project_context>" in default["systemPrompt"]
    assert pi_0_73_data.BASH_WITH_EXPLORERS_GUIDELINE in old["systemPrompt"]
    assert pi_0_73_data.BASH_WITH_EXPLORERS_GUIDELINE not in default["systemPrompt"]
    chosen = _context(manifest, request_["leafId"], request_["tools"], "--dialect", "0.80")
    assert chosen["maxTokens"] is None and old["maxTokens"] == 16384
    assert "cannot be told" not in chosen["dialectSource"]["reason"]


def test_the_compaction_request_carries_the_0_73_summarisation_prompt():
    manifest = MANIFESTS[0]
    summaries = [r for r in manifest["requests"] if r["kind"] == "summary"]
    assert summaries
    for request_ in summaries:
        body = json.loads((CORPUS / manifest["scenario"] / request_["body"]).read_text())
        assert body["messages"][0]["content"] == PI_0_73.summarization_system_prompt


def test_without_a_choice_a_0_x_turn_is_0_80_and_the_reason_says_it_cannot_be_told():
    from contextlab.pi.dialects.detect import detect_turn_dialect
    from contextlab.pi.session import parse_session_file

    session = parse_session_file(CORPUS / "context" / "session.jsonl")
    choice = detect_turn_dialect(session.entries, session.entries[-1]["id"])
    assert (choice.dialect, choice.detected) == ("0.80", False)
    assert "cannot be told apart" in choice.reason


def test_compact_dialect_0_73_rebuilds_the_compaction_requests_pi_0_73_1_sent():
    manifest = MANIFESTS[0]
    session_path = CORPUS / manifest["scenario"] / "session.jsonl"
    from contextlab.pi.session import parse_session_file

    session = parse_session_file(session_path)
    entry = next(e for e in session.entries if e["type"] == "compaction")
    out = io.StringIO()
    call_command(
        "compact",
        str(session_path),
        "--leaf",
        entry["parentId"],
        "--keep-recent-tokens",
        "150",
        "--dialect",
        "0.73",
        "--dry-run",
        "--json",
        stdout=out,
    )
    result = json.loads(out.getvalue())
    assert result["dialect"] == "0.73"
    assert result["firstKeptEntryId"] == entry["firstKeptEntryId"]
    assert result["tokensBefore"] == entry["tokensBefore"]
    model = next(m for m in manifest["models"] if m["id"] == "fake-reasoner")
    ours = []
    for key in ("request", "turnPrefixRequest"):
        request = result[key]
        options = simple_options(model, reasoning="medium", max_tokens=request["maxTokens"])
        context = {"systemPrompt": request["systemPrompt"], "messages": request["messages"]}
        ours.append(build_request_body(model, context, options))
    recorded = [
        (CORPUS / manifest["scenario"] / r["body"]).read_text()
        for r in manifest["requests"]
        if r["kind"] == "summary"
    ]
    # 0.73 sends both in parallel: their arrival order is not fixed.
    assert sorted(ours) == sorted(recorded)


def _projection_cases() -> list[tuple[str, Path, Path | None]]:
    cases = []
    for path in [*sorted(CORPUS.glob("*/session.jsonl")), *corpus_sessions()]:
        agent = path.parent / "fs" / "agent"
        root = CORPUS if path.is_relative_to(CORPUS) else CORPUS_DIR
        cases.append((f"{root.name}/{path.parent.name}", path, agent if agent.exists() else None))
    return cases


@pytest.mark.oracle
@pytest.mark.parametrize(
    ("name", "path", "agent_dir"), _projection_cases(), ids=[c[0] for c in _projection_cases()]
)
def test_every_leaf_projects_as_pi_0_73_1_projects_it(name, path, agent_dir, tmp_path):
    counts = check_session(path, agent_dir, tmp_path, version="0.73.1")
    assert counts["leaves"] > 0
    assert counts["raw"] == counts["llm"] == counts["sent"] == counts["leaves"]


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(edge_sessions.SESSIONS))
def test_every_leaf_of_the_edge_case_sessions_projects_as_pi_0_73_1_projects_it(name, tmp_path):
    assert check_edge_session(name, tmp_path, version="0.73.1")["leaves"] > 0
