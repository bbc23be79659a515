"""The bodies contextlab sends to a model equal what Pi 0.80.2 sends, over real HTTP.

Both sides talk to the same fake server on 127.0.0.1 (tests/jobs/fake_llm.py): Pi under Node with
a real openai-completions / anthropic-messages model whose baseUrl is the fake server, contextlab
through the official Python SDKs. The recorded bodies are compared byte for byte (and first as
ordered JSON, for a readable diff).
"""

from __future__ import annotations

import json

import pytest

from contextlab.jobs import providers
from tests.conformance.conftest import run_oracle
from tests.conftest import corpus_entry_id
from tests.jobs.fake_llm import FakeLLMServer, Reply

pytestmark = pytest.mark.oracle

SYSTEM = "You are a context summarization assistant.\n\nDo NOT continue the conversation."
TEXT = "<conversation>\n[User]: fix the bug in a.py 😀\n</conversation>\n\nSummarise."


API_HEADERS = (
    "content-type",
    "accept",
    "authorization",
    "x-api-key",
    "anthropic-version",
    "anthropic-beta",
    "anthropic-dangerous-direct-browser-access",
)


def summarisation_request(max_tokens: int = 13107, text: str = TEXT) -> dict:
    return {
        "systemPrompt": SYSTEM,
        "messages": [{"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}],
        "maxTokens": max_tokens,
    }


def config_for(kind: str, server: FakeLLMServer, **overrides) -> providers.ProviderConfig:
    base = {
        "openai": dict(base_url=server.openai_base_url, provider_name="openai", model="fake-gpt"),
        "anthropic": dict(
            base_url=server.anthropic_base_url, provider_name="anthropic", model="fake-claude"
        ),
    }[kind]
    values = dict(
        kind=kind,
        api_key="sk-test",
        context_window=200000,
        max_tokens=32000,
        max_retries=0,
        timeout=20.0,
        **base,
    )
    values.update(overrides)
    return providers.ProviderConfig(**values)


def ordered(body: bytes):
    """The JSON with key order kept, so equal results mean equal order too."""
    return json.loads(body, object_pairs_hook=lambda pairs: [list(p) for p in pairs])


def pi_complete(server, config, request, reasoning=None):
    options = {"maxTokens": request["maxTokens"]}
    if reasoning:
        options["reasoning"] = reasoning
    context = {"systemPrompt": request["systemPrompt"], "messages": request["messages"]}
    before = len(server.requests)
    out = run_oracle(
        "jobs_summarise.mjs",
        {
            "mode": "complete",
            "model": config.pi_model(),
            "apiKey": config.api_key,
            "context": context,
            "options": options,
        },
        timeout=60,
    )
    assert out["stopReason"] in ("stop", "length"), out
    assert len(server.requests) == before + 1
    return server.requests[-1], out


@pytest.fixture
def server():
    with FakeLLMServer() as s:
        yield s


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
@pytest.mark.parametrize(
    "overrides,reasoning",
    [({}, None), ({"reasoning": True}, None), ({"reasoning": True}, "high")],
    ids=["plain", "reasoning-model-off", "reasoning-high"],
)
def test_it_sends_the_body_pi_sends(server, kind, overrides, reasoning):
    config = config_for(kind, server, **overrides)
    request = summarisation_request()
    pi_request, pi_out = pi_complete(server, config, request, reasoning)
    ours = providers.complete(config, request, reasoning=reasoning)
    mine = server.requests[-1]
    assert mine.path == pi_request.path
    assert ordered(mine.body) == ordered(pi_request.body)
    assert mine.body == pi_request.body
    assert ours.request_body == json.loads(mine.body)
    # Headers the API reads are Pi's too; only the SDKs' identity headers differ.
    for name in API_HEADERS:
        assert mine.headers.get(name) == pi_request.headers.get(name), name
    # Both read the same answer from the stream.
    pi_text = "\n".join(b["text"] for b in pi_out["content"] if b["type"] == "text")
    assert ours.text == pi_text
    assert ours.usage["input"] == pi_out["usage"]["input"]
    assert ours.usage["output"] == pi_out["usage"]["output"]


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_it_reads_a_cut_off_summary_as_length_like_pi(server, kind):
    config = config_for(kind, server)
    server.script.append(Reply(text="## Goal\ncut", stop_reason="length"))
    _, pi_out = pi_complete(server, config, summarisation_request())
    server.script.append(Reply(text="## Goal\ncut", stop_reason="length"))
    ours = providers.complete(config, summarisation_request())
    assert pi_out["stopReason"] == "length"
    assert ours.stop_reason == "length"
    assert ours.text == "## Goal\ncut"


# --- Whole jobs: contextlab's compaction / branch-summary job against Pi's compact() and
# --- generateBranchSummary() on the same session, both talking to the same fake server.


@pytest.fixture
def openai_provider(settings, server):
    server.point_at(
        settings, model="fake-gpt", provider_name="openai", max_tokens=32000, context_window=200000
    )
    return providers.active_provider()


def _bodies(server, start, end=None):
    return sorted(r.body for r in server.requests[start:end])


@pytest.mark.django_db
@pytest.mark.parametrize(
    "corpus,params",
    [
        ("tools", {"keepRecentTokens": 10}),
        ("tools", {"keepRecentTokens": 150, "customInstructions": "focus on the files"}),
        ("tools", {"keepRecentTokens": 20000}),
        ("compaction", {"keepRecentTokens": 10}),
        ("interactive", {"keepRecentTokens": 60, "reserveTokens": 4000}),
        # A split turn with no history before it: Pi sends only the turn-prefix request.
        ("tools", {"keepRecentTokens": 300}),
        # A reasoning model gets the session's thinking level (its thinking_level_change).
        ("compaction", {"keepRecentTokens": 10, "reasoning": "medium"}),
    ],
)
def test_a_compaction_job_sends_what_pi_sends_and_writes_what_pi_writes(
    server, openai_provider, import_corpus, corpus, params, settings
):
    from contextlab.jobs import services
    from contextlab.library.models import Entry

    thinking = params.pop("reasoning", None)
    if thinking:
        conf = settings.CONTEXTLAB_LLM
        settings.CONTEXTLAB_LLM = {**conf, "openai": {**conf["openai"], "reasoning": True}}
        openai_provider = providers.active_provider()
    session, path = import_corpus(corpus)
    leaf = session.leaf_entry_id
    job = services.job_create(session=session, kind="compaction", parameters=params, enqueue=False)
    job = services.job_execute(job_id=job.pk)
    ours = _bodies(server, 0)
    pi = run_oracle(
        "jobs_summarise.mjs",
        {
            "mode": "compact",
            "model": openai_provider.pi_model(),
            "apiKey": "sk-test",
            "sessionFile": str(path),
            "leafId": leaf,
            "keepRecentTokens": params.get("keepRecentTokens", 20000),
            "reserveTokens": params.get("reserveTokens", 16384),
            "customInstructions": params.get("customInstructions"),
            "thinkingLevel": thinking,
        },
        timeout=60,
    )
    assert _bodies(server, len(ours)) == ours
    if thinking:
        assert all(b'"reasoning_effort":"medium"' in body for body in ours)
    if not pi["prepared"]:
        assert job.status == "failed" and job.error == "Nothing to compact (session too small)"
        assert ours == []
        return
    assert job.status == "succeeded", job.error
    entry = Entry.objects.get(session=session, entry_id=job.result_entry_ids[0]).data
    result = pi["result"]
    assert entry["summary"] == result["summary"]
    assert entry["firstKeptEntryId"] == result["firstKeptEntryId"]
    assert entry["tokensBefore"] == result["tokensBefore"]
    assert entry["details"] == result["details"]
    assert entry["parentId"] == leaf


@pytest.mark.django_db
@pytest.mark.parametrize(
    "target,params",
    [
        (("Suggest a name", True), {}),
        (("Why MIT", True), {"customInstructions": "only decisions"}),
        (
            ("What is this project", True),
            {"customInstructions": "just list files", "replaceInstructions": True},
        ),
        (("Actually, suggest a licence", False), {"reserveTokens": 199990}),
    ],
)
def test_a_branch_summary_job_sends_what_pi_sends_and_writes_what_pi_writes(
    server, openai_provider, import_corpus, target, params
):
    from contextlab.jobs import services
    from contextlab.library.models import Entry

    target = corpus_entry_id("branches", user=target[0], reply=target[1])
    session, path = import_corpus("branches")
    old_leaf = session.leaf_entry_id
    job = services.job_create(
        session=session,
        kind="branch_summary",
        target_entry_id=target,
        parameters=params,
        enqueue=False,
    )
    job = services.job_execute(job_id=job.pk)
    ours = _bodies(server, 0)
    pi = run_oracle(
        "jobs_summarise.mjs",
        {
            "mode": "branch",
            "model": openai_provider.pi_model(),
            "apiKey": "sk-test",
            "sessionFile": str(path),
            "fromId": old_leaf,
            "targetId": target,
            "customInstructions": params.get("customInstructions"),
            "replaceInstructions": params.get("replaceInstructions"),
            "reserveTokens": params.get("reserveTokens", 16384),
        },
        timeout=60,
    )
    assert _bodies(server, len(ours)) == ours
    assert job.status == "succeeded", job.error
    entry = Entry.objects.get(session=session, entry_id=job.result_entry_ids[0]).data
    assert entry["summary"] == pi["result"]["summary"]
    assert entry["details"] == {
        "readFiles": pi["result"].get("readFiles") or [],
        "modifiedFiles": pi["result"].get("modifiedFiles") or [],
    }
    assert entry["fromId"] == entry["parentId"]


@pytest.mark.django_db
def test_anthropic_compaction_and_branch_jobs_send_what_pi_sends(server, settings, import_corpus):
    from contextlab.jobs import services

    server.point_at(settings, "anthropic", model="fake-claude", max_tokens=32000)
    config = providers.active_provider()
    session, path = import_corpus("interactive")
    leaf = session.leaf_entry_id
    job = services.job_execute(
        job_id=services.job_create(
            session=session, kind="compaction", parameters={"keepRecentTokens": 60}, enqueue=False
        ).pk
    )
    assert job.status == "succeeded", job.error
    ours = _bodies(server, 0)
    pi = run_oracle(
        "jobs_summarise.mjs",
        {
            "mode": "compact",
            "model": config.pi_model(),
            "apiKey": "sk-ant-test",
            "sessionFile": str(path),
            "leafId": leaf,
            "keepRecentTokens": 60,
        },
        timeout=60,
    )
    assert len(ours) == 2 and _bodies(server, len(ours)) == ours
    assert pi["result"]["summary"].startswith("## Goal\nSummarised by the fake server.")

    target = corpus_entry_id("branches", user="Why MIT", reply=True)
    session, path = import_corpus("branches")
    start = len(server.requests)
    job = services.job_execute(
        job_id=services.job_create(
            session=session, kind="branch_summary", target_entry_id=target, enqueue=False
        ).pk
    )
    assert job.status == "succeeded", job.error
    ours = _bodies(server, start)
    run_oracle(
        "jobs_summarise.mjs",
        {
            "mode": "branch",
            "model": config.pi_model(),
            "apiKey": "sk-ant-test",
            "sessionFile": str(path),
            "fromId": _file_leaf(path),
            "targetId": target,
        },
        timeout=60,
    )
    assert len(ours) == 1 and _bodies(server, start + 1) == ours


def _file_leaf(path):
    import json

    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return lines[-1]["id"]
