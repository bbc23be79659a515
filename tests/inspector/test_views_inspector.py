"""The turn inspector and the chart through HTTP, checked against the engine on the same file."""

from __future__ import annotations

import html as htmllib
import io
import json
import re

import pytest
from django.urls import reverse

from contextlab.inspector.models import ResourceFile, ResourceProfile
from contextlab.inspector.selectors import clear_cache, session_index
from contextlab.library.importer import import_session_file
from contextlab.pi.context import build_session_context
from contextlab.pi.session import parse_session_file
from tests.inspector.sessions import CWD, NOTICE, write_session

pytestmark = pytest.mark.django_db

INSPECTOR = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "inspector"}


@pytest.fixture(autouse=True)
def _fresh_index(blob_dir):
    clear_cache()


@pytest.fixture
def rich_file(tmp_path):
    return write_session(tmp_path)


@pytest.fixture
def rich(rich_file):
    return import_session_file(path=rich_file).session


def _get(client, session, entry, tab="context", **extra):
    url = reverse("inspector:session", args=[session.pk])
    response = client.get(url, {"entry": entry, "tab": tab}, **extra)
    assert response.status_code == 200
    return response.content.decode()


def _own(project, user):
    from contextlab.review.models import ProjectMembership

    ProjectMembership.objects.create(project=project, user=user, role="owner")


def _engine_messages(path, leaf):
    entries = parse_session_file(path).entries
    return build_session_context(entries, leaf).messages


@pytest.mark.parametrize(
    "leaf", ["u0000001", "r0000001", "a0000003", "u0000003", "u0000004", "s0000001"]
)
def test_it_shows_the_projection_the_engine_builds_from_the_file(
    owner_client, rich, rich_file, leaf
):
    body = _get(owner_client, rich, leaf, **INSPECTOR)
    assert body.lstrip().startswith(f'<div id="inspector" data-entry-id="{leaf}"')
    expected = _engine_messages(rich_file, leaf)
    assert int(re.search(r'data-testid="message-count">(\d+)<', body).group(1)) == len(expected)
    assert body.count('<details class="msg') == len(expected)


def test_it_puts_the_compaction_summary_first_and_counts_what_it_replaced(owner_client, rich):
    body = _get(owner_client, rich, "u0000004")
    first = body.index('<details class="msg')
    assert "compaction summary" in body[first : first + 600]
    # Shown as sent: Pi's wrapper around the summary.
    assert (
        "<pre>The conversation history before this point was compacted into the following "
        "summary:\n\n&lt;summary&gt;\n## Goal" in body
    )
    assert re.search(r'data-testid="replaced-count">5<', body)
    listing = owner_client.get(
        reverse("inspector:not_sent", args=[rich.pk]), {"entry": "u0000004"}, HTTP_HX_REQUEST="true"
    ).content.decode()
    assert re.findall(r'entry=([a-z0-9]+)"', listing) == [
        "u0000001", "a0000001", "r0000001", "a0000002", "b0000001",
    ]  # fmt: skip


def test_it_shows_branch_summaries_as_sent(owner_client, rich):
    body = _get(owner_client, rich, "u0000003")
    assert (
        "<pre>The following is a summary of a branch that this conversation came back from:"
        "\n\n&lt;summary&gt;\nTried &lt;i&gt;bold&lt;/i&gt;; the API was overloaded."
        "&lt;/summary&gt;</pre>" in body
    )


def test_it_checks_pi_invariant_and_points_a_reply_at_the_request_it_answered(owner_client, rich):
    assert "✓" in re.search(
        r'data-testid="invariant">([^<]*)<', _get(owner_client, rich, "u0000004")
    ).group(1)
    # An assistant reply as leaf: no request ends with it; point at the one that produced it.
    body = _get(owner_client, rich, "a0000005")
    assert "Pi sends no request that ends like this (the last message sent has role assistant)" in (
        re.search(r'data-testid="invariant">([^<]*)<', body).group(1)
    )
    assert re.search(r'data-testid="answered" href="[^"]*\?entry=u0000004">u0000004<', body)


def test_it_highlights_truncation_notices_and_shows_images_and_thinking(owner_client, rich):
    body = _get(owner_client, rich, "r0000001")
    notice = htmllib.escape(NOTICE.strip())
    assert re.search(r'<mark class="notice"[^>]*>\s*' + re.escape(notice), body)
    assert '<details class="thinking">' in body
    body = _get(owner_client, rich, "a0000004")
    assert re.search(r'<img class="thumb" src="data:image/png;base64,[A-Za-z0-9+/=]+"', body)


def test_it_reports_provider_usage_beside_the_estimate(owner_client, rich):
    body = _get(owner_client, rich, "u0000004")
    # The reply to this request (a0000005) reported 900 input tokens.
    assert re.search(r'data-testid="reported">900<', body)
    assert "reported: in <b>3000</b>" in body  # a0000004's usage on its message


def test_it_renders_html_from_the_session_inert_in_every_tab(owner_client, rich):
    for entry in ("u0000001", "r0000001", "a0000001", "x0000001", "u0000004"):
        for tab in ("context", "prompt", "diff", "json", "entry"):
            body = _get(owner_client, rich, entry, tab)
            assert "<script>window" not in body
            assert "<img src=x" not in body
            assert "<script>x()" not in body
            assert "<script>hi" not in body
    assert "&lt;script&gt;window.__xss" in _get(owner_client, rich, "u0000001")


def test_it_copies_the_request_as_json(owner_client, rich, rich_file):
    body = _get(owner_client, rich, "u0000004", "json")
    raw = htmllib.unescape(
        re.search(r'<textarea id="copy-json"[^>]*>(.*?)</textarea>', body, re.S).group(1)
    )
    data = json.loads(raw)
    assert data["leaf"] == "u0000004"
    assert data["systemPrompt"].startswith("You are an expert coding assistant")
    sent = data["messages"]
    assert [m["role"] for m in sent] == ["user", "user", "assistant", "user", "user"]
    assert sent[0]["content"][0]["text"].startswith(
        "The conversation history before this point was compacted into the following summary:"
    )


def test_it_diffs_against_the_previous_request_on_the_path(owner_client, rich):
    body = _get(owner_client, rich, "u0000004", "diff")
    assert "entry=u0000003&amp;tab=diff" in body
    added = body[body.index("Added (") : body.index("Left the context")]
    assert "<b>compactionSummary</b>" in added
    removed = body[body.index("Left the context") :]
    assert "Please read the file" in removed
    # The counts add up: before - left + added = after, in the same messages the lists show.
    counts = re.search(
        r'data-testid="diff-counts">(\d+) → (\d+) messages: (\d+) added, (\d+) left', body
    )
    assert counts, body
    before, after, n_added, n_left = map(int, counts.groups())
    assert before - n_left + n_added == after
    assert f"Added ({n_added})" in body and f"Left the context ({n_left})" in body


def test_it_counts_a_summary_the_same_in_the_messages_and_diff_tabs(owner_client, rich):
    messages = _get(owner_client, rich, "u0000004", "context")
    in_messages = re.search(
        r'data-role="compactionSummary".*?data-testid="msg-tokens">(\d+) tok', messages, re.S
    )
    diff = _get(owner_client, rich, "u0000004", "diff")
    in_diff = re.search(r"<b>compactionSummary</b> <span class=\"muted\">(\d+) tok", diff)
    assert in_messages and in_diff
    assert in_messages.group(1) == in_diff.group(1)


def test_it_says_plainly_what_is_unknown_and_learns_it_from_the_resource_profile(
    owner_client, rich, owner
):
    _own(rich.project, owner)
    body = _get(owner_client, rich, "u0000004", "prompt")
    assert "Unknown on this server" in body
    assert "not under a folder this server reads" in body
    assert 'name="csrfmiddlewaretoken"' in body
    agents = io.BytesIO(b"# Rules\nAlways answer in haiku <script>no()</script>.\n")
    agents.name = "AGENTS.md"
    response = owner_client.post(
        reverse("inspector:profile", args=[rich.project.pk]),
        {
            "agent_dir": "",
            "pi_root": "",
            "home": "/home/ann",
            "tools_text": "read, bash",
            "trust": "",
            "upload_paths": f"{CWD}/AGENTS.md",
            "upload_files": [agents],
            "next": reverse("inspector:session", args=[rich.pk]) + "?entry=u0000004&tab=prompt",
        },
    )
    assert response.status_code == 302
    profile = ResourceProfile.objects.get(project=rich.project)
    assert profile.tools == ["read", "bash"] and profile.updated_by == owner
    assert ResourceFile.objects.get(profile=profile).original_path == f"{CWD}/AGENTS.md"
    body = owner_client.get(response["Location"]).content.decode()
    assert "Always answer in haiku &lt;script&gt;no()&lt;/script&gt;." in body
    assert "not under a folder this server reads" not in body


def test_it_rejects_a_profile_with_relative_paths(owner_client, rich, owner):
    _own(rich.project, owner)
    response = owner_client.post(
        reverse("inspector:profile", args=[rich.project.pk]),
        {"agent_dir": "relative/dir", "next": "/"},
        follow=True,
    )
    assert "must be an absolute path" in response.content.decode()
    assert not ResourceProfile.objects.exists()


def test_it_refuses_an_uploaded_profile_file_holding_nul_with_a_form_error(
    owner_client, rich, owner
):
    _own(rich.project, owner)
    agents = io.BytesIO(b"# Rules\x00 and more")
    agents.name = "AGENTS.md"
    response = owner_client.post(
        reverse("inspector:profile", args=[rich.project.pk]),
        {"upload_paths": f"{CWD}/AGENTS.md", "upload_files": [agents], "next": "/"},
        follow=True,
    )
    assert response.status_code == 200
    assert "AGENTS.md holds a NUL character" in response.content.decode()
    assert not ResourceFile.objects.exists()


def test_it_sends_back_after_saving_a_profile_only_to_a_page_of_this_site(
    owner_client, rich, owner
):
    _own(rich.project, owner)
    url = reverse("inspector:profile", args=[rich.project.pk])
    here = reverse("inspector:session", args=[rich.pk])
    for given, expected in (
        (here, here),
        ("//evil.example/phish", reverse("library:index")),
        ("https://evil.example/", reverse("library:index")),
    ):
        response = owner_client.post(url, {"tools_text": "read", "next": given})
        assert response["Location"] == expected, given


def test_it_charts_context_growth_along_the_active_path(owner_client, rich):
    response = owner_client.get(reverse("inspector:chart", args=[rich.pk]))
    body = response.content.decode()
    data = json.loads(
        re.search(
            r'<script id="growth-data" type="application/json">(.*?)</script>', body, re.S
        ).group(1)
    )
    points = data["points"]
    # One point per assistant reply on the active path (a0000001, a0000002, a0000004, a0000005).
    assert [p["reply"] for p in points] == ["a0000001", "a0000002", "a0000004", "a0000005"]
    assert [p["reported"] for p in points] == [1200, 1500, 3000, 900]
    marked = [p for p in points if p["compaction"]]
    assert len(marked) == 1 and marked[0]["reply"] == "a0000005"
    assert marked[0]["compaction"]["before"] == 3025
    assert points[-1]["leaf"] == "u0000004"
    assert f'href="{data["pageUrl"]}?entry=u0000004&amp;tab=context"' in body
    assert data["reserveTokens"] == 16384


def _long_session(tmp_path, count):
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": "long-1",
            "timestamp": "2025-01-01T00:00:00.000Z",
            "cwd": "/srv/long",
        }
    ]
    parent = None
    for n in range(count):
        role = "user" if n % 2 == 0 else "assistant"
        message = {"role": role, "content": f"message {n}", "timestamp": n}
        if role == "assistant":
            message.update(
                content=[{"type": "text", "text": f"message {n}"}],
                provider="anthropic",
                model="claude-sonnet-4-5",
                stopReason="stop",
                usage={
                    "input": n,
                    "output": 1,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "totalTokens": n + 1,
                },
            )
        entry = {
            "type": "message",
            "id": f"m{n:07d}",
            "parentId": parent,
            "timestamp": f"2025-01-01T00:{n // 60:02d}:{n % 60:02d}.000Z",
            "message": message,
        }
        lines.append(entry)
        parent = entry["id"]
    return import_session_file(path=write_session(tmp_path, lines)).session


def test_it_collapses_the_middle_of_a_long_projection_and_pages_through_it(
    owner_client, tmp_path, monkeypatch
):
    from contextlab.inspector import services, views

    monkeypatch.setattr(views, "MIDDLE_PAGE", 10)
    session = _long_session(tmp_path, 60)
    body = _get(owner_client, session, "m0000058", **INSPECTOR)
    assert re.search(r'data-testid="message-count">59<', body)
    full = body.count('<details class="msg ') - body.count('hx-trigger="toggle once"')
    assert full == services.FULL_TAIL
    assert body.count('hx-trigger="toggle once"') == 10
    more = re.search(r'hx-get="([^"]*/messages/\?[^"]*)"', body).group(1).replace("&amp;", "&")
    page = owner_client.get(more, HTTP_HX_REQUEST="true").content.decode()
    assert page.count('hx-trigger="toggle once"') == 10
    assert "message 10" in page and "message 19" in page
    opened = re.search(r'<details class="msg [^"]*" data-role="user" hx-get="([^"]+)"', body).group(
        1
    )
    block = owner_client.get(opened.replace("&amp;", "&"), HTTP_HX_REQUEST="true").content.decode()
    assert "<pre>message 0</pre>" in block


def test_the_messages_tab_makes_a_view_only_of_the_messages_it_shows(
    owner_client, tmp_path, monkeypatch
):
    """A deep turn's thousands of messages are counted (positions, estimates, running totals)
    but a view is made only of those the page shows: the head and tail in full and a page of
    the collapsed middle; the next page makes the next page's views, and the counts are those
    of every message."""
    from contextlab.inspector import messages, services, views

    monkeypatch.setattr(views, "MIDDLE_PAGE", 10)
    made: list[int] = []
    real = messages._view

    def counted(message, position, *args):
        made.append(position)
        return real(message, position, *args)

    monkeypatch.setattr(messages, "_view", counted)
    session = _long_session(tmp_path, 300)
    body = _get(owner_client, session, "m0000298", **INSPECTOR)
    assert re.search(r'data-testid="message-count">299<', body)
    assert len(made) == services.FULL_TAIL + 10
    assert sorted(made) == [*range(1, 11), *range(299 - services.FULL_TAIL + 1, 300)]
    # The running total of the last message counts every message before it.
    inspection = services.inspect_entry(session, session_index(session), "m0000298")
    assert inspection.messages[-1].running == inspection.estimate_total
    assert inspection.messages[-1].running == sum(
        services.pi_request.steps_of(inspection.request.dialect).estimate_tokens(m)
        for m in inspection.request.agent_messages
    )
    made.clear()
    more = re.search(r'hx-get="([^"]*/messages/\?[^"]*)"', body).group(1).replace("&amp;", "&")
    page = owner_client.get(more, HTTP_HX_REQUEST="true").content.decode()
    assert "message 10" in page and "message 19" in page
    assert sorted(made) == list(range(11, 21))


def test_it_lists_the_not_sent_entries_as_a_page_without_javascript(owner_client, rich):
    response = owner_client.get(
        reverse("inspector:not_sent", args=[rich.pk]), {"entry": "u0000004"}
    )
    body = response.content.decode()
    assert "<html" in body and "5 entries not sent" in body


def test_it_says_when_the_model_gets_a_placeholder_instead_of_an_image(owner_client, tmp_path):
    from tests.inspector.sessions import rich_session_lines

    lines = rich_session_lines()
    for line in lines:
        message = line.get("message") or {}
        if message.get("role") == "assistant":
            message.update(provider="cerebras", model="gpt-oss-120b")
        if line.get("type") == "model_change":
            line.update(provider="cerebras", modelId="gpt-oss-120b")
    session = import_session_file(path=write_session(tmp_path, lines)).session
    body = _get(owner_client, session, "a0000004")
    assert 'pi-ai sends "(image omitted: model does not support images)"' in body
    assert re.search(r"window \d", body)


@pytest.mark.parametrize(
    ("corpus", "name"),
    [
        ("corpus", "compaction"),
        ("corpus", "branches"),
        ("corpus", "tools"),
        # Pi 1.6.0's: system messages, context edits, a compaction with systemMessage, a 0.80.2
        # session resumed under 1.6.0 (each request in its own dialect).
        ("corpus-1.6.0", "patches"),
        ("corpus-1.6.0", "edits"),
        ("corpus-1.6.0", "length"),
        ("corpus-1.6.0", "resumed"),
    ],
)
def test_it_charts_the_same_estimate_the_inspector_shows(corpus, name, import_corpus):
    from contextlab.inspector import services
    from contextlab.inspector.chart import context_growth
    from contextlab.inspector.selectors import session_index
    from tests.conftest import REPO

    session, _ = import_corpus(name, REPO / "tests" / "conformance" / corpus)
    index = session_index(session)
    growth = context_growth(session, index)
    assert growth["points"]
    for point in growth["points"]:
        inspection = services.inspect_entry(session, index, point["leaf"])
        assert point["estimate"] == inspection.estimate_total, point["leaf"]
        assert point["dialect"] == inspection.request.choice.dialect, point["leaf"]


def test_it_pages_through_the_collapsed_middle_of_a_long_projection(
    owner_client, real_session_path
):
    session = import_session_file(path=real_session_path).session
    leaf = session.leaf_entry_id
    url = reverse("inspector:messages", args=[session.pk])
    first = owner_client.get(reverse("inspector:session", args=[session.pk]), {"entry": leaf})
    count = int(re.search(r'data-testid="message-count">(\d+)<', first.content.decode()).group(1))
    positions: list[int] = []
    start = 0
    while True:
        body = owner_client.get(url, {"entry": leaf, "start": start}).content.decode()
        page = [int(n) for n in re.findall(r'<span class="msg-role">(\d+)\. ', body)]
        assert page, start
        positions += page
        more = re.search(r'hx-get="[^"]*start=(\d+)"', body)
        if more is None:
            break
        start = int(more.group(1))
    # Every message between the leading one(s) and the last 25 shown in full, once, in order.
    assert positions == list(range(positions[0], count - 25 + 1))
    assert positions[0] <= 2


@pytest.mark.parametrize(
    ("provider", "model", "api"),
    [
        ("anthropic", "claude-sonnet-4-5", "anthropic-messages"),
        ("cerebras", "gpt-oss-120b", "openai-completions"),
    ],
)
def test_a_tool_result_without_tool_call_id_still_gives_its_request(
    owner_client, tmp_path, provider, model, api
):
    header = {"type": "session", "version": 3, "id": f"s-no-call-id-{provider}", "cwd": "/x"}
    header["timestamp"] = "2025-01-02T00:00:00.000Z"
    call = {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "a"}}
    lines = [
        header,
        {"role": "user", "content": "read a", "timestamp": 1},
        {
            "role": "assistant",
            "content": [call],
            "api": api,
            "provider": provider,
            "model": model,
            "stopReason": "toolUse",
            "timestamp": 2,
        },
        # Written by some other tool: Pi loads it, JSON.stringify then leaves the id out.
        {"role": "toolResult", "toolName": "read", "content": [{"type": "text", "text": "A"}]},
    ]
    entries, parent = [lines[0]], None
    for n, message in enumerate(lines[1:], start=1):
        entry_id = f"e000000{n}"
        entries.append(
            {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": f"2025-01-02T00:00:0{n}.000Z",
                "message": message,
            }
        )
        parent = entry_id
    path = tmp_path / "no-call-id.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    session = import_session_file(path=path).session
    url = reverse("inspector:request", args=[session.pk])
    response = owner_client.get(url, {"entry": "e0000003"})
    assert response.status_code == 200
    body = json.loads(response.content)
    results = [
        part
        for message in body["messages"]
        for part in (message["content"] if isinstance(message["content"], list) else [message])
        if part.get("type") == "tool_result" or part.get("role") == "tool"
    ]
    # The result as sent, without an id; then the one transformMessages makes up for call_1.
    assert len(results) == 2
    assert "tool_use_id" not in results[0] and "tool_call_id" not in results[0]
    assert results[0]["content"] == "A"
    assert results[1].get("tool_use_id", results[1].get("tool_call_id")) == "call_1"


def test_the_chart_table_rows_escape_what_the_session_says_and_stop_at_the_limit():
    from contextlab.inspector.rendering import chart_rows_html

    points = [
        {"leaf": 'x"><script>1</script>', "estimate": 12, "reported": None, "dialect": "0.80"},
        {
            "leaf": "b",
            "estimate": 30,
            "reported": 40,
            "compaction": {"before": 12345, "after": 900},
        },
        {"leaf": "c", "estimate": 1, "reported": 2},
    ]
    html = str(chart_rows_html(points, page_url="/sessions/1/", limit=2))
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert 'href="/sessions/1/?entry=x%22%3E%3Cscript%3E1%3C/script%3E&amp;tab=context"' in html
    assert '<td class="num">—</td>' in html and "<td>0.80</td>" in html
    assert '<span class="badge badge-compaction">12.3k → 900</span>' in html
    assert html.count("<tr>") == 2


def test_who_sets_the_resource_profile_is_named_for_open_and_owned_projects(
    client, teammate, owner, import_corpus
):
    from contextlab.review.models import ProjectMembership

    session, _ = import_corpus("tools")
    client.force_login(teammate)
    url = reverse("inspector:session", args=[session.pk]) + "?tab=prompt"
    page = client.get(url).content.decode()
    # An open project has no owners: nobody is sent to look for them.
    assert "is set by an administrator: this project is open to everyone" in page
    assert "edited by the project's owners" not in page
    ProjectMembership.objects.create(
        project=session.project, user=owner, role=ProjectMembership.Role.OWNER
    )
    ProjectMembership.objects.create(
        project=session.project, user=teammate, role=ProjectMembership.Role.MEMBER
    )
    page = client.get(url).content.decode()
    assert "is edited by the project's owners" in page


def _summary(page: str) -> tuple[str, str, str]:
    figures = {}
    for name in ("message-count", "estimate-total", "sent-count"):
        found = re.search(rf'data-testid="{name}">([^<]*)<', page)
        assert found, name
        figures[name] = found.group(1)
    return figures["message-count"], figures["estimate-total"], figures["sent-count"]


@pytest.mark.parametrize("leaf", ["u0000001", "a0000003", "u0000004", "s0000001"])
def test_every_tab_counts_the_messages_and_tokens_the_messages_tab_counts(owner_client, rich, leaf):
    messages = _summary(_get(owner_client, rich, leaf, "context", **INSPECTOR))
    clear_cache()  # the other tabs without the views the Messages tab kept
    for tab in ("prompt", "diff", "json", "entry"):
        assert _summary(_get(owner_client, rich, leaf, tab, **INSPECTOR)) == messages, tab


def test_tabs_other_than_messages_do_not_build_a_view_of_every_message(
    owner_client, rich, monkeypatch
):
    from contextlab.inspector import services

    def refused(*args, **kwargs):
        raise AssertionError("message views built for a tab that does not show them")

    monkeypatch.setattr(services, "message_views", refused)
    for tab in ("prompt", "diff", "json", "entry"):
        assert "estimate-total" in _get(owner_client, rich, "u0000004", tab, **INSPECTOR)
    with pytest.raises(AssertionError, match="message views built"):
        _get(owner_client, rich, "u0000004", "context", **INSPECTOR)


# The profile select as the prompt tab's template wrote it before its options were made in
# Python (kept here as it was).
_SELECT_BEFORE = (
    '{% for group, choices in groups %}<optgroup label="{{ group }}">'
    '{% for value, label in choices %}<option value="{{ value }}"{% if i.profile.dialect == value'
    " or not i.profile and not value %} selected{% endif %}>{{ label }}</option>{% endfor %}"
    "</optgroup>{% endfor %}"
)


def test_the_profile_select_is_the_one_the_template_loop_wrote_with_the_saved_choice_selected(
    owner_client, rich, owner
):
    from django.template import engines

    from contextlab.inspector import services
    from contextlab.inspector.models import DIALECT_CHOICES

    _own(rich.project, owner)
    before = engines["django"].from_string(_SELECT_BEFORE)
    index = session_index(rich)
    inspection = services.inspect_entry(rich, index, "u0000004", tab="prompt")
    groups = services.dialect_choice_groups()
    assert inspection.profile is None
    assert services.dialect_options_html(inspection.profile) == before.render(
        {"i": inspection, "groups": groups}
    )
    assert services.dialect_options_html(inspection.profile).count(" selected>") == 1
    assert '<option value="" selected>' in services.dialect_options_html(inspection.profile)
    profile = ResourceProfile.objects.create(project=rich.project)
    for value, _ in DIALECT_CHOICES:
        profile.dialect = value
        inspection.profile = profile
        html = services.dialect_options_html(profile)
        assert html == before.render({"i": inspection, "groups": groups}), value
        assert html.count(" selected>") == 1 and f'<option value="{value}" selected>' in html
    profile.dialect = "0.80.2"
    profile.save()
    body = _get(owner_client, rich, "u0000004", "prompt", **INSPECTOR)
    assert body.count(" selected>") == 1 and '<option value="0.80.2" selected>Pi 0.80.2<' in body
