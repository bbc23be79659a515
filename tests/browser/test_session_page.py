"""The session page in a real Chromium, at a phone's width and a desktop's: the tree, the URL and
the inspector always name the same entry (the page's stable hooks: `#tree [aria-selected=true]`'s
`data-entry-id`, `#inspector`'s `data-entry-id`, the URL's `entry`), the selected row is in view,
and the page follows its session without a reload."""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from django.urls import reverse

from contextlab.inspector import services
from contextlab.inspector.selectors import clear_cache
from contextlab.jobs.services import job_cancel, job_create
from contextlab.library.importer import import_session_file
from contextlab.library.models import Session
from tests.conftest import login
from tests.inspector.sessions import _assistant, _user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = [390, 1440]
LONG_ID = "0193a1b2-0000-7000-8000-0000000010ff"


def _message(entry_id: str, parent: str | None, message: dict, n: int) -> dict:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": f"2025-11-20T11:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
        "message": message,
    }


def session_header(session_id: str) -> dict:
    return {
        "type": "session",
        "version": 3,
        "id": session_id,
        "timestamp": "2025-11-20T11:00:00.000Z",
        "cwd": "/home/ann/work",
    }


def long_session_lines(pairs: int = 80) -> list[dict]:
    """`pairs` user/assistant turns on one line (u0000000, a0000000, u0000001, ...), with a side
    branch (b0000001, b0000002) under a0000010 written before the rest, so the leaf stays at the
    end of the main line."""
    lines = [session_header(LONG_ID)]
    parent = None
    for i in range(pairs):
        user, reply = f"u{i:07d}", f"a{i:07d}"
        lines.append(_message(user, parent, _user(f"question number {i}", 2 * i), 2 * i))
        text = [{"type": "text", "text": f"answer number {i}"}]
        lines.append(_message(reply, user, _assistant(text, 2 * i + 1), 2 * i + 1))
        parent = reply
        if i == 10:
            lines.append(_message("b0000001", reply, _user("a side question", 500), 500))
            side = [{"type": "text", "text": "a side answer"}]
            lines.append(_message("b0000002", "b0000001", _assistant(side, 501), 501))
    return lines


def write_lines(path: Path, lines: list[dict], mode: str = "w") -> None:
    with path.open(mode) as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")


@pytest.fixture
def long_session(tmp_path, blob_dir, owner):
    clear_cache()
    path = tmp_path / f"2025-11-20T11-00-00-000Z_{LONG_ID}.jsonl"
    write_lines(path, long_session_lines())
    session = import_session_file(path=path).session
    assert session is not None
    return session, path


def phone_or_desktop(chromium, width):  # type: ignore[no-untyped-def]
    context = chromium.new_context(viewport={"width": width, "height": 844 if width < 800 else 900})
    return context, context.new_page()


@pytest.fixture(params=WIDTHS, ids=lambda w: f"{w}px")
def wpage(request, chromium):  # type: ignore[no-untyped-def]
    context, page = phone_or_desktop(chromium, request.param)
    page.width = request.param
    yield page
    context.close()


STATE = """() => {
  const tree = document.querySelector('#tree');
  const selected = tree && tree.querySelectorAll('[aria-selected="true"]');
  const inspector = document.querySelector('#inspector');
  const row = selected && selected.length === 1 ? selected[0] : null;
  let inView = false;
  if (row) {
    const r = row.getBoundingClientRect();
    const pane = document.querySelector('.tree-pane').getBoundingClientRect();
    const tools = document.querySelector('#tree .tree-tools').getBoundingClientRect();
    const top = Math.max(pane.top, tools.bottom, 0);
    const bottom = Math.min(pane.bottom, window.innerHeight);
    inView = r.top >= top - 1 && r.bottom <= bottom + 1;
  }
  return {
    tree: row ? row.getAttribute('data-entry-id')
              : (selected ? selected.length + ' selected' : null),
    url: new URL(location.href).searchParams.get('entry'),
    inspector: inspector && inspector.getAttribute('data-entry-id'),
    inView: inView,
  };
}"""


def settled(page, entry: str | None = None, timeout: float = 15_000) -> dict:
    """Wait until tree, URL and inspector agree (on `entry`, if given); return the state."""
    want = json.dumps(entry)
    page.wait_for_function(
        f"""() => {{
          const s = ({STATE})();
          return s.tree && s.tree === s.url && s.url === s.inspector
                 && ({want} === null || s.url === {want});
        }}""",
        timeout=timeout,
    )
    page.wait_for_timeout(400)  # a late response must not undo it
    state = page.evaluate(STATE)
    assert state["tree"] == state["url"] == state["inspector"], state
    if entry is not None:
        assert state["url"] == entry, state
    return state


def tree_order(page) -> list[str]:
    return page.eval_on_selector_all(
        "#tree li[data-entry-id]", "els => els.map(e => e.dataset.entryId)"
    )


def no_wider_than_viewport(page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], f"{page.url} is {width}px wide"


def append_a_turn(path: Path, reply: str) -> None:
    """Append a question (u0000080) and its reply (a0000080) to the long session's file and
    import them, as `import_sessions --watch` does for each change."""
    text = [{"type": "text", "text": reply}]
    write_lines(
        path,
        [
            _message("u0000080", "a0000079", _user("one more question", 900), 900),
            _message("a0000080", "u0000080", _assistant(text, 901), 901),
        ],
        mode="a",
    )
    result = import_session_file(path=path)
    assert result.status == "appended", result


def open_session(page, live_server, session, query: str = "") -> None:
    url = reverse("inspector:session", args=[session.pk])
    page.goto(f"{live_server.url}{url}{query}")
    page.wait_for_selector("#tree a.trow")


def test_it_keeps_tree_url_and_inspector_together_while_j_is_held_for_50_rows(
    wpage, live_server, long_session, owner
):
    session, _ = long_session
    login(wpage, live_server.url, owner.username)
    open_session(wpage, live_server, session, "?entry=u0000000")
    order = tree_order(wpage)
    start = order.index("u0000000")
    # A held key: 50 keydowns in a row, all but the first marked as repeats, faster than any
    # response can come back (each one aborts or outruns the previous request).
    wpage.evaluate(
        """() => { for (let i = 0; i < 50; i++) {
             document.body.dispatchEvent(new KeyboardEvent('keydown',
               {key: 'j', repeat: i > 0, bubbles: true, cancelable: true}));
           } }"""
    )
    state = settled(wpage, order[start + 50])
    assert state["inView"], state
    # Pressed one at a time, the responses overlap: the last press still wins.
    for _ in range(12):
        wpage.keyboard.press("k")
    state = settled(wpage, order[start + 38])
    assert state["inView"], state
    # Holding the key left one history entry for the whole run: Back returns before it.
    wpage.go_back()
    settled(wpage)


def test_it_folds_keeping_the_selection_and_l_unfolds(wpage, live_server, long_session, owner):
    session, _ = long_session
    login(wpage, live_server.url, owner.username)
    open_session(wpage, live_server, session, "?entry=b0000002")
    settled(wpage, "b0000002")
    # Fold the side branch from its first row: the selection moves to the folded entry.
    wpage.click("#tree li[data-entry-id='b0000001'] a.fold-toggle")
    state = settled(wpage, "b0000001")
    assert state["inView"], state
    assert "fold=b0000001" in wpage.url
    assert wpage.locator("#tree li[data-entry-id='b0000002']").count() == 0
    # `l` unfolds the folded selection (and keeps it).
    wpage.keyboard.press("l")
    wpage.wait_for_selector("#tree li[data-entry-id='b0000002']")
    settled(wpage, "b0000001")
    assert "fold=" not in wpage.url
    # `h` folds it again; Back undoes the fold.
    wpage.keyboard.press("h")
    wpage.wait_for_function("() => location.search.includes('fold=b0000001')")
    settled(wpage, "b0000001")
    wpage.go_back()
    wpage.wait_for_selector("#tree li[data-entry-id='b0000002']")
    settled(wpage, "b0000001")


def test_it_keeps_clicks_tabs_and_back_in_agreement(wpage, live_server, long_session, owner):
    session, _ = long_session
    login(wpage, live_server.url, owner.username)
    open_session(wpage, live_server, session)
    state = settled(wpage, "a0000079")  # no entry in the URL: the leaf, and the URL says so
    assert state["inView"], state
    wpage.click("#tree li[data-entry-id='u0000040'] a.trow")
    settled(wpage, "u0000040")
    wpage.click("#tree li[data-entry-id='u0000070'] a.trow")
    settled(wpage, "u0000070")
    wpage.click("nav.tabs a:has-text('Raw entry')")
    wpage.wait_for_function("() => location.search.includes('tab=entry')")
    settled(wpage, "u0000070")
    assert "u0000070" in wpage.locator("#entry-json").inner_text()
    wpage.go_back()
    settled(wpage, "u0000070")
    wpage.wait_for_selector("#messages")
    wpage.go_back()
    state = settled(wpage, "u0000040")
    assert state["inView"], state
    wpage.go_back()
    settled(wpage, "a0000079")
    wpage.go_forward()
    settled(wpage, "u0000040")


def test_a_permalink_with_a_tree_search_selects_what_it_inspects(
    wpage, live_server, long_session, owner
):
    session, _ = long_session
    login(wpage, live_server.url, owner.username)
    # u0000060 does not match the search: the nearest visible entry is selected and inspected.
    open_session(wpage, live_server, session, "?q=side&entry=u0000060")
    state = settled(wpage)
    assert state["url"] != "u0000060"
    # A permalink to an entry far down the tree opens with its row in view.
    open_session(wpage, live_server, session, "?entry=u0000075")
    state = settled(wpage, "u0000075")
    assert state["inView"], state
    # Typing in the tree search, slowly enough that the tree is filtered (and replaced) between
    # keystrokes: no letter is lost, the box keeps the focus, and the three stay together.
    wpage.click("#tree-search")
    wpage.keyboard.type("a side q", delay=350)
    wpage.wait_for_function("() => new URLSearchParams(location.search).get('q') === 'a side q'")
    assert wpage.input_value("#tree-search") == "a side q"
    assert wpage.evaluate("document.activeElement.id") == "tree-search"
    state = settled(wpage)
    assert state["tree"] in ("b0000001", "a0000010", "u0000000"), state


def test_a_chart_click_and_a_search_hit_open_the_entry_in_view(
    wpage, live_server, long_session, owner
):
    session, _ = long_session
    login(wpage, live_server.url, owner.username)
    wpage.goto(f"{live_server.url}{reverse('inspector:chart', args=[session.pk])}")
    wpage.wait_for_selector("#growth-chart canvas")
    no_wider_than_viewport(wpage)
    box = wpage.locator("#growth-chart .u-over").bounding_box()
    wpage.locator("#growth-chart .u-over").click(position={"x": box["width"] - 2, "y": 20})
    wpage.wait_for_url(re.compile(r".*entry=.*"))
    wpage.wait_for_selector("#tree a.trow")
    state = settled(wpage)
    assert state["inView"], state
    assert state["url"] >= "u0000060", state  # a request near the end of the path

    wpage.goto(f"{live_server.url}{reverse('library:search')}?q=question+number+77")
    link = wpage.locator(f"a[href*='/sessions/{session.pk}/'][href*='entry=u0000077']").first
    link.click()
    wpage.wait_for_selector("#tree a.trow")
    state = settled(wpage, "u0000077")  # the hit's entry, not the leaf
    assert state["inView"], state


def test_it_follows_lines_appended_to_the_session_without_a_reload(
    wpage, live_server, long_session, owner
):
    session, path = long_session
    login(wpage, live_server.url, owner.username)
    open_session(wpage, live_server, session, "?entry=u0000050")
    settled(wpage, "u0000050")
    wpage.evaluate("window.__stillHere = true")
    scroll = wpage.evaluate("document.querySelector('.tree-pane').scrollTop")
    append_a_turn(path, "a line Pi appended while you watched")
    wpage.wait_for_selector("#tree li[data-entry-id='a0000080']", timeout=15_000)
    wpage.wait_for_function(
        f"() => document.querySelector('[data-testid=entry-count]').textContent.trim() === "
        f"'{Session.objects.get(pk=session.pk).entry_count}'"
    )
    assert wpage.evaluate("window.__stillHere") is True
    state = settled(wpage, "u0000050")  # the user's selection stays
    assert state["inView"], state
    assert abs(wpage.evaluate("document.querySelector('.tree-pane').scrollTop") - scroll) < 5


def test_lines_appended_during_a_dropped_live_refresh_still_appear(
    wpage, live_server, long_session, owner
):
    """A live refresh answered after the user moved is dropped (it was rendered for the old
    selection); the change it carried is not forgotten: a later poll fetches it again."""
    session, path = long_session
    login(wpage, live_server.url, owner.username)
    open_session(wpage, live_server, session, "?entry=u0000050")
    settled(wpage, "u0000050")
    held: list = []

    def hold_live(route, request):  # type: ignore[no-untyped-def]
        if request.headers.get("hx-target") == "live" and not held:
            held.append(route)  # answered below, once the user has moved
        else:
            route.continue_()

    wpage.route(re.compile(r".*/sessions/\d+/.*"), hold_live)
    append_a_turn(path, "a line Pi appended while you moved")
    for _ in range(100):  # the next poll sees the change and asks for the live parts
        if held:
            break
        wpage.wait_for_timeout(100)
    assert held, "the page never asked for the live parts"
    wpage.keyboard.press("j")
    settled(wpage, "a0000050")
    held[0].continue_()  # the answer for u0000050 arrives after the user left it
    wpage.wait_for_selector("#tree li[data-entry-id='a0000080']", timeout=15_000)
    count = Session.objects.get(pk=session.pk).entry_count
    wpage.wait_for_function(
        "n => document.querySelector('[data-testid=entry-count]').textContent.trim() === n",
        arg=str(count),
    )
    state = settled(wpage, "a0000050")
    assert state["inView"], state
    wpage.unroute(re.compile(r".*/sessions/\d+/.*"))


def test_a_finished_job_shows_in_the_tree_and_job_list_without_a_reload(
    wpage, live_server, owner, import_corpus, offline_provider, settings
):
    page = wpage
    settings.CONTEXTLAB_JOBS_EMBEDDED = True
    clear_cache()
    session, _ = import_corpus("tools")
    login(page, live_server.url, owner.username)
    page.goto(f"{live_server.url}{reverse('inspector:session', args=[session.pk])}")
    page.wait_for_selector("#tree a.trow")
    page.wait_for_selector("#job-history table")
    page.evaluate("window.__stillHere = true")
    before = settled(page)
    assert page.locator("#tree li.kind-compaction").count() == 0
    page.click("#inspector a:has-text('Compact here')")
    page.fill("#compact-form form.preview-settings input[name=keepRecentTokens]", "150")
    page.click("#compact-form form.preview-settings button[type=submit]")
    page.wait_for_selector("#compact-form dl.preview")
    page.click("#compact-form form[method=post] button[type=submit]")
    page.wait_for_selector("#tree li.kind-compaction", timeout=30_000)
    page.wait_for_selector("#job-history td:has-text('succeeded')", timeout=15_000)
    assert "1 compaction" in page.locator("#facts").inner_text()
    assert page.evaluate("window.__stillHere") is True
    settled(page, before["url"])


@pytest.mark.parametrize("width", WIDTHS)
def test_nothing_is_wider_than_the_viewport(
    chromium, live_server, long_session, owner, width, offline_provider
):
    session, _ = long_session
    owner.is_superuser = True
    owner.save()
    job = job_create(
        session=session, kind="compaction", parameters={"keepRecentTokens": 10}, enqueue=False
    )
    context, page = phone_or_desktop(chromium, width)
    try:
        login(page, live_server.url, owner.username)
        no_wider_than_viewport(page)
        assert page.locator(".topsearch input").bounding_box()["width"] > 200
        for url in (
            "/no/such/page/",
            reverse("jobs:detail", args=[job.pk]),
            reverse("jobs:compact", args=[session.pk]) + "?keepRecentTokens=150",
            reverse("sharing:links"),
            reverse("api:tokens"),
            reverse("review:audit"),
            reverse("library:history", args=[session.pk]),
            reverse("library:search") + "?q=question",
            reverse("jobs:list", args=[session.pk]),
            reverse("review:members", args=[session.project_id]),
            reverse("inspector:chart", args=[session.pk]),
            reverse("inspector:session", args=[session.pk]) + "?entry=u0000030&tab=prompt",
            reverse("inspector:session", args=[session.pk]) + "?entry=u0000030&tab=diff",
            reverse("inspector:session", args=[session.pk]) + "?entry=u0000030",
        ):
            page.goto(f"{live_server.url}{url}")
            no_wider_than_viewport(page)
        tree = page.locator(".tree-pane").bounding_box()
        inspector = page.locator(".inspector-pane").bounding_box()
        if width < 800:
            # Stacked: the inspector is as wide as the tree, below it.
            assert inspector["width"] > 300 and inspector["y"] >= tree["y"] + tree["height"] - 1
        else:
            # Side by side: the inspector to the right of the tree, the wider of the two.
            assert inspector["x"] >= tree["x"] + tree["width"] - 1
            assert inspector["width"] > tree["width"]
    finally:
        context.close()


def test_the_url_entry_is_what_the_server_renders(live_server, long_session, owner, client):
    """Without JavaScript the same hooks hold: a permalink whose entry a fold hides redirects
    to the folded entry, so the URL, the tree and the inspector agree."""
    session, _ = long_session
    client.force_login(owner)
    url = reverse("inspector:session", args=[session.pk])
    response = client.get(url, {"fold": "b0000001", "entry": "b0000002"})
    assert response.status_code == 302
    assert parse_qs(urlparse(response["Location"]).query)["entry"] == ["b0000001"]
    body = client.get(response["Location"]).content.decode()
    assert re.search(
        r'<li data-id="b0000001" data-entry-id="b0000001"[^>]*aria-selected="true"', body
    )
    assert '<div id="inspector" data-entry-id="b0000001"' in body


def test_held_j_walks_into_rows_not_loaded_yet(wpage, live_server, tmp_path, blob_dir, owner):
    """A tree longer than the first response (rows load lazily): the held key loads the run it
    walks into and still ends 50 rows down, in agreement."""
    page = wpage
    clear_cache()
    lines = long_session_lines(pairs=800)  # 1,602 rows: more than the first response sends
    path = tmp_path / f"2025-11-20T11-00-00-000Z_{LONG_ID}.jsonl"
    write_lines(path, lines)
    session = import_session_file(path=path).session
    login(page, live_server.url, owner.username)
    open_session(page, live_server, session, "?entry=u0000000")
    assert page.locator("#tree li.run-fold").count() > 0
    assert page.locator("#tree li[data-entry-id='u0000025']").count() == 0
    page.evaluate(
        """() => { for (let i = 0; i < 50; i++) {
             document.body.dispatchEvent(new KeyboardEvent('keydown',
               {key: 'j', repeat: i > 0, bubbles: true, cancelable: true}));
           } }"""
    )
    # u0, a0, u1, a1, ...: 50 rows below u0000000 is u0000025.
    state = settled(page, "u0000025")
    assert state["inView"], state


def test_inspector_answers_arriving_out_of_order_never_win(wpage, live_server, long_session, owner):
    """Each inspector request is held back and answered newest first, the older ones last (as a
    slow server would): the last selection is what the tree, the URL and the inspector show."""
    session, _ = long_session
    login(wpage, live_server.url, owner.username)
    open_session(wpage, live_server, session, "?entry=u0000020")
    settled(wpage, "u0000020")
    held: list = []

    def hold_inspector(route, request):  # type: ignore[no-untyped-def]
        if request.headers.get("hx-target") == "inspector":
            held.append(route)
        else:
            route.continue_()

    pattern = re.compile(r".*/sessions/\d+/\?.*")
    wpage.route(pattern, hold_inspector)
    for row in ("u0000030", "u0000040", "u0000050"):
        wpage.click(f"#tree li[data-entry-id='{row}'] a.trow")
        # The row is marked at once; the URL follows the inspector's answer (htmx).
        wpage.wait_for_selector(f"#tree li[data-entry-id='{row}'][aria-selected='true']")
    for _ in range(50):
        if any("entry=u0000050" in route.request.url for route in held):
            break
        wpage.wait_for_timeout(100)
    assert any("entry=u0000050" in route.request.url for route in held), held
    for route in reversed(held):  # the newest answer first, the oldest last
        with contextlib.suppress(Exception):  # the page had already given up on (aborted) it
            route.continue_()
        wpage.wait_for_timeout(300)
    state = settled(wpage, "u0000050")
    wpage.unroute(pattern)
    assert state["inView"], state
    assert "question number 50" in wpage.locator("#inspector").inner_text()


def test_holding_j_for_60_rows_adds_one_history_entry_and_renders_few_inspectors(
    wpage, live_server, long_session, owner, monkeypatch
):
    """A held `j` (keydowns 30 ms apart, as a keyboard's auto-repeat sends them): one history
    entry for the whole run, tree, URL and inspector together at its end, and the server asked
    for very few of the 60 inspectors (keys closer than a pause make one request; hx-sync
    aborts a request a newer one replaces)."""
    session, _ = long_session
    login(wpage, live_server.url, owner.username)
    open_session(wpage, live_server, session, "?entry=u0000000")
    settled(wpage, "u0000000")
    order = tree_order(wpage)
    start = order.index("u0000000")
    rendered: list[str] = []
    inspect_entry = services.inspect_entry

    def counting(session, index, entry_id, **kwargs):  # type: ignore[no-untyped-def]
        rendered.append(entry_id)
        return inspect_entry(session, index, entry_id, **kwargs)

    monkeypatch.setattr(services, "inspect_entry", counting)
    history_before = wpage.evaluate("history.length")
    wpage.evaluate(
        """() => new Promise(done => {
             let n = 0;
             const timer = setInterval(() => {
               document.body.dispatchEvent(new KeyboardEvent('keydown',
                 {key: 'j', repeat: n > 0, bubbles: true, cancelable: true}));
               if (++n === 60) { clearInterval(timer); done(); }
             }, 30);
           })"""
    )
    state = settled(wpage, order[start + 60])
    assert state["inView"], state
    assert wpage.evaluate("history.length") - history_before <= 1
    assert 1 <= len(rendered) <= 3, rendered
    # One Back leaves the whole run.
    wpage.go_back()
    settled(wpage, "u0000000")


def test_escape_in_the_tree_search_gives_the_keys_back_to_the_tree(
    wpage, live_server, long_session, owner
):
    session, _ = long_session
    login(wpage, live_server.url, owner.username)
    open_session(wpage, live_server, session, "?entry=u0000010")
    settled(wpage, "u0000010")
    count = wpage.locator(".tree-count").inner_text()
    wpage.keyboard.press("/")
    assert wpage.evaluate("document.activeElement.id") == "tree-search"
    wpage.keyboard.press("Escape")
    assert wpage.evaluate("document.activeElement.id") != "tree-search"
    wpage.keyboard.press("j")  # moves the selection; types nothing into the search
    settled(wpage, "a0000010")
    assert wpage.input_value("#tree-search") == ""
    assert wpage.locator(".tree-count").inner_text() == count


COMMENT_COUNT_ON_ROW = "#tree li[data-entry-id='u0000010'] .comment-count"


def test_a_new_comment_counts_in_the_inspector_and_on_its_tree_row_without_a_reload(
    wpage, live_server, long_session, owner
):
    session, _ = long_session
    login(wpage, live_server.url, owner.username)
    open_session(wpage, live_server, session, "?entry=u0000010")
    settled(wpage, "u0000010")
    wpage.evaluate("window.__stillHere = true")
    assert wpage.locator("#comment-count").inner_text() == "0 review comments on this entry"
    assert wpage.locator(COMMENT_COUNT_ON_ROW).count() == 0
    wpage.click("details.comments-here summary")
    for n, text in ((1, "why this answer?"), (2, "and this one?")):
        wpage.fill("#comment-body", text)
        wpage.click("#comments button:has-text('Comment')")
        wpage.wait_for_selector(f"#comments .comment-body:has-text('{text}')")
        plural = "s" if n > 1 else ""
        assert wpage.locator("#comment-count").inner_text() == (
            f"{n} review comment{plural} on this entry"
        )
        assert wpage.locator(COMMENT_COUNT_ON_ROW).inner_text() == f"✎ {n}"
    wpage.locator("#comments button:has-text('delete')").first.click()
    wpage.wait_for_function(
        f"() => document.querySelector({json.dumps(COMMENT_COUNT_ON_ROW)}).textContent === '✎ 1'"
    )
    assert wpage.locator("#comment-count").inner_text() == "1 review comment on this entry"
    assert wpage.evaluate("window.__stillHere") is True
    settled(wpage, "u0000010")


def test_compact_here_is_refused_while_another_job_is_queued_and_says_why(
    wpage, live_server, long_session, owner, offline_provider
):
    session, _ = long_session
    job = job_create(
        session=session, kind="compaction", parameters={"keepRecentTokens": 10}, enqueue=False
    )
    login(wpage, live_server.url, owner.username)
    open_session(wpage, live_server, session, "?entry=u0000010")
    settled(wpage, "u0000010")
    button = wpage.locator("#compact-control button:has-text('Compact here')")
    assert button.is_disabled()
    why = wpage.locator("[data-testid=compact-blocked]").inner_text()
    assert f"#{job.pk}" in why and "queued" in why and "cancel it first" in why
    # The job is cancelled elsewhere: the page's poll brings "Compact here…" back.
    job_cancel(job=job)
    wpage.wait_for_selector("#compact-control a:has-text('Compact here')", timeout=15_000)
    assert wpage.locator("[data-testid=compact-blocked]").count() == 0


def test_the_job_card_after_compact_is_not_hidden_under_the_sticky_tabs(
    wpage, live_server, owner, import_corpus, offline_provider
):
    page = wpage
    clear_cache()
    session, _ = import_corpus("tools")
    login(page, live_server.url, owner.username)
    page.goto(f"{live_server.url}{reverse('inspector:session', args=[session.pk])}")
    page.wait_for_selector("#tree a.trow")
    page.click("#inspector a:has-text('Compact here')")
    page.fill("#compact-form form.preview-settings input[name=keepRecentTokens]", "150")
    page.click("#compact-form form.preview-settings button[type=submit]")
    page.wait_for_selector("#compact-form dl.preview")
    page.click("#compact-form form[method=post] button[type=submit]")
    page.wait_for_selector("#job-slot .job-status")
    page.wait_for_timeout(300)
    box = page.evaluate(
        """() => {
          const card = document.querySelector('#job-slot .job-status').getBoundingClientRect();
          const tabs = document.querySelector('#inspector nav.tabs').getBoundingClientRect();
          const pane = document.querySelector('.inspector-pane').getBoundingClientRect();
          return {card: card.top, tabs: tabs.bottom, pane: pane.top, height: innerHeight};
        }"""
    )
    # The card's top is in view: below the tab bar (sticky at the pane's top) and on screen.
    assert box["card"] >= max(box["tabs"], box["pane"], 0) - 1, box
    assert box["card"] < box["height"] - 40, box


DEEP_ID = "0193a1b2-0000-7000-8000-0000000020ff"
DEEP_LEVELS = 40


def deep_session_lines() -> list[dict]:
    """A branch at every turn: each question has a side answer and the answer the line goes on
    from, so that every turn is one level deeper in the tree (DEEP_LEVELS levels, 120 characters
    of gutters at the deepest as Pi draws them); the deepest answer is the leaf."""
    lines = [session_header(DEEP_ID)]
    parent = None
    for level in range(DEEP_LEVELS):
        question = f"q{level:07d}"
        lines.append(_message(question, parent, _user(f"question at level {level}", 3 * level), 0))
        side = [{"type": "text", "text": f"a side answer at level {level}"}]
        lines.append(_message(f"s{level:07d}", question, _assistant(side, 3 * level + 1), 1))
        main = [{"type": "text", "text": f"the answer at level {level}"}]
        lines.append(_message(f"m{level:07d}", question, _assistant(main, 3 * level + 2), 2))
        parent = f"m{level:07d}"
    return lines


VISIBLE_ROW = """() => {
  const row = document.querySelector('#tree [aria-selected="true"] a.trow');
  const text = row.querySelector('.text');
  const box = document.querySelector('#tree ol.tree').getBoundingClientRect();
  const tools = document.querySelector('#tree .tree-tools').getBoundingClientRect();
  const r = row.getBoundingClientRect();
  const prefix = row.closest('li').querySelector('.prefix');
  return {
    visible: Math.min(r.right, box.right) - Math.max(r.left, box.left),
    ch: parseFloat(getComputedStyle(text).fontSize) * 0.6,  // a monospace character's width
    prefix: prefix ? prefix.textContent.length : 0,
    toolsShown: tools.height > 0 && tools.left >= box.left - 1 && tools.right <= box.right + 1,
  };
}"""


def test_a_row_deep_in_the_tree_shows_its_text_not_only_its_gutters(
    wpage, live_server, tmp_path, blob_dir, owner
):
    clear_cache()
    path = tmp_path / f"2025-11-20T11-00-00-000Z_{DEEP_ID}.jsonl"
    write_lines(path, deep_session_lines())
    session = import_session_file(path=path).session
    login(wpage, live_server.url, owner.username)
    open_session(wpage, live_server, session)
    settled(wpage, f"m{DEEP_LEVELS - 1:07d}")
    shown = wpage.evaluate(VISIBLE_ROW)
    assert shown["prefix"] >= 3 * (DEEP_LEVELS - 2), shown  # wider than the pane, as Pi draws it
    # The selected row's own text is in view (scrolled sideways under the search bar, which
    # stays where it is), at least 20 characters of it, on a phone too.
    assert shown["visible"] >= 20 * shown["ch"], shown
    assert shown["toolsShown"], shown
    no_wider_than_viewport(wpage)
    # Walking up with the keyboard to a shallow row brings its text back into view as well.
    wpage.locator("body").focus()
    for _ in range(3 * DEEP_LEVELS):
        wpage.keyboard.press("k")
    settled(wpage)
    back = wpage.evaluate(VISIBLE_ROW)
    assert back["prefix"] < 10 and back["visible"] >= 20 * back["ch"], back
