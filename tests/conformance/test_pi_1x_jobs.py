"""Summary jobs on Pi 1.x sessions, against the real Pi 1.6.0.

1. A compaction or branch-summary job on a stored 1.6.0 session (corpus-1.6.0, recorded with
   the real Pi against a scripted server) sends, over real HTTP to the fake server on 127.0.0.1,
   the bodies Pi 1.6.0 sent for the same summary, byte for byte, and writes the entry Pi wrote
   (its keys and order, ``systemMessage``, ``usage``, ``fromId``); a reply cut at the token cap
   is refused with Pi's text and nothing is appended.
2. After offline jobs append a compaction and a branch summary, the exported file is opened by
   Pi 1.6.0's own ``SessionManager.open``: the projection it builds at the new leaf, and the
   prompt and tools it would send next (the replay of the system state the compaction carries),
   equal ours.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from contextlab.jobs import services
from contextlab.jobs.parameters import JobParameters
from contextlab.library.importer import import_session_file
from contextlab.library.models import Entry
from contextlab.library.selectors import engine_entries
from contextlab.pi.dialects.detect import detect_turn_dialect
from contextlab.pi.jsutil import date_parse_ms, json_stringify
from contextlab.pi.summaries import ALREADY_COMPACTED, NOTHING_TO_COMPACT
from contextlab.pi.turn import build_turn
from contextlab.pi.writer import ENTRY_KEY_ORDER_1X
from tests.conformance.conftest import run_oracle
from tests.jobs.fake_llm import FakeLLMServer, Reply

pytestmark = pytest.mark.django_db

CORPUS_1X = Path(__file__).resolve().parent / "corpus-1.6.0"
SCENARIOS = sorted(p.parent.name for p in CORPUS_1X.glob("*/session.jsonl"))
KEEP_RECENT_TOKENS = 150  # the recorded agent dir's settings.json


@pytest.fixture
def import_1x(tmp_path, blob_dir):  # type: ignore[no-untyped-def]
    def _import(name: str):  # type: ignore[no-untyped-def]
        copy = tmp_path / f"{name}.jsonl"
        shutil.copyfile(CORPUS_1X / name / "session.jsonl", copy)
        result = import_session_file(path=copy, index_search=False)
        assert result.session is not None, result
        result.session.refresh_from_db()
        return result.session

    return _import


@pytest.fixture
def server():
    with FakeLLMServer() as s:
        yield s


@pytest.fixture
def recorded_model(settings, server):
    """The provider configured as the model Pi 1.6.0 summarised with (fake-reasoner), pointed
    at the fake server."""
    manifest = _manifest("edits")
    model = next(m for m in manifest["models"] if m["id"] == "fake-reasoner")
    server.point_at(
        settings,
        model=model["id"],
        provider_name=model["provider"],
        reasoning=model["reasoning"],
        context_window=model["contextWindow"],
        max_tokens=model["maxTokens"],
    )
    return model


def _manifest(scenario: str) -> dict[str, Any]:
    return json.loads((CORPUS_1X / scenario / "manifest.json").read_text())


def _recorded(scenario: str, op: str) -> tuple[dict[str, Any], list[str]]:
    requests = [
        r
        for r in _manifest(scenario)["requests"]
        if r["kind"] == "summary" and (r["operation"] or {}).get("op") == op
    ]
    bodies = [(CORPUS_1X / scenario / r["body"]).read_text() for r in requests]
    return requests[0], bodies


def _run(session, kind, **kw):  # type: ignore[no-untyped-def]
    job = services.job_create(session=session, kind=kind, enqueue=False, **kw)
    return services.job_execute(job_id=job.pk)


def _compact_as_recorded(session, request):  # type: ignore[no-untyped-def]
    """The compaction job Pi's recorded ``/compact`` asks for: its leaf, its instructions."""
    return _run(
        session,
        "compaction",
        leaf_entry_id=request["leafId"],
        parameters=JobParameters(
            keep_recent_tokens=KEEP_RECENT_TOKENS,
            custom_instructions=request["operation"]["customInstructions"],
        ),
    )


def _written(job) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    return Entry.objects.get(session=job.session, entry_id=job.result_entry_ids[0]).data


def _same_but_the_moment(ours: dict[str, Any], pi: dict[str, Any]) -> None:
    """Ours equals Pi's but for what is random or the clock's: the id, the time, the model's
    text and token counts."""
    assert list(ours) == list(pi)
    skip = ("id", "timestamp", "summary", "usage", "systemMessage")
    assert {k: v for k, v in ours.items() if k not in skip} == {
        k: v for k, v in pi.items() if k not in skip
    }
    if "systemMessage" in pi:
        assert json_stringify({**ours["systemMessage"], "timestamp": 0}) == json_stringify(
            {**pi["systemMessage"], "timestamp": 0}
        )
        assert ours["systemMessage"]["timestamp"] == date_parse_ms(ours["timestamp"])


def test_a_1x_compaction_job_sends_what_pi_1_6_0_sent_and_writes_what_it_wrote(
    import_1x, recorded_model, server
):
    session = import_1x("edits")
    request, bodies = _recorded("edits", "compact")
    job = _compact_as_recorded(session, request)
    assert job.status == "succeeded", job.error
    assert [r.body.decode() for r in server.requests] == bodies
    pi = next(
        e
        for e in engine_entries(session)
        if e["type"] == "compaction" and e["parentId"] == request["leafId"]
    )
    ours = _written(job)
    _same_but_the_moment(ours, pi)
    # The two replies' usage, summed as Pi sums a split turn's (the fake server's counts).
    assert ours["usage"]["input"] == 2 * 1200 and ours["usage"]["reasoning"] == 0
    assert ours["usage"]["cost"]["totalFromProvider"] is False
    assert list(ours["usage"]) == list(pi["usage"])


def test_a_1x_branch_summary_job_sends_what_pi_1_6_0_sent_and_writes_what_it_wrote(
    import_1x, recorded_model, server
):
    session = import_1x("edits")
    request, bodies = _recorded("edits", "navigateTree")
    operation = request["operation"]
    job = _run(
        session,
        "branch_summary",
        leaf_entry_id=operation["oldLeafId"],
        target_entry_id=operation["targetId"],
    )
    assert job.status == "succeeded", job.error
    assert [r.body.decode() for r in server.requests] == bodies
    pi = next(e for e in engine_entries(session) if e["type"] == "branch_summary")
    ours = _written(job)
    _same_but_the_moment(ours, pi)
    assert ours["fromId"] == operation["oldLeafId"] != ours["parentId"]
    session.refresh_from_db()
    assert session.leaf_entry_id == ours["id"]


def test_a_1x_summary_cut_at_the_token_cap_is_refused_like_pi_1_6_0_and_appends_nothing(
    import_1x, recorded_model, server
):
    session = import_1x("edits")
    request, bodies = _recorded("edits", "compact")
    before = Entry.objects.filter(session=session).count()
    server.script.append(Reply(text="## Goal\ncut sho", stop_reason="length"))
    job = _compact_as_recorded(session, request)
    assert (job.status, job.error) == ("failed", _manifest("length")["rejectedSummary"])
    # Pi stops at the refused history summary: the turn prefix is never asked for.
    assert [r.body.decode() for r in server.requests] == bodies[:1]
    assert Entry.objects.filter(session=session).count() == before


# --- Pi 1.6.0 opens what we append ------------------------------------------------------------


def _pi_opens(session, tmp_path) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    session.refresh_from_db()
    path = tmp_path / f"export-{session.pk}-{session.entry_count}.jsonl"
    path.write_bytes(b"".join(services.session_export_chunks(session)))
    return run_oracle("jobs_export_open.mjs", {"file": str(path)}, timeout=60, version="1.6.0")


def _assert_pi_sees_ours(session, tmp_path) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    pi = _pi_opens(session, tmp_path)
    assert (pi["sessionId"], pi["leafId"]) == (session.session_id, session.leaf_entry_id)
    request = build_turn(engine_entries(session), session.leaf_entry_id, header=session.header)
    assert request.choice is not None and request.choice.dialect == "1.x"
    assert json_stringify(request.messages) == pi["messages"]
    assert (request.thinking_level, request.context.model) == (pi["thinkingLevel"], pi["model"])
    # What Pi would send next: the prompt and tools replayed from the compaction's system state.
    assert request.prompt is not None and request.prompt.text == pi["systemPrompt"]
    assert json_stringify(request.tools) == pi["tools"]
    return pi


@pytest.mark.oracle
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_pi_1_6_0_opens_an_export_with_our_compaction_and_branch_summary_and_sees_our_context(
    import_1x, offline_provider, tmp_path, scenario
):
    session = import_1x(scenario)
    leaf = session.leaf_entry_id
    compacted = _run(session, "compaction", parameters=JobParameters(keep_recent_tokens=50))
    if compacted.status == "failed":
        assert compacted.error in (NOTHING_TO_COMPACT, ALREADY_COMPACTED)
    else:
        assert compacted.status == "succeeded", compacted.error
        entry = _written(compacted)
        assert list(entry) == [k for k in ENTRY_KEY_ORDER_1X["compaction"] if k != "usage"]
        assert entry["parentId"] == leaf
        pi = _assert_pi_sees_ours(session, tmp_path)
        assert pi["entryIds"][-1] == entry["id"]
        assert json.loads(pi["messages"])[0]["role"] == "system"
    # Back to the first user message Pi 1.x prompted with (a system message before it), with a
    # summary of everything left behind.
    session.refresh_from_db()
    entries = engine_entries(session)
    first_user = next(
        e["id"]
        for e in entries
        if e["type"] == "message"
        and e["message"]["role"] == "user"
        and detect_turn_dialect(entries, e["parentId"]).dialect == "1.x"
    )
    left = session.leaf_entry_id
    summarised = _run(session, "branch_summary", target_entry_id=first_user)
    assert summarised.status == "succeeded", summarised.error
    entry = _written(summarised)
    assert entry["fromId"] == left
    pi = _assert_pi_sees_ours(session, tmp_path)
    assert json.loads(pi["messages"])[-1]["content"][0]["text"].startswith(
        "The following is a summary of a branch"
    )


# --- Anthropic Messages: the bodies Pi 1.6.0 sends, live ---------------------------------------
#
# No 1.x session was recorded with an Anthropic model, so the real Pi 1.6.0 runs its own
# summarisers (oracle-1.6.0/jobs_summarise.mjs: prepareCompaction + compact, and
# collectEntriesForBranchSummary + generateBranchSummary, with the session's thinking level at the
# leaf) on a copy of the same session against the same fake server, with the model contextlab's
# provider describes. Both sides' bodies are compared byte for byte, in the order sent.

# A window the clamp binds in (the summary input is a few thousand tokens): with a thinking budget
# Pi 1.6.0 clamps max_tokens to the window again (0.80.2 sent maxTokens + budget).
ANTHROPIC_LIMITS = {"context_window": 36000, "max_tokens": 32000}


def _point_at_anthropic(settings, server, reasoning: bool):  # type: ignore[no-untyped-def]
    """contextlab's provider as fake-claude on the fake server; a reasoning model's replies (ours,
    then Pi's) report thinking tokens, which pi-ai 1.x records as ``usage.reasoning``."""
    from contextlab.jobs import providers

    if reasoning:
        server.script.extend(Reply(thinking_tokens=7) for _ in range(4))
    server.point_at(
        settings, "anthropic", model="fake-claude", reasoning=reasoning, **ANTHROPIC_LIMITS
    )
    return providers.active_provider()


def _pi_file(tmp_path: Path, scenario: str) -> Path:
    copy = tmp_path / f"pi-{scenario}.jsonl"
    shutil.copyfile(CORPUS_1X / scenario / "session.jsonl", copy)
    return copy


def _sent_since(server, start: int) -> list[Any]:  # type: ignore[no-untyped-def]
    return list(server.requests[start:])


# What the Messages API reads besides the body (the SDKs' own identity headers differ).
ANTHROPIC_API_HEADERS = (
    "content-type",
    "accept",
    "x-api-key",
    "authorization",
    "anthropic-version",
    "anthropic-beta",
    "anthropic-dangerous-direct-browser-access",
)


def _assert_anthropic_requests(ours: list[Any], pi: list[Any], reasoning: bool) -> None:
    assert [json.loads(r.body, object_pairs_hook=list) for r in ours] == [
        json.loads(r.body, object_pairs_hook=list) for r in pi
    ]
    assert [r.body for r in ours] == [r.body for r in pi]
    # pi-ai 1.x sends through the SDK's beta.messages.create: the betas as a header, not a field.
    assert [r.path for r in ours] == [r.path for r in pi] == ["/v1/messages?beta=true"] * len(pi)
    for mine, theirs in zip(ours, pi, strict=True):
        for name in ANTHROPIC_API_HEADERS:
            assert mine.headers.get(name) == theirs.headers.get(name), name
    for request in ours:
        sent = json.loads(request.body)
        # completeSummarization asks for no cache retention: no marker anywhere.
        assert b"cache_control" not in request.body
        assert [m["role"] for m in sent["messages"]] == ["user"]
        if reasoning:
            assert sent["thinking"]["type"] == "enabled"
            assert sent["max_tokens"] < ANTHROPIC_LIMITS["max_tokens"]  # clamped again
            assert request.headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"
        else:
            assert "thinking" not in sent and "anthropic-beta" not in request.headers


@pytest.mark.oracle
@pytest.mark.parametrize("reasoning", [False, True], ids=["plain", "budget-thinking"])
def test_a_1x_anthropic_compaction_job_sends_what_pi_1_6_0_sends(
    import_1x, server, settings, tmp_path, reasoning
):
    config = _point_at_anthropic(settings, server, reasoning)
    session = import_1x("edits")
    request, _ = _recorded("edits", "compact")
    job = _compact_as_recorded(session, request)
    assert job.status == "succeeded", job.error
    ours = _sent_since(server, 0)
    pi = run_oracle(
        "jobs_summarise.mjs",
        {
            "mode": "compact",
            "model": config.pi_model(),
            "apiKey": config.api_key,
            "sessionFile": str(_pi_file(tmp_path, "edits")),
            "leafId": request["leafId"],
            "keepRecentTokens": KEEP_RECENT_TOKENS,
            "customInstructions": request["operation"]["customInstructions"],
        },
        timeout=60,
        version="1.6.0",
    )
    assert pi["prepared"] and pi["isSplitTurn"] and pi["thinkingLevel"] == "medium"
    # The history, then the split turn's prefix.
    assert len(ours) == 2
    _assert_anthropic_requests(ours, _sent_since(server, len(ours)), reasoning)
    entry = _written(job)
    assert entry["firstKeptEntryId"] == pi["result"]["firstKeptEntryId"]
    assert entry["summary"] == pi["result"]["summary"]
    # The two replies' usage as pi-ai's anthropic stream records it (cacheWrite1h, no reasoning).
    assert json_stringify(entry["usage"]) == json_stringify(pi["result"]["usage"])


@pytest.mark.oracle
@pytest.mark.parametrize("reasoning", [False, True], ids=["plain", "budget-thinking"])
def test_a_1x_anthropic_branch_summary_job_sends_what_pi_1_6_0_sends(
    import_1x, server, settings, tmp_path, reasoning
):
    config = _point_at_anthropic(settings, server, reasoning)
    session = import_1x("edits")
    request, _ = _recorded("edits", "navigateTree")
    operation = request["operation"]
    job = _run(
        session,
        "branch_summary",
        leaf_entry_id=operation["oldLeafId"],
        target_entry_id=operation["targetId"],
    )
    assert job.status == "succeeded", job.error
    ours = _sent_since(server, 0)
    pi = run_oracle(
        "jobs_summarise.mjs",
        {
            "mode": "branch",
            "model": config.pi_model(),
            "apiKey": config.api_key,
            "sessionFile": str(_pi_file(tmp_path, "edits")),
            "fromId": operation["oldLeafId"],
            "targetId": operation["targetId"],
        },
        timeout=60,
        version="1.6.0",
    )
    assert pi["thinkingLevel"] == "medium"
    assert len(ours) == 1
    _assert_anthropic_requests(ours, _sent_since(server, len(ours)), reasoning)
    entry = _written(job)
    assert entry["summary"] == pi["result"]["summary"]
    assert json_stringify(entry["usage"]) == json_stringify(pi["result"]["usage"])


# Models contextlab's settings cannot describe (compat flags, level maps), one summary call each:
# the body summary_request_body builds against the one completeSummarization sends.
_CLAUDE = {
    "id": "fake-claude",
    "name": "fake-claude",
    "api": "anthropic-messages",
    "provider": "anthropic",
    "reasoning": True,
    "input": ["text", "image"],
    "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
    "contextWindow": 200000,
    "maxTokens": 64000,
}
ANTHROPIC_MODELS = {
    "plain": ({"reasoning": False}, "medium"),
    "thinking-off": ({}, "off"),
    "off-not-sendable": ({"thinkingLevelMap": {"off": None}}, "off"),
    "budget-low": ({}, "low"),
    "budget-capped-by-maxTokens": ({"maxTokens": 6000}, "high"),
    "budget-clamped-to-window": ({"contextWindow": 30000}, "high"),
    "xhigh-clamped-to-high": ({}, "xhigh"),
    "xhigh-offered": ({"thinkingLevelMap": {"xhigh": "xhigh"}}, "xhigh"),
    "adaptive": ({"compat": {"forceAdaptiveThinking": True}}, "medium"),
    "adaptive-mapped": (
        {"compat": {"forceAdaptiveThinking": True}, "thinkingLevelMap": {"high": "max"}},
        "high",
    ),
    "mid-convo-effort": ({"compat": {"supportsMidConvoEffort": True}}, "medium"),
    "mid-convo-effort-off": ({"compat": {"supportsMidConvoEffort": True}}, "off"),
    "fallbacks": (
        {
            "compat": {
                "allowedFallbackModels": [{"provider": "anthropic", "model": "fake-claude-2"}]
            }
        },
        None,
    ),
}


@pytest.mark.oracle
@pytest.mark.parametrize("name", list(ANTHROPIC_MODELS))
def test_a_1x_anthropic_summary_body_is_pi_1_6_0s_for_every_thinking_rule(server, name):
    from contextlab.pi.dialects.pi_1_x_compaction import summary_request
    from contextlab.pi.providers.summary import summary_betas, summary_request_body

    overrides, level = ANTHROPIC_MODELS[name]
    model = {**_CLAUDE, "baseUrl": server.anthropic_base_url, **overrides}
    prompt = "<conversation>\n[User]: fix the bug in a.py 😀\n</conversation>\n\nSummarise."
    run_oracle(
        "jobs_summarise.mjs",
        {
            "mode": "complete",
            "model": model,
            "apiKey": "sk-ant-test",
            "prompt": prompt,
            "thinkingLevel": level,
        },
        timeout=60,
        version="1.6.0",
    )
    assert len(server.requests) == 1
    pi = server.requests[0]
    request = summary_request("history", prompt, model, level).request()
    ours = json_stringify(summary_request_body(model, request, thinking_level=level, variant="1.6"))
    assert json.loads(ours, object_pairs_hook=list) == json.loads(pi.body, object_pairs_hook=list)
    assert ours.encode() == pi.body
    betas = summary_betas(model, level, "1.6")
    assert pi.path == "/v1/messages?beta=true"
    assert pi.headers.get("anthropic-beta") == (",".join(betas) if betas else None)
