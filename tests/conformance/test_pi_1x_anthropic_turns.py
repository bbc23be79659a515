"""Real Pi 1.x agent turns to an Anthropic model, recorded over HTTP, rebuilt from the session.

The real Pi (1.6.0, and 1.0.3, 1.3.0, 1.5.2 for what differs) runs two prompts through its SDK
(``oracle-*/agent_turns.mjs``: createAgentSession, the agent loop, the real ``read`` tool) against
the fake Anthropic server on 127.0.0.1 (tests/jobs/fake_llm.py), which answers with signed
thinking, a ``tool_use`` and text. For every request Pi sent, contextlab rebuilds the turn from
the session file Pi wrote, at the leaf Pi was at, in the matching variant: the body
(``PiRequest.provider_body``) equals what reached the server byte for byte, and the path and the
API headers (``PiRequest.provider_target``: ``/v1/messages?beta=true``, ``anthropic-beta``,
``anthropic-version``) equal Pi's. The replies are the model's own, so its signed thinking is
replayed as ``thinking`` blocks, and the system prompt, the last tool and the last message carry
the cache markers of an agent turn.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contextlab.pi.session import parse_session_file
from tests.conformance.conftest import rebuilt_1x_request, run_oracle
from tests.jobs.fake_llm import FakeLLMServer, Reply

pytestmark = pytest.mark.oracle

VERSIONS = {"1.0.3": "1.0", "1.3.0": "1.3", "1.5.2": "1.5", "1.6.0": "1.6"}
MODEL = {
    "id": "fake-claude",
    "name": "fake-claude",
    "reasoning": True,
    "input": ["text", "image"],
    "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
    # A window the clamp binds in: max_tokens is below maxTokens, and clamped again with the
    # thinking budget.
    "contextWindow": 20000,
    "maxTokens": 16384,
}
PROMPTS = ["What does a.txt say?", "Thanks. Anything else?"]
SCRIPT = [
    Reply(
        thinking="The user wants a.txt; I will read it.",
        text="",
        tool_calls=[{"id": "toolu_01", "name": "read", "input": {"path": "a.txt"}}],
        thinking_tokens=9,
    ),
    Reply(thinking="It says hello.", text="a.txt says: hello 😀", thinking_tokens=4),
    Reply(text="Nothing else: a.txt holds one line."),
]
API_HEADERS = ("anthropic-beta", "anthropic-version")


def _agent_dir(root: Path, server: FakeLLMServer) -> Path:
    agent = root / "agent"
    agent.mkdir()
    provider = {
        "baseUrl": server.anthropic_base_url,
        "api": "anthropic-messages",
        "apiKey": "sk-ant-test",
        "models": [MODEL],
    }
    (agent / "models.json").write_text(json.dumps({"providers": {"fakeant": provider}}))
    settings = {
        "defaultProvider": "fakeant",
        "defaultModel": MODEL["id"],
        "defaultThinkingLevel": "medium",
        "cacheWarming": "off",
        "compaction": {"enabled": False},
        "retry": {"enabled": False},
    }
    (agent / "settings.json").write_text(json.dumps(settings))
    return agent


@pytest.mark.parametrize("version", VERSIONS)
def test_real_anthropic_agent_turns_are_rebuilt_byte_for_byte(version, tmp_path):
    cwd = tmp_path / "work"
    cwd.mkdir()
    (cwd / "a.txt").write_text("hello\n")
    (tmp_path / "home").mkdir()
    with FakeLLMServer() as server:
        server.script.extend(SCRIPT)
        agent = _agent_dir(tmp_path, server)
        pi = run_oracle(
            "agent_turns.mjs",
            {
                "cwd": str(cwd),
                "agentDir": str(agent),
                "sessionDir": str(tmp_path / "sessions"),
                "prompts": PROMPTS,
            },
            timeout=120,
            env={"HOME": str(tmp_path / "home"), "PI_CODING_AGENT_DIR": str(agent)},
            version=version,
        )
        sent = list(server.requests)
    assert pi["version"] == version
    assert len(sent) == len(pi["leafIds"]) == len(SCRIPT)
    session = parse_session_file(Path(pi["sessionFile"]))
    model: dict[str, Any] = {
        **MODEL,
        "provider": "fakeant",
        "api": "anthropic-messages",
        "baseUrl": server.anthropic_base_url,
    }
    for leaf_id, theirs in zip(pi["leafIds"], sent, strict=True):
        request = rebuilt_1x_request(
            session.entries, leaf_id, model, header=session.header, variant=VERSIONS[version]
        )
        body = request.provider_body(model)
        assert body is not None
        assert json.loads(body, object_pairs_hook=list) == json.loads(
            theirs.body, object_pairs_hook=list
        ), leaf_id
        assert body.encode() == theirs.body, leaf_id
        target = request.provider_target(model)
        assert target is not None
        path, headers = target
        assert path == theirs.path == "/v1/messages?beta=true"
        for name in API_HEADERS:
            assert headers.get(name) == theirs.headers.get(name), (leaf_id, name)
    last = json.loads(sent[-1].body)
    # The model's own signed thinking goes back as thinking; the tool call and its result too.
    assert {"type": "thinking", "thinking": "It says hello.", "signature": "sig-fake"} in [
        block
        for message in last["messages"]
        for block in message["content"]
        if isinstance(message["content"], list)
    ]
    assert last["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert last["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert sent[0].headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"
    assert all(json.loads(r.body)["max_tokens"] < MODEL["maxTokens"] for r in sent)
