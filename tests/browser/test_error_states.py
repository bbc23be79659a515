"""What the pages say when something is refused or missing, in a real Chromium at a phone's
width and a desktop's: the upload's error states (through the page's own upload script), a
refused retry, and 404 / 403 inside the site layout."""

from __future__ import annotations

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from contextlab.jobs import services
from contextlab.library.models import Session
from tests.conftest import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452") + bytes(range(256)) * 64


def _fits(page) -> None:  # type: ignore[no-untyped-def]
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], f"{page.url} is {width}px wide"


def _upload(page, name: str, mime: str, data: bytes) -> str:  # type: ignore[no-untyped-def]
    page.set_input_files(
        "form.upload input[type=file]", files=[{"name": name, "mimeType": mime, "buffer": data}]
    )
    page.click("form.upload button[type=submit]")
    # The results of this upload (those of the one before name another file).
    page.wait_for_function(
        "name => document.querySelector('#upload-results').textContent.includes(name)", arg=name
    )
    assert page.locator("form.upload .upload-status").inner_text() == "Done."
    return page.locator("#upload-results").inner_text()


def test_the_upload_says_what_went_wrong(wpage, live_server, owner, blob_dir):
    login(wpage, live_server.url, owner.username)
    # No file chosen: said at once, nothing sent.
    wpage.click("form.upload button[type=submit]")
    status = wpage.locator("form.upload .upload-status")
    expect(status).to_contain_text("No file chosen")
    # A picture: one clear error, not one per line.
    results = _upload(wpage, "screenshot.png", "image/png", PNG)
    assert "screenshot.png" in results and results.count("not a text file") == 1
    assert wpage.locator("#upload-results .error").count() == 1
    # A file Pi would reject as a whole: said so, and no session appears in the library.
    results = _upload(wpage, "array.jsonl", "application/jsonl", b"[1,2,3]\n")
    assert "Pi would reject the whole file" in results
    assert Session.objects.count() == 0
    _fits(wpage)
    wpage.reload()
    assert "noheader-" not in wpage.locator("main").inner_text()
    assert "No sessions yet" in wpage.locator("main").inner_text()


def test_404_and_403_are_pages_of_the_site(wpage, live_server, owner):
    login(wpage, live_server.url, owner.username)
    response = wpage.goto(f"{live_server.url}/no/such/page/")
    assert response.status == 404
    assert wpage.locator(".topbar").is_visible()
    assert wpage.locator("h1").inner_text() == "Not found"
    assert "/no/such/page/" in wpage.locator("main").inner_text()
    _fits(wpage)
    response = wpage.goto(f"{live_server.url}{reverse('review:audit')}")
    assert response.status == 403
    assert wpage.locator(".topbar").is_visible()
    assert "The global audit log is for superusers." in wpage.locator("main").inner_text()
    _fits(wpage)
    # The layout's links still work from there.
    wpage.click("main a:has-text('Back to the library')")
    wpage.wait_for_url(f"{live_server.url}/")


def test_a_refused_retry_says_why_where_the_button_was(
    wpage, live_server, owner, import_corpus, offline_provider
):
    session, _ = import_corpus("tools")
    leaf = session.leaf_entry_id
    cancelled = services.job_create(
        session=session, kind="compaction", parameters={"keepRecentTokens": 10}, enqueue=False
    )
    services.job_cancel(job=cancelled)
    other = services.job_create(
        session=session, kind="compaction", parameters={"keepRecentTokens": 10}, enqueue=False
    )
    services.job_execute(job_id=other.pk)
    moved_to = Session.objects.get(pk=session.pk).leaf_entry_id
    login(wpage, live_server.url, owner.username)
    wpage.goto(f"{live_server.url}{reverse('jobs:detail', args=[cancelled.pk])}")
    box = wpage.locator(f"#job-{cancelled.pk}")
    box.locator("button:has-text('Retry')").click()
    refusal = wpage.locator(f"#job-{cancelled.pk} .job-refusal")
    refusal.wait_for()
    assert refusal.get_attribute("role") == "alert"
    text = refusal.inner_text()
    assert text.startswith("Retry refused:") and f"moved from {leaf} to {moved_to}" in text
    assert refusal.is_visible()
    _fits(wpage)
