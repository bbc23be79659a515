"""Compare two requests, and one request as the provider received it (JSON body, curl)."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from contextlab.inspector.selectors import session_index
from tests.conftest import corpus_entry_id

pytestmark = pytest.mark.django_db


def _url(name, session, **params):
    from urllib.parse import urlencode

    return reverse(f"inspector:{name}", args=[session.pk]) + "?" + urlencode(params)


def test_it_compares_two_requests_on_different_branches(owner_client, import_corpus):
    session, _ = import_corpus("branches")
    index = session_index(session)
    # Two leaves of different branches: each a request Pi sent, with different histories.
    users = [i for i in index.order if index.items[i].role == "user"]
    a, b = users[-1], users[1]
    assert index.path(a)[: len(index.path(b))] != index.path(b)
    html = owner_client.get(_url("compare", session, a=a, b=b)).content.decode()
    assert f'data-a="{a}" data-b="{b}"' in html
    summary = re.search(r'<p id="compare-summary">(.*?)</p>', html, re.S).group(1)
    assert "the same" in summary
    kinds = re.findall(r'data-kind="([a-z-]+)"', html)
    assert kinds[0] == "same-run" and set(kinds) - {"same-run"}
    # Both sides' messages are shown, each on its side.
    assert 'data-side="a"' in html and 'data-side="b"' in html


def test_the_same_request_compares_equal_and_b_defaults_to_the_previous_request(
    owner_client, import_corpus
):
    session, _ = import_corpus("tools")
    leaf = session.leaf_entry_id
    same = owner_client.get(_url("compare", session, a=leaf, b=leaf)).content.decode()
    assert re.findall(r'data-kind="([a-z-]+)"', same) == ["same-run"]
    assert "system prompt the same" in same
    default = owner_client.get(_url("compare", session, a=leaf)).content.decode()
    b = re.search(r'data-b="([^"]+)"', default).group(1)
    assert (b != leaf and "added" in default) or "only in B" in default or b != leaf
    assert owner_client.get(_url("compare", session, a=leaf, b="nope")).status_code == 404


def test_it_exports_the_request_as_the_body_the_provider_received(owner_client, import_corpus):
    session, _ = import_corpus("tools")
    entry = corpus_entry_id("tools", user="Thanks. Anything else")
    body = owner_client.get(_url("request", session, entry=entry, format="json")).json()
    # The corpus model speaks openai-completions: Pi's body, tools included.
    assert body["model"] and body["stream"] is True
    assert [t["function"]["name"] for t in body["tools"]] == ["read", "bash", "edit", "write"]
    assert body["messages"][0]["role"] in ("system", "developer")
    assert body["messages"][-1]["role"] in ("user", "tool")
    curl = owner_client.get(_url("request", session, entry=entry, format="curl")).content.decode()
    assert curl.startswith("curl -sS ") and "/chat/completions" in curl
    assert "$OPENAI_API_KEY" in curl
    payload = curl.split("<<'PI_REQUEST_BODY'\n", 1)[1].rsplit("\nPI_REQUEST_BODY", 1)[0]
    assert json.loads(payload) == body
    download = owner_client.get(_url("request", session, entry=entry, download=1))
    assert download["Content-Disposition"] == f'attachment; filename="request-{entry}.json"'


def test_an_outsider_gets_404_for_compare_and_export(client, outsider, owner, import_corpus):
    session, _ = import_corpus("tools")
    session.project.memberships.create(user=owner, role="owner")
    client.force_login(outsider)
    leaf = session.leaf_entry_id
    assert client.get(_url("compare", session, a=leaf)).status_code == 404
    assert client.get(_url("request", session, entry=leaf)).status_code == 404


def test_the_inspector_links_to_compare_export_and_search_in_context(owner_client, import_corpus):
    session, _ = import_corpus("tools")
    leaf = session.leaf_entry_id
    html = owner_client.get(_url("session", session, entry=leaf)).content.decode()
    assert f"compare/?a={leaf}" in html and f"request/?entry={leaf}&amp;format=curl" in html
    assert 'placeholder="Search this context"' in html


def test_the_exported_messages_and_tools_are_the_bytes_pi_sent(owner_client, import_corpus):
    """Against the corpus: every agent request Pi recorded, past its first reply (before it the
    session names no model), has the same messages and tools in the export. The system message
    needs the scenario's files on this server (tests/conformance/test_requests.py covers it)."""
    from tests.conformance.test_requests import CORPUS

    session, _ = import_corpus("tools")
    manifest = json.loads((CORPUS / "tools" / "manifest.json").read_text())
    checked = 0
    for info in manifest["requests"]:
        if info["kind"] != "agent" or int(info["seq"]) < 2:
            continue
        recorded = json.loads((CORPUS / "tools" / info["body"]).read_text())
        body = owner_client.get(_url("request", session, entry=info["leafId"])).json()
        assert body["messages"][1:] == recorded["messages"][1:], info["seq"]
        # The scenario's models.json is not on this server: the model's reasoning support is
        # assumed (no), so Pi's reasoning_effort is missing, and the export says why.
        rest = {k: v for k, v in recorded.items() if k not in ("messages", "reasoning_effort")}
        assert {k: v for k, v in body.items() if k != "messages"} == rest, info["seq"]
        response = owner_client.get(_url("request", session, entry=info["leafId"]))
        assert "assumed" in response["X-Contextlab-Note"]
        checked += 1
    assert checked >= 3
