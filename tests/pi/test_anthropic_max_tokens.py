"""``PiRequest.anthropic_max_tokens``: the inspector's "maxTokens sent" for an Anthropic model
without writing out the whole body (it was a quarter of the web workers' time under load),
always the ``max_tokens`` the whole body carries: every corpus turn rewritten as Claude's, at
every thinking level, under releases on each side of pi-ai's changes to the cap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextlab.pi.session import parse_session_file
from contextlab.pi.turn import build_turn
from tests.claude import as_claude
from tests.conftest import CORPUS, CORPUS_1X

LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")
RELEASES = (None, "0.73.1", "0.80.2", "0.80.3", "0.85.0", "1.0.3", "1.6.0")
SESSIONS = sorted(CORPUS.glob("*/session.jsonl")) + sorted(CORPUS_1X.glob("*/session.jsonl"))


@pytest.mark.parametrize(
    "session", SESSIONS, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}"
)
def test_the_anthropic_cap_read_without_the_messages_is_the_whole_bodys(session: Path) -> None:
    header = parse_session_file(session).header
    checked = 0
    for level in LEVELS:
        entries = as_claude(session, level)
        leaves = [e["id"] for e in entries if e.get("type") == "message"][-3:]
        for release in RELEASES:
            for leaf in leaves:
                request = build_turn(entries, leaf, header=header, chosen=release)
                body = request.provider_body()
                if body is None:
                    continue
                assert request.anthropic_max_tokens() == json.loads(body)["max_tokens"], (
                    level,
                    release,
                    leaf,
                )
                checked += 1
    assert checked > 0
