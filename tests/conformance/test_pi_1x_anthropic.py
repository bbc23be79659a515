"""Pi 1.x agent turns to an Anthropic model, against the real Pi 1.0.3, 1.3.0, 1.5.2 and 1.6.0.

For every leaf of every corpus-1.6.0 session and five Anthropic models (budget thinking with a
window the clamp binds in, a plain text-only one, one with mid-conversation effort, one with
adaptive thinking, one on api.anthropic.com), each release's own ``buildSessionProjection`` +
``convertToLlm`` and its pi-ai ``streamSimple``, called as the agent loop calls it
(``oracle-*/anthropic_bodies.mjs``, the request captured from ``fetch``), sends:

1. the body ``PiRequest.provider_body`` builds in the matching variant, byte for byte (on
   api.anthropic.com the request that starts a message thread: Pi continues a thread only
   after a reply of the same process, which no session file records);
2. to the path ``PiRequest.provider_target`` names (``/v1/messages?beta=true``), with its
   ``anthropic-beta`` and ``anthropic-version`` headers;

and 3. a release's bodies are not all those of the variant before it (the variants matter).
The corpus replies are another model's (openai-completions), so their thinking is dropped (sent
as text by 1.0.3) and their tool-call ids normalised; a live recording with the model's own
signed thinking and tool use is in test_pi_1x_anthropic_turns.py.
"""

from __future__ import annotations

import shutil
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from contextlab.pi.session import parse_session_file
from tests.conformance.conftest import rebuilt_1x_request, run_oracle

pytestmark = pytest.mark.oracle

CORPUS_1X = Path(__file__).resolve().parent / "corpus-1.6.0"
SESSIONS = sorted(CORPUS_1X.glob("*/session.jsonl"))
VERSIONS = {"1.0.3": "1.0", "1.3.0": "1.3", "1.5.2": "1.5", "1.6.0": "1.6"}
_BASE = {
    "provider": "fakeant",
    "api": "anthropic-messages",
    "baseUrl": "http://127.0.0.1:9",
    "input": ["text", "image"],
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
}
MODELS: list[dict[str, Any]] = [
    {**_BASE, "id": "claude-budget", "reasoning": True, "contextWindow": 20000, "maxTokens": 16384},
    {
        **_BASE,
        "id": "claude-plain",
        "reasoning": False,
        "input": ["text"],
        "contextWindow": 12000,
        "maxTokens": 8192,
    },
    {
        **_BASE,
        "id": "claude-effort",
        "reasoning": True,
        "contextWindow": 128000,
        "maxTokens": 32000,
        "compat": {"supportsMidConvoEffort": True},
    },
    {
        **_BASE,
        "id": "claude-adaptive",
        "reasoning": True,
        "contextWindow": 128000,
        "maxTokens": 32000,
        "compat": {"forceAdaptiveThinking": True},
    },
]
# On Anthropic's own host, with the session id: message threads (1.6.0 for any provider there,
# 1.5.2 only for provider "anthropic"); the fetch stub keeps the request in the process.
MODELS.append(
    {
        **_BASE,
        "id": "claude-hosted",
        "baseUrl": "https://api.anthropic.com",
        "reasoning": True,
        "contextWindow": 200000,
        "maxTokens": 64000,
    }
)
MODELS = [{**m, "name": m["id"]} for m in MODELS]


@pytest.fixture(scope="module")
def oracle_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("anthropic")


@cache
def _theirs(version: str, path: Path, tmp: Path) -> dict[str, Any]:
    copy = tmp / f"{version}-{path.parent.name}.jsonl"
    shutil.copyfile(path, copy)
    session_id = parse_session_file(path).header["id"]
    result: dict[str, Any] = run_oracle(
        "anthropic_bodies.mjs",
        {"file": str(copy), "models": MODELS, "sessionId": session_id},
        version=version,
    )
    assert result["version"] == version
    return result


@cache
def _ours(variant: str, path: Path) -> dict[str, list[tuple[str | None, Any]]]:
    session = parse_session_file(path)
    out = {}
    for entry in session.entries:
        row = []
        for model in MODELS:
            request = rebuilt_1x_request(
                session.entries, entry["id"], model, header=session.header, variant=variant
            )
            row.append((request.provider_body(model), request.provider_target(model)))
        out[entry["id"]] = row
    return out


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.parent.name)
def test_each_1x_release_sends_an_anthropic_agent_turn_as_we_build_it(version, path, oracle_tmp):
    ours = _ours(VERSIONS[version], path)
    for leaf in _theirs(version, path, oracle_tmp)["leaves"]:
        for model, (body, target), pi in zip(
            MODELS, ours[leaf["leafId"]], leaf["requests"], strict=True
        ):
            where = (leaf["leafId"], model["id"])
            assert body == pi["body"], where
            url = urlsplit(pi["url"])
            path_sent = url.path + (f"?{url.query}" if url.query else "")
            assert target is not None
            assert target[0] == path_sent, where
            assert target[1].get("anthropic-beta") == pi["beta"], where
            assert target[1]["anthropic-version"] == pi["version"], where


@pytest.mark.parametrize("version", list(VERSIONS)[1:])
def test_each_variant_sends_some_anthropic_turn_the_one_before_it_does_not(version, oracle_tmp):
    previous = list(VERSIONS.values())[list(VERSIONS).index(version) - 1]
    differ = 0
    for path in SESSIONS:
        older = _ours(previous, path)
        for leaf in _theirs(version, path, oracle_tmp)["leaves"]:
            differ += sum(
                mine[0] != pi["body"]
                for mine, pi in zip(older[leaf["leafId"]], leaf["requests"], strict=True)
            )
    assert differ > 0
