"""Token estimates against the real Pi 0.80.2: the corpus at every leaf, and generated messages.

- For every entry as leaf of every corpus session (the real large session included): Pi's
  ``estimateTokens`` of each context message, ``estimateContextTokens`` of the context and
  ``getLastAssistantUsage`` of the path, next to ours.
- Hypothesis-generated messages of every role with multi-byte and astral text (UTF-16 lengths),
  images and tool-call arguments, in batches (one Node process per batch).
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextlab.pi.context import build_session_context
from contextlab.pi.session import SessionTree, parse_session_file
from contextlab.pi.tokens import (
    calculate_context_tokens,
    estimate_context_tokens,
    estimate_tokens,
    get_last_assistant_usage,
)
from tests.conformance import projection_sessions
from tests.conformance.conftest import oracle_available, run_oracle
from tests.conformance.test_projection import corpus_cases
from tests.environment import in_ci

pytestmark = pytest.mark.oracle


def _js(value: Any) -> Any:
    # NaN travels as null in JSON.
    return None if isinstance(value, float) and math.isnan(value) else value


def _check_file(path: Path, tmp_path: Path) -> int:
    copy = tmp_path / "session.jsonl"
    shutil.copyfile(path, copy)
    copy.chmod(0o644)
    parsed = parse_session_file(copy)
    pi = run_oracle("tokens.mjs", {"file": str(copy)})
    tree = SessionTree(parsed.entries)
    checked = 0
    for entry, theirs in zip(parsed.entries, pi["leaves"], strict=True):
        messages = build_session_context(parsed.entries, entry["id"], tree.by_id).messages
        assert [_js(estimate_tokens(m)) for m in messages] == theirs["estimates"], entry["id"]
        assert estimate_context_tokens(messages).as_dict() == theirs["context"], entry["id"]
        usage = get_last_assistant_usage(tree.path(entry["id"]))
        assert usage == theirs["lastUsage"], entry["id"]
        if usage is not None:
            assert calculate_context_tokens(usage) == theirs["lastUsageTokens"]
        checked += len(messages)
    return checked


@pytest.mark.parametrize(("name", "path", "agent_dir"), corpus_cases(), ids=lambda v: str(v))
def test_it_estimates_every_context_of_the_corpus_like_pi(name, path, agent_dir, tmp_path):
    checked = _check_file(path, tmp_path)
    print(f"{name}: {checked} message estimates")
    assert checked > 0


@pytest.mark.parametrize("name", ["compactions", "legacy_v1", "provider_transform"])
def test_it_estimates_edge_case_contexts_like_pi(name, tmp_path):
    source = tmp_path / "src.jsonl"
    source.write_bytes(projection_sessions.SESSIONS[name]())
    (tmp_path / "run").mkdir()
    assert _check_file(source, tmp_path / "run") > 0


# --- generated messages -------------------------------------------------------------------

TEXT = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8", exclude_categories=("Cs",)),
        st.sampled_from(["😀", "𝄞", "é", "中", "\u200d", "\ufeff", " ", "\n"]),
    ),
    max_size=40,
)
JSON_SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)
JSON_VALUE = st.recursive(
    JSON_SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=8,
)
IMAGE = st.just({"type": "image", "data": "AAAA", "mimeType": "image/png"})
BLOCKS = st.lists(
    st.one_of(st.builds(lambda t: {"type": "text", "text": t}, TEXT), IMAGE), max_size=4
)
USAGE = st.builds(
    lambda i, o, r, w, t: {
        "input": i,
        "output": o,
        "cacheRead": r,
        "cacheWrite": w,
        "totalTokens": t,
    },
    *[st.integers(min_value=0, max_value=10**6)] * 5,
)
MESSAGE = st.one_of(
    st.builds(lambda c: {"role": "user", "content": c}, st.one_of(TEXT, BLOCKS)),
    st.builds(
        lambda c: {"role": "custom", "customType": "x", "content": c, "display": True},
        st.one_of(TEXT, BLOCKS),
    ),
    st.builds(
        lambda c: {
            "role": "toolResult",
            "toolCallId": "t",
            "toolName": "read",
            "content": c,
            "isError": False,
        },
        BLOCKS,
    ),
    st.builds(
        lambda blocks, usage, stop: {
            "role": "assistant",
            "content": blocks,
            "usage": usage,
            "stopReason": stop,
        },
        st.lists(
            st.one_of(
                st.builds(lambda t: {"type": "text", "text": t}, TEXT),
                st.builds(lambda t: {"type": "thinking", "thinking": t}, TEXT),
                st.builds(
                    lambda n, a: {"type": "toolCall", "id": "c", "name": n, "arguments": a},
                    TEXT,
                    st.dictionaries(TEXT, JSON_VALUE, max_size=4),
                ),
            ),
            max_size=4,
        ),
        USAGE,
        st.sampled_from(["stop", "toolUse", "length", "error", "aborted"]),
    ),
    st.builds(
        lambda c, o, x: {
            "role": "bashExecution",
            "command": c,
            "output": o,
            "excludeFromContext": x,
        },
        TEXT,
        TEXT,
        st.booleans(),
    ),
    st.builds(lambda s: {"role": "branchSummary", "summary": s, "fromId": "a"}, TEXT),
    st.builds(lambda s: {"role": "compactionSummary", "summary": s, "tokensBefore": 1}, TEXT),
    st.builds(lambda s: {"role": "somethingNew", "content": s}, TEXT),
)


# Under CI the test runs, and run_oracle fails it when the oracle is missing.
@pytest.mark.skipif(
    not oracle_available() and not in_ci(), reason="Node 24 / the Pi oracle is not installed"
)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(MESSAGE, min_size=1, max_size=40))
def test_it_estimates_generated_messages_like_pi(messages):
    pi = run_oracle("tokens.mjs", {"messages": messages})
    assert [_js(estimate_tokens(m)) for m in messages] == pi["estimates"]
    assert estimate_context_tokens(messages).as_dict() == pi["context"]
