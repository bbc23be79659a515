"""The inspector shows the prompt captured by contextlab's Pi extension beside its rebuild."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from contextlab.inspector.selectors import clear_cache
from contextlab.library.importer import import_session_file
from contextlab.pi.captured import CAPTURE_TYPE

pytestmark = pytest.mark.django_db

CAPTURED = (
    "You are an expert coding assistant.\n<script>window.__xss = 1</script>\nOnly in the capture."
)


def _line(**entry):
    return json.dumps(entry)


@pytest.fixture
def captured_session(tmp_path, blob_dir):
    clear_cache()
    ts = "2026-12-01T10:00:00.000Z"
    usage = {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2}
    assistant = {
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}],
        "api": "openai-completions",
        "provider": "fakeai",
        "model": "fake-plain",
        "usage": usage,
        "stopReason": "stop",
        "timestamp": 1,
    }
    lines = [
        _line(type="session", version=3, id="cap-1", timestamp=ts, cwd="/w"),
        _line(
            type="message",
            id="u1",
            parentId=None,
            timestamp=ts,
            message={"role": "user", "content": "hi", "timestamp": 1},
        ),
        _line(
            type="custom",
            customType=CAPTURE_TYPE,
            data={"v": 1, "systemPrompt": CAPTURED, "tools": [{"name": "read"}], "options": None},
            id="c1",
            parentId="u1",
            timestamp=ts,
        ),
        _line(type="message", id="a1", parentId="c1", timestamp=ts, message=assistant),
        _line(
            type="message",
            id="u2",
            parentId="a1",
            timestamp=ts,
            message={"role": "user", "content": "again", "timestamp": 2},
        ),
        _line(type="message", id="a2", parentId="u2", timestamp=ts, message=assistant),
    ]
    path = tmp_path / "captured.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return import_session_file(path=path).session


def _prompt_tab(client, session, entry):
    url = reverse("inspector:session", args=[session.pk])
    response = client.get(url, {"entry": entry, "tab": "prompt"})
    assert response.status_code == 200
    return response.content.decode()


def test_it_shows_the_captured_prompt_of_the_request_with_its_differences(
    owner_client, captured_session
):
    page = _prompt_tab(owner_client, captured_session, "u1")
    assert 'data-captured-entry="c1"' in page
    assert "with this request" in page
    assert 'data-testid="captured-differs"' in page
    assert "&lt;script&gt;window.__xss = 1&lt;/script&gt;" in page
    assert "<script>window.__xss" not in page
    assert '<span class="diff-add">+Only in the capture.</span>' in page


def test_a_later_request_with_no_capture_shows_the_earlier_one_as_unchanged(
    owner_client, captured_session
):
    page = _prompt_tab(owner_client, captured_session, "u2")
    assert 'data-captured-entry="c1"' in page
    assert "with an earlier request on this path (unchanged since)" in page


def test_a_session_without_captures_shows_only_the_reconstruction(owner_client, import_corpus):
    session, _ = import_corpus("tools")
    leaf = session.leaf_entry_id
    page = _prompt_tab(owner_client, session, leaf)
    assert "captured-prompt" not in page
    assert "Copy the full prompt" in page
