"""buildSessionContext, convertToLlm and transformMessages rules, in milliseconds (no Node).

The byte-for-byte proof against Pi is tests/conformance/test_projection.py; these pin each rule
with a small readable case.
"""

from __future__ import annotations

from contextlab.pi.context import (
    NO_RESULT_TEXT,
    TOOL_IMAGE_PLACEHOLDER,
    USER_IMAGE_PLACEHOLDER,
    bash_execution_to_text,
    build_session_context,
    convert_to_llm,
    model_for_transform,
    transform_messages,
)
from contextlab.pi.jsutil import json_stringify
from contextlab.pi.request import iter_leaf_projections

IMAGE = {"type": "image", "data": "x", "mimeType": "image/png"}
CLAUDE = {"provider": "anthropic", "api": "anthropic-messages", "id": "claude", "input": ["text"]}


def msg(id_, parent, message, ts="2025-01-01T00:00:00.000Z"):
    return {"type": "message", "id": id_, "parentId": parent, "timestamp": ts, "message": message}


def user(text):
    return {"role": "user", "content": text, "timestamp": 1}


def assistant(content, stop="stop", provider="anthropic", model="claude", api="anthropic-messages"):
    return {
        "role": "assistant",
        "content": content,
        "api": api,
        "provider": provider,
        "model": model,
        "stopReason": stop,
        "timestamp": 2,
    }


def test_it_returns_nothing_for_an_explicit_null_leaf_and_falls_back_to_the_last_entry():
    entries = [msg("a", None, user("one")), msg("b", "a", user("two"))]
    assert build_session_context(entries, None).messages == []
    assert [m["content"] for m in build_session_context(entries, "nope").messages] == ["one", "two"]
    assert [m["content"] for m in build_session_context(entries).messages] == ["one", "two"]
    assert build_session_context([]).as_dict() == {
        "messages": [],
        "thinkingLevel": "off",
        "model": None,
    }


def test_it_takes_model_and_thinking_level_from_the_path():
    entries = [
        {
            "type": "model_change",
            "id": "m",
            "parentId": None,
            "timestamp": "t",
            "provider": "openai",
            "modelId": "gpt",
        },
        {
            "type": "thinking_level_change",
            "id": "t",
            "parentId": "m",
            "timestamp": "t",
            "thinkingLevel": "high",
        },
        msg("a", "t", assistant([], stop="error")),
    ]
    context = build_session_context(entries, "a")
    assert context.thinking_level == "high"
    assert context.model == {"provider": "anthropic", "modelId": "claude"}
    assert build_session_context(entries, "t").model == {"provider": "openai", "modelId": "gpt"}


def test_it_cuts_at_the_last_compaction_and_keeps_from_first_kept():
    entries = [
        msg("a", None, user("old")),
        msg("b", "a", user("kept")),
        {
            "type": "branch_summary",
            "id": "s",
            "parentId": "b",
            "timestamp": "2025-01-01T00:00:01Z",
            "fromId": "a",
            "summary": "",
        },
        {
            "type": "compaction",
            "id": "c",
            "parentId": "s",
            "timestamp": "2025-01-01T00:00:02Z",
            "summary": "S",
            "firstKeptEntryId": "b",
            "tokensBefore": 10,
        },
        msg("d", "c", user("new")),
    ]
    messages = build_session_context(entries, "d").messages
    assert messages[0] == {
        "role": "compactionSummary",
        "summary": "S",
        "tokensBefore": 10,
        "timestamp": 1735689602000,
    }
    assert [m.get("content") for m in messages[1:]] == ["kept", "new"]  # empty summary: nothing
    entries[3]["firstKeptEntryId"] = "elsewhere"
    assert [m["role"] for m in build_session_context(entries, "d").messages] == [
        "compactionSummary",
        "user",
    ]


def test_it_wraps_summaries_custom_and_bash_like_pi():
    messages = [
        {"role": "compactionSummary", "summary": "C", "tokensBefore": 1, "timestamp": 1},
        {"role": "branchSummary", "summary": "B", "fromId": "x", "timestamp": 2},
        {"role": "custom", "customType": "k", "content": "hi", "display": False, "timestamp": 3},
        {"role": "custom", "customType": "k", "content": [IMAGE], "display": True, "timestamp": 4},
        {"role": "bashExecution", "command": "ls", "output": "x", "excludeFromContext": True},
        {"role": "mystery"},
    ]
    out = convert_to_llm(messages)
    assert out[0]["content"][0]["text"].endswith("C\n</summary>")
    assert out[1]["content"][0]["text"].endswith("B</summary>")  # no newline before the tag
    assert out[2] == {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 3}
    assert out[3]["content"] == [IMAGE]
    assert len(out) == 4


def test_it_renders_bash_executions_exactly():
    base = {"command": "make", "output": "", "cancelled": False, "truncated": False}
    assert bash_execution_to_text({**base, "exitCode": 0}) == "Ran `make`\n(no output)"
    assert bash_execution_to_text({**base, "exitCode": None, "cancelled": True}).endswith(
        "\n\n(command cancelled)"
    )
    text = bash_execution_to_text(
        {**base, "output": "boom", "exitCode": 2, "truncated": True, "fullOutputPath": "/t"}
    )
    assert text == (
        "Ran `make`\n```\nboom\n```\n\nCommand exited with code 2"
        "\n\n[Output truncated. Full output: /t]"
    )


def test_it_skips_failed_replies_and_synthesises_missing_results():
    call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {}}
    messages = [
        user("go"),
        assistant([call], stop="toolUse"),
        assistant([{"type": "text", "text": "partial"}], stop="aborted"),
        user("next"),
    ]
    sent = transform_messages(messages, CLAUDE, now_ms=99)
    assert [m["role"] for m in sent] == ["user", "assistant", "toolResult", "user"]
    assert sent[2] == {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "read",
        "content": [{"type": "text", "text": NO_RESULT_TEXT}],
        "isError": True,
        "timestamp": 99,
    }


def test_it_turns_other_models_thinking_into_text_and_drops_signatures():
    other = assistant(
        [
            {"type": "thinking", "thinking": "hmm", "thinkingSignature": "s"},
            {"type": "thinking", "thinking": "\u3000"},
            {"type": "thinking", "thinking": "secret", "redacted": True},
            {"type": "toolCall", "id": "c", "name": "n", "arguments": {}, "thoughtSignature": "t"},
        ],
        provider="openai",
        model="gpt",
    )
    sent = transform_messages(
        [other, {"role": "toolResult", "toolCallId": "c", "content": []}], CLAUDE, now_ms=0
    )
    assert sent[0]["content"] == [
        {"type": "text", "text": "hmm"},
        {"type": "toolCall", "id": "c", "name": "n", "arguments": {}},
    ]
    same = assistant([{"type": "thinking", "thinking": "", "thinkingSignature": "s"}])
    assert transform_messages([same], CLAUDE)[0]["content"] == same["content"]


def test_it_keeps_a_falsy_thought_signature_and_normalises_ids_when_asked():
    # Pi deletes thoughtSignature only when truthy; the id normaliser sees (id, model, message).
    call = {"type": "toolCall", "id": "a|b", "name": "n", "arguments": {}, "thoughtSignature": ""}
    other = assistant([call], provider="openai", model="gpt")
    result = {"role": "toolResult", "toolCallId": "a|b", "content": []}
    seen = []

    def normalise(id_, model, message):
        seen.append((id_, model is CLAUDE, message["model"]))
        return id_.replace("|", "_")

    sent = transform_messages([other, result], CLAUDE, now_ms=0, normalize_tool_call_id=normalise)
    assert sent[0]["content"] == [{**call, "id": "a_b"}]
    assert sent[1]["toolCallId"] == "a_b"
    assert seen == [("a|b", True, "gpt")]
    # Without a normaliser (or for the same model) ids stay as they are.
    assert transform_messages([other, result], CLAUDE, now_ms=0)[1]["toolCallId"] == "a|b"
    mine = assistant([call])
    assert transform_messages([mine], CLAUDE, normalize_tool_call_id=normalise)[0] == mine
    # An id normalised to "" is kept in the call but not given to its result (`normalizedId &&`).
    empty = transform_messages([other, result], CLAUDE, normalize_tool_call_id=lambda *_: "")
    assert empty[0]["content"][0]["id"] == ""
    assert empty[1]["toolCallId"] == "a|b"


def test_it_collapses_images_for_text_only_models():
    messages = [
        {"role": "user", "content": [IMAGE, IMAGE, {"type": "text", "text": "x"}, IMAGE]},
        {"role": "toolResult", "toolCallId": "c", "content": [IMAGE]},
    ]
    sent = transform_messages(messages, CLAUDE)
    assert sent[0]["content"] == [
        {"type": "text", "text": USER_IMAGE_PLACEHOLDER},
        {"type": "text", "text": "x"},
        {"type": "text", "text": USER_IMAGE_PLACEHOLDER},
    ]
    assert sent[1]["content"] == [{"type": "text", "text": TOOL_IMAGE_PLACEHOLDER}]
    assert transform_messages(messages, {**CLAUDE, "input": ["text", "image"]}) == messages


def test_it_assumes_an_unknown_model_reads_images_and_uses_the_recorded_api():
    found = model_for_transform(
        {"provider": "lab", "modelId": "x"},
        messages=[assistant([], provider="lab", model="x", api="openai-completions")],
    )
    assert found == {
        "provider": "lab",
        "api": "openai-completions",
        "id": "x",
        "input": ["text", "image"],
        "assumed": True,
    }
    known = model_for_transform({"provider": "anthropic", "modelId": "claude-sonnet-4-5"})
    assert known["api"] == "anthropic-messages"


def test_it_projects_every_leaf_as_the_single_leaf_api_does():
    call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {}}
    entries = [
        msg("a", None, user("root")),
        msg("b", "a", assistant([call], stop="toolUse")),
        msg(
            "c",
            "b",
            {
                "role": "toolResult",
                "toolCallId": "c1",
                "toolName": "read",
                "content": [IMAGE],
                "isError": False,
                "timestamp": 3,
            },
        ),
        msg("d", "a", user("branch"), ts="2025-01-01T00:00:09.000Z"),
        {
            "type": "model_change",
            "id": "e",
            "parentId": "c",
            "timestamp": "t",
            "provider": "cerebras",
            "modelId": "gpt-oss-120b",
        },
        {
            "type": "compaction",
            "id": "f",
            "parentId": "e",
            "timestamp": "t",
            "summary": "S",
            "firstKeptEntryId": "b",
            "tokensBefore": 1,
        },
        msg("g", "f", assistant([{"type": "thinking", "thinking": "t"}])),
    ]
    seen = []
    for projection in iter_leaf_projections(entries, now_ms=7):
        context = build_session_context(entries, projection.leaf_id)
        llm = convert_to_llm(context.messages)
        sent = transform_messages(
            llm, model_for_transform(context.model, messages=context.messages), 7
        )
        assert json_stringify(projection.context.as_dict()) == json_stringify(context.as_dict())
        assert json_stringify(projection.llm) == json_stringify(llm)
        assert json_stringify(projection.sent) == json_stringify(sent)
        seen.append(projection.leaf_id)
    assert seen == ["a", "b", "c", "e", "f", "g", "d"]
