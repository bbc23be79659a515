"""Comments and review labels in a real Chromium against a live server: htmx swaps the partials
in place (no page load), and the page reloads to the same state."""

from __future__ import annotations

import pytest
from django.urls import reverse

from contextlab.inspector.selectors import clear_cache
from contextlab.review.models import Comment, SessionLabel
from tests.conftest import login
from tests.review.helpers import team_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_it_comments_and_labels_in_place_with_htmx(
    page, live_server, owner, teammate, tmp_path, blob_dir
):
    clear_cache()
    session = team_session(tmp_path, owner, teammate)
    login(page, live_server.url, "teammate")
    url = f"{live_server.url}{reverse('inspector:session', args=[session.pk])}?entry=aaaa0001"
    page.goto(url)
    # A marker that a full page load would wipe: the swaps below must keep it.
    page.evaluate("window.__kept = true")

    page.click("details.comments-here summary")  # folded while the entry has no comments
    page.fill("#comment-body", "just one question: why this tool?")
    page.click("#comments button:has-text('Comment')")
    page.wait_for_selector("#comments .comment-body:has-text('why this tool?')")
    assert page.evaluate("window.__kept") is True
    assert page.url == url
    assert page.input_value("#comment-body") == ""
    assert Comment.objects.get().author == teammate

    page.fill("#review-labels input[name=name]", "needs-review")
    page.click("#review-labels button:has-text('Label')")
    page.wait_for_selector("#review-labels a.badge-review:has-text('needs-review')")
    assert page.evaluate("window.__kept") is True
    assert list(SessionLabel.objects.values_list("name", flat=True)) == ["needs-review"]

    # Reloaded, the tree row counts the comment and the label is still there.
    page.goto(url)
    assert "1" in page.locator("#tree li[data-id='aaaa0001'] .comment-count").inner_text()
    assert page.locator("#review-labels a.badge-review").count() == 1
