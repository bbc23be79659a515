"""What a share link opens beyond its page: the whole of a long message, within the link only;
and when it stops: its creator no longer sees the session. Every refused use is recorded, and
says nothing about what the link named."""

from __future__ import annotations

import io
import logging
import re
import uuid
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from contextlab.inspector import selectors
from contextlab.library.importer import import_session_file
from contextlab.library.models import Session
from contextlab.review.models import AuditEvent, ProjectMembership
from contextlab.sharing.models import ShareLink
from contextlab.sharing.services import share_token
from tests.library.conftest import chain, header, lines, message

pytestmark = pytest.mark.django_db

BIG = 30_000
SHOWN = 5_000


@pytest.fixture(autouse=True)
def _small_render_budget(settings, blob_dir):  # type: ignore[no-untyped-def]
    settings.CONTEXTLAB_MESSAGE_RENDER_CHARS = SHOWN
    selectors.clear_cache()
    yield
    selectors.clear_cache()


@pytest.fixture
def session(owner) -> Session:  # type: ignore[no-untyped-def]
    """A restricted project's session: e0000000 … e0000003, then a huge tool result `big00001`,
    then two more messages; `owner` is the project's owner."""
    big = message("big00001", "e0000003", "toolResult", "é" * BIG, toolName="read")
    after = chain(2, start=10, parent="big00001")
    data = lines(header(id=str(uuid.uuid4())), *chain(4), big, *after)
    result = import_session_file(fileobj=io.BytesIO(data), name=f"{uuid.uuid4()}.jsonl")
    assert result.session is not None
    ProjectMembership.objects.create(
        project=result.session.project, user=owner, role=ProjectMembership.Role.OWNER
    )
    return result.session


def create_link(owner_client, session, entry: str = "") -> ShareLink:  # type: ignore[no-untyped-def]
    response = owner_client.post("/shares/", {"session": session.pk, "entry": entry, "days": 7})
    assert response.status_code == 302
    return ShareLink.objects.latest("id")


def links_in_main(html: str) -> list[str]:
    main = html[html.index("<main") : html.index("</main>")]
    # In-page anchors (#shared-prompt) lead nowhere else.
    hrefs = re.findall(r'href="([^"#][^"]*)"', main)
    return [href.replace("&amp;", "&") for href in hrefs]


def test_show_all_of_a_long_message_in_a_shared_page_stays_within_the_link(owner_client, session):
    link = create_link(owner_client, session)
    base = f"/s/{share_token(link)}/"
    anonymous = Client()
    page = anonymous.get(base, {"entry": "e0000011"}).content.decode()
    assert f"{BIG - SHOWN} more characters not shown" in page
    assert "é" * (SHOWN + 1) not in page
    hrefs = links_in_main(page)
    assert hrefs and all(href.startswith(base) for href in hrefs), [
        h for h in hrefs if not h.startswith(base)
    ]
    show_all = [h for h in hrefs if h.startswith(f"{base}message/")]
    assert len(show_all) == 1
    full = anonymous.get(show_all[0])
    assert full.status_code == 200
    html = full.content.decode()
    assert "é" * BIG in html
    assert full["X-Robots-Tag"].startswith("noindex") and full["Cache-Control"].startswith(
        "private"
    )
    assert all(href.startswith(base) for href in links_in_main(html))
    assert f'href="{base}?entry=e0000011"' in html, "back to the context it came from"
    use = AuditEvent.objects.filter(verb="share.view", session=session).first()
    assert use is not None and use.target == "message of entry big00001 in full"


def test_the_inspector_keeps_its_own_show_all_and_raw_entry_links(owner_client, session):
    page = owner_client.get(f"/sessions/{session.pk}/?entry=e0000011").content.decode()
    assert f"/sessions/{session.pk}/message/?entry=big00001&amp;all=1" in page
    assert "tab=json" in page


def test_an_entry_link_shows_in_full_only_the_messages_sent_with_its_entry(owner_client, session):
    link = create_link(owner_client, session, entry="e0000010")
    anonymous = Client()
    url = f"/s/{share_token(link)}/message/"
    inside = anonymous.get(url, {"entry": "big00001"})
    assert inside.status_code == 200 and "é" * BIG in inside.content.decode()
    # e0000011 answers after the shared entry: not part of what it shares.
    assert anonymous.get(url, {"entry": "e0000011"}).status_code == 404
    assert anonymous.get(url, {"entry": "nope"}).status_code == 404
    refused = AuditEvent.objects.filter(verb="share.refused", session=session)
    assert sorted(e.data["reason"] for e in refused) == [
        "a message not in the session",
        "a message this link does not open",
    ]


def test_a_session_link_shows_no_message_of_another_session(owner_client, session, owner):
    data = lines(header(id=str(uuid.uuid4()), cwd="/elsewhere"), *chain(2, start=50))
    other = import_session_file(fileobj=io.BytesIO(data), name="other.jsonl").session
    assert other is not None
    link = create_link(owner_client, session)
    url = f"/s/{share_token(link)}/message/"
    assert Client().get(url, {"entry": "e0000050"}).status_code == 404


def test_a_link_stops_when_its_creator_no_longer_sees_the_session(session, teammate):
    """A member shares a session, then leaves the project (or their account is deactivated):
    the link shares only what its creator may see, for as long as they may see it."""
    member = ProjectMembership.objects.create(
        project=session.project, user=teammate, role=ProjectMembership.Role.MEMBER
    )
    creator = Client()
    creator.force_login(teammate)
    link = create_link(creator, session)
    url = f"/s/{share_token(link)}/"
    anonymous = Client()
    assert anonymous.get(url).status_code == 200
    assert anonymous.get(f"{url}message/", {"entry": "big00001"}).status_code == 200

    member.delete()
    gone = anonymous.get(url)
    assert gone.status_code == 410
    assert session.session_id not in gone.content.decode()
    assert session.title not in gone.content.decode()
    assert anonymous.get(f"{url}message/", {"entry": "big00001"}).status_code == 410
    # The creator's list keeps the row (to revoke it), stopped, without the session's title.
    page = creator.get("/shares/").content.decode()
    listing = page[page.index('id="share-links"') :]
    assert "stopped: you no longer see its session" in listing
    assert share_token(link) not in listing and session.title not in listing

    ProjectMembership.objects.create(
        project=session.project, user=teammate, role=ProjectMembership.Role.MEMBER
    )
    assert anonymous.get(url).status_code == 200, "back with the access"
    teammate.is_active = False
    teammate.save()
    assert anonymous.get(url).status_code == 410, "a deactivated creator shares nothing"
    reasons = AuditEvent.objects.filter(verb="share.refused", session=session)
    assert [e.data["reason"] for e in reasons] == ["withdrawn"] * 3


def test_refused_uses_are_recorded_without_revealing_what_the_link_named(
    owner_client, session, caplog
):
    link = create_link(owner_client, session)
    token = share_token(link)
    anonymous = Client()
    caplog.set_level(logging.INFO)

    forged = f"{token[:-3]}xyz"
    response = anonymous.get(f"/s/{forged}/")
    assert response.status_code == 404
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [
        "share link refused (no such link) from 127.0.0.1"
    ]
    assert not AuditEvent.objects.filter(verb="share.refused").exists()

    ShareLink.objects.filter(pk=link.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    expired = anonymous.get(f"/s/{token}/", HTTP_USER_AGENT="curl/8")
    ShareLink.objects.filter(pk=link.pk).update(revoked_at=timezone.now())
    revoked = anonymous.get(f"/s/{token}/message/", {"entry": "big00001"})
    assert (expired.status_code, revoked.status_code) == (410, 410)
    for response in (expired, revoked):
        html = response.content.decode()
        assert session.session_id not in html and session.title not in html
        assert "big00001" not in html
    events = list(AuditEvent.objects.filter(verb="share.refused", session=session))
    assert {e.data["reason"] for e in events} == {"expired", "revoked"}
    assert {e.actor_label for e in events} == {f"share link #{link.pk}"}
    assert any(e.data.get("user_agent") == "curl/8" for e in events)
    # Nor does any log line (Django's own "Not Found: <path>" included) hold a token.
    messages = [r.getMessage() for r in caplog.records]
    assert messages and all(token not in m and forged not in m for m in messages), messages
    link.refresh_from_db()
    assert link.use_count == 0, "a refused use is not a use"
