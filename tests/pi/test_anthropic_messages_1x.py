"""pi-ai 1.6.0's Anthropic Messages body (anthropic_messages), checked rule by rule without
Node. The byte-for-byte comparison with the real Pi 1.6.0 over HTTP is in
tests/conformance/test_pi_1x_jobs.py (test_a_1x_anthropic_*)."""

from __future__ import annotations

import pytest

from contextlab.pi.dialects.pi_1_x_compaction import summary_request
from contextlab.pi.providers import anthropic_messages as am
from contextlab.pi.providers.summary import (
    anthropic_usage,
    summary_betas,
    summary_request_body,
)

MODEL = {
    "id": "m",
    "provider": "anthropic",
    "api": "anthropic-messages",
    "baseUrl": "https://api.anthropic.com",
    "reasoning": True,
    "input": ["text"],
    "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
    "contextWindow": 200000,
    "maxTokens": 64000,
}
SYSTEM = {"role": "system", "content": "sys", "timestamp": 0}
USER = {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 0}


def _body(model, level):  # type: ignore[no-untyped-def]
    request = summary_request("history", "hi", model, level).request()
    return summary_request_body(model, request, thinking_level=level, variant="1.6")


def test_a_1x_summary_carries_no_cache_marker_where_0_80_put_two():
    body = _body({**MODEL, "reasoning": False}, None)
    assert list(body) == ["model", "messages", "max_tokens", "stream", "system"]
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert "cache_control" not in body["system"][0]
    request = summary_request("history", "hi", MODEL, None).request()
    old = summary_request_body(
        {**MODEL, "reasoning": False}, request, thinking_level=None, variant=None
    )
    assert old["system"][0]["cache_control"] == {"type": "ephemeral"}


def test_a_cache_marker_goes_on_the_last_block_when_retention_is_asked_for():
    body = am.build_params(
        MODEL, {"messages": [SYSTEM, USER]}, {"cacheRetention": "long"}, pi_ai="1.6"
    )
    marker = {"type": "ephemeral", "ttl": "1h"}
    assert body["system"][0]["cache_control"] == marker
    assert body["messages"][0]["content"][0]["cache_control"] == marker


def test_budget_thinking_is_clamped_to_the_window_again_and_leaves_room_for_the_answer():
    small = {**MODEL, "contextWindow": 30000}
    body = _body(small, "high")
    base = summary_request("history", "hi", small, "high").max_tokens
    assert body["max_tokens"] == base < small["maxTokens"]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 16384, "display": "summarized"}
    tight = _body({**MODEL, "maxTokens": 6000}, "high")
    assert (tight["max_tokens"], tight["thinking"]["budget_tokens"]) == (6000, 6000 - 1024)


def test_mid_conversation_effort_models_get_adaptive_thinking_and_a_trailing_effort_message():
    model = {**MODEL, "compat": {"supportsMidConvoEffort": True}}
    body = _body(model, "medium")
    assert body["messages"][-1] == {
        "role": "system",
        "content": [],
        "output_config": {"effort": "high"},
    }
    assert body["thinking"]["block_binding"] == {"prefix_mismatch_behavior": "drop_block"}
    assert body["output_config"] == {"effort": "low"}
    assert _body(model, "off")["thinking"] == {"type": "disabled"}
    assert summary_betas(model, "off", "1.6") == [
        "mid-conversation-output-config-2026-07-01",
        "thinking-binding-controls-2026-08-01",
    ]


def test_the_interleaved_thinking_beta_goes_only_with_budget_thinking():
    assert summary_betas(MODEL, "medium", "1.6") == [am.INTERLEAVED_THINKING_BETA]
    assert summary_betas(MODEL, "off", "1.6") == []
    assert summary_betas({**MODEL, "compat": {"forceAdaptiveThinking": True}}, "high", "1.6") == []
    assert summary_betas(MODEL, "medium", None) is None


def test_what_is_not_ported_is_refused_not_guessed():
    required = {"type": "json_schema", "strict": "require"}
    strict = {"name": "t", "description": "d", "parameters": {}, "constrainedSampling": required}
    system = {**SYSTEM, "toolsAdded": [strict]}
    with pytest.raises(NotImplementedError):
        am.build_params(MODEL, {"messages": [system, USER]}, pi_ai="1.6")


def test_1x_anthropic_usage_records_long_cache_writes_and_reported_thinking_only():
    usage = anthropic_usage(MODEL, input=10, output=5, cache_write_1h=0, variant="1.6")
    assert list(usage) == [
        "input",
        "output",
        "cacheRead",
        "cacheWrite",
        "totalTokens",
        "cost",
        "cacheWrite1h",
    ]
    assert usage["cost"]["totalFromProvider"] is False
    thought = anthropic_usage(MODEL, input=10, output=5, reasoning=3, variant="1.6")
    assert list(thought)[-1] == "reasoning" and thought["reasoning"] == 3
    assert "cacheWrite1h" not in anthropic_usage(MODEL, input=10, output=5)
