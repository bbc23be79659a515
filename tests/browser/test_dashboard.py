"""End to end in a real Chromium (Debian's /usr/bin/chromium driven by Playwright) against a live
server: the demo sessions, the tree, the inspector and the chart, as a person would use them."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command
from django.urls import reverse
from playwright.sync_api import expect

from contextlab.inspector.selectors import clear_cache, path_entries, session_index
from contextlab.library.importer import import_session_file
from contextlab.library.models import Session
from contextlab.pi.context import build_session_context
from tests.conftest import PASSWORD, login
from tests.inspector.sessions import SESSION_ID, write_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def demo(live_server, blob_dir):
    clear_cache()
    # Tests run with DEBUG off; the demo command asks for --force there.
    call_command("demo", password=PASSWORD, force=True, stdout=io.StringIO())
    return Session.objects.filter(compaction_count__gt=0).order_by("-compaction_count").first()


def test_it_opens_the_demo_session_folds_selects_and_matches_the_engine(page, live_server, demo):
    login(page, live_server.url, "demo")
    assert page.locator("#library-table").is_visible()
    page.click(f"a[href='{reverse('inspector:session', args=[demo.pk])}']")
    page.wait_for_selector("#tree a.trow")
    rows_before = page.locator("#tree a.trow").count()
    assert rows_before > 5

    # Fold the first foldable segment, then unfold it again (htmx swaps the tree; URL follows).
    toggle = page.locator("#tree a.fold-toggle[data-action=fold]").last
    folded_id = toggle.evaluate("el => el.closest('li').dataset.id")
    toggle.click()
    page.wait_for_selector("#tree a.fold-toggle[data-action=unfold]")
    assert "fold=" in page.url
    assert page.locator("#tree a.trow").count() < rows_before
    page.locator(f"#tree li[data-id='{folded_id}'] a.fold-toggle").click()
    # Playwright's own locators, not wait_for_function: the CSP forbids evaluating strings.
    expect(page.locator("#tree a.trow")).to_have_count(rows_before)

    # Select an entry: the inspector loads beside the tree and the URL is a permalink.
    index = session_index(demo)
    user_rows = page.locator("#tree li a.trow:has(.role-user)")
    target = user_rows.nth(user_rows.count() - 1)
    entry_id = target.evaluate("el => el.closest('li').dataset.id")
    target.click()
    page.wait_for_selector(f"#inspector .crumbs:has-text('{entry_id}')")
    assert f"entry={entry_id}" in page.url
    shown = int(page.locator("[data-testid=message-count]").inner_text())
    expected = build_session_context(path_entries(demo, index, entry_id), entry_id).messages
    assert shown == len(expected)
    assert page.locator("#messages > li").count() == len(expected)
    assert "✓" in page.locator("[data-testid=invariant]").inner_text()

    # Keyboard: j moves the selection down and loads that entry.
    page.locator("#tree a.trow.selected").focus()
    page.keyboard.press("j")
    expect(page.locator("#inspector .crumbs")).not_to_contain_text(entry_id)

    # The system prompt tab: the layers' token estimates add up to the shown sum.
    page.click("nav.tabs a:has-text('System prompt')")
    page.wait_for_selector("[data-layer]")
    layer_tokens = [
        int(re.match(r"\d+", t).group(0))
        for t in page.locator("[data-testid=layer-tokens]").all_inner_texts()
    ]
    assert sum(layer_tokens) == int(page.locator("[data-testid=layer-sum]").inner_text())
    assert "tab=prompt" in page.url

    # The chart opens, draws, and a click on it opens that request in the inspector.
    page.goto(f"{live_server.url}{reverse('inspector:chart', args=[demo.pk])}")
    page.wait_for_selector("#growth-chart canvas")
    page.locator("#growth-chart .u-over").click(position={"x": 5, "y": 50})
    page.wait_for_url(re.compile(r".*entry=.*"))
    page.wait_for_selector("#inspector")


def test_it_renders_html_from_sessions_inert(
    page, live_server, tmp_path, blob_dir, django_user_model
):
    django_user_model.objects.create_user(username="demo", password=PASSWORD)
    clear_cache()
    result = import_session_file(path=write_session(tmp_path))
    assert result.session is not None
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    login(page, live_server.url, "demo")
    page.goto(f"{live_server.url}{reverse('inspector:session', args=[result.session.pk])}")
    page.wait_for_selector("#tree a.trow")
    assert page.evaluate("typeof window.__xss") == "undefined"
    for entry_id in ("u0000001", "r0000001", "x0000001", "c0000001"):
        page.goto(
            f"{live_server.url}{reverse('inspector:session', args=[result.session.pk])}"
            f"?entry={entry_id}&tab=context"
        )
        page.wait_for_selector("#messages")
        assert page.evaluate("typeof window.__xss") == "undefined", entry_id
    page.goto(f"{live_server.url}{reverse('library:search')}?q=please")
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert dialogs == []
    assert Session.objects.get(session_id=SESSION_ID)


def test_it_uploads_several_files_with_progress_and_lists_them(
    page, live_server, tmp_path, blob_dir, django_user_model
):
    django_user_model.objects.create_user(username="demo", password=PASSWORD)
    first = write_session(tmp_path)
    second = tmp_path / "second.jsonl"
    second.write_text(first.read_text().replace(SESSION_ID, "second-session-id"))
    login(page, live_server.url, "demo")
    page.set_input_files("form.upload input[type=file]", [str(first), str(second)])
    page.click("form.upload button[type=submit]")
    page.wait_for_selector("#upload-results li >> nth=1")
    results = page.locator("#upload-results").inner_text()
    assert results.count("new") == 2
    assert page.locator("form.upload progress").evaluate("p => p.value") == 100
    assert Session.objects.filter(session_id__in=[SESSION_ID, "second-session-id"]).count() == 2
    page.click("#upload-results a >> nth=0")
    page.wait_for_selector("#tree a.trow")


def test_it_works_without_javascript(chromium, live_server, tmp_path, blob_dir, django_user_model):
    django_user_model.objects.create_user(username="demo", password=PASSWORD)
    clear_cache()
    session = import_session_file(path=write_session(tmp_path)).session
    context = chromium.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        login(page, live_server.url, "demo")
        page.goto(f"{live_server.url}{reverse('inspector:session', args=[session.pk])}")
        page.click("#tree li[data-id='u0000003'] a.trow")
        page.wait_for_url(re.compile(r".*entry=u0000003.*"))
        assert "u0000003" in page.locator("#inspector .crumbs").inner_text()
        page.click("nav.tabs a:has-text('System prompt')")
        page.wait_for_url(re.compile(r".*tab=prompt.*"))
        assert page.locator("[data-layer]").count() > 3
        page.click("#tree li[data-id='u0000002'] a.fold-toggle")
        page.wait_for_url(re.compile(r".*fold=u0000002.*"))
        assert page.locator("#tree li[data-id='a0000003']").count() == 0
        page.click("#tree .modes a:has-text('user-only')")
        page.wait_for_url(re.compile(r".*mode=user-only.*"))
        expect(page.locator("#tree a.trow")).to_have_count(4)
    finally:
        context.close()
