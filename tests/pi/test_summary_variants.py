"""The 1.0 / 1.3 / 1.4 / 1.5 summary rules (pi_1_x_compaction, keyed by the pi-ai generation),
rule by rule without Node; the byte-for-byte comparison with the real releases is
tests/conformance/test_pi_1x_summary_variants.py."""

from __future__ import annotations

from contextlab.pi.dialects import pi_1_x_compaction as c

MODEL = {
    "id": "m",
    "provider": "p",
    "api": "openai-completions",
    "baseUrl": "http://127.0.0.1:1/v1",
    "reasoning": True,
    "input": ["text"],
    "contextWindow": 200000,
    "maxTokens": 64000,
}
THINKING_REPLY = {
    "role": "assistant",
    "content": [
        {"type": "thinking", "thinking": "hmm"},
        {"type": "text", "text": "done"},
    ],
}


def test_summaries_have_a_budget_of_their_own_until_1_4():
    assert c.summary_budget(MODEL, 0.8 * 16384, "1.0") == 13107
    assert c.summary_budget({**MODEL, "maxTokens": 8000}, 0.8 * 16384, "1.3") == 8000
    assert c.summary_budget(MODEL, 0.8 * 16384, "1.4.0") is None
    old = c.summary_request("history", "x", MODEL, None, "1.3", budget=13107)
    new = c.summary_request("history", "x", MODEL, None, "1.5")
    assert (old.max_tokens, new.max_tokens) == (13107, 64000)


def test_only_1_0_serialises_thinking():
    assert c.serialize_conversation([THINKING_REPLY], "1.0") == (
        "[Assistant thinking]: hmm\n\n[Assistant]: done"
    )
    assert c.serialize_conversation([THINKING_REPLY], "1.3") == "[Assistant]: done"


def test_the_turn_prefix_carries_the_instructions_from_1_4():
    user = [{"role": "user", "content": "hi", "timestamp": 0}]
    assert "Additional focus: x" not in c.turn_prefix_prompt(user, "x", "1.3")
    assert c.turn_prefix_prompt(user, "x", "1.4.0").endswith("\n\nAdditional focus: x")


def test_branch_summaries_apply_edits_and_send_the_thinking_level_from_1_5():
    message = {
        "type": "message",
        "id": "a",
        "parentId": None,
        "message": {"role": "user", "content": "secret", "timestamp": 0},
    }
    edit = {
        "type": "context_edit",
        "id": "e",
        "parentId": "a",
        "targetId": "a",
        "replacement": None,
    }
    assert c.prepare_branch_entries([message, edit], 0, "1.3").messages
    assert not c.prepare_branch_entries([message, edit], 0, "1.5").messages
    old = c.branch_request([message["message"]], MODEL, thinking_level="high", variant="1.3")
    new = c.branch_request([message["message"]], MODEL, thinking_level="high", variant="1.5")
    assert (old.reasoning_effort, old.max_tokens) == (None, 4096)
    assert (new.reasoning_effort, new.max_tokens) == ("high", 64000)
