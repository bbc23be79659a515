"""A Pi 1.x turn to an Anthropic model in the request export: pi-ai 1.6.0's anthropic-messages
body (not the provider-neutral context), and in the curl form the path and betas it went with.
Byte-for-byte proof against the real Pi is tests/conformance/test_pi_1x_anthropic*.py."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.urls import reverse

from contextlab.library.importer import import_session_file
from contextlab.pi.jsutil import json_stringify
from contextlab.pi.session import parse_session_file
from contextlab.pi.turn import build_turn
from tests.claude import as_claude
from tests.conftest import CORPUS, CORPUS_1X


def _on_claude(path: Path) -> None:
    """Rewrite a corpus session as if its replies came from Claude Sonnet 4.5."""
    path.write_text("".join(json.dumps(entry) + "\n" for entry in as_claude(path)))


def _url(name, session, **params):  # type: ignore[no-untyped-def]
    return reverse(f"inspector:{name}", args=[session.pk]) + "?" + urlencode(params)


def test_a_1x_anthropic_turn_exports_pi_ais_anthropic_body_path_and_betas(
    owner_client, tmp_path, blob_dir
):
    copy = tmp_path / "claude.jsonl"
    copy.write_text((CORPUS_1X / "edits" / "session.jsonl").read_text())
    _on_claude(copy)
    session = import_session_file(path=copy, index_search=False).session
    assert session is not None
    parsed = parse_session_file(copy)
    leaf = next(
        e["id"]
        for e in reversed(parsed.entries)
        if e.get("type") == "message" and e["message"]["role"] == "user"
    )
    response = owner_client.get(_url("request", session, entry=leaf, format="json"))
    assert response.status_code == 200
    body = response.json()
    # Anthropic's shape: the session's prompt as system blocks, tools with input_schema, the
    # turn's cache markers, budget thinking for the session's "medium".
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert all("input_schema" in tool for tool in body["tools"])
    assert body["thinking"]["type"] == "enabled"
    assert body["messages"][-1]["role"] == "user"
    turn = build_turn(parsed.entries, leaf, header=parsed.header)
    assert response.content.decode() == turn.provider_body()
    assert json.loads(response.content) == json.loads(json_stringify(body))
    curl = owner_client.get(_url("request", session, entry=leaf, format="curl")).content.decode()
    assert "/v1/messages?beta=true" in curl
    assert "-H 'anthropic-beta: interleaved-thinking-2025-05-14'" in curl
    assert "-H 'anthropic-version: 2023-06-01'" in curl
    payload = curl.split("<<'PI_REQUEST_BODY'\n", 1)[1].rsplit("\nPI_REQUEST_BODY", 1)[0]
    assert json.loads(payload) == body


@pytest.mark.parametrize("corpus", [CORPUS_1X / "edits", CORPUS / "tools"], ids=["1.x", "0.80"])
def test_the_inspector_states_the_max_tokens_the_anthropic_body_carried(
    owner_client, tmp_path, blob_dir, corpus
):
    """pi-ai's anthropic-messages body always holds ``max_tokens``: the inspector says what it
    was, never "not sent" beside a request body that has it."""
    copy = tmp_path / "claude.jsonl"
    copy.write_text((corpus / "session.jsonl").read_text())
    _on_claude(copy)
    session = import_session_file(path=copy, index_search=False).session
    assert session is not None
    parsed = parse_session_file(copy)
    leaf = next(
        e["id"]
        for e in reversed(parsed.entries)
        if e.get("type") == "message" and e["message"]["role"] == "user"
    )
    body = owner_client.get(_url("request", session, entry=leaf, format="json")).json()
    page = owner_client.get(_url("session", session, entry=leaf)).content.decode()
    shown = page.split('data-testid="max-tokens">', 1)[1].split("</b>", 1)[0]
    assert shown.split(" ", 1)[0] == str(body["max_tokens"])
    assert "not sent" not in shown
