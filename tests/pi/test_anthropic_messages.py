"""The Anthropic Messages body port (pi-ai anthropic-messages.js), checked rule by rule.

The byte-for-byte comparison with the real Pi over HTTP is in
tests/conformance/test_provider_requests.py.
"""

from contextlab.pi.providers import anthropic_messages as am

MODEL = {
    "id": "m",
    "provider": "anthropic",
    "api": "anthropic-messages",
    "reasoning": False,
    "input": ["text"],
    "maxTokens": 64000,
}
USER = {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}


def test_it_orders_keys_as_pi_and_caches_the_system_prompt_and_last_user_block():
    body = am.build_simple_params(
        MODEL, {"systemPrompt": "sys", "messages": [USER]}, {"maxTokens": 10}
    )
    assert list(body) == ["model", "messages", "max_tokens", "stream", "system"]
    assert body["system"] == [
        {"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}],
        }
    ]


def test_it_disables_thinking_for_a_reasoning_model_without_a_level():
    body = am.build_simple_params(
        {**MODEL, "reasoning": True}, {"messages": [USER]}, {"maxTokens": 10}
    )
    assert body["thinking"] == {"type": "disabled"}
    assert "system" not in body


def test_it_fits_the_thinking_budget_inside_max_tokens_like_pi():
    body = am.build_simple_params(
        {**MODEL, "reasoning": True},
        {"messages": [USER]},
        {"maxTokens": 13107, "reasoning": "high"},
    )
    assert body["max_tokens"] == 13107 + 16384
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 16384, "display": "summarized"}
    assert am.adjust_max_tokens_for_thinking(2048, 4000, "medium") == (4000, 2976)


def test_it_drops_errored_turns_and_gives_orphan_tool_calls_a_result():
    call = {"type": "toolCall", "id": "call|1", "name": "read", "arguments": {"path": "a"}}
    messages = [
        USER,
        {
            "role": "assistant",
            "content": [call],
            "provider": "x",
            "api": "y",
            "model": "z",
            "stopReason": "toolUse",
        },
        {"role": "assistant", "content": [{"type": "text", "text": "boom"}], "stopReason": "error"},
        {"role": "user", "content": "next", "timestamp": 2},
    ]
    body = am.build_params(
        MODEL, {"messages": messages}, {"maxTokens": 5, "cacheRetention": "none"}
    )
    assert body["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "call_1", "name": "read", "input": {"path": "a"}}],
    }
    assert body["messages"][2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "call_1",
                "content": "No result provided",
                "is_error": True,
            }
        ],
    }
    assert body["messages"][3] == {"role": "user", "content": "next"}


def test_it_removes_lone_surrogates_only():
    assert am.sanitize_surrogates("a\ud83db😀") == "ab😀"


def test_it_normalises_tool_call_ids_per_utf16_unit():
    # /[^a-zA-Z0-9_-]/g without the u flag replaces each half of an astral character.
    assert am.normalize_tool_call_id("a\U0001f600b|" + "x" * 80) == ("a__b_" + "x" * 80)[:64]
