"""The pi-ai generations as data (contextlab.pi.providers.pi_ai) and the per-range rules the
provider ports follow, each checked where a generation changes it."""

from __future__ import annotations

import pytest

from contextlab.pi.providers import openai_completions as oc
from contextlab.pi.providers import options, pi_ai
from contextlab.pi.providers.common import short_hash

MODEL = {
    "id": "m",
    "provider": "custom",
    "api": "openai-completions",
    "baseUrl": "http://127.0.0.1:1/v1",
    "reasoning": True,
    "input": ["text"],
    "contextWindow": 20000,
    "maxTokens": 64000,
}


@pytest.mark.parametrize(
    ("release", "name"),
    [
        ("0.70.0", "0.73"),
        ("0.73.1", "0.73"),
        ("0.75.5", "0.73"),
        ("0.76.0", "0.76"),
        ("0.80.2", "0.80"),
        ("0.80.3", "0.80.3"),
        ("0.80.10", "0.80.6"),
        ("0.84.4", "0.84"),
        ("0.85.1", "0.85"),
        ("0.86.1", "0.86"),
        ("0.87.1", "0.87"),
        ("0.99.1", "0.87"),
        ("1.0.3", "1.0"),
        ("1.4.0", "1.4"),
        ("1.5.2", "1.5"),
        ("1.6.0", "1.6"),
        ("2.0.0", "1.6"),
    ],
)
def test_each_release_belongs_to_the_generation_whose_range_holds_it(release, name):
    assert pi_ai.pi_ai_for_release(release).name == name


def test_a_caller_may_name_the_generation_by_variant_release_or_not_at_all():
    assert pi_ai.resolve("1.0") is pi_ai.VARIANTS["1.0"] is pi_ai.pi_ai_for_release("1.0.3")
    assert pi_ai.resolve(None) is pi_ai.PI_AI_0_80
    assert pi_ai.resolve(pi_ai.PI_AI_1_6) is pi_ai.PI_AI_1_6
    with pytest.raises(ValueError, match="not a release number"):
        pi_ai.resolve("1.x")


def test_generations_are_in_release_order_each_changing_something():
    firsts = [pi_ai.release_key(g.first) for g in pi_ai.GENERATIONS]
    assert firsts == sorted(firsts)
    for older, newer in zip(pi_ai.GENERATIONS, pi_ai.GENERATIONS[1:], strict=False):
        assert older.before(newer)
        changed = {
            k
            for k in vars(newer)
            if k not in ("name", "first") and vars(newer)[k] != vars(older)[k]
        }
        assert changed, newer.name


def test_agent_turns_carry_the_cap_none_or_the_clamp_by_generation():
    messages = [{"role": "user", "content": "x" * 4000, "timestamp": 1}]
    assert options.turn_max_tokens(MODEL, messages, "0.73.1") == 32000
    assert options.turn_max_tokens(MODEL, messages, "0.80.2") is None
    # 0.80.3: window - (chars/4 of the prompt and the message) - 4096.
    clamped = options.turn_max_tokens(MODEL, messages, "0.80.10", system_prompt="p" * 400)
    assert clamped == 20000 - (1000 + 100) - 4096
    # 1.3: chars / 3.5.
    assert options.turn_max_tokens(MODEL, messages, "1.3.0") == 20000 - 1143 - 4096


def test_the_developer_role_follows_the_generation():
    openrouter = {**MODEL, "provider": "openrouter", "baseUrl": "https://openrouter.ai/api/v1"}
    assert oc.get_compat(openrouter, "0.73.1")["supportsDeveloperRole"] is True
    assert oc.get_compat(openrouter, "0.80.2")["supportsDeveloperRole"] is False
    assert oc.get_compat(MODEL, "1.5")["supportsDeveloperRole"] is True
    assert oc.get_compat(MODEL, "1.6")["supportsDeveloperRole"] is False


@pytest.mark.parametrize(
    ("release", "empty", "blank"),
    [
        ("0.80.2", "(see attached image)", " "),
        ("0.80.10", "(no tool output)", " "),
        ("1.4.0", "(no tool output)", "(no tool output)"),
    ],
)
def test_a_tool_result_without_text_reads_as_its_generation_wrote_it(release, empty, blank):
    def sent(text):  # type: ignore[no-untyped-def]
        result = {
            "role": "toolResult",
            "toolCallId": "c",
            "content": [{"type": "text", "text": text}],
        }
        params = oc.build_params(MODEL, {"messages": [result]}, pi_ai=release)
        return params["messages"][-1]["content"]

    assert (sent(""), sent(" ")) == (empty, blank)


def test_pipe_separated_ids_keep_their_item_id_from_0_82():
    long_id = "call+1|" + "y" * 400
    assert oc.normalize_tool_call_id(long_id, MODEL, "0.80.2") == "call_1"
    assert oc.normalize_tool_call_id("a|b", MODEL, "0.82.1") == "a_b"
    hashed = oc.normalize_tool_call_id(long_id, MODEL, "1.6")
    assert hashed == "call_1_" + short_hash(long_id)[:8]


def test_short_hash_is_pi_ais():
    # Values printed by pi-ai's shortHash (dist/utils/hash.js) under Node.
    assert short_hash("abc") == "y0biex7f9bbh"
    assert short_hash("call_1|fc_xyz+/=") == "5big1z1xuo3vo"
    assert short_hash("\U0001f600x") == "1yjycru1ayun52"


READ_TOOL = {
    "name": "read",
    "description": "Read a file",
    "parameters": {
        "type": "object",
        "required": ["path"],
        "properties": {
            "path": {"type": "string"},
            "offset": {"type": "number", "description": "Line"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "mode": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
    },
    "constrainedSampling": {"type": "json_schema", "strict": "prefer"},
}


def _tools(release, tool, model=MODEL):
    context = {"messages": [{"role": "user", "content": "hi", "timestamp": 1}], "tools": [tool]}
    if pi_ai.pi_ai_for_release(release).transcript:
        context = {
            "messages": [
                {"role": "system", "content": "", "toolsAdded": [tool], "timestamp": 0},
                *context["messages"],
            ]
        }
    return oc.build_params(model, context, {}, pi_ai=release)["tools"]


def test_a_json_schema_constrained_tool_is_sent_strict_where_strict_tools_are_detected():
    """dist/api/constrained-sampling.js (0.86.1): optional properties become nullable and
    required, ``additionalProperties: false``; 0.87 detects no strict support."""
    (sent,) = _tools("0.86.1", READ_TOOL)
    function = sent["function"]
    assert function["strict"] is True
    assert list(function["parameters"]) == [
        "type",
        "required",
        "properties",
        "additionalProperties",
    ]
    assert function["parameters"]["required"] == ["path", "offset", "tags", "mode"]
    props = function["parameters"]["properties"]
    assert props["path"] == {"type": "string"}
    assert props["offset"] == {
        "anyOf": [{"type": "number", "description": "Line"}, {"type": "null"}]
    }
    assert props["mode"] == READ_TOOL["parameters"]["properties"]["mode"]  # already nullable
    assert READ_TOOL["parameters"]["required"] == ["path"]  # the declaration is left as it was
    (later,) = _tools("0.87.1", READ_TOOL)
    assert "strict" not in later["function"]
    assert later["function"]["parameters"] == READ_TOOL["parameters"]


def test_a_schema_strict_cannot_express_is_sent_as_declared_unless_required():
    loose = {**READ_TOOL, "parameters": {**READ_TOOL["parameters"], "additionalProperties": True}}
    (sent,) = _tools("0.86.1", loose)
    assert sent["function"]["strict"] is False
    assert sent["function"]["parameters"] == loose["parameters"]
    required = {**loose, "constrainedSampling": {"type": "json_schema", "strict": "require"}}
    with pytest.raises(ValueError, match="requires JSON-schema constrained sampling"):
        _tools("0.86.1", required)


def test_cerebras_takes_no_strict_tools_from_0_86():
    cerebras = {**MODEL, "provider": "cerebras"}
    (sent,) = _tools("0.86.1", READ_TOOL, cerebras)
    assert "strict" not in sent["function"]
    assert oc.get_compat(cerebras, "0.85.1")["supportsStrictMode"] is True
