"""In Chromium at 1440 px and 390 px: the header search finds code (`readFileUtf8` inside
`binding.readFileUtf8(path`), and two requests on different branches compare side by side
(stacked on a phone), linked from the inspector. Nothing is wider than the viewport."""

from __future__ import annotations

import shutil

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from contextlab.inspector.selectors import clear_cache, session_index
from contextlab.library.importer import import_session_file
from tests.conftest import CORPUS, PASSWORD, login
from tests.library.conftest import chain, header, lines, tool_result

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = [1440, 390]


@pytest.fixture
def person(django_user_model):
    return django_user_model.objects.create_user(username="ann", password=PASSWORD)


@pytest.fixture
def viewport_page(chromium, request):
    context = chromium.new_context(viewport={"width": request.param, "height": 900})
    page = context.new_page()
    yield page
    context.close()


def _no_horizontal_overflow(page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    widest = page.evaluate(
        """() => [...document.querySelectorAll('body *')]
            .filter(el => el.getBoundingClientRect().right > window.innerWidth + 1)
            .map(el => el.tagName + '.' + el.className + '#' + el.id).slice(0, 5)"""
    )
    assert width <= page.viewport_size["width"], f"page is {width}px wide: {widest}"


@pytest.mark.parametrize("viewport_page", WIDTHS, indirect=True)
def test_the_header_search_finds_code_by_an_identifier(
    viewport_page, live_server, person, blob_dir, tmp_path
):
    page = viewport_page
    code = "const data = binding.readFileUtf8(path);\nreturn data.split_lines();"
    path = tmp_path / "code.jsonl"
    path.write_bytes(lines(header(), *chain(2), tool_result("t0000001", "e0000001", code)))
    session = import_session_file(path=path).session
    login(page, live_server.url, "ann")
    box = page.locator("form.topsearch input[name=q]")
    box.fill("readFileUtf8")
    box.press("Enter")
    hit = page.locator(".search-hits li[data-entry-id='t0000001']")
    hit.wait_for()
    assert hit.locator("mark").first.inner_text() == "readFileUtf8"
    assert hit.locator(".hit-place").inner_text() == "tool result"
    _no_horizontal_overflow(page)
    # A piece of a token that no word holds: found by substring.
    page.fill("main input[name=q]", "eadFileUt")
    page.locator("main form button[type=submit]").click()
    page.wait_for_selector("#search-results:has-text('No word matches')")
    assert page.locator(".search-hits li[data-entry-id='t0000001'] mark").inner_text() == (
        "eadFileUt"
    )
    # The hit opens the entry in the session.
    hit = page.locator(".search-hits li[data-entry-id='t0000001'] a").first
    hit.click()
    page.wait_for_url(f"**{reverse('inspector:session', args=[session.pk])}?entry=t0000001*")


@pytest.mark.parametrize("viewport_page", WIDTHS, indirect=True)
def test_two_requests_on_different_branches_compare_side_by_side(
    viewport_page, live_server, person, blob_dir, tmp_path
):
    page = viewport_page
    clear_cache()
    copy = tmp_path / "branches.jsonl"
    shutil.copyfile(CORPUS / "branches" / "session.jsonl", copy)
    session = import_session_file(path=copy).session
    index = session_index(session)
    users = [i for i in index.order if index.items[i].role == "user"]
    a, b = users[-1], users[1]
    login(page, live_server.url, "ann")
    page.goto(f"{live_server.url}{reverse('inspector:session', args=[session.pk])}?entry={a}")
    page.locator("#compare-link").click()
    page.wait_for_selector("#compare")
    page.fill("input[name=b]", b)
    page.locator("form.compare-form button[type=submit]").click()
    page.wait_for_selector(f"#compare[data-a='{a}'][data-b='{b}']")
    # A message both requests hold, changed: its A and B cells (and the heads naming A and B).
    changed = page.locator(".compare-row[data-kind=changed]").first
    changed.wait_for()
    pairs = [
        (page.locator(".compare-head[data-side=a]"), page.locator(".compare-head[data-side=b]")),
        (
            changed.locator(".compare-cell[data-side=a]"),
            changed.locator(".compare-cell[data-side=b]"),
        ),
    ]
    width = page.viewport_size["width"]
    for a_side, b_side in pairs:
        first, second = a_side.bounding_box(), b_side.bounding_box()
        assert first and second and first["width"] > 0 and second["width"] > 0
        for box in (first, second):
            assert box["x"] >= -1 and box["x"] + box["width"] <= width + 1
        if width >= 800:
            # Side by side: B to the right of A, on the same line.
            assert second["x"] > first["x"] + first["width"] - 1 and second["y"] == first["y"]
        else:
            # Stacked on a phone: B below A, in the same column, as wide.
            assert second["y"] >= first["y"] + first["height"] - 1, (first, second)
            assert abs(second["x"] - first["x"]) <= 1 and abs(second["width"] - first["width"]) <= 1
    assert page.locator("#compare-summary").inner_text().endswith(".")
    _no_horizontal_overflow(page)
    # The request of A as the provider received it.
    page.locator("section[data-side=a] a:has-text('request body (JSON)')").click()
    expect(page.locator("body")).to_contain_text('"messages"')
