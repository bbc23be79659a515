"""Provider clients against a real HTTP server on 127.0.0.1, and the offline summariser."""

import pytest

from contextlab.jobs import offline, providers
from tests.jobs.fake_llm import FakeLLMServer, Reply

REQUEST = {
    "systemPrompt": "sys",
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "summarise"}], "timestamp": 1}
    ],
    "maxTokens": 100,
}


@pytest.fixture
def server():
    with FakeLLMServer() as s:
        yield s


def config(kind, server, **kw):
    url = server.openai_base_url if kind == "openai" else server.anthropic_base_url
    values = dict(
        kind=kind,
        model="m",
        base_url=url,
        api_key="k",
        provider_name=kind,
        max_retries=0,
        timeout=5.0,
        cost_per_million=(3.0, 15.0, 0.0, 0.0),
    )
    values.update(kw)
    return providers.ProviderConfig(**values)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_it_reads_text_usage_and_cost(server, kind):
    server.script.append(Reply(text="## Goal\nok", input_tokens=1000, output_tokens=10))
    result = providers.complete(config(kind, server), REQUEST)
    assert result.text == "## Goal\nok"
    assert result.stop_reason == "stop"
    assert result.usage["input"] == 1000 and result.usage["output"] == 10
    assert result.usage["cost"]["total"] == pytest.approx(3.0 * 1000 / 1e6 + 15.0 * 10 / 1e6)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@pytest.mark.parametrize("status,retryable", [(429, True), (503, True), (400, False), (401, False)])
def test_it_names_the_http_failure_and_whether_to_retry(server, kind, status, retryable):
    server.script.append(Reply(status=status))
    with pytest.raises(providers.ProviderError) as caught:
        providers.complete(config(kind, server), REQUEST)
    assert caught.value.retryable is retryable
    assert f"HTTP {status}" in str(caught.value)
    assert f"fake server error {status}" in str(caught.value)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_it_retries_429_with_backoff_inside_the_sdk(server, kind):
    server.script.extend(
        [Reply(status=429, retry_after="0"), Reply(status=500), Reply(text="fine")]
    )
    result = providers.complete(config(kind, server, max_retries=2), REQUEST)
    assert result.text == "fine"
    assert len(server.requests) == 3
    assert server.requests[0].body == server.requests[2].body


def test_it_times_out_with_a_retryable_error(server):
    server.script.append(Reply(stall_seconds=3))
    with pytest.raises(providers.ProviderError) as caught:
        providers.complete(config("openai", server, timeout=0.5), REQUEST)
    assert caught.value.retryable
    assert "did not answer in time" in str(caught.value)


def test_it_reports_an_unreachable_server_clearly():
    cfg = providers.ProviderConfig(
        kind="anthropic",
        model="m",
        base_url="http://127.0.0.1:9",
        api_key="k",
        provider_name="anthropic",
        max_retries=0,
        timeout=2,
    )
    with pytest.raises(providers.ProviderError, match="Could not reach Anthropic"):
        providers.complete(cfg, REQUEST)


def test_it_never_shows_the_key():
    cfg = providers.ProviderConfig(
        kind="openai", model="m", api_key="sk-secret", provider_name="openai"
    )
    assert "sk-secret" not in repr(cfg)
    assert "sk-secret" not in str(cfg.public())
    assert cfg.public()["hasKey"] is True


MESSAGES = [
    {"role": "user", "content": "Fix the failing test in tests/test_a.py", "timestamp": 1},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Reading the test."},
            {
                "type": "toolCall",
                "id": "c1",
                "name": "read",
                "arguments": {"path": "tests/test_a.py"},
            },
            {"type": "toolCall", "id": "c2", "name": "bash", "arguments": {"command": "pytest -x"}},
        ],
        "stopReason": "toolUse",
    },
    {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "read",
        "content": [{"type": "text", "text": "x"}],
        "isError": False,
    },
    {
        "role": "toolResult",
        "toolCallId": "c2",
        "toolName": "bash",
        "content": [{"type": "text", "text": "1 failed\nE assert 1 == 2"}],
        "isError": True,
    },
    {"role": "user", "content": [{"type": "text", "text": "Now make it pass"}], "timestamp": 2},
]


def test_the_offline_summary_fills_pis_sections_deterministically():
    text = offline.summarise(
        "history", MESSAGES, read_files=["tests/test_a.py"], modified_files=["a.py"]
    )
    assert text == offline.summarise(
        "history", MESSAGES, read_files=["tests/test_a.py"], modified_files=["a.py"]
    )
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert headings == [
        "## Goal",
        "## Constraints & Preferences",
        "## Progress",
        "### Done",
        "### In Progress",
        "### Blocked",
        "## Key Decisions",
        "## Next Steps",
        "## Critical Context",
    ]
    assert "- Fix the failing test in tests/test_a.py" in text
    assert "- `read` tests/test_a.py" in text
    assert "- `bash` pytest -x failed: 1 failed E assert 1 == 2" in text
    assert "- Now make it pass" in text
    assert "- Modified: a.py" in text and "- Read: tests/test_a.py" in text
    assert offline.OFFLINE_NOTE in text


def test_the_offline_summary_keeps_the_previous_goal_and_has_pis_branch_and_prefix_shapes():
    previous = "## Goal\n- Ship the parser\n\n## Constraints & Preferences\n- none"
    assert "## Goal\n- Ship the parser\n" in offline.summarise(
        "history", MESSAGES, previous_summary=previous
    )
    branch = offline.summarise("branch", MESSAGES)
    assert "## Critical Context" not in branch and branch.startswith("## Goal\n")
    prefix = offline.summarise("turn_prefix", MESSAGES)
    assert prefix.startswith("## Original Request\nFix the failing test")
    assert "## Early Progress" in prefix and "## Context for Suffix" in prefix
