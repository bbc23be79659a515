"""The session tree through HTTP: Pi's order and filters, folds, lazy rows, permalinks."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from contextlab.inspector.selectors import clear_cache
from contextlab.library.importer import import_session_file
from tests.inspector.sessions import rich_session_lines, write_session

pytestmark = pytest.mark.django_db

TREE = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "tree"}


@pytest.fixture(autouse=True)
def _fresh_index(blob_dir):
    clear_cache()


@pytest.fixture
def rich(tmp_path):
    return import_session_file(path=write_session(tmp_path)).session


def _ids(html: str) -> list[str]:
    return re.findall(r'<li data-id="([^"]+)"', html)


def _tree(client, session, **params):
    response = client.get(reverse("inspector:session", args=[session.pk]), params, **TREE)
    assert response.status_code == 200
    return response.content.decode()


def test_it_lists_entries_in_pi_tree_order_with_the_active_branch_first(owner_client, rich):
    html = _tree(owner_client, rich)
    assert html.lstrip().startswith('<div id="tree"')
    assert _ids(html) == [
        "u0000001", "a0000001", "r0000001", "a0000002",
        "b0000001", "u0000003", "a0000004", "c0000001", "x0000001", "u0000004", "a0000005",
        "u0000002", "a0000003",
    ]  # fmt: skip
    assert "├" in html and "└" in html
    assert 'class="label">[image &lt;b&gt;here&lt;/b&gt;] </span>' in html
    assert 'class="kind-compaction"' in html and 'class="kind-branch"' in html
    # The leaf (a session_info entry) is hidden in the default view: its nearest visible
    # ancestor is selected instead, as Pi's selector does.
    assert re.search(r'data-id="a0000005"[^>]*>.*?class="trow selected"', html)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("user-only", ["u0000001", "u0000003", "u0000004", "u0000002"]),
        ("labeled-only", ["u0000003"]),
        ("no-tools", ["u0000001", "a0000001", "a0000002", "b0000001", "u0000003", "a0000004",
                      "c0000001", "x0000001", "u0000004", "a0000005", "u0000002", "a0000003"]),
    ],
)  # fmt: skip
def test_it_applies_pi_filter_modes(owner_client, rich, mode, expected):
    assert _ids(_tree(owner_client, rich, mode=mode)) == expected


def test_it_shows_every_entry_in_mode_all_with_the_leaf_marked(owner_client, rich):
    html = _tree(owner_client, rich, mode="all")
    assert len(_ids(html)) == len(rich_session_lines()) - 1
    assert re.search(r'data-id="s0000001".*?class="leaf"', html)


def test_it_searches_the_tree(owner_client, rich):
    assert _ids(_tree(owner_client, rich, q="first ATTEMPT")) == ["u0000002"]


def test_it_folds_and_unfolds_a_branch_segment_through_links(owner_client, rich):
    html = _tree(owner_client, rich)
    fold = re.search(r'data-id="u0000002".*?href="([^"]+)"', html).group(1).replace("&amp;", "&")
    assert "fold=u0000002" in fold
    folded = owner_client.get(fold, **TREE).content.decode()
    assert "a0000003" not in _ids(folded)
    assert 'data-action="unfold"' in folded
    unfold = re.search(r'data-action="unfold"[^>]*href="([^"]+)"', folded).group(1)
    assert "fold=" not in unfold.replace("&amp;", "&").split("?", 1)[1]
    assert "a0000003" in _ids(
        owner_client.get(unfold.replace("&amp;", "&"), **TREE).content.decode()
    )


def test_it_loads_long_runs_lazily_and_serves_them_on_request(owner_client, tmp_path):
    lines = rich_session_lines()[:1]
    parent = None
    for n in range(3000):
        entry = {
            "type": "message",
            "id": f"e{n:07d}",
            "parentId": parent,
            "timestamp": f"2025-11-20T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
            "message": {"role": "user", "content": f"step {n}", "timestamp": n},
        }
        lines.append(entry)
        parent = entry["id"]
    session = import_session_file(path=write_session(tmp_path, lines)).session
    html = _tree(owner_client, session)
    shown = _ids(html)
    assert len(shown) < 200
    assert "e0002999" in shown  # the leaf and its surroundings come first
    gap = re.search(r'hx-get="([^"]*/rows/\?[^"]*)"', html).group(1).replace("&amp;", "&")
    rows = owner_client.get(gap, HTTP_HX_REQUEST="true").content.decode()
    more = _ids(rows)
    assert 0 < len(more) <= 400
    assert not set(more) & set(shown)
    assert more == sorted(more)


def test_it_renders_the_tree_and_its_inspector_in_a_constant_number_of_queries(
    owner_client, rich, tmp_path
):
    url = reverse("inspector:session", args=[rich.pk])
    owner_client.get(url, **TREE)
    with CaptureQueriesContext(connection) as queries:
        owner_client.get(url, {"mode": "all"}, **TREE)
    # The tree: the login, the session, the comment counts. The inspector out of band: the
    # kept turn's key (the profile's version), the resource profile, the entry, the active
    # job, the membership, the entry's comments.
    assert len(queries) <= 10, "\n".join(q["sql"][:150] for q in queries)
    with CaptureQueriesContext(connection) as again:
        owner_client.get(url, {"mode": "all"}, **TREE)
    # Asked again, the inspector is the kept one: neither the profile nor the entry is read.
    assert len(again) <= 8, "\n".join(q["sql"][:150] for q in again)


def test_it_answers_404_for_unknown_sessions_and_entries(owner_client, rich):
    assert owner_client.get(reverse("inspector:session", args=[rich.pk + 999])).status_code == 404
    url = reverse("inspector:session", args=[rich.pk])
    assert owner_client.get(url, {"entry": "nope"}, **TREE).status_code == 404
    assert owner_client.get(reverse("inspector:chart", args=[rich.pk + 999])).status_code == 404


def test_it_redirects_anonymous_visitors_to_login(client, rich):
    response = client.get(reverse("inspector:session", args=[rich.pk]))
    assert response.status_code == 302
    assert reverse("login") in response["Location"]


def test_it_lets_a_teammate_open_the_owners_session(client, teammate, owner, tmp_path):
    # Imported by a command: the folder's shared, open project (a user's own upload would start
    # a project of their own, restricted to them).
    session = import_session_file(path=write_session(tmp_path)).session
    client.force_login(teammate)
    assert _ids(_tree(client, session))


def test_it_answers_404_on_every_session_url_when_the_session_is_not_visible(
    client, owner, outsider, tmp_path
):
    """A project with members is visible to them only (contextlab.review.models): every session
    URL must follow Session.objects.visible_to."""
    from contextlab.library.models import ProjectMembership

    session = import_session_file(path=write_session(tmp_path), user=owner).session
    ProjectMembership.objects.get_or_create(project=session.project, user=owner, role="owner")
    client.force_login(outsider)
    urls = [
        reverse("inspector:session", args=[session.pk]),
        reverse("inspector:tree_rows", args=[session.pk]) + "?start=0&end=5",
        reverse("inspector:chart", args=[session.pk]),
        reverse("inspector:not_sent", args=[session.pk]) + "?entry=u0000004",
        reverse("inspector:message", args=[session.pk]) + "?entry=u0000004",
        reverse("inspector:messages", args=[session.pk]) + "?entry=u0000004",
    ]
    for url in urls:
        assert client.get(url).status_code == 404, url
    response = client.post(reverse("inspector:profile", args=[session.project.pk]), {"next": "/"})
    assert response.status_code == 404
    assert session.session_id not in client.get(reverse("library:index")).content.decode()
    search = client.get(reverse("library:search"), {"q": "please read"}).content.decode()
    assert "Nothing matches." in search
    client.force_login(owner)
    for url in urls:
        assert client.get(url).status_code == 200, url


def test_it_opens_a_header_only_session(owner_client, tmp_path):
    session = import_session_file(path=write_session(tmp_path, rich_session_lines()[:1])).session
    response = owner_client.get(reverse("inspector:session", args=[session.pk]))
    assert response.status_code == 200
    assert "This session has no entries." in response.content.decode()
    assert owner_client.get(reverse("inspector:chart", args=[session.pk])).status_code == 200


def test_it_opens_a_damaged_session(owner_client, tmp_path):
    lines = rich_session_lines()
    lines.append({**lines[3], "id": "orphan01", "parentId": "missing-parent"})  # unknown parent
    lines.append({**lines[3], "id": "cyc00001", "parentId": "cyc00002"})  # a parentId cycle
    lines.append({**lines[3], "id": "cyc00002", "parentId": "cyc00001"})
    lines.append({**lines[4], "id": "u0000001"})  # a repeated id
    session = import_session_file(path=write_session(tmp_path, lines)).session
    url = reverse("inspector:session", args=[session.pk])
    for params in (
        {},
        {"mode": "all"},
        {"entry": "orphan01"},
        {"entry": "cyc00001", "tab": "diff"},
    ):
        assert owner_client.get(url, params).status_code == 200, params
    assert owner_client.get(reverse("inspector:chart", args=[session.pk])).status_code == 200
