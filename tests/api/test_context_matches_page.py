"""GET /api/v1/sessions/{id}/context answers the request the session page shows: the same system
prompt, messages sent, tools, model and thinking level, on every entry of every recorded corpus,
with this server's inputs (the project's resource profile, PI_PACKAGE_DIR) and with the prompts
contextlab's Pi extension captures (then both carry what Pi sent, byte for byte in the export)."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from contextlab.inspector.models import ResourceProfile
from contextlab.inspector.selectors import clear_cache
from contextlab.library.importer import import_session_file
from tests.captures import write_with_captures
from tests.conftest import CORPUS, CORPUS_1X

pytestmark = pytest.mark.django_db

CORPORA = [CORPUS, CORPUS_1X, CORPUS.parent / "corpus-0.73.1"]
NAMES = sorted(
    f"{corpus.name}/{p.name}"
    for corpus in CORPORA
    for p in corpus.iterdir()
    if (p / "session.jsonl").exists()
)
# The Pi 0.80.2 scenarios whose requests were recorded: their sessions with captures.
CAPTURED = sorted(
    f"{CORPUS.name}/{p.name}"
    for p in CORPUS.iterdir()
    if (p / "manifest.json").exists() and (p / "session.jsonl").exists()
)
PI_PACKAGE_DIR = "/opt/pi-coding-agent"
COPY_JSON = re.compile(r'<textarea id="copy-json"[^>]*>(.*?)</textarea>', re.S)


def _manifest(name: str) -> dict[str, Any]:
    path = CORPUS.parent / name / "manifest.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _agent_requests(name: str) -> list[dict[str, Any]]:
    return [r for r in _manifest(name).get("requests", []) if r["kind"] == "agent"]


def _capture_of_the_request(info: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """What the extension captures before the request: the body's system message and tool
    declarations, with the provider and model it went to."""
    system = body["messages"][0]
    return {
        "v": 1,
        "systemPrompt": system["content"],
        "system": system,
        "tools": body.get("tools"),
        "api": "openai-completions",
        "provider": info["model"]["provider"],
        "model": info["model"]["id"],
        "options": None,
        "digest": f"recorded-{info['seq']}",
    }


@pytest.fixture
def server(settings, tmp_path, blob_dir):  # type: ignore[no-untyped-def]
    clear_cache()
    settings.PI_PACKAGE_DIR = PI_PACKAGE_DIR
    settings.PI_AGENT_DIR = str(tmp_path / "agent")
    settings.CONTEXTLAB_SERVER_ROOTS = [str(tmp_path), str(CORPUS.parent)]
    return settings


def _import(name: str, tmp_path: Path, *, captured: bool, profile: bool) -> Any:
    path = tmp_path / f"{name.replace('/', '-')}.jsonl"
    if captured:
        write_with_captures(CORPUS.parent / name, path, _capture_of_the_request)
    else:
        shutil.copyfile(CORPUS.parent / name / "session.jsonl", path)
    session = import_session_file(path=path, index_search=False).session
    assert session is not None
    manifest = _manifest(name)
    agent = CORPUS.parent / name / "fs" / "agent"
    if profile and agent.is_dir():
        # The project's resource profile: the scenario's agent dir (its models.json gives the
        # models' limits and api) and the tools Pi ran with.
        ResourceProfile.objects.create(
            project=session.project,
            agent_dir=str(agent),
            tools=manifest.get("activeTools") or [],
        )
    return session, [json.loads(line)["id"] for line in path.read_text().splitlines()[1:]]


def page_request(client: Any, session: Any, entry: str) -> dict[str, Any]:
    """The JSON tab of the session page at ``entry``, in full (what "Copy JSON" copies)."""
    url = reverse("inspector:session", args=[session.pk])
    response = client.get(
        url,
        {"entry": entry, "tab": "json", "all": "1"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="inspector",
    )
    assert response.status_code == 200, entry
    found = COPY_JSON.search(response.content.decode())
    assert found is not None, entry
    return json.loads(html.unescape(found.group(1)))  # type: ignore[no-any-return]


def assert_same_request(api: dict[str, Any], page: dict[str, Any], entry: str) -> None:
    assert api["leafId"] == page["leaf"] == entry
    assert api["systemPrompt"] == page["systemPrompt"], entry
    assert api["sent"] == page["messages"], entry
    assert api["tools"] == page["tools"], entry
    assert api["model"] == page["model"], entry
    assert api["thinkingLevel"] == page["thinkingLevel"], entry
    if "maxTokens" in api:
        assert api["maxTokens"] == page["maxTokens"], entry
        assert api["dialect"] == page["dialect"], entry


# Every session with its scenario's resource profile (where the recording kept its agent dir),
# one without (the settings alone), and the 0.80.2 ones with captures.
CASES = [
    *((name, False, True) for name in NAMES),
    ("corpus/tools", False, False),
    *((name, True, True) for name in CAPTURED),
]


@pytest.mark.parametrize(
    ("name", "captured", "profile"),
    CASES,
    ids=[f"{n}{'+captures' if c else ''}{'+profile' if p else ''}" for n, c, p in CASES],
)
def test_the_context_endpoint_answers_the_request_the_page_shows_on_every_entry(
    name, captured, profile, server, owner_api, owner_client, tmp_path
):
    session, ids = _import(name, tmp_path, captured=captured, profile=profile)
    url = f"/sessions/{session.session_id}/context"
    for entry in ids:
        response = owner_api.get(url, leaf=entry)
        assert response.status_code == 200, entry
        api = json.loads(b"".join(response.streaming_content))
        assert isinstance(api["tools"], list), entry  # always there, whatever the dialect
        assert "<pi-package-dir>" not in (api["systemPrompt"] or ""), entry
        assert_same_request(api, page_request(owner_client, session, entry), entry)
    # Without `leaf`: the session's leaf, as the page opens it.
    whole = json.loads(b"".join(owner_api.get(url).streaming_content))
    assert whole["leafId"] == session.leaf_entry_id


@pytest.mark.parametrize("name", CAPTURED)
def test_with_captured_prompts_the_api_and_the_export_carry_the_requests_pi_sent(
    name, server, owner_api, owner_client, tmp_path
):
    """What the extension captured is what Pi sent: the API's system prompt and tools are the
    recorded body's, and the page's request export is that body byte for byte."""
    session, _ = _import(name, tmp_path, captured=True, profile=True)
    requests = _agent_requests(name)
    assert requests
    for info in requests:
        recorded = (CORPUS.parent / name / info["body"]).read_text()
        body = json.loads(recorded)
        answer = owner_api.get(f"/sessions/{session.session_id}/context", leaf=info["leafId"])
        api = json.loads(b"".join(answer.streaming_content))
        assert api["systemPrompt"] == body["messages"][0]["content"], info["seq"]
        assert api["layers"][0]["sources"] == [f"entry cap{info['seq']}"]
        names = [t["function"]["name"] for t in body.get("tools") or []]
        assert [t["name"] for t in api["tools"]] == names, info["seq"]
        url = reverse("inspector:request", args=[session.pk])
        exported = owner_client.get(url, {"entry": info["leafId"]})
        assert exported.status_code == 200
        assert exported.content.decode() == recorded, info["seq"]
