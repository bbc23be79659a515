"""The one request builder: what Pi sent at a leaf, for every caller and every dialect."""

from __future__ import annotations

import dataclasses
import json

from contextlab.pi.context import dropped_by, sent_role
from contextlab.pi.dialects import PI_0_80
from contextlab.pi.entries import message_of_entry
from contextlab.pi.growth import PathEntry, request_estimates
from contextlab.pi.jsutil import json_stringify
from contextlab.pi.request import (
    PromptSource,
    RequestSteps,
    build_request,
    iter_leaf_projections,
    request_time_ms,
)
from contextlab.pi.resources import PromptResources
from contextlab.pi.session import SessionTree
from contextlab.pi.tokens import estimate_tokens
from tests.pi.test_context import assistant, msg, user

CALL = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {}}
HEADER = {"type": "session", "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}


def _session():
    return [
        msg("a", None, user("one"), ts="2025-01-01T00:00:01.000Z"),
        msg("b", "a", assistant([CALL]), ts="2025-01-01T00:00:02.000Z"),
        # A reply left without its tool result: the request after it gets a synthetic one.
        msg("c", "b", user("two"), ts="2025-01-01T00:00:03.000Z"),
        {
            "type": "compaction",
            "id": "d",
            "parentId": "c",
            "timestamp": "2025-01-01T00:00:04.000Z",
            "summary": "S",
            "firstKeptEntryId": "b",
            "tokensBefore": 9,
        },
        {"type": "label", "id": "e", "parentId": "d", "targetId": "a", "label": "x"},
        msg("f", "b", user("other branch"), ts="2025-01-01T00:00:05.000Z"),
    ]


def test_it_names_the_entry_each_projected_message_came_from():
    request = build_request(_session(), "e")
    assert [m["role"] for m in request.agent_messages] == [
        "compactionSummary",
        "assistant",
        "user",
    ]
    assert [e["id"] for e in request.owners] == ["d", "b", "c"]


def test_it_stamps_synthetic_results_with_the_time_of_the_request():
    entries = _session()
    # The label has no timestamp: the request time is the newest valid one behind it.
    request = build_request(entries, "e", header=HEADER)
    assert request.request_time_ms == 1735689604000
    synthetic = [m for m in request.sent if m.get("role") == "toolResult"]
    assert [m["timestamp"] for m in synthetic] == [1735689604000]
    assert request_time_ms([], HEADER) == 1735689600000
    assert request_time_ms([{"type": "label"}], None) is None
    assert build_request(entries, "e", now_ms=5).sent[2]["timestamp"] == 5


def test_every_leaf_of_the_walk_is_the_request_the_builder_gives():
    entries = _session()
    seen = []
    for projection in iter_leaf_projections(entries, header=HEADER, with_owners=True):
        request = build_request(entries, projection.leaf_id, header=HEADER)
        assert projection.request_time_ms == request.request_time_ms
        assert json_stringify(projection.context.as_dict()) == json_stringify(
            request.context.as_dict()
        )
        assert [e["id"] for e in projection.context.owners] == [e["id"] for e in request.owners]
        assert json_stringify(projection.llm) == json_stringify(request.messages)
        assert json_stringify(projection.sent) == json_stringify(request.sent)
        seen.append(projection.leaf_id)
    assert seen == ["a", "b", "c", "d", "e", "f"]


def test_it_builds_the_prompt_and_tools_when_told_where_the_resources_are():
    resources = PromptResources(cwd="/p", agent_dir="/agent", home="/home")
    source = PromptSource(
        cwd="/p",
        resources=resources,
        tools=["read", "nope"],
        local_date=lambda ms: "2025-01-0" + str(int(ms) % 10 or 1),
    )
    request = build_request(_session(), "c", header=HEADER, prompt=source)
    assert request.prompt_date == "2025-01-01"
    assert request.prompt is not None and "Current date: 2025-01-01" in request.prompt.text
    assert [t["name"] for t in request.tools] == ["read"]
    printed = request.cli_json()
    assert printed["systemPrompt"] == request.prompt.text and printed["leafId"] == "c"
    assert build_request(_session(), "c").cli_json()["systemPrompt"] is None


class _TaggedSteps(RequestSteps):
    """A dialect that edits the context: every user text gets a tag (as a 1.x context_edit)."""

    incremental = False

    def session_context(self, path, dialect):
        context = super().session_context(path, dialect)
        for index, message in enumerate(context.messages):
            if message.get("role") == "user":
                context.messages[index] = {**message, "content": f"[edited] {message['content']}"}
        return context


def test_a_dialect_with_its_own_steps_decides_what_is_sent_everywhere():
    dialect = dataclasses.replace(PI_0_80, version="test", steps=_TaggedSteps())
    entries = _session()
    request = build_request(entries, "c", dialect=dialect)
    assert request.messages[0]["content"] == "[edited] one"
    walked = {p.leaf_id: p for p in iter_leaf_projections(entries, dialect=dialect)}
    assert json_stringify(walked["c"].sent) == json_stringify(request.sent)
    assert walked["f"].llm[-1]["content"] == "[edited] other branch"


def test_one_function_answers_which_message_an_entry_contributes_under_each_rule():
    result = msg("r", None, {"role": "toolResult", "toolCallId": "c1", "content": []})
    empty_summary = {"type": "branch_summary", "id": "s", "summary": "", "fromId": "a"}
    compaction = {"type": "compaction", "id": "k", "summary": "S", "tokensBefore": 3}
    assert message_of_entry(result, "context") is result["message"]
    assert message_of_entry(result, "branch_summary") is None
    assert message_of_entry(empty_summary, "context") is None
    assert message_of_entry(empty_summary, "estimate") is None
    assert message_of_entry(empty_summary, "compaction")["role"] == "branchSummary"
    assert message_of_entry(compaction, "context") is None
    assert message_of_entry(compaction, "compaction") is None
    assert message_of_entry(compaction, "branch_summary")["role"] == "compactionSummary"
    assert message_of_entry(compaction, "estimate")["tokensBefore"] == 3
    assert message_of_entry({"type": "message", "id": "m", "message": "x"}, "estimate") is None


def test_it_counts_the_results_it_made_up_and_names_what_drops_a_message():
    request = build_request(_session(), "c")
    assert request.synthetic_results == 1
    assert build_request(_session(), "a").synthetic_results == 0
    failed = assistant([], stop="error")
    excluded = {"role": "bashExecution", "command": "x", "excludeFromContext": True}
    assert dropped_by(failed) == "transformMessages"
    assert dropped_by(excluded) == "convertToLlm"
    assert dropped_by({"role": "weird"}) == "convertToLlm"
    assert dropped_by(user("x")) is None
    assert sent_role({"role": "compactionSummary"}) == "user"
    assert sent_role(failed) == "assistant"
    assert sent_role({"role": "weird"}) is None


def test_the_size_of_each_request_along_a_path_is_the_estimate_of_what_it_projects():
    entries = [
        *_session()[:5],
        msg("g", "e", assistant([{"type": "text", "text": "after the compaction"}])),
        msg("h", "g", user("three" * 7)),
        {"type": "branch_summary", "id": "i", "parentId": "h", "fromId": "h", "summary": "B" * 9},
        {"type": "branch_summary", "id": "j", "parentId": "i", "fromId": "i", "summary": ""},
        msg("k", "j", assistant([{"type": "text", "text": "done"}])),
    ]
    path = SessionTree(entries).path("k")

    def estimate(entry):
        message = message_of_entry(entry, "estimate")
        return estimate_tokens(message) if message is not None else 0

    steps = [
        PathEntry(
            e["id"],
            e["type"],
            (e.get("message") or {}).get("role", "") if e["type"] == "message" else "",
            estimate(e),
            e.get("firstKeptEntryId"),
        )
        for e in path
    ]
    found = request_estimates(steps)
    assert [(r.leaf, r.reply) for r in found] == [("a", "b"), ("e", "g"), ("j", "k")]
    assert [r.compaction is not None for r in found] == [False, True, False]
    for r in found:
        projected = build_request(entries, r.leaf).agent_messages
        assert r.tokens == sum(estimate_tokens(m) for m in projected), r.leaf


def test_the_providers_body_comes_from_the_dialects_step():
    model = {
        "id": "m",
        "provider": "p",
        "api": "openai-completions",
        "baseUrl": "http://127.0.0.1:1/v1",
        "reasoning": False,
        "input": ["text"],
        "maxTokens": 100,
    }
    resources = PromptResources(cwd="/p", agent_dir="/agent", home="/home")
    source = PromptSource(cwd="/p", resources=resources, tools=["read"], date="2025-01-01")
    request = build_request(_session(), "c", prompt=source)
    body = json.loads(request.chat_completions_body(model))
    assert body["messages"][0] == {"role": "system", "content": request.prompt.text}
    assert [t["function"]["name"] for t in body["tools"]] == ["read"]

    class _Clamped(RequestSteps):
        def chat_completions_body(self, model, parts):
            body = json.loads(super().chat_completions_body(model, parts))
            return json.dumps({**body, "max_completion_tokens": model["maxTokens"]})

    dialect = dataclasses.replace(PI_0_80, version="test", steps=_Clamped())
    clamped = build_request(_session(), "c", prompt=source, dialect=dialect)
    assert json.loads(clamped.chat_completions_body(model))["max_completion_tokens"] == 100
