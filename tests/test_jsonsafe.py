"""contextlab.jsonsafe: JSON text of any depth, and the head of a long one without the whole."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from contextlab.jsonsafe import pretty, pretty_head

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.text(max_size=30)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=20,
)


def _too_deep_for_orjson(depth: int = 300) -> list:
    deep: list = []
    for _ in range(depth):
        deep = [deep]
    return deep


@settings(max_examples=300, deadline=None)
@given(
    messages=st.lists(values, max_size=8),
    prompt=st.text(max_size=60),
    limit=st.integers(min_value=0, max_value=2_000),
    deep_at=st.none() | st.integers(min_value=0, max_value=8),
)
def test_the_head_of_a_requests_json_is_the_whole_texts_head_and_counts_the_rest(
    messages, prompt, limit, deep_at
):
    if deep_at is not None:
        messages.insert(min(deep_at, len(messages)), {"content": _too_deep_for_orjson()})
    value = {"session": "s", "systemPrompt": prompt, "messages": messages, "tools": [{"a": 1}]}
    whole = pretty(value)

    head, rest = pretty_head(value, "messages", limit)

    assert head == whole[:limit]
    assert rest == max(0, len(whole) - limit)
