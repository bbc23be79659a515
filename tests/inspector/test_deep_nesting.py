"""Deeply nested tool arguments: a ~1,000-deep array imports with the
rest of the file, token estimates stay exact (Pi's JSON.stringify length), and every page that
shows the entry answers 200."""

from __future__ import annotations

import json
import math

import pytest
from django.urls import reverse

from contextlab.api.services import api_token_create
from contextlab.inspector.selectors import clear_cache
from contextlab.jobs import services
from contextlab.library.importer import import_session_file
from contextlab.library.models import Entry
from contextlab.pi.jsutil import js_len, json_stringify
from contextlab.pi.tokens import estimate_tokens
from tests.inspector.sessions import linear_session_lines

pytestmark = pytest.mark.django_db


def nested(depth: int) -> list:
    value: list = [1]
    for _ in range(depth - 1):
        value = [value, "x"]
    return value


def deep_lines(session_id: str, depth: int) -> list[dict]:
    lines = linear_session_lines(session_id, "/srv/deep", "nest it")
    lines.append(
        {
            "type": "message",
            "id": "aaaa0003",
            "parentId": "aaaa0002",
            "timestamp": "2025-01-02T00:00:03.000Z",
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "toolCall",
                        "id": "call_1",
                        "name": "write",
                        "arguments": {"path": "a.json", "content": nested(depth)},
                    }
                ],
                "api": "openai-responses",
                "provider": "openai",
                "model": "gpt-5.1-codex",
                "stopReason": "toolUse",
                "timestamp": 1735776003000,
            },
        }
    )
    lines.append(
        {
            "type": "message",
            "id": "aaaa0004",
            "parentId": "aaaa0003",
            "timestamp": "2025-01-02T00:00:04.000Z",
            "message": {
                "role": "toolResult",
                "toolCallId": "call_1",
                "toolName": "write",
                "content": [{"type": "text", "text": "written"}],
                "isError": False,
                "timestamp": 1735776004000,
            },
        }
    )
    return lines


def _stringified_length(depth: int) -> int:
    """len(JSON.stringify({"path": "a.json", "content": nested(depth)})), counted by hand:
    nested(1) is [1], and each level wraps the one below as [<below>,"x"]."""
    return len('{"path":"a.json","content":') + 3 + (depth - 1) * 6 + 1


@pytest.mark.parametrize("depth", [10, 300, 1000, 5000])
def test_token_estimates_of_deep_arguments_are_exact(depth):
    args = {"path": "a.json", "content": nested(depth)}
    message = {
        "role": "assistant",
        "content": [{"type": "toolCall", "id": "c", "name": "write", "arguments": args}],
    }
    expected = math.ceil((len("write") + _stringified_length(depth)) / 4)
    assert estimate_tokens(message) == expected
    if depth <= 300:  # where the engine's own stringify works, the two agree
        assert expected == math.ceil((5 + js_len(json_stringify(args))) / 4)


@pytest.mark.parametrize("depth", [300, 1000])
def test_a_deep_array_imports_with_its_file_and_every_page_showing_it_answers(
    owner_client, tmp_path, blob_dir, depth
):
    clear_cache()
    path = tmp_path / "deep.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in deep_lines("s-deep", depth)))
    result = import_session_file(path=path)
    assert result.session is not None and result.status == "new"
    assert result.entries == 4, result.problems
    stored = Entry.objects.get(entry_id="aaaa0003")
    assert stored.tokens > 0
    session = result.session
    pages = [
        reverse("inspector:session", args=[session.pk]) + f"?entry={entry}&tab={tab}"
        for entry in ("aaaa0003", "aaaa0004")
        for tab in ("context", "prompt", "diff", "json", "entry")
    ]
    pages += [
        reverse("inspector:message", args=[session.pk]) + "?entry=aaaa0003",
        reverse("inspector:messages", args=[session.pk]) + "?entry=aaaa0004&start=0",
        reverse("inspector:chart", args=[session.pk]),
        reverse("library:history", args=[session.pk]),
        reverse("library:index"),
        reverse("jobs:compact", args=[session.pk]),
        reverse("jobs:continue", args=[session.pk]),
        reverse("jobs:what_if", args=[session.pk]),
        reverse("jobs:export", args=[session.pk]),
    ]
    for url in pages:
        response = owner_client.get(url)
        assert response.status_code == 200, url


def compactable_deep_lines(session_id: str, depth: int) -> list[dict]:
    """deep_lines followed by enough turns that a compaction has something to summarise (the
    deep tool call among the summarised messages)."""
    lines = deep_lines(session_id, depth)
    parent = "aaaa0004"
    for n in range(5, 15):
        role = "user" if n % 2 else "assistant"
        message: dict = {
            "role": role,
            "content": [{"type": "text", "text": "more words " * 200}],
            "timestamp": 1735776000000 + n * 1000,
        }
        if role == "assistant":
            usage = {"input": 1000 * n, "output": 10, "cacheRead": 0, "cacheWrite": 0}
            cost = dict.fromkeys(("input", "output", "cacheRead", "cacheWrite", "total"), 0)
            message |= {
                "api": "openai-responses",
                "provider": "openai",
                "model": "gpt-5.1-codex",
                "stopReason": "stop",
                "usage": usage | {"totalTokens": 1000 * n + 10, "cost": cost},
            }
        entry_id = f"aaaa{n:04d}"
        lines.append(
            {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": f"2025-01-02T00:00:{n:02d}.000Z",
                "message": message,
            }
        )
        parent = entry_id
    return lines


def _deep_text(session_id: str, depth: int) -> str:
    # json.dumps cannot write 5,000 levels either: the nested array is spliced in as text.
    text = "".join(json.dumps(line) + "\n" for line in compactable_deep_lines(session_id, 1))
    deep = "[" * (depth - 1) + "[1]" + ',"x"]' * (depth - 1)
    assert text.count('"content": [1]') == 1
    return text.replace('"content": [1]', '"content": ' + deep)


@pytest.mark.parametrize("depth", [1000, 5000])
def test_a_deep_session_compacts_and_answers_its_api_context(
    owner_client, owner, tmp_path, blob_dir, offline_provider, depth
):
    clear_cache()
    path = tmp_path / "deep.jsonl"
    path.write_text(_deep_text("s-deep-compact", depth))
    result = import_session_file(path=path)
    session = result.session
    assert session is not None
    # JSON.parse reads any depth (Node 20: 1,000,000 levels): the line is stored like any other.
    assert result.problems == []
    assert Entry.objects.filter(session=session, entry_id="aaaa0003").exists()
    preview = owner_client.get(reverse("jobs:compact", args=[session.pk]) + "?keepRecentTokens=1")
    assert preview.status_code == 200
    assert b"Nothing to compact" not in preview.content
    job = services.job_create(
        session=session, kind="compaction", parameters={"keepRecentTokens": 1}, enqueue=False
    )
    done = services.job_execute(job_id=job.pk)
    assert (done.status, done.error) == ("succeeded", "")
    token = api_token_create(user=owner, name="deep")[1]
    response = owner_client.get(
        f"/api/v1/sessions/{session.session_id}/context",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 200, response.content[:300]


def test_brackets_inside_strings_do_not_count_as_nesting(tmp_path, blob_dir):
    # Invalid UTF-8 sends the line past orjson to the slower reader, where depth is counted.
    lines = deep_lines("s-brackets", 1)
    text = "".join(json.dumps(line) + "\n" for line in lines)
    brackets = '"[[[{\\\\\\"' + "[" * 2000 + '~"'
    text = text.replace('"content": [1]', '"content": ' + brackets)
    path = tmp_path / "brackets.jsonl"
    path.write_bytes(text.encode().replace(b"[~", b"[\xff"))
    result = import_session_file(path=path)
    assert result.entries == 4
    assert [(p.line, p.reason[:14]) for p in result.problems] == [(4, "invalid UTF-8 ")]
    stored = Entry.objects.get(entry_id="aaaa0003").data["message"]["content"][0]
    assert stored["arguments"]["content"] == '[[[{\\"' + "[" * 2000 + "\ufffd"
