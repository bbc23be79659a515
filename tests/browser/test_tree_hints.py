"""The tree's context-edit and system-prompt hints in Chromium, on a session the real Pi 1.6.0
wrote: visible on a phone and on a desktop, and never wider than the page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from contextlab.inspector.selectors import clear_cache
from tests.conftest import CORPUS_1X, login

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("width", [390, 1440])
def test_the_tree_shows_edit_and_system_hints_at_phone_and_desktop_width(
    chromium, live_server, import_corpus, owner, width
):
    clear_cache()
    session, _ = import_corpus("edits", CORPUS_1X)
    context = chromium.new_context(viewport={"width": width, "height": 844})
    page = context.new_page()
    try:
        login(page, live_server.url, owner.username)
        url = reverse("inspector:session", args=[session.pk])
        page.goto(f"{live_server.url}{url}?mode=all")
        page.wait_for_selector("#tree a.trow")
        for entry_id, text in (("73a4535f", "✂ replaced"), ("afd84aed", "first prompt")):
            row = page.locator(f'#tree li[data-entry-id="{entry_id}"] a.trow')
            hint = row.locator(".hint")
            assert hint.inner_text() == text
            box, inside = hint.bounding_box(), row.bounding_box()
            assert box["width"] > 0
            assert box["x"] + box["width"] <= inside["x"] + inside["width"] + 1, entry_id
        width_now = page.evaluate("document.documentElement.scrollWidth")
        assert width_now <= width
    finally:
        context.close()
