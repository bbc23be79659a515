"""The dashboard on sessions the real Pi 1.6.0 wrote (tests/conformance/corpus-1.6.0): every tab,
the chart and the request export read each turn in its own dialect, checked against the
``context`` command and the request bodies Pi recorded."""

from __future__ import annotations

import html as htmllib
import io
import json
import re
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from contextlab.inspector.chart import context_growth
from contextlab.inspector.models import ResourceProfile
from contextlab.inspector.selectors import clear_cache, session_index
from contextlab.pi.request import steps_of
from contextlab.pi.session import parse_session_file
from contextlab.pi.turn import build_turn
from contextlab.review.models import AuditEvent, ProjectMembership
from tests.conftest import CORPUS_1X

pytestmark = pytest.mark.django_db

INSPECTOR = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "inspector"}


@pytest.fixture(autouse=True)
def _fresh_index(blob_dir):
    clear_cache()
    yield
    clear_cache()


def _manifest(name: str) -> dict:
    return json.loads((CORPUS_1X / name / "manifest.json").read_text())


@pytest.fixture
def import_1x(import_corpus):
    """Import corpus-1.6.0/<name>/session.jsonl (a private copy); returns (Session, its path)."""
    return lambda name: import_corpus(name, CORPUS_1X)


@pytest.fixture
def models_profile(tmp_path, settings):
    """A resource profile whose agent dir (under the server roots) holds the recording's
    models.json: the models' limits are known, as they were where Pi ran."""
    settings.CONTEXTLAB_SERVER_ROOTS = [str(tmp_path)]

    def _profile(session, name: str, **fields):
        agent = tmp_path / f"agent-{name}"
        agent.mkdir(exist_ok=True)
        providers: dict[str, dict] = {}
        for model in _manifest(name)["models"]:
            provider = providers.setdefault(model["provider"], {"models": []})
            provider["models"].append({k: v for k, v in model.items() if k != "provider"})
        (agent / "models.json").write_text(json.dumps({"providers": providers}))
        return ResourceProfile.objects.create(
            project=session.project, agent_dir=str(agent), **fields
        )

    return _profile


def _page(client, session, entry, tab="context"):
    url = reverse("inspector:session", args=[session.pk])
    response = client.get(url, {"entry": entry, "tab": tab}, **INSPECTOR)
    assert response.status_code == 200
    return response.content.decode()


def _context(path: Path, leaf: str, *args: str) -> dict:
    out = io.StringIO()
    call_command("context", str(path), "--leaf", leaf, *args, "--json", stdout=out)
    return json.loads(out.getvalue())


def _full_prompt(page: str) -> str:
    found = re.search(r'<textarea id="full-prompt" hidden readonly>(.*?)</textarea>', page, re.S)
    assert found, "no prompt on the page"
    return htmllib.unescape(found.group(1))


def _message_row(page: str, entry_id: str) -> str:
    """The <details> of the message row of `entry_id` on the Messages tab."""
    found = re.search(
        rf'<details class="msg [^"]*"[^>]*data-entry="{entry_id}".*?</details>\s*</li>', page, re.S
    )
    assert found, f"no message row for {entry_id}"
    return found.group(0)


def _as_held(row: str) -> str:
    found = re.search(
        r'<div class="as-held">(.*?)</div>\s*(?:<details class="edit-original"|$)', row, re.S
    )
    return found.group(1) if found else ""


@pytest.mark.parametrize("name", ["patches", "edits"])
def test_the_prompt_tab_shows_the_prompt_the_context_command_prints_for_every_entry(
    owner_client, import_1x, name
):
    session, path = import_1x(name)
    entries = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    checked = 0
    for entry in entries:
        expected = _context(path, entry["id"])
        page = _page(owner_client, session, entry["id"], "prompt")
        assert _full_prompt(page) == expected["systemPrompt"], entry["id"]
        if expected.get("dialect") == "1.x":
            # The session's own prompt: nothing read from this server, nothing dated.
            assert "Unknown on this server" not in page, entry["id"]
            assert "· date " not in page, entry["id"]
            assert "You are an expert coding assistant" not in page, entry["id"]
            checked += 1
    assert checked >= len(entries) - 3


def test_the_prompt_tab_names_the_entry_that_last_set_each_section_and_lists_the_tools(
    owner_client, import_1x
):
    session, path = import_1x("patches")
    expected = _context(path, "933a876a")
    page = _page(owner_client, session, "933a876a", "prompt")
    sections = re.findall(
        r'<details class="layer[^"]*" data-layer="([^"]*)">.*?last set by <a class="mono" '
        r'href="[^"]*">([^<]+)</a>.*?data-testid="layer-tokens">(\d+) tok',
        page,
        re.S,
    )
    assert [(name, origin) for name, origin, _ in sections] == [
        (s["name"], s["entryId"]) for s in expected["promptSections"]
    ]
    assert ("tools", "05403d82") in [(n, o) for n, o, _ in sections]
    assert ("preamble", "b8f4c2e3") in [(n, o) for n, o, _ in sections]
    tools = re.findall(
        r'<details class="layer tool" data-tool="([^"]+)">.*?declared by <a [^>]*>([^<]+)</a>'
        r'.*?<pre data-testid="tool-schema">(.*?)</pre>',
        page,
        re.S,
    )
    assert [(t, o) for t, o, _ in tools] == [
        (t["name"], expected["toolOrigins"][t["name"]]) for t in expected["tools"]
    ]
    assert [t for t, _, _ in tools] == ["read", "bash", "noop"]
    schemas = {t: json.loads(htmllib.unescape(schema)) for t, _, schema in tools}
    assert schemas == {t["name"]: t["parameters"] for t in expected["tools"]}


def test_the_messages_tab_shows_system_messages_with_their_patches_and_tools(
    owner_client, import_1x
):
    session, _ = import_1x("patches")
    page = _page(owner_client, session, "933a876a")
    first = _message_row(page, "b8f4c2e3")
    assert 'data-role="system"' in first
    assert re.findall(r'data-section="([^"]+)"', first) == [
        "preamble",
        "tools",
        "rules",
        "docs",
        "project_context",
        "skills",
        "cwd",
    ]
    assert 'declares tools: <span class="mono">read, bash, edit, write, noop</span>' in first
    patch = _message_row(page, "05403d82")
    assert 'withdraws tools: <span class="mono">edit, write</span>' in patch
    # Counted by Pi 1.x's estimate (its sections and tools), not as an empty 0-token message.
    tokens = int(re.search(r'data-testid="msg-tokens">(\d+) tok', first).group(1))
    assert tokens > 1000


def test_the_edits_session_shows_the_replacement_and_the_omission_not_what_was_edited_away(
    owner_client, import_1x
):
    session, path = import_1x("edits")
    page = _page(owner_client, session, "52400750")
    redacted = _message_row(page, "2c120ca7")
    assert 'data-edit="replaced"' in redacted
    assert "[redacted by policy]" in _as_held(redacted)
    assert "token=abc123" not in _as_held(redacted)
    assert "replaced by context_edit" in redacted and "d775334a" in redacted
    # The original is shown beside it, marked as not sent.
    original = redacted.split('<details class="edit-original"', 1)[1]
    assert "token=abc123" in original and "not sent" in original
    omitted = _message_row(page, "bb5a08cf")
    assert 'data-edit="omitted"' in omitted and "omitted from context by" in omitted
    assert "3b96fd3e" in omitted and "as-held" not in omitted
    rewritten = _message_row(page, "73a4535f")
    assert "Say something useful." in _as_held(rewritten)
    sent = json.loads(
        htmllib.unescape(
            re.search(
                r'<textarea id="copy-json"[^>]*>(.*?)</textarea>',
                _page(owner_client, session, "52400750", "json"),
                re.S,
            ).group(1)
        )
    )
    text = json.dumps(sent["messages"])
    assert (
        "token=abc123" not in text and "Bananas" not in text and "Say something silly" not in text
    )
    assert sent["systemPrompt"] == _context(path, "52400750")["systemPrompt"]
    # The omitted reply is not a message of the context.
    expected = _context(path, "52400750")
    count = int(re.search(r'data-testid="message-count">(\d+)<', page).group(1))
    assert count == len(expected["messages"])


def test_it_shows_the_dialect_and_why_on_every_tab(owner_client, import_1x):
    session, _ = import_1x("edits")
    for tab in ("context", "prompt", "diff", "json", "entry"):
        page = _page(owner_client, session, "52400750", tab)
        label = re.search(r'<span data-testid="dialect"[^>]*>(.*?)</span>\s*<span>', page, re.S)
        assert label, tab
        assert "Pi 1.x (pi-ai 1.6)" in label.group(1), tab
        assert "detected from the session file" in label.group(1), tab
        assert "afd84aed" in label.group(1), tab  # the system message it was told from


def test_it_shows_the_max_tokens_sent_or_says_why_it_cannot(
    owner_client, import_1x, models_profile
):
    session, _ = import_1x("edits")
    leaf = _manifest("edits")["requests"][0]["leafId"]
    page = _page(owner_client, session, leaf)
    # fakeai is in no catalog: its limits, and with them Pi 1.x's clamp, are unknown here.
    assert 'data-testid="max-tokens">unknown: the model&#x27;s limits are unknown<' in page
    models_profile(session, "edits")
    clear_cache()
    page = _page(owner_client, session, leaf)
    recorded = json.loads((CORPUS_1X / "edits" / "requests" / "001.body.json").read_text())
    assert f'data-testid="max-tokens">{recorded["max_completion_tokens"]}<' in page


def test_a_resumed_session_switches_dialect_at_its_first_system_message(owner_client, import_1x):
    session, _ = import_1x("resumed")
    before = _page(owner_client, session, "dbcf023f")
    assert re.search(r'<span data-testid="dialect"[^>]*>Pi 0.80 ·', before)
    assert "cannot be told from the file" in before and "says detect" in before
    assert "You are an expert coding assistant" in _page(
        owner_client, session, "fe28a65d", "prompt"
    )
    after = _page(owner_client, session, "9ea8bc21")
    assert re.search(r'<span data-testid="dialect"[^>]*>Pi 1.x \(pi-ai 1.6\) ·', after)
    assert "cannot be told from the file" not in after
    growth = context_growth(session, session_index(session))
    dialects = [p["dialect"] for p in growth["points"]]
    first_1x = dialects.index("1.x")
    assert set(dialects[:first_1x]) == {"0.80"} and set(dialects[first_1x:]) == {"1.x"}
    assert [d["dialect"] for d in growth["dialects"]] == ["0.80", "1.x"]


def test_the_diff_tab_lists_the_section_patches_and_tool_changes(owner_client, import_1x):
    session, _ = import_1x("patches")
    added = _page(owner_client, session, "48075a9c", "diff")
    assert "entry=d3928bb9&amp;tab=diff" in added
    assert re.search(r'data-section="addendum" data-change="added"', added)
    assert re.search(r'data-section="project_context" data-change="changed"', added)
    assert "d986c02a" in added  # the entry that patched them
    removed = _page(owner_client, session, "933a876a", "diff")
    assert re.search(r'data-tool="edit" data-change="removed"', removed)
    assert re.search(r'data-tool="write" data-change="removed"', removed)
    assert re.search(r'data-section="tools" data-change="changed"', removed)


def test_a_system_message_counts_the_same_in_the_messages_and_diff_tabs(owner_client, import_1x):
    session, _ = import_1x("patches")
    messages = _page(owner_client, session, "48075a9c")
    in_messages = re.search(
        r'data-entry="d986c02a".*?data-testid="msg-tokens">(\d+) tok', messages, re.S
    )
    diff = _page(owner_client, session, "48075a9c", "diff")
    in_diff = re.search(r'<b>system</b> <span class="muted">(\d+) tok', diff)
    assert in_messages and in_diff and int(in_messages.group(1)) > 0
    assert in_messages.group(1) == in_diff.group(1)


@pytest.mark.parametrize("name", ["patches", "edits", "length"])
def test_the_chart_counts_the_system_message_of_the_first_request(import_1x, name):
    session, _ = import_1x(name)
    first = context_growth(session, session_index(session))["points"][0]
    # The first request holds the full system message: Pi 1.x counts it (Pi 0.x: nothing).
    assert first["dialect"] == "1.x" and first["estimate"] > 1000


def test_the_chart_counts_a_request_after_an_edit_as_edited(import_1x):
    session, path = import_1x("edits")
    index = session_index(session)
    points = {p["leaf"]: p["estimate"] for p in context_growth(session, index)["points"]}
    parsed = parse_session_file(path)
    for leaf in ("d775334a", "ae7cf9dc"):  # after the redaction; after the reply's omission
        request = build_turn(parsed.entries, leaf, header=parsed.header)
        estimate = steps_of(request.dialect).estimate_tokens
        assert points[leaf] == sum(estimate(m) for m in request.agent_messages), leaf
    omitted = next(e for e in parsed.entries if e["id"] == "bb5a08cf")["message"]
    request = build_turn(parsed.entries, "ae7cf9dc", header=parsed.header)
    assert omitted not in request.agent_messages


@pytest.mark.parametrize("name", ["patches", "edits", "length", "resumed"])
def test_the_request_export_is_the_body_pi_sent(owner_client, import_1x, models_profile, name):
    session, _ = import_1x(name)
    models_profile(session, name)
    checked = 0
    for info in _manifest(name)["requests"]:
        if info["kind"] != "agent":
            continue
        url = reverse("inspector:request", args=[session.pk])
        response = owner_client.get(url, {"entry": info["leafId"], "format": "json"})
        recorded = (CORPUS_1X / name / info["body"]).read_text()
        assert response.content.decode() == recorded, info["seq"]
        checked += 1
    assert checked >= 3


def test_the_profile_can_choose_the_dialect(owner_client, owner, import_1x):
    session, _ = import_1x("patches")
    ProjectMembership.objects.create(project=session.project, user=owner, role="owner")
    page = _page(owner_client, session, "933a876a", "prompt")
    assert 'name="dialect"' in page and '<option value="0.73">' in page
    response = owner_client.post(
        reverse("inspector:profile", args=[session.project.pk]),
        {"dialect": "0.80", "tools_text": "", "next": "/"},
    )
    assert response.status_code == 302
    assert ResourceProfile.objects.get(project=session.project).dialect == "0.80"
    event = AuditEvent.objects.filter(verb="profile.update").latest("pk")
    assert event.data["dialect"] == "0.80" and "dialect" in event.data["changed"]
    clear_cache()
    page = _page(owner_client, session, "933a876a", "prompt")
    assert re.search(r'<span data-testid="dialect"[^>]*>Pi 0.80 ·', page)
    assert "chosen in the project&#x27;s resource profile (Pi 0.80)" in page
    assert "the project&#x27;s resource profile chooses Pi 0.80" in page
    assert "You are an expert coding assistant" in page
    growth = context_growth(session, session_index(session))
    assert {p["dialect"] for p in growth["points"]} == {"0.80"}
    export = owner_client.get(
        reverse("inspector:request", args=[session.pk]), {"entry": "933a876a"}
    ).json()
    assert export["messages"][0]["content"].startswith("You are an expert coding assistant")


def test_a_0x_session_read_as_0_73_when_the_profile_says_so(owner_client, import_corpus):
    session, _ = import_corpus("tools")
    leaf = session.leaf_entry_id
    page = _page(owner_client, session, leaf)
    assert re.search(
        r'<span data-testid="dialect"[^>]*>Pi 0.80 · <span data-testid="dialect-source">assumed',
        page,
    )
    ResourceProfile.objects.create(project=session.project, dialect="0.73")
    clear_cache()
    page = _page(owner_client, session, leaf)
    assert re.search(r'<span data-testid="dialect"[^>]*>Pi 0.73 ·', page)
    assert "It is read as Pi 0.73: the project&#x27;s resource profile chooses Pi 0.73" in page


def test_a_collapsed_message_opens_as_the_request_holds_it(owner_client, import_1x):
    session, _ = import_1x("edits")
    url = reverse("inspector:message", args=[session.pk])
    held = owner_client.get(url, {"entry": "2c120ca7", "leaf": "52400750"}).content.decode()
    assert "[redacted by policy]" in held and "token=abc123" not in held
    # Before the edit (or without a request to read it in), the entry's own message.
    stored = owner_client.get(url, {"entry": "2c120ca7"}).content.decode()
    assert "token=abc123" in stored
    early = owner_client.get(url, {"entry": "2c120ca7", "leaf": "2c120ca7"}).content.decode()
    assert "token=abc123" in early
