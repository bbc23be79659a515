"""Token estimates and context size, on examples recorded from Pi (docs/pi-engine.md, "Token
estimates")."""

from __future__ import annotations

import math

from contextlab.pi.tokens import (
    calculate_context_tokens,
    estimate_context_tokens,
    estimate_tokens,
    get_last_assistant_usage,
    should_compact,
)


def usage(total=0, **parts):
    return {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": total, **parts}


def assistant(u, stop="stop"):
    return {"role": "assistant", "content": [], "usage": u, "stopReason": stop}


def test_it_counts_images_as_4800_chars():
    image = {"type": "image", "data": "x", "mimeType": "image/png"}
    message = {"role": "user", "content": [image, {"type": "text", "text": "abc"}]}
    assert estimate_tokens(message) == 1201


def test_it_counts_utf16_units():
    assert estimate_tokens({"role": "user", "content": "😀"}) == 1
    assert estimate_tokens({"role": "user", "content": "😀😀😀"}) == 2  # 6 units


def test_it_counts_tool_call_arguments_as_json():
    message = {
        "role": "assistant",
        "content": [
            {"type": "toolCall", "id": "1", "name": "read", "arguments": {"path": "a.txt"}},
            {"type": "thinking", "thinking": "hmm"},
        ],
    }
    assert estimate_tokens(message) == 6


def test_it_counts_bash_even_when_excluded_and_summaries():
    bash = {"role": "bashExecution", "command": "ls", "output": "abcdef"}
    bash["excludeFromContext"] = True
    assert estimate_tokens(bash) == 2
    assert estimate_tokens({"role": "branchSummary", "summary": "12345"}) == 2
    assert estimate_tokens({"role": "somethingElse", "content": "abc"}) == 0


def test_it_gives_nan_where_javascript_does():
    assert math.isnan(estimate_tokens({"role": "bashExecution", "command": "ls"}))


def test_it_prefers_total_tokens_and_falls_back_to_the_sum():
    assert calculate_context_tokens(usage(total=50, input=1)) == 50
    assert calculate_context_tokens(usage(input=1, output=2, cacheRead=3, cacheWrite=4)) == 10


def test_it_skips_error_aborted_and_empty_usages():
    entries = [
        {"type": "message", "message": assistant(usage(total=10))},
        {"type": "message", "message": assistant(usage(total=99), stop="error")},
        {"type": "message", "message": assistant(usage(total=0))},
        {"type": "custom", "message": assistant(usage(total=77))},
    ]
    assert get_last_assistant_usage(entries)["totalTokens"] == 10


def test_it_estimates_context_from_the_last_usage_plus_trailing_messages():
    messages = [
        {"role": "user", "content": "x" * 40},
        assistant(usage(total=100)),
        {"role": "user", "content": "y" * 8},
        assistant(usage(total=5), stop="aborted"),
    ]
    estimate = estimate_context_tokens(messages)
    assert estimate.as_dict() == {
        "tokens": 102,
        "usageTokens": 100,
        "trailingTokens": 2,
        "lastUsageIndex": 1,
    }
    only_user = estimate_context_tokens(messages[:1])
    assert (only_user.tokens, only_user.last_usage_index) == (10, None)


def test_it_compacts_strictly_above_the_reserve():
    assert should_compact(100_000 - 16384 + 1, 100_000, 16384)
    assert not should_compact(100_000 - 16384, 100_000, 16384)
    assert not should_compact(10**9, 100_000, 16384, enabled=False)
    assert should_compact(0.5, 0, 0)
