"""In a real Chromium against a live server: a share link made on the session page opens signed
out and stops when revoked; an API token made on the tokens page works over real HTTP."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from contextlab.inspector.selectors import clear_cache
from contextlab.review.models import ProjectMembership
from tests.conftest import PASSWORD, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def shared_session(live_server, import_corpus, django_user_model):  # type: ignore[no-untyped-def]
    clear_cache()
    owner = django_user_model.objects.create_user(username="ann", password=PASSWORD)
    session, _ = import_corpus("tools")
    ProjectMembership.objects.create(
        project=session.project, user=owner, role=ProjectMembership.Role.OWNER
    )
    return session


def test_a_share_link_made_in_the_browser_opens_signed_out_until_revoked(
    chromium, page, live_server, shared_session
):
    login(page, live_server.url, "ann")
    page.goto(f"{live_server.url}/sessions/{shared_session.pk}/")
    page.click("text=Share…")
    page.click("#share-form button[type=submit]")
    url = page.locator("#share-links input[readonly]").first.input_value()
    assert url.startswith(live_server.url + "/s/")

    stranger = chromium.new_context()
    try:
        other = stranger.new_page()
        other.goto(url)
        assert other.locator("#shared-messages > .msg-item").count() > 2
        assert shared_session.session_id in other.content()
        other.goto(f"{live_server.url}/sessions/{shared_session.pk}/")
        assert "/accounts/login/" in other.url

        # Revoking asks first: dismissed, the link still opens.
        asked: list[str] = []

        def dismiss(dialog):  # type: ignore[no-untyped-def]
            asked.append(dialog.message)
            dialog.dismiss()

        page.once("dialog", dismiss)
        page.click("#share-links button:has-text('Revoke')")
        page.wait_for_timeout(300)
        assert asked and "Revoke this link?" in asked[0]
        response = other.goto(url)
        assert response is not None and response.status == 200
        page.once("dialog", lambda dialog: dialog.accept())
        page.click("#share-links button:has-text('Revoke')")
        page.wait_for_selector("#share-links td:has-text('revoked')")
        response = other.goto(url)
        assert response is not None and response.status == 410
        assert other.locator("#shared-messages").count() == 0
    finally:
        stranger.close()


def test_a_token_made_on_the_tokens_page_reads_and_pushes_over_http(
    page, live_server, shared_session
):
    login(page, live_server.url, "ann")
    page.goto(f"{live_server.url}/account/api-tokens/")
    page.fill("input[name=name]", "laptop")
    page.click("button:has-text('Create token')")
    token = page.locator("[data-testid=new-token]").inner_text().strip()
    headers = {"Authorization": f"Bearer {token}"}

    sid = shared_session.session_id
    request = urllib.request.Request(f"{live_server.url}/api/v1/sessions/{sid}", headers=headers)
    with urllib.request.urlopen(request) as answer:
        assert json.load(answer)["entryCount"] == shared_session.entry_count

    # Resend from a stale offset over real HTTP: 409 with where to resume.
    push = urllib.request.Request(
        f"{live_server.url}/api/v1/sessions/{sid}/lines?offset=1",
        data=b"{}\n",
        headers={**headers, "Content-Type": "application/x-ndjson"},
        method="POST",
    )
    with pytest.raises(urllib.error.HTTPError) as conflict:
        urllib.request.urlopen(push)
    assert conflict.value.code == 409
    assert json.load(conflict.value)["offset"] == shared_session.size_bytes
