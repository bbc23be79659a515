"""The Pi 1.x dialect against the real Pi 1.6.0.

1. Every agent request Pi 1.6.0 sent while recording ``corpus-1.6.0/`` (``python -m
   tests.conformance.recorder.record_versions 1.6.0``) is rebuilt byte for byte from the session
   file alone (``contextlab.pi.request.build_request`` in the 1.x dialect) plus the model's
   limits: the prompt and tools are the replay of the persisted system messages, context edits
   applied, ``max_completion_tokens`` from pi-ai's clamp.
2. For every entry of every 1.6.0 session (and of the 0.80.2 corpus, which Pi 1.6.0 also opens) as
   leaf, our projection equals Pi 1.6.0's own ``buildSessionProjection`` + ``convertToLlm``, and
   the replayed prompt and tools equal pi-ai's ``getCurrentSystemPrompt`` / ``getCurrentTools``;
   and our ``max_completion_tokens`` equals pi-ai 1.6.0's ``clampMaxTokensToContext`` at several
   windows.
3. Pi's cache-warming replays (``usage`` scenario) are the replayed request with a one-token cap;
   summaries (compaction, branch summary over edited messages) are rebuilt byte for byte.
"""

from __future__ import annotations

import dataclasses
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from contextlab.pi.dialects import pi_1_x
from contextlab.pi.jsutil import date_parse_ms, json_stringify
from contextlab.pi.session import parse_session_file
from tests.conformance.conftest import corpus_sessions, rebuilt_1x_request, run_oracle

CORPUS_1X = Path(__file__).resolve().parent / "corpus-1.6.0"


def _manifests() -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(CORPUS_1X.glob("*/manifest.json"))]


MANIFESTS = _manifests()
AGENT_REQUESTS = [
    (m["scenario"], r) for m in MANIFESTS for r in m["requests"] if r["kind"] == "agent"
]


def _model(manifest: dict[str, Any], model_id: str) -> dict[str, Any]:
    return next(m for m in manifest["models"] if m["id"] == model_id)


def test_the_corpus_covers_what_issue_10_asks_for():
    entries = {
        m["scenario"]: [
            json.loads(line) for line in (CORPUS_1X / m["scenario"] / "session.jsonl").open()
        ]
        for m in MANIFESTS
    }
    every = [e for es in entries.values() for e in es]
    system = [e for e in every if pi_1_x.is_system_message_entry(e)]
    patches = [
        e
        for e in system
        if "toolsRemoved" in e["message"] or "addendum" in e["message"].get("sections", {})
    ]
    edits = [e for e in every if e["type"] == "context_edit"]
    assert len(AGENT_REQUESTS) >= 20
    assert patches, "a prompt patch (tools removed, APPEND_SYSTEM.md added)"
    assert any(e["replacement"] is None for e in edits) and any(e["replacement"] for e in edits)
    assert any(e["type"] == "compaction" and "systemMessage" in e for e in every)
    assert any(e["type"] == "branch_summary" for e in every)
    assert any(e["type"] == "message" and e["message"].get("stopReason") == "length" for e in every)
    assert any(
        pi_1_x.length_stopped_tool_call_text("write") == b.get("text")
        for e in every
        if e["type"] == "message" and e["message"]["role"] == "toolResult"
        for b in e["message"]["content"]
    )
    length = next(m for m in MANIFESTS if m["scenario"] == "length")
    assert length["rejectedSummary"] == pi_1_x.summary_rejected_text("Summarization")
    resumed = entries["resumed"]
    first_system = next(i for i, e in enumerate(resumed) if pi_1_x.is_system_message_entry(e))
    assert any(
        e["type"] == "message" and e["message"]["role"] == "assistant"
        for e in resumed[:first_system]
    )
    # patches2: APPEND_SYSTEM.md edited then removed, AGENTS.md added mid-session, a patch that
    # adds tools.
    later = [
        e["message"]
        for es in entries.values()
        for e in [s for s in es if pi_1_x.is_system_message_entry(s)][1:]
    ]
    addenda = [m["sections"]["addendum"] for m in later if "addendum" in m.get("sections", {})]
    assert any(a for a in addenda) and None in addenda, "APPEND_SYSTEM.md edited and removed"
    project_agents = (
        f'path="{next(m for m in MANIFESTS if m["scenario"] == "patches2")["cwd"]}/AGENTS.md"'
    )
    first, *patches2 = [
        e["message"]["sections"] for e in entries["patches2"] if pi_1_x.is_system_message_entry(e)
    ]
    assert project_agents not in first["project_context"] and any(
        project_agents in (p.get("project_context") or "") for p in patches2
    ), "the project's AGENTS.md added mid-session"
    assert any(m.get("toolsAdded") for m in later), "a patch adding tools"
    # clamp: pi-ai's clamp below the model's maxTokens on several requests, and a request to
    # another model after replies with thinking (which Pi 1.6 drops).
    bound = [
        (m["scenario"], r["seq"])
        for m in MANIFESTS
        for r in m["requests"]
        if r["kind"] == "agent"
        and json.loads((CORPUS_1X / m["scenario"] / r["body"]).read_text())["max_completion_tokens"]
        < _model(m, r["model"]["id"])["maxTokens"]
    ]
    assert len({seq for scenario, seq in bound if scenario == "clamp"}) >= 3
    assert _cross_model_thinking_requests(), "a request after another model's thinking"
    # branch-edited: the summarised branch holds context-edited messages (see the branch test).
    assert _edited_branch_summaries()
    # usage: cache warming wrote usage entries, one of them the session's last entry.
    usages = [e for e in entries["usage"] if e["type"] == "usage"]
    assert len(usages) >= 2 and entries["usage"][-1]["type"] == "usage"
    assert any(r["kind"] == "cache_warm" for m in MANIFESTS for r in m["requests"])


def _cross_model_thinking_requests() -> list[tuple[str, str]]:
    """Recorded requests to a model whose history holds another model's thinking."""
    found = []
    for manifest in MANIFESTS:
        session = parse_session_file(CORPUS_1X / manifest["scenario"] / "session.jsonl")
        by_id = {e.get("id"): e for e in session.entries}
        for request_ in manifest["requests"]:
            if request_["kind"] != "agent":
                continue
            projection = pi_1_x.build_session_projection(session.entries, request_["leafId"], by_id)
            if any(
                m.get("role") == "assistant"
                and m.get("model") != request_["model"]["id"]
                and any(b.get("type") == "thinking" for b in m.get("content") or [])
                for m in projection.messages
            ):
                found.append((manifest["scenario"], request_["seq"]))
    return found


def test_another_models_thinking_is_not_sent():
    requests_ = _cross_model_thinking_requests()
    assert requests_
    for scenario, seq in requests_:
        manifest = next(m for m in MANIFESTS if m["scenario"] == scenario)
        session = parse_session_file(CORPUS_1X / scenario / "session.jsonl")
        request_ = next(r for r in manifest["requests"] if r["seq"] == seq)
        thinking = [
            b["thinking"]
            for m in pi_1_x.build_session_projection(session.entries, request_["leafId"]).messages
            if m.get("role") == "assistant" and m.get("model") != request_["model"]["id"]
            for b in m.get("content") or []
            if b.get("type") == "thinking"
        ]
        body = (CORPUS_1X / scenario / request_["body"]).read_text()
        assert thinking and not any(json_stringify(t)[1:-1] in body for t in thinking), seq
        rebuilt = rebuilt_1x_request(
            session.entries, request_["leafId"], _model(manifest, request_["model"]["id"])
        )
        assert rebuilt.chat_completions_body() == body


CACHE_WARMS = [
    (m["scenario"], r) for m in MANIFESTS for r in m["requests"] if r["kind"] == "cache_warm"
]


@pytest.mark.parametrize(
    ("scenario", "request_"), CACHE_WARMS, ids=[f"{s}-{r['seq']}" for s, r in CACHE_WARMS]
)
def test_a_cache_warming_replay_is_the_replayed_request_capped_at_one_token(scenario, request_):
    """Pi 1.6's cache warming re-sends the last request of a turn with a one-token cap (and
    writes a `usage` entry): the same request at the same leaf, ``max_completion_tokens`` 1."""
    manifest = next(m for m in MANIFESTS if m["scenario"] == scenario)
    session = parse_session_file(CORPUS_1X / scenario / "session.jsonl")
    model = _model(manifest, request_["model"]["id"])
    rebuilt = rebuilt_1x_request(session.entries, request_["leafId"], model, header=session.header)
    warm = dataclasses.replace(rebuilt, max_tokens=1)
    assert warm.chat_completions_body() == (CORPUS_1X / scenario / request_["body"]).read_text()
    # The usage entry the replay wrote hangs under the turn's last entry and changes no context.
    usage = next(e for e in session.entries if e["type"] == "usage")
    context = pi_1_x.build_session_projection(session.entries, usage["id"])
    parent = pi_1_x.build_session_projection(session.entries, usage["parentId"])
    assert json_stringify(context.messages) == json_stringify(parent.messages)


@pytest.mark.parametrize(
    ("scenario", "request_"), AGENT_REQUESTS, ids=[f"{s}-{r['seq']}" for s, r in AGENT_REQUESTS]
)
def test_it_rebuilds_every_recorded_1_6_0_request_from_the_session_file(scenario, request_):
    manifest = next(m for m in MANIFESTS if m["scenario"] == scenario)
    session = parse_session_file(CORPUS_1X / scenario / "session.jsonl")
    model = _model(manifest, request_["model"]["id"])
    rebuilt = rebuilt_1x_request(session.entries, request_["leafId"], model, header=session.header)
    body = rebuilt.chat_completions_body()
    recorded = (CORPUS_1X / scenario / request_["body"]).read_text()
    ours, theirs = json.loads(body), json.loads(recorded)
    # Part by part first, for a readable failure.
    assert ours["messages"][0] == theirs["messages"][0]
    assert ours["messages"] == theirs["messages"]
    assert ours.get("tools") == theirs.get("tools")
    assert {k: v for k, v in ours.items() if k not in ("messages", "tools")} == {
        k: v for k, v in theirs.items() if k not in ("messages", "tools")
    }
    assert body == recorded
    assert rebuilt.max_tokens == theirs["max_completion_tokens"]


def _sessions() -> list[Path]:
    return sorted(CORPUS_1X.glob("*/session.jsonl")) + corpus_sessions()


@pytest.mark.oracle
@pytest.mark.parametrize(
    "path", _sessions(), ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}"
)
def test_every_leaf_projects_as_pi_1_6_0_projects_it(path, tmp_path):
    copy = tmp_path / "session.jsonl"
    shutil.copyfile(path, copy)
    theirs = run_oracle("project.mjs", {"file": str(copy)}, version="1.6.0")["leaves"]
    session = parse_session_file(path)
    by_id = {e.get("id"): e for e in session.entries}
    assert [leaf["leafId"] for leaf in theirs] == [e["id"] for e in session.entries]
    for leaf in theirs:
        projection = pi_1_x.build_session_projection(session.entries, leaf["leafId"], by_id)
        messages = pi_1_x.convert_to_llm(projection.messages)
        head = pi_1_x.current_system_message(messages)
        where = f"leaf {leaf['leafId']}"
        assert json_stringify(messages) == leaf["messages"], where
        assert projection.thinking_level == leaf["thinkingLevel"], where
        assert projection.model == leaf["model"], where
        assert (pi_1_x.system_message_text(head) if head else "") == leaf["systemPrompt"], where
        assert json_stringify(pi_1_x.current_tools(messages)) == leaf["tools"], where


def _context(*args: str) -> dict[str, Any]:
    out = io.StringIO()
    call_command("context", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


@pytest.mark.parametrize(
    ("scenario", "request_"), AGENT_REQUESTS, ids=[f"{s}-{r['seq']}" for s, r in AGENT_REQUESTS]
)
def test_the_context_command_prints_what_pi_1_6_0_sent(scenario, request_):
    manifest = next(m for m in MANIFESTS if m["scenario"] == scenario)
    model = _model(manifest, request_["model"]["id"])
    result = _context(
        str(CORPUS_1X / scenario / "session.jsonl"),
        "--leaf",
        request_["leafId"],
        "--context-window",
        str(model["contextWindow"]),
        "--model-max-tokens",
        str(model["maxTokens"]),
    )
    body = json.loads((CORPUS_1X / scenario / request_["body"]).read_text())
    assert list(result)[:9] == [
        "leafId",
        "systemPrompt",
        "tools",
        "messages",
        "sent",
        "model",
        "thinkingLevel",
        "maxTokens",
        "dialect",
    ]
    assert result["dialect"] == "1.x"
    assert result["dialectSource"]["detected"] is True
    assert list(result)[9:] == ["dialectSource", "promptSections", "toolOrigins", "piRelease"]
    assert sorted(result["toolOrigins"]) == sorted(t["name"] for t in result["tools"])
    assert result["leafId"] == request_["leafId"]
    assert body["messages"][0] == {"role": "system", "content": result["systemPrompt"]}
    assert [{"type": "function", "function": t} for t in result["tools"]] == body.get("tools", [])
    assert result["maxTokens"] == body["max_completion_tokens"]
    assert result["model"] == {"provider": "fakeai", "modelId": request_["model"]["id"]}
    assert result["thinkingLevel"] == ("medium" if body.get("reasoning_effort") else "off")
    assert [m["role"] for m in result["messages"]].count("system") >= 1
    # What went over the wire after the system message: one chat message per sent message
    # (tool results one each; none dropped here since no sent message is empty).
    roles = [{"toolResult": "tool"}.get(m["role"], m["role"]) for m in result["sent"]]
    assert roles == [m["role"] for m in body["messages"][1:]]


def test_the_context_command_switches_dialect_at_the_first_system_message():
    path = str(CORPUS_1X / "resumed" / "session.jsonl")
    session = parse_session_file(CORPUS_1X / "resumed" / "session.jsonl")
    first = next(e["id"] for e in session.entries if pi_1_x.is_system_message_entry(e))
    before = session.entries[
        session.entries.index(next(e for e in session.entries if e["id"] == first)) - 1
    ]
    old = _context(path, "--leaf", before["id"])
    new = _context(path, "--leaf", first)
    assert "layers" in old and "dialect" not in old  # 0.x output unchanged
    assert old["systemPrompt"].startswith("You are an expert coding assistant")
    assert new["dialect"] == "1.x" and new["dialectSource"]["reason"].find(first) >= 0
    assert new["systemPrompt"].startswith("You are a coding assistant running inside pi")
    chosen = _context(path, "--leaf", before["id"], "--dialect", "0.80")
    assert chosen["dialect"] == "0.80" and chosen["dialectSource"]["detected"] is False
    assert list(chosen)[:8] == list(old)[:-1]
    assert list(old)[-1] == list(chosen)[-1] == "piRelease"  # after the existing keys


@pytest.mark.parametrize(
    "path", _sessions(), ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}"
)
def test_the_one_walk_projection_equals_the_per_leaf_one(path):
    session = parse_session_file(path)
    by_id = {e.get("id"): e for e in session.entries}
    seen = []
    for leaf in pi_1_x.iter_leaf_projections_1x(session.entries):
        projection = pi_1_x.build_session_projection(session.entries, leaf.leaf_id, by_id)
        messages = pi_1_x.convert_to_llm(projection.messages)
        head = pi_1_x.current_system_message(messages)
        assert json_stringify(leaf.messages) == json_stringify(messages), leaf.leaf_id
        assert (leaf.thinking_level, leaf.model) == (projection.thinking_level, projection.model)
        assert leaf.system_prompt == (pi_1_x.system_message_text(head) if head else "")
        assert leaf.tools == pi_1_x.current_tools(messages)
        seen.append(leaf.leaf_id)
    assert sorted(seen) == sorted(e["id"] for e in session.entries)


def _synthetic_session() -> list[dict[str, Any]]:
    """Hand-written edge cases of the 1.x projection (each checked against Pi 1.6.0 below)."""

    def msg(id_, parent, role, content, **extra):
        return {
            "type": "message",
            "id": id_,
            "parentId": parent,
            "timestamp": "2026-11-20T10:00:00.000Z",
            "message": {"role": role, "content": content, "timestamp": 1763632800000, **extra},
        }

    tool = {"name": "t1", "description": "first", "parameters": {"type": "object"}}
    tool2 = {"name": "t2", "description": "second", "parameters": {"type": "object"}}
    assistant = {"api": "openai-completions", "provider": "p", "model": "m", "stopReason": "stop"}
    return [
        {
            "type": "session",
            "version": 3,
            "id": "s",
            "timestamp": "2026-11-20T10:00:00.000Z",
            "cwd": "/",
        },
        msg(
            "sys1",
            None,
            "system",
            "",
            sections={"preamble": "P", "tools": "<tools>\nT\n</tools>"},
            toolsAdded=[tool, tool2],
        ),
        msg("u1", "sys1", "user", "first question"),
        msg("a1", "u1", "assistant", [{"type": "text", "text": "first answer"}], **assistant),
        # A patch: a new section goes to the end, a section is deleted, content is appended,
        # a tool removed and re-added (it moves to the end).
        msg(
            "sys2",
            "a1",
            "system",
            "extra words",
            sections={"addendum": "<addendum>\nA\n</addendum>", "tools": None},
            toolsRemoved=[{"name": "t1"}],
            toolsAdded=[tool],
        ),
        {
            "type": "custom_message",
            "id": "c1",
            "parentId": "sys2",
            "timestamp": "2026-11-20T10:00:01.000Z",
            "customType": "note",
            "content": "a note",
            "display": True,
        },
        msg("u2", "c1", "user", None),
        # Edits: the custom message rewritten (stays a string), the user's null content replaced,
        # the first answer edited twice (the latest wins), a system message "edited" (ignored).
        {
            "type": "context_edit",
            "id": "e1",
            "parentId": "u2",
            "timestamp": "2026-11-20T10:00:02.000Z",
            "targetId": "c1",
            "replacement": {"content": "rewritten note"},
        },
        {
            "type": "context_edit",
            "id": "e2",
            "parentId": "e1",
            "timestamp": "2026-11-20T10:00:02.000Z",
            "targetId": "u2",
            "replacement": {"content": [{"type": "text", "text": "edited"}]},
        },
        {
            "type": "context_edit",
            "id": "e3",
            "parentId": "e2",
            "timestamp": "2026-11-20T10:00:02.000Z",
            "targetId": "a1",
            "replacement": {"content": "shortened"},
        },
        {
            "type": "context_edit",
            "id": "e4",
            "parentId": "e3",
            "timestamp": "2026-11-20T10:00:02.000Z",
            "targetId": "a1",
            "replacement": None,
        },
        {
            "type": "context_edit",
            "id": "e5",
            "parentId": "e4",
            "timestamp": "2026-11-20T10:00:02.000Z",
            "targetId": "sys2",
            "replacement": {"content": "ignored"},
        },
        msg("a2", "e5", "assistant", [{"type": "text", "text": "second answer"}], **assistant),
        # A compaction with the replayed state: system messages before the cut are skipped.
        {
            "type": "compaction",
            "id": "k1",
            "parentId": "a2",
            "timestamp": "2026-11-20T10:00:03.000Z",
            "summary": "S",
            "firstKeptEntryId": "sys2",
            "tokensBefore": 10,
            "systemMessage": {
                "role": "system",
                "content": "",
                "sections": {"preamble": "P2"},
                "toolsAdded": [tool2],
                "timestamp": 5,
            },
        },
        msg("u3", "k1", "user", "after the compaction"),
        # A second compaction whose kept range holds the first: the first contributes nothing.
        {
            "type": "compaction",
            "id": "k2",
            "parentId": "u3",
            "timestamp": "2026-11-20T10:00:04.000Z",
            "summary": "S2",
            "firstKeptEntryId": "k1",
            "tokensBefore": 20,
        },
        # An edit of an entry before the cut, and a branch from the first answer.
        {
            "type": "context_edit",
            "id": "e6",
            "parentId": "k2",
            "timestamp": "2026-11-20T10:00:05.000Z",
            "targetId": "u1",
            "replacement": None,
        },
        msg("u4", "a1", "user", "a branch"),
        {
            "type": "context_edit",
            "id": "e7",
            "parentId": "u4",
            "timestamp": "2026-11-20T10:00:05.000Z",
            "targetId": "missing",
            "replacement": None,
        },
    ]


@pytest.mark.oracle
def test_edge_cases_project_as_pi_1_6_0_projects_them(tmp_path):
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in _synthetic_session()) + "\n")
    theirs = run_oracle("project.mjs", {"file": str(path)}, version="1.6.0")["leaves"]
    session = parse_session_file(path)
    walked = {leaf.leaf_id: leaf for leaf in pi_1_x.iter_leaf_projections_1x(session.entries)}
    assert len(theirs) == len(session.entries) == len(walked)
    for leaf in theirs:
        projection = pi_1_x.build_session_projection(session.entries, leaf["leafId"])
        messages = pi_1_x.convert_to_llm(projection.messages)
        head = pi_1_x.current_system_message(messages)
        where = f"leaf {leaf['leafId']}"
        assert json_stringify(messages) == leaf["messages"], where
        assert json_stringify(walked[leaf["leafId"]].messages) == leaf["messages"], where
        assert (pi_1_x.system_message_text(head) if head else "") == leaf["systemPrompt"], where
        assert walked[leaf["leafId"]].system_prompt == leaf["systemPrompt"], where
        assert json_stringify(pi_1_x.current_tools(messages)) == leaf["tools"], where
    by_leaf = {leaf["leafId"]: leaf for leaf in theirs}
    # The replay rule, as Pi applies it: a new section at the end, a deleted one gone, content
    # appended first.
    assert by_leaf["u2"]["systemPrompt"] == "extra words\n\nP\n\n<addendum>\nA\n</addendum>"
    assert [t["name"] for t in json.loads(by_leaf["u2"]["tools"])] == ["t2", "t1"]


# --- compaction -----------------------------------------------------------------------------

KEEP_RECENT_TOKENS = 150  # the recorded agent dir's settings.json


def _compaction_groups() -> list[tuple[str, str, list[dict[str, Any]]]]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for manifest in MANIFESTS:
        for request_ in manifest["requests"]:
            op = (request_["operation"] or {}).get("op")
            if request_["kind"] == "summary" and op != "navigateTree":
                groups.setdefault((manifest["scenario"], request_["leafId"]), []).append(request_)
    return [(s, leaf, rs) for (s, leaf), rs in groups.items()]


COMPACTIONS = _compaction_groups()


@pytest.mark.parametrize(
    ("scenario", "leaf", "requests_"),
    COMPACTIONS,
    ids=[f"{s}-{leaf}" for s, leaf, _ in COMPACTIONS],
)
def test_it_rebuilds_the_compaction_requests_pi_1_6_0_sent(scenario, leaf, requests_):
    from contextlab.pi.dialects import pi_1_x_compaction
    from contextlab.pi.session import SessionTree

    manifest = next(m for m in MANIFESTS if m["scenario"] == scenario)
    session = parse_session_file(CORPUS_1X / scenario / "session.jsonl")
    tree = SessionTree(session.entries)
    plan = pi_1_x_compaction.prepare_compaction(
        tree.path(leaf), keep_recent_tokens=KEEP_RECENT_TOKENS
    )
    assert plan is not None
    model = _model(manifest, requests_[0]["model"]["id"])
    ours = pi_1_x_compaction.compaction_requests(
        plan,
        model,
        thinking_level=pi_1_x.build_session_projection(session.entries, leaf).thinking_level,
        custom_instructions=(requests_[0]["operation"] or {}).get("customInstructions"),
    )
    recorded = [(CORPUS_1X / scenario / r["body"]).read_text() for r in requests_]
    # compact() sends the history request, then the turn prefix: a summary rejected on length
    # stops it after the first.
    assert [o.body for o in ours[: len(recorded)]] == recorded
    rejected = manifest.get("rejectedSummary") and len(recorded) < len(ours)
    # The entry Pi appended (when the summaries were accepted) is the one we would append.
    entry = next(
        (e for e in session.entries if e["type"] == "compaction" and e["parentId"] == leaf), None
    )
    assert (entry is None) == bool(rejected)
    if entry is not None:
        assert entry["firstKeptEntryId"] == plan.first_kept_entry_id
        assert entry["tokensBefore"] == plan.tokens_before
        # The replayed state, stamped with the compaction's own time (appendCompaction).
        assert entry["systemMessage"] == {
            **plan.system_message,
            "timestamp": date_parse_ms(entry["timestamp"]),
        }


def test_the_compact_dry_run_of_a_1x_turn_carries_max_tokens_and_the_system_message():
    manifest = next(m for m in MANIFESTS if m["scenario"] == "edits")
    scenario, leaf, requests_ = next(c for c in COMPACTIONS if c[0] == "edits")
    model = _model(manifest, requests_[0]["model"]["id"])
    out = io.StringIO()
    call_command(
        "compact",
        str(CORPUS_1X / scenario / "session.jsonl"),
        "--leaf",
        leaf,
        "--keep-recent-tokens",
        str(KEEP_RECENT_TOKENS),
        "--instructions",
        requests_[0]["operation"]["customInstructions"],
        "--context-window",
        str(model["contextWindow"]),
        "--model-max-tokens",
        str(model["maxTokens"]),
        "--dry-run",
        "--json",
        stdout=out,
    )
    result = json.loads(out.getvalue())
    session = parse_session_file(CORPUS_1X / scenario / "session.jsonl")
    entry = next(e for e in session.entries if e["type"] == "compaction" and e["parentId"] == leaf)
    assert list(result)[:5] == [
        "firstKeptEntryId",
        "tokensBefore",
        "isSplitTurn",
        "request",
        "turnPrefixRequest",
    ]
    # What the entry would carry, stamped with the time of the dry run (the entry's own).
    assert {**result["systemMessage"], "timestamp": 0} == {**entry["systemMessage"], "timestamp": 0}
    assert result["firstKeptEntryId"] == entry["firstKeptEntryId"]
    bodies = [json.loads((CORPUS_1X / scenario / r["body"]).read_text()) for r in requests_]
    for key, body in zip(("request", "turnPrefixRequest"), bodies, strict=True):
        assert result[key]["maxTokens"] == body["max_completion_tokens"]
        assert result[key]["messages"][0]["content"] == body["messages"][1]["content"]
        assert result[key]["systemPrompt"] == body["messages"][0]["content"]
    assert result["dialect"] == "1.x"


def _branch_summaries() -> list[tuple[str, dict[str, Any]]]:
    return [
        (m["scenario"], r)
        for m in MANIFESTS
        for r in m["requests"]
        if r["kind"] == "summary" and (r["operation"] or {}).get("op") == "navigateTree"
    ]


BRANCH_SUMMARIES = _branch_summaries()


@pytest.mark.parametrize(
    ("scenario", "request_"), BRANCH_SUMMARIES, ids=[f"{s}-{r['seq']}" for s, r in BRANCH_SUMMARIES]
)
def test_it_rebuilds_the_branch_summary_request_pi_1_6_0_sent(scenario, request_):
    from contextlab.pi.dialects import pi_1_x_compaction
    from contextlab.pi.session import SessionTree

    manifest = next(m for m in MANIFESTS if m["scenario"] == scenario)
    session = parse_session_file(CORPUS_1X / scenario / "session.jsonl")
    tree = SessionTree(session.entries)
    operation = request_["operation"]
    entries, _ = pi_1_x_compaction.collect_entries_for_branch_summary(
        tree, operation["oldLeafId"], operation["targetId"]
    )
    ours = pi_1_x_compaction.branch_summary_request(
        entries,
        _model(manifest, request_["model"]["id"]),
        thinking_level=pi_1_x.build_session_projection(
            session.entries, operation["oldLeafId"]
        ).thinking_level,
        custom_instructions=operation["customInstructions"],
        replace_instructions=operation["replaceInstructions"],
    )
    assert ours is not None
    assert ours.body == (CORPUS_1X / scenario / request_["body"]).read_text()


def _edited_branch_summaries() -> list[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    """Recorded branch summaries whose summarised entries hold a message a context edit on that
    branch rewrote or omitted, with those edits."""
    from contextlab.pi.dialects import pi_1_x_compaction
    from contextlab.pi.session import SessionTree

    found = []
    for scenario, request_ in BRANCH_SUMMARIES:
        session = parse_session_file(CORPUS_1X / scenario / "session.jsonl")
        operation = request_["operation"]
        entries, _ = pi_1_x_compaction.collect_entries_for_branch_summary(
            SessionTree(session.entries), operation["oldLeafId"], operation["targetId"]
        )
        ids = {e["id"] for e in entries}
        edits = [
            e
            for e in entries
            if e["type"] == "context_edit"
            and e["targetId"] in ids
            and next(t for t in entries if t["id"] == e["targetId"])["type"] == "message"
            and next(t for t in entries if t["id"] == e["targetId"])["message"]["role"]
            in ("user", "assistant")
        ]
        if edits:
            found.append((scenario, request_, edits))
    return found


def test_a_branch_summary_summarises_the_edited_messages_as_edited():
    summaries = _edited_branch_summaries()
    assert summaries
    for scenario, request_, edits in summaries:
        session = parse_session_file(CORPUS_1X / scenario / "session.jsonl")
        by_id = {e["id"]: e for e in session.entries}
        prompt = json.loads((CORPUS_1X / scenario / request_["body"]).read_text())["messages"][1]
        text = prompt["content"] if isinstance(prompt["content"], str) else prompt["content"][0]
        text = text if isinstance(text, str) else text["text"]
        latest = {e["targetId"]: e for e in edits}
        for target, edit in latest.items():
            original = by_id[target]["message"]["content"]
            original = original if isinstance(original, str) else original[0]["text"]
            assert original not in text, (scenario, target)
            if edit["replacement"] is not None:
                content = edit["replacement"]["content"]
                assert (content if isinstance(content, str) else content[0]["text"]) in text


def test_the_branch_summary_dry_run_of_a_1x_branch_carries_max_tokens():
    scenario, request_ = BRANCH_SUMMARIES[0]
    manifest = next(m for m in MANIFESTS if m["scenario"] == scenario)
    model = _model(manifest, request_["model"]["id"])
    operation = request_["operation"]
    out = io.StringIO()
    call_command(
        "branch-summary",
        str(CORPUS_1X / scenario / "session.jsonl"),
        "--from",
        operation["oldLeafId"],
        "--to",
        operation["targetId"],
        "--context-window",
        str(model["contextWindow"]),
        "--model-max-tokens",
        str(model["maxTokens"]),
        "--dry-run",
        "--json",
        stdout=out,
    )
    result = json.loads(out.getvalue())
    body = json.loads((CORPUS_1X / scenario / request_["body"]).read_text())
    assert list(result)[:3] == ["commonAncestorId", "entryIds", "request"]
    assert result["request"]["maxTokens"] == body["max_completion_tokens"]
    assert result["request"]["messages"][0]["content"] == body["messages"][1]["content"]
    assert result["dialect"] == "1.x"


@pytest.mark.parametrize(
    "path", _sessions(), ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}"
)
def test_the_dialect_of_every_turn_is_detected_in_one_walk(path):
    from contextlab.pi.dialects.detect import detect_turn_dialect, dialects_per_entry

    session = parse_session_file(path)
    by_id = {e.get("id"): e for e in session.entries}
    walked = dialects_per_entry(session.entries)
    for entry in session.entries:
        assert walked[entry["id"]] == detect_turn_dialect(session.entries, entry["id"], by_id)
    for chosen in ("0.73", "1.3"):
        walked = dialects_per_entry(session.entries, chosen=chosen)
        for entry in session.entries:
            assert walked[entry["id"]] == detect_turn_dialect(
                session.entries, entry["id"], by_id, chosen=chosen
            )
    if path.parent.name == "resumed":
        kinds = [
            walked_choice.dialect for walked_choice in dialects_per_entry(session.entries).values()
        ]
        assert "0.80" in kinds and "1.x" in kinds


CLAMP_CASES = [
    {"contextWindow": window, "maxTokens": 16384} for window in (6000, 12000, 16000, 20000, 128000)
]


@pytest.mark.oracle
@pytest.mark.parametrize(
    "path", sorted(CORPUS_1X.glob("*/session.jsonl")), ids=lambda p: p.parent.name
)
def test_every_leaf_is_clamped_as_pi_ai_1_6_0_clamps_it(path, tmp_path):
    """``max_completion_tokens`` at every leaf and window equals pi-ai 1.6.0's own
    ``clampMaxTokensToContext`` over the context the agent hands to ``streamSimple``."""
    copy = tmp_path / "session.jsonl"
    shutil.copyfile(path, copy)
    theirs = run_oracle("clamp.mjs", {"file": str(copy), "cases": CLAMP_CASES}, version="1.6.0")
    session = parse_session_file(path)
    bound = 0
    for leaf in theirs["leaves"]:
        for case, expected in zip(CLAMP_CASES, leaf["maxTokens"], strict=True):
            model = {**case, "api": "openai-completions", "provider": "fakeai", "id": "m"}
            ours = rebuilt_1x_request(session.entries, leaf["leafId"], model).max_tokens
            assert ours == expected, (leaf["leafId"], case)
            bound += expected < case["maxTokens"]
    assert bound


def test_a_chosen_1x_generation_reaches_the_clamp(tmp_path):
    """The file does not say which 1.x wrote it: ``--dialect 1.0`` (chars/4 estimate, fixed 4096
    margin) gives another ``maxTokens`` than the default 1.6 near a full window, and says the
    generation was chosen; the default is pi-ai 1.6.0's own clamp."""
    path = CORPUS_1X / "edits" / "session.jsonl"
    leaf = "600bf647"
    limits = ("--context-window", "12000", "--model-max-tokens", "16384")
    default = _context(str(path), "--leaf", leaf, *limits)
    old = _context(str(path), "--leaf", leaf, *limits, "--dialect", "1.0")
    copy = tmp_path / "session.jsonl"
    shutil.copyfile(path, copy)
    case = {"contextWindow": 12000, "maxTokens": 16384}
    theirs = run_oracle("clamp.mjs", {"file": str(copy), "cases": [case]}, version="1.6.0")
    expected = next(x["maxTokens"][0] for x in theirs["leaves"] if x["leafId"] == leaf)
    assert default["maxTokens"] == expected < 16384
    assert old["maxTokens"] != default["maxTokens"]
    assert default["dialectSource"]["variant"] == "1.6" and default["dialectSource"]["detected"]
    assert old["dialectSource"] == {
        "dialect": "1.x",
        "detected": False,
        "reason": old["dialectSource"]["reason"],
        "variant": "1.0",
    }


@pytest.mark.parametrize(
    "path", sorted(CORPUS_1X.glob("*/session.jsonl")), ids=lambda p: p.parent.name
)
def test_the_prompt_parts_name_the_entry_that_last_set_them(path):
    session = parse_session_file(path)
    by_id = {e.get("id"): e for e in session.entries}
    for entry in session.entries:
        projection = pi_1_x.build_session_projection(session.entries, entry["id"], by_id)
        messages = pi_1_x.convert_to_llm(projection.messages)
        head = pi_1_x.current_system_message(messages)
        parts = pi_1_x.prompt_sections(projection)
        assert "\n\n".join(p.text for p in parts if p.text) == (
            pi_1_x.system_message_text(head) if head else ""
        )
        origins = pi_1_x.tool_origins(projection)
        assert list(origins) == [t["name"] for t in pi_1_x.current_tools(messages)]
        for part in parts:
            source = by_id[part.entry_id]
            carried = (
                source.get("systemMessage") if source["type"] == "compaction" else source["message"]
            )
            assert part.name == "" or carried["sections"][part.name] == part.text
    # The patches scenario: after reload() the addendum comes from the patch, not the first prompt.
    if path.parent.name == "patches":
        last = pi_1_x.build_session_projection(session.entries)
        origin = {p.name: p.entry_id for p in pi_1_x.prompt_sections(last)}
        systems = [e["id"] for e in session.entries if pi_1_x.is_system_message_entry(e)]
        assert origin["preamble"] == systems[0] and "addendum" not in origin
        assert origin["tools"] == systems[-1]
