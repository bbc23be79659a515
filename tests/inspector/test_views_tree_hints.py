"""Tree rows hint at what Pi 1.x wrote besides the conversation, on sessions the real Pi 1.6.0
wrote (tests/conformance/corpus-1.6.0): context edits and the messages they replace or omit,
and the sections each system message changed."""

from __future__ import annotations

import html as htmllib
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from contextlab.inspector.selectors import clear_cache, session_index
from contextlab.library.models import Session
from tests.conftest import CORPUS_1X

pytestmark = pytest.mark.django_db

TREE = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "tree"}


@pytest.fixture(autouse=True)
def _fresh_index(blob_dir):
    clear_cache()
    yield
    clear_cache()


@pytest.fixture
def import_1x(import_corpus):
    return lambda name: import_corpus(name, CORPUS_1X)[0]


def _tree(client, session, **params):
    response = client.get(reverse("inspector:session", args=[session.pk]), params, **TREE)
    assert response.status_code == 200
    return response.content.decode()


def _hints(html: str) -> dict[str, tuple[str, str, str]]:
    """Entry id -> (hint class, text, title) of every row that has a hint."""
    out = {}
    for row in re.findall(r"<li data-id=.*?</li>", html):
        entry_id = re.search(r'data-entry-id="([^"]+)"', row).group(1)
        hint = re.search(r'<span class="hint (hint-\w+)" title="([^"]*)">([^<]*)</span>', row)
        if hint:
            kind, title, text = hint.groups()
            out[entry_id] = (kind, htmllib.unescape(text), htmllib.unescape(title))
    return out


def test_it_marks_context_edits_and_the_messages_they_replace_or_omit(owner_client, import_1x):
    session = import_1x("edits")
    hints = _hints(_tree(owner_client, session, mode="all"))
    edits = {k: v for k, v in hints.items() if v[0] == "hint-edit"}
    assert {k: v[1] for k, v in edits.items()} == {
        "2c120ca7": "✂ replaced",  # the tool result d775334a redacts
        "d775334a": "✂ replaces toolResult",
        "bb5a08cf": "✂ omitted",  # the reply 3b96fd3e leaves out
        "3b96fd3e": "✂ omits assistant",
        "73a4535f": "✂ replaced",  # the user message 19b4386b rewrites
        "19b4386b": "✂ replaces user",
    }
    assert edits["d775334a"][2] == (
        "context edit: replaces the content of 2c120ca7 ([read: secret.txt]) "
        "with: [redacted by policy]"
    )
    assert edits["3b96fd3e"][2] == (
        "context edit: leaves bb5a08cf (assistant: Bananas are berries, and so is this reply.) "
        "out of the context"
    )
    assert edits["73a4535f"][2].startswith("replaced by context edit 19b4386b")
    # Before the message's line, which a narrow tree clips at its end.
    html = _tree(owner_client, session, mode="all")
    row = re.search(r'<li data-id="73a4535f".*?</li>', html).group(0)
    assert re.search(r'class="hint hint-edit"[^>]*>✂ replaced</span><span class="text">', row)
    assert edits["bb5a08cf"][2].startswith("omitted by context edit 3b96fd3e")


def test_it_says_the_first_system_message_is_the_first_prompt(owner_client, import_1x):
    session = import_1x("edits")
    kind, text, title = _hints(_tree(owner_client, session, mode="all"))["afd84aed"]
    assert (kind, text) == ("hint-system", "first prompt")
    assert title == (
        "the first system prompt on this path: sections preamble, tools, rules, docs, "
        "project_context, skills, cwd; tools read, bash, edit, write, noop"
    )


def test_it_says_which_sections_and_tools_each_later_system_message_changed(
    owner_client, import_1x
):
    session = import_1x("patches")
    html = _tree(owner_client, session, mode="all")
    assert re.search(r'data-entry-id="d986c02a".*?\[system\]', html)
    system = {k: v[1] for k, v in _hints(html).items() if v[0] == "hint-system"}
    assert system == {
        "b8f4c2e3": "first prompt",
        "d986c02a": "project_context changed · addendum added",
        "05403d82": (
            "tools, rules, project_context changed · addendum removed · declared tools −edit −write"
        ),
    }


def test_it_hints_in_the_default_view_too_and_keeps_every_row_hook(owner_client, import_1x):
    session = import_1x("patches2")
    html = _tree(owner_client, session)
    hints = _hints(html)
    assert hints["77609fc5"][1] == "addendum, project_context changed · declared tools +noop"
    assert hints["f4255d02"][1] == "tools, rules changed · declared tools +grep"
    assert hints["3b2eb292"][1] == "addendum removed"
    row = re.search(r'<li data-id="3b2eb292".*?</li>', html).group(0)
    assert 'data-entry-id="3b2eb292"' in row and 'role="treeitem"' in row
    assert (
        '<span class="text"><span class="role-dim">[system]</span></span>'
        '<span class="hint hint-system" title="compared with the system prompt before it on this '
        'path">addendum removed</span>'
    ) in row


def test_it_reads_the_hints_from_the_stored_index_without_reading_entries(owner_client, import_1x):
    session = import_1x("edits")
    first = _hints(_tree(owner_client, session, mode="all"))
    clear_cache()  # as another process: the index comes from the database, not the entries
    with CaptureQueriesContext(connection) as queries:
        index = session_index(Session.objects.get(pk=session.pk))
    assert "library_entry" not in " ".join(q["sql"] for q in queries.captured_queries)
    assert {i.id: i.hint for i in index.items.values() if i.hint} == {
        k: v[1] for k, v in first.items()
    }
    assert _hints(_tree(owner_client, session, mode="all")) == first


def test_it_renders_the_hinted_tree_in_a_constant_number_of_queries(owner_client, import_1x):
    session = import_1x("branch-edited")
    _tree(owner_client, session, mode="all")
    with CaptureQueriesContext(connection) as queries:
        html = _tree(owner_client, session, mode="all")
    assert len(_hints(html)) == 7  # the first prompt, three edits and their three targets
    # The tree: the login, the session, the comment counts; the inspector out of band.
    assert len(queries) <= 9, "\n".join(q["sql"][:150] for q in queries)
