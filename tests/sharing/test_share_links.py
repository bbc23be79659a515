"""Share links: work signed out, stop after expiry or revocation, open nothing else, audited."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from contextlab.library.models import Entry
from contextlab.review.models import AuditEvent, ProjectMembership
from contextlab.sharing.models import ShareLink
from contextlab.sharing.services import share_token

pytestmark = pytest.mark.django_db


@pytest.fixture
def restricted(import_corpus, owner):  # type: ignore[no-untyped-def]
    session, _ = import_corpus("branches")
    ProjectMembership.objects.create(
        project=session.project, user=owner, role=ProjectMembership.Role.OWNER
    )
    return session


def create_link(owner_client, session, entry: str = "", days: int = 7) -> ShareLink:
    response = owner_client.post("/shares/", {"session": session.pk, "entry": entry, "days": days})
    assert response.status_code == 302
    return ShareLink.objects.latest("id")


def url(link: ShareLink) -> str:
    return f"/s/{share_token(link)}/"


def test_a_session_link_opens_the_session_signed_out_and_each_use_is_audited(
    owner_client, restricted
):
    link = create_link(owner_client, restricted)
    anonymous = Client()
    page = anonymous.get(url(link))
    assert page.status_code == 200
    html = page.content.decode()
    assert restricted.session_id in html
    assert page.context["inspection"].entry_id == restricted.leaf_entry_id
    assert page["X-Robots-Tag"].startswith("noindex")
    # The session's user messages are listed, each a link within the share link.
    users = Entry.objects.for_session(restricted).filter(type="message", role="user")
    assert [t.id for t in page.context["turns"]] and set(
        t.id for t in page.context["turns"]
    ) == set(users.values_list("entry_id", flat=True))
    assert f"{url(link)}?entry={users[0].entry_id}" in html
    # Any entry of the shared session.
    first = Entry.objects.for_session(restricted).filter(type="message").first()
    assert anonymous.get(url(link), {"entry": first.entry_id}).status_code == 200
    link.refresh_from_db()
    assert link.use_count == 2
    uses = AuditEvent.objects.filter(verb="share.view", session=restricted)
    assert uses.count() == 2
    assert {e.actor_label for e in uses} == {f"share link #{link.pk}"}
    assert AuditEvent.objects.filter(verb="share.create", session=restricted).count() == 1


def test_an_entry_link_opens_that_entry_only(owner_client, restricted):
    entries = list(Entry.objects.for_session(restricted).filter(type="message"))
    link = create_link(owner_client, restricted, entry=entries[2].entry_id)
    anonymous = Client()
    page = anonymous.get(url(link))
    assert page.status_code == 200
    assert page.context["inspection"].entry_id == entries[2].entry_id
    assert page.context["turns"] == []
    assert anonymous.get(url(link), {"entry": entries[2].entry_id}).status_code == 200
    assert anonymous.get(url(link), {"entry": entries[3].entry_id}).status_code == 404


def test_a_link_opens_nothing_else(owner_client, restricted, import_corpus):
    other, _ = import_corpus("tools")
    other_entry = Entry.objects.for_session(other).first()
    link = create_link(owner_client, restricted)
    anonymous = Client()
    assert anonymous.get(url(link)).status_code == 200
    # Another session's entry through this link, the pages, the API: nothing.
    assert anonymous.get(url(link), {"entry": other_entry.entry_id}).status_code == 404
    for path in (f"/sessions/{restricted.pk}/", f"/sessions/{other.pk}/", "/", "/shares/"):
        response = anonymous.get(path)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], path
    assert anonymous.get(f"/api/v1/sessions/{restricted.session_id}").status_code == 401
    token = share_token(link)
    assert (
        anonymous.get(
            f"/api/v1/sessions/{restricted.session_id}", HTTP_AUTHORIZATION=f"Bearer {token}"
        ).status_code
        == 401
    )


def test_a_forged_or_altered_token_is_404(owner_client, restricted):
    link = create_link(owner_client, restricted)
    token = share_token(link)
    anonymous = Client()
    assert anonymous.get(f"/s/{token[:-2]}xx/").status_code == 404
    other = ShareLink.objects.create(
        session=restricted, created_by=link.created_by, nonce="n", expires_at=link.expires_at
    )
    # The signature covers the nonce: a token of one link does not open another.
    body, sig = token.rsplit(":", 1)
    altered = body[:-1] + ("A" if body[-1] != "A" else "B")
    assert anonymous.get(f"/s/{altered}:{sig}/").status_code == 404
    assert anonymous.get(url(other)).status_code == 200


def test_a_link_stops_after_expiry(owner_client, restricted):
    link = create_link(owner_client, restricted, days=1)
    anonymous = Client()
    assert anonymous.get(url(link)).status_code == 200
    ShareLink.objects.filter(pk=link.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    gone = anonymous.get(url(link))
    assert gone.status_code == 410
    assert restricted.session_id not in gone.content.decode()
    assert restricted.title not in gone.content.decode()


def test_the_owner_sees_and_revokes_their_links_and_revoked_links_stop(
    owner_client, restricted, client, outsider
):
    link = create_link(owner_client, restricted)
    listing = owner_client.get("/shares/")
    assert share_token(link) in listing.content.decode()
    anonymous = Client()
    assert anonymous.get(url(link)).status_code == 200

    other_user = Client()
    other_user.force_login(outsider)
    assert other_user.post(f"/shares/{link.pk}/revoke/").status_code == 404
    assert share_token(link) not in other_user.get("/shares/").content.decode()
    # Nor can an outsider share a session they do not see.
    assert other_user.post("/shares/", {"session": restricted.pk, "days": 1}).status_code == 404

    assert owner_client.post(f"/shares/{link.pk}/revoke/").status_code == 302
    assert anonymous.get(url(link)).status_code == 410
    assert AuditEvent.objects.filter(verb="share.revoke", session=restricted).count() == 1


def test_a_link_to_an_entry_that_is_not_in_the_session_is_refused(owner_client, restricted):
    response = owner_client.post("/shares/", {"session": restricted.pk, "entry": "nope", "days": 7})
    assert response.status_code == 302
    assert not ShareLink.objects.exists()
    response = owner_client.post("/shares/", {"session": restricted.pk, "days": 400})
    assert not ShareLink.objects.exists()


def test_the_shared_page_numbers_each_message_once_and_shows_the_system_prompt(
    owner_client, restricted
):
    link = create_link(owner_client, restricted)
    html = Client().get(url(link)).content.decode()
    # The messages list carries its own "1. user" numbers: not also an <ol>'s markers.
    assert '<ol class="messages"' not in html
    assert '<div class="messages" id="shared-messages"' in html
    assert re.search(r'<span class="msg-role">1\. ', html)
    # The system prompt, layer by layer, reachable from the top of the page.
    assert '<a href="#shared-prompt">System prompt' in html
    assert '<h2 id="shared-prompt">System prompt</h2>' in html
    assert 'data-layer="identity"' in html or "data-layer=" in html
