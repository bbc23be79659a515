"""run_oracle carries any Python str to Node unchanged, lone surrogates included."""

import pytest

from tests.conformance.conftest import run_oracle


def _utf16_units(text: str) -> list[int]:
    raw = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(raw[i : i + 2], "little") for i in range(0, len(raw), 2)]


@pytest.mark.oracle
def test_it_sends_lone_surrogates_and_large_input_to_node_unchanged():
    strings = ["a\ud800b", "\udfff", "\U0001f600 é \u2028", "x" * 3_000_000]
    out = run_oracle("echo.mjs", {"strings": strings})
    assert out["units"] == [_utf16_units(s) for s in strings]
    assert out["value"] == {"strings": strings}
