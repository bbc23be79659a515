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
from tests.jobs.fake_llm import FakeLLMServer, Reply

pytestmark = pytest.mark.oracle

SYSTEM = "You are a context summarization assistant.\n\nDo NOT continue the conversation."
TEXT = "<conversation>\n[User]: fix the bug in a.py 😀\n</conversation>\n\nSummarise."


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
