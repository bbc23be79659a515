"""What a turn renders, computed once for every web process and validated: a message body, the
"show more" pages and the chart kept per (revision, entry, inputs) in the shared cache, and a
repeat answered 304."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from contextlab.inspector import services, views
from contextlab.inspector.models import ResourceProfile
from contextlab.inspector.selectors import clear_cache
from contextlab.library.importer import import_session_file
from contextlab.review.models import ProjectMembership
from tests.inspector.sessions import (
    append_lines,
    linear_session_lines,
    second_turn_lines,
    write_session,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def rich(tmp_path, blob_dir):
    clear_cache()
    return import_session_file(path=write_session(tmp_path)).session


def _not_again(name):
    def computed_again(*args, **kwargs):
        raise AssertionError(f"{name} was computed again")

    return computed_again


def test_a_repeat_message_body_answers_304_and_another_leaf_is_another_body(owner_client, rich):
    url = reverse("inspector:message", args=[rich.pk])
    first = owner_client.get(url, {"entry": "u0000004", "leaf": "a0000005"})
    assert first.status_code == 200 and "And now?" in first.content.decode()
    assert first["ETag"] and "no-cache" in first["Cache-Control"]
    again = owner_client.get(
        url, {"entry": "u0000004", "leaf": "a0000005"}, HTTP_IF_NONE_MATCH=first["ETag"]
    )
    assert again.status_code == 304
    whole = owner_client.get(
        url, {"entry": "u0000004", "leaf": "a0000005", "all": "1"}, HTTP_IF_NONE_MATCH=first["ETag"]
    )
    assert whole.status_code == 200 and whole["ETag"] != first["ETag"]


def test_a_message_body_is_computed_once_then_read_by_any_process(owner_client, rich, monkeypatch):
    url = reverse("inspector:message", args=[rich.pk])
    first = owner_client.get(url, {"entry": "r0000001", "leaf": "a0000002"}).content.decode()
    assert "window.__xss" in first and "<script>" not in first.replace("&lt;script&gt;", "")
    clear_cache()  # nothing left in this process: the index, the projection
    monkeypatch.setattr(services, "message_blocks", _not_again("the message body"))
    second = owner_client.get(url, {"entry": "r0000001", "leaf": "a0000002"}).content.decode()
    assert second == first


def test_an_unknown_entry_is_a_404_and_nothing_is_kept(owner_client, rich, monkeypatch):
    url = reverse("inspector:message", args=[rich.pk])
    assert owner_client.get(url, {"entry": "nope"}).status_code == 404
    assert owner_client.get(url, {"entry": "nope"}).status_code == 404


def test_a_saved_resource_profile_is_a_new_computation(owner_client, owner, rich, monkeypatch):
    url = reverse("inspector:chart", args=[rich.pk])
    first = owner_client.get(url)
    assert first.status_code == 200
    assert owner_client.get(url, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
    clear_cache()
    monkeypatch.setattr(views, "context_growth", _not_again("the chart"))
    assert owner_client.get(url).status_code == 200  # read from the shared cache
    # The project's profile (dialect, agent dir, files) is an input: saved, the chart is
    # computed again, and a browser holding the old page gets the new one.
    ResourceProfile.objects.create(project=rich.project, dialect="")
    with pytest.raises(AssertionError, match="the chart was computed again"):
        owner_client.get(url, HTTP_IF_NONE_MATCH=first["ETag"])


def test_show_more_pages_answer_304_on_a_repeat(owner_client, tmp_path, blob_dir):
    from tests.inspector.test_compare_bounded import _long_session_lines

    session = import_session_file(
        path=write_session(tmp_path, _long_session_lines(40), name="long.jsonl")
    ).session
    url = reverse("inspector:messages", args=[session.pk])
    first = owner_client.get(url, {"entry": "u0000039", "start": "0"})
    assert first.status_code == 200 and "entry=u0000001" in first.content.decode()
    again = owner_client.get(
        url, {"entry": "u0000039", "start": "0"}, HTTP_IF_NONE_MATCH=first["ETag"]
    )
    assert again.status_code == 304
    later = owner_client.get(url, {"entry": "u0000039", "start": "5"})
    assert later.status_code == 200 and later["ETag"] != first["ETag"]


def test_a_request_export_is_computed_once_and_a_repeat_answers_304(
    owner_client, rich, monkeypatch
):
    url = reverse("inspector:request", args=[rich.pk])
    first = owner_client.get(url, {"entry": "u0000004"})
    assert first.status_code == 200 and first.json()["messages"]
    assert (
        owner_client.get(url, {"entry": "u0000004"}, HTTP_IF_NONE_MATCH=first["ETag"]).status_code
        == 304
    )
    curl = owner_client.get(url, {"entry": "u0000004", "format": "curl"})
    assert curl["ETag"] != first["ETag"] and curl.content.decode().startswith("curl ")
    clear_cache()
    monkeypatch.setattr(views, "provider_request", _not_again("the request body"))
    again = owner_client.get(url, {"entry": "u0000004"})
    assert again.content == first.content
    assert again.get("X-Contextlab-Note") == first.get("X-Contextlab-Note")


# --- the session page's turn (#inspector) --------------------------------------------------

INSPECTOR = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "inspector"}


def _turn(client, session, entry, **headers):  # type: ignore[no-untyped-def]
    url = reverse("inspector:session", args=[session.pk])
    return client.get(url, {"entry": entry}, **INSPECTOR, **headers)


def test_a_repeat_turn_answers_304_and_is_computed_once_for_every_process(
    owner_client, rich, monkeypatch
):
    first = _turn(owner_client, rich, "u0000004")
    assert first.status_code == 200 and 'id="inspector"' in first.content.decode()
    assert first["ETag"] and "no-cache" in first["Cache-Control"]
    assert (
        _turn(owner_client, rich, "u0000004", HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
    )
    other = _turn(owner_client, rich, "a0000005")
    assert other.status_code == 200 and other["ETag"] != first["ETag"]
    clear_cache()  # nothing left in this process: another web process asks
    monkeypatch.setattr(services, "inspect_entry", _not_again("the turn"))
    again = _turn(owner_client, rich, "u0000004")
    assert again.status_code == 200 and again.content == first.content


def test_a_new_comment_is_a_new_turn_and_no_user_sees_anothers(
    owner_client, client, teammate, rich
):
    first = _turn(owner_client, rich, "u0000004")
    posted = owner_client.post(
        reverse("review:comment_create", args=[rich.pk]),
        {"entry": "u0000004", "body": "look at this turn"},
    )
    assert posted.status_code in (200, 302)
    after = _turn(owner_client, rich, "u0000004", HTTP_IF_NONE_MATCH=first["ETag"])
    assert after.status_code == 200 and after["ETag"] != first["ETag"]
    mine = after.content.decode()
    assert "look at this turn" in mine and "delete</button>" in mine  # the author's controls
    # The teammate sees the comment without the author's controls, under an ETag of their own.
    client.force_login(teammate)
    theirs = _turn(client, rich, "u0000004")
    assert theirs.status_code == 200 and theirs["ETag"] != after["ETag"]
    page = theirs.content.decode()
    assert "look at this turn" in page and "delete</button>" not in page
    assert _turn(client, rich, "u0000004", HTTP_IF_NONE_MATCH=after["ETag"]).status_code == 200


def test_a_new_revision_is_a_new_turn(owner_client, tmp_path, blob_dir):
    path = write_session(tmp_path, linear_session_lines("turn-1", "/w", "hello"))
    session = import_session_file(path=path).session
    first = _turn(owner_client, session, "aaaa0002")
    assert first.status_code == 200
    append_lines(path, second_turn_lines())
    assert import_session_file(path=path).status == "appended"
    session.refresh_from_db()
    again = _turn(owner_client, session, "aaaa0002", HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 200 and again["ETag"] != first["ETag"]


def test_a_teammate_opening_a_turn_already_opened_renders_only_their_own_parts(
    owner_client, owner, teammate, rich, monkeypatch
):
    """The turn (crumbs, tabs and summary, the tab's body) is computed once for every user; a
    comment added later is a new page for each user, not a new turn; the prompt tab's profile
    form is each user's own around the prompt computed once."""
    ProjectMembership.objects.create(project=rich.project, user=owner, role="owner")
    ProjectMembership.objects.create(project=rich.project, user=teammate, role="member")
    built: list[str] = []
    inspect = services.inspect_entry

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        built.append(kwargs.get("tab", "context"))
        return inspect(*args, **kwargs)

    monkeypatch.setattr(services, "inspect_entry", counted)
    client = Client()  # a browser of their own (owner_client is the `client` fixture)
    client.force_login(teammate)
    for tab in ("context", "diff", "json", "entry"):
        url = reverse("inspector:session", args=[rich.pk])
        mine = owner_client.get(url, {"entry": "u0000004", "tab": tab}, **INSPECTOR)
        theirs = client.get(url, {"entry": "u0000004", "tab": tab}, **INSPECTOR)
        assert mine.status_code == theirs.status_code == 200
        assert mine["ETag"] != theirs["ETag"]  # each user's own page...
        assert _tab_body(mine.content) == _tab_body(theirs.content)  # ...around one turn
    assert built == ["context", "diff", "json", "entry"]
    owner_client.post(
        reverse("review:comment_create", args=[rich.pk]),
        {"entry": "u0000004", "body": "seen by both"},
    )
    url = reverse("inspector:session", args=[rich.pk])
    for user in (owner_client, client):
        page = user.get(url, {"entry": "u0000004", "tab": "context"}, **INSPECTOR)
        assert "seen by both" in page.content.decode()
    assert built == ["context", "diff", "json", "entry"]  # the comment did not rebuild the turn
    # The prompt tab too: one prompt for both, each with their own part of the profile (the form
    # and its token for the owner, who edits it for the teammate).
    mine, theirs = (
        user.get(url, {"entry": "u0000004", "tab": "prompt"}, **INSPECTOR)
        for user in (owner_client, client)
    )
    assert mine.status_code == theirs.status_code == 200
    assert built[4:] == ["prompt"]
    assert b"Save profile" in mine.content and b"csrfmiddlewaretoken" in mine.content
    assert b"Save profile" not in theirs.content
    assert b"is edited by the project's owners" in theirs.content
    assert b"data-layer=" in mine.content
    assert _prompt_body(mine.content) == _prompt_body(theirs.content)


def _prompt_body(page: bytes) -> bytes:
    """The prompt tab's body without the profile form after it (each user's own)."""
    body = _tab_body(page)
    return body[: body.index(b'<div class="profile-slot"')]


def _tab_body(page: bytes) -> bytes:
    """The inspector part from its tab body on (no CSRF token there: nothing of one user's)."""
    return page[page.index(b'<div class="job-slot"') :]
