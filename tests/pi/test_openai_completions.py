"""The chat-completions port against the bodies real Pi 0.80.2 sent, and against pi-ai's rules.

The corpus test feeds the port the exact pi-ai context Pi had for each recorded request (captured
by the recorder after ``transformMessages``), so it checks the port alone; the whole chain from a
session file is checked in tests/conformance/test_requests.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contextlab.pi.providers.openai_completions import (
    build_params,
    build_request_body,
    clamp_thinking_level,
    get_compat,
    normalize_tool_call_id,
    sanitize_surrogates,
    simple_options,
)

CORPUS = Path(__file__).resolve().parents[1] / "conformance" / "corpus"


def _recorded_requests() -> list[tuple[Path, dict[str, Any]]]:
    cases = []
    for manifest_path in sorted(CORPUS.glob("*/manifest.json")):
        manifest = json.loads(manifest_path.read_text())
        for request in manifest["requests"]:
            cases.append((manifest_path.parent, request))
    return cases


RECORDED = _recorded_requests()


def _model(manifest: dict[str, Any], model_id: str) -> dict[str, Any]:
    return next(m for m in manifest["models"] if m["id"] == model_id)


def test_it_has_a_corpus_to_check() -> None:
    assert len(RECORDED) >= 30
    assert {r["kind"] for _, r in RECORDED} == {"agent", "summary"}


@pytest.mark.parametrize(
    ("scenario", "request_info"),
    RECORDED,
    ids=[f"{path.name}-{r['seq']}-{r['kind']}" for path, r in RECORDED],
)
def test_it_rebuilds_each_recorded_body_byte_for_byte(
    scenario: Path, request_info: dict[str, Any]
) -> None:
    manifest = json.loads((scenario / "manifest.json").read_text())
    sent = json.loads((scenario / "sent.json").read_text())
    index = sent["requests"][request_info["seq"]]
    model = _model(manifest, request_info["model"]["id"])
    tools = [t for t in manifest["toolDefinitions"] if t["name"] in request_info["tools"]]
    context = {
        "systemPrompt": sent["systemPrompts"][index["systemPrompt"]],
        "messages": [sent["messages"][i] for i in index["messages"]],
        "tools": tools,
    }
    options = simple_options(
        model, reasoning=request_info["reasoning"], max_tokens=request_info["maxTokens"]
    )
    expected = (scenario / request_info["body"]).read_bytes().decode("utf-8")
    assert build_request_body(model, context, options) == expected


MODEL = {
    "id": "m",
    "provider": "custom",
    "api": "openai-completions",
    "baseUrl": "http://127.0.0.1:9/v1",
    "reasoning": True,
    "input": ["text"],
}


def _assistant(*content: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(content), "stopReason": "stop", **extra}


def test_it_sends_the_system_prompt_as_system_for_non_reasoning_models() -> None:
    params = build_params({**MODEL, "reasoning": False}, {"systemPrompt": "S", "messages": []})
    assert params["messages"] == [{"role": "system", "content": "S"}]
    assert "reasoning_effort" not in params


def test_it_maps_the_thinking_level_to_reasoning_effort_and_clamps_xhigh() -> None:
    assert clamp_thinking_level(MODEL, "xhigh") == "high"
    assert clamp_thinking_level({**MODEL, "reasoning": False}, "high") == "off"
    assert simple_options(MODEL, reasoning="xhigh") == {"reasoningEffort": "high"}
    params = build_params(MODEL, {"messages": []}, simple_options(MODEL, reasoning="low"))
    assert params["reasoning_effort"] == "low"
    mapped = {**MODEL, "thinkingLevelMap": {"off": "none", "low": "minimal-ish"}}
    assert build_params(mapped, {"messages": []}, {})["reasoning_effort"] == "none"
    assert (
        build_params(mapped, {"messages": []}, simple_options(mapped, reasoning="low"))[
            "reasoning_effort"
        ]
        == "minimal-ish"
    )


def test_it_skips_empty_assistant_messages_and_keeps_null_content_with_tool_calls() -> None:
    call = {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls"}}
    messages = [
        _assistant({"type": "text", "text": "  \n"}),
        _assistant(call),
        {"role": "toolResult", "toolCallId": "c1", "toolName": "bash", "content": []},
    ]
    params = build_params(MODEL, {"messages": messages})
    assert params["messages"] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command":"ls"}'},
                }
            ],
        },
        {"role": "tool", "content": "(see attached image)", "tool_call_id": "c1"},
    ]
    # No tools given but tool history present: an empty tools list is sent.
    assert params["tools"] == []


def test_it_replays_thinking_under_its_signature_field_after_the_text() -> None:
    message = _assistant(
        {"type": "thinking", "thinking": "a", "thinkingSignature": "reasoning_content"},
        {"type": "text", "text": "x"},
        {"type": "text", "text": "y"},
        {"type": "thinking", "thinking": "b", "thinkingSignature": "other"},
    )
    (converted,) = build_params(MODEL, {"messages": [message]})["messages"]
    assert json.dumps(converted) == json.dumps(
        {"role": "assistant", "content": "xy", "reasoning_content": "a\nb"}
    )


def test_it_sends_thinking_as_text_when_the_compat_asks_for_it() -> None:
    model = {**MODEL, "compat": {"requiresThinkingAsText": True}}
    message = _assistant({"type": "thinking", "thinking": "t"}, {"type": "text", "text": "x"})
    (converted,) = build_params(model, {"messages": [message]})["messages"]
    assert converted["content"] == [{"type": "text", "text": "t"}, {"type": "text", "text": "x"}]


def test_it_attaches_tool_images_in_a_following_user_message_for_vision_models() -> None:
    model = {**MODEL, "input": ["text", "image"]}
    result = {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "read",
        "content": [{"type": "image", "mimeType": "image/png", "data": "AAA"}],
    }
    messages = build_params(model, {"messages": [result]})["messages"]
    assert messages[1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "Attached image(s) from tool result:"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAA"}},
        ],
    }


def test_it_detects_provider_quirks_from_the_base_url() -> None:
    together = get_compat({**MODEL, "baseUrl": "https://api.together.xyz/v1"})
    assert together["maxTokensField"] == "max_tokens"
    assert together["supportsStrictMode"] is False
    params = build_params(
        {**MODEL, "baseUrl": "https://api.together.xyz/v1"},
        {"messages": [], "tools": [{"name": "t", "description": "d", "parameters": {}}]},
        simple_options(MODEL, reasoning="medium", max_tokens=10),
    )
    assert list(params) == [
        "model",
        "messages",
        "stream",
        "stream_options",
        "max_tokens",
        "tools",
        "reasoning",
    ]
    assert params["tools"][0]["function"] == {"name": "t", "description": "d", "parameters": {}}
    assert params["reasoning"] == {"enabled": True}


def test_it_uses_the_session_as_prompt_cache_key_on_api_openai_com() -> None:
    model = {**MODEL, "provider": "openai", "baseUrl": "https://api.openai.com/v1"}
    params = build_params(model, {"messages": []}, {"sessionId": "s" * 70})
    assert list(params)[:4] == ["model", "messages", "stream", "prompt_cache_key"]
    assert params["prompt_cache_key"] == "s" * 64
    assert normalize_tool_call_id("x" * 50, model) == "x" * 40
    assert normalize_tool_call_id("call+1|" + "y" * 400, MODEL) == "call_1"


def test_it_strips_lone_surrogates_but_keeps_pairs() -> None:
    assert sanitize_surrogates("a\ud83d b \U0001f648 \ude48") == "a b \U0001f648 "
    # A pair read from JSON escapes stays two code points in Python: kept as a pair.
    assert sanitize_surrogates("x\ud83d\ude48y\udc00") == "x\ud83d\ude48y"
    # Text with no surrogate comes back as the very same object (the fast path).
    text = "é 日本 \U0001f648 plain"
    assert sanitize_surrogates(text) is text


def test_it_serialises_like_json_stringify() -> None:
    body = build_request_body(
        {**MODEL, "reasoning": False}, {"systemPrompt": "é/\u2028", "messages": []}, {}
    )
    assert body == (
        '{"model":"m","messages":[{"role":"system","content":"é/\u2028"}],"stream":true,'
        '"stream_options":{"include_usage":true},"store":false}'
    )
