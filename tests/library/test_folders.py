"""A folder names a place, not an owner: no import, upload or push puts a session into a project
whose members do not include its author. One folder has one shared project (sessions imported by
a command) and one project per user whose upload or push started one there."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from contextlab.api.services import api_token_create
from contextlab.library.models import Project, ProjectMembership, Session
from tests.api.conftest import Api
from tests.library.conftest import header, lines, message

pytestmark = pytest.mark.django_db

FOLDER = "/home/team/app"


def session_file(session_id: str, *, text: str = "hello") -> bytes:
    return lines(
        header(id=session_id, cwd=FOLDER), message(f"{session_id[:4]}0001", None, "user", text)
    )


def header_only(session_id: str) -> bytes:
    return lines(header(id=session_id, cwd=FOLDER))


def upload(client, user, data: bytes):  # type: ignore[no-untyped-def]
    client.force_login(user)
    handle = io.BytesIO(data)
    handle.name = "s.jsonl"
    return client.post(reverse("library:upload"), {"files": [handle]}, follow=True)


def assert_every_author_is_a_member() -> None:
    for session in Session.objects.select_related("project"):
        members = set(session.project.memberships.values_list("user_id", flat=True))
        if members:
            assert session.imported_by_id in members, (session.session_id, members)
        else:
            assert not session.project.restricted


def test_a_command_import_from_a_folder_someone_pushed_first_stays_out_of_their_project(
    client, owner, teammate, tmp_path
) -> None:
    alice = Api(client, api_token_create(user=owner)[1])
    assert alice.push("aaaa-first", 0, header_only("aaaa-first")).status_code == 200
    hers = Session.objects.get(session_id="aaaa-first").project
    assert hers.restricted and hers.created_by == owner

    path = tmp_path / "bob.jsonl"
    path.write_bytes(session_file("bbbb-command"))
    out = io.StringIO()
    call_command("import_sessions", str(path), "--json", stdout=out, stderr=io.StringIO())
    assert json.loads(out.getvalue())["files"][0]["status"] == "new"

    imported = Session.objects.get(session_id="bbbb-command")
    assert imported.project != hers and imported.project.cwd == FOLDER
    assert imported.project.created_by is None and not imported.project.restricted
    assert list(hers.sessions.values_list("session_id", flat=True)) == ["aaaa-first"]
    bob = Api(client, api_token_create(user=teammate)[1])
    assert bob.get("/sessions/bbbb-command").status_code == 200  # open: he sees it
    assert bob.get("/sessions/aaaa-first").status_code == 404
    assert_every_author_is_a_member()


def test_an_upload_from_a_folder_another_team_started_goes_into_the_uploaders_own_project(
    client, owner, teammate
) -> None:
    assert upload(client, owner, session_file("aaaa-upload")).status_code == 200
    hers = Session.objects.get(session_id="aaaa-upload").project

    page = upload(client, teammate, session_file("bbbb-upload"))
    assert "s.jsonl: new" in page.content.decode()
    his = Session.objects.get(session_id="bbbb-upload").project
    assert his != hers and his.cwd == hers.cwd == FOLDER
    assert his.restricted and his.created_by == teammate
    assert list(his.memberships.values_list("user__username", "role")) == [
        (teammate.username, "owner")
    ]
    assert set(Project.objects.visible_to(teammate)) == {his}
    assert set(Project.objects.visible_to(owner)) == {hers}
    # Both go on syncing their own sessions.
    assert upload(client, owner, session_file("aaaa-upload", text="more")).status_code == 200
    assert_every_author_is_a_member()


def test_a_members_push_from_the_folder_joins_the_teams_project(client, owner, teammate) -> None:
    alice = Api(client, api_token_create(user=owner)[1])
    alice.push("aaaa-team", 0, session_file("aaaa-team"))
    hers = Session.objects.get(session_id="aaaa-team").project
    ProjectMembership.objects.create(project=hers, user=teammate)
    bob = Api(client, api_token_create(user=teammate)[1])
    assert bob.push("bbbb-team", 0, session_file("bbbb-team")).json()["status"] == "new"
    assert Session.objects.get(session_id="bbbb-team").project == hers
    assert Project.objects.count() == 1
    assert_every_author_is_a_member()


def test_a_push_from_a_folder_with_an_open_project_joins_it_and_leaves_it_open(
    client, owner, tmp_path
) -> None:
    path = tmp_path / "shared.jsonl"
    path.write_bytes(session_file("cccc-shared"))
    call_command("import_sessions", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    shared = Session.objects.get(session_id="cccc-shared").project
    alice = Api(client, api_token_create(user=owner)[1])
    assert alice.push("aaaa-open", 0, session_file("aaaa-open")).status_code == 200
    assert Session.objects.get(session_id="aaaa-open").project == shared
    shared.refresh_from_db()
    assert not shared.restricted and not shared.memberships.exists()
    assert_every_author_is_a_member()


def test_a_user_removed_from_their_own_folder_project_is_refused_a_new_session_there(
    client, owner, teammate
) -> None:
    upload(client, owner, session_file("aaaa-removed"))
    hers = Session.objects.get(session_id="aaaa-removed").project
    ProjectMembership.objects.create(project=hers, user=teammate, role="owner")
    ProjectMembership.objects.filter(project=hers, user=owner).delete()
    page = upload(client, owner, session_file("aaaa-later"))
    assert "you were removed from your project for this folder" in page.content.decode()
    assert not Session.objects.filter(session_id="aaaa-later").exists()
