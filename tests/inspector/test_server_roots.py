"""Server files are read only under CONTEXTLAB_SERVER_ROOTS: a session's
cwd, the default agent dir and a resource profile's agent dir outside the roots read nothing,
symlinks and ".." are resolved first, no answer tells which server paths exist, and only owners
edit a project's resource profile, every edit audited."""

from __future__ import annotations

import json
import os

import pytest
from django.urls import reverse

from contextlab.api.services import api_token_create
from contextlab.inspector.models import ResourceProfile
from contextlab.inspector.roots import RootedFileSystem
from contextlab.inspector.selectors import clear_cache
from contextlab.review.models import AuditEvent, ProjectMembership
from tests.review.helpers import import_open

pytestmark = pytest.mark.django_db

SECRET_RULES = "operator-only rules: the deploy key is in /srv"
TEAM_RULES = "another team's checkout rules"


@pytest.fixture
def server(tmp_path, settings, blob_dir):
    """An operator's agent dir and another team's checkout on this server, each with files."""
    clear_cache()
    agent = tmp_path / "operator" / ".pi" / "agent"
    (agent / "skills" / "deploy").mkdir(parents=True)
    (agent / "AGENTS.md").write_text(f"# {SECRET_RULES}\n")
    (agent / "SYSTEM.md").write_text("operator system prompt\n")
    (agent / "skills" / "deploy" / "SKILL.md").write_text(
        "---\nname: deploy\ndescription: operator deploy skill\n---\nbody\n"
    )
    team = tmp_path / "team-b" / "checkout"
    team.mkdir(parents=True)
    (team / "AGENTS.md").write_text(f"# {TEAM_RULES}\n")
    settings.PI_AGENT_DIR = str(agent)
    settings.CONTEXTLAB_SERVER_ROOTS = []
    return {"agent": agent, "team": team, "tmp": tmp_path}


def _prompt(client, session) -> str:
    url = reverse("inspector:session", args=[session.pk])
    response = client.get(url, {"entry": "aaaa0002", "tab": "prompt"})
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize("cwd", ["/", "team"])
def test_a_session_cwd_outside_the_roots_reads_nothing_from_the_server(
    client, outsider, tmp_path, server, cwd
):
    cwd = str(server["team"]) if cwd == "team" else cwd
    session = import_open(tmp_path, session_id="sess-probe", cwd=cwd)
    client.force_login(outsider)
    body = _prompt(client, session)
    for secret in (SECRET_RULES, "operator system prompt", "operator deploy skill", TEAM_RULES):
        assert secret not in body
    assert "not under a folder this server reads" in body


@pytest.mark.parametrize("cwd", ["agent", "team"])
def test_the_api_context_reads_no_server_file_outside_the_roots(
    client, outsider, tmp_path, server, settings, cwd
):
    cwd = str(server["team"]) if cwd == "team" else str(server["agent"])
    session = import_open(tmp_path, session_id="sess-api-probe", cwd=cwd)
    token = api_token_create(user=outsider)[1]
    url = f"/api/v1/sessions/{session.session_id}/context"

    def prompt() -> str:
        response = client.get(url, HTTP_AUTHORIZATION=f"Bearer {token}")
        assert response.status_code == 200
        # Streamed (contextlab.api: the answer is written a message at a time).
        return str(json.loads(b"".join(response.streaming_content))["systemPrompt"])

    for secret in (SECRET_RULES, "operator system prompt", "operator deploy skill", TEAM_RULES):
        assert secret not in prompt()
    settings.CONTEXTLAB_SERVER_ROOTS = [str(server["tmp"])]
    expected = SECRET_RULES if cwd == str(server["agent"]) else TEAM_RULES
    assert expected in prompt()


def test_the_answer_is_the_same_for_an_existing_and_a_missing_folder(
    client, outsider, tmp_path, server
):
    existing = import_open(tmp_path, session_id="sess-a", cwd=str(server["team"]))
    missing = import_open(tmp_path, session_id="sess-b", cwd=str(server["tmp"] / "no-such"))
    client.force_login(outsider)

    def note(session, cwd: str) -> str:
        body = _prompt(client, session)
        start = body.index("This session ran in")
        return body[start : body.index("</li>", start)].replace(cwd, "CWD")

    assert note(existing, str(server["team"])) == note(missing, str(server["tmp"] / "no-such"))


def test_inside_the_roots_it_reads_but_symlinks_and_dotdot_do_not_escape(
    client, outsider, tmp_path, server, settings
):
    allowed = tmp_path / "allowed"
    project = allowed / "proj"
    project.mkdir(parents=True)
    (project / "AGENTS.md").write_text("# allowed project rules\n")
    settings.CONTEXTLAB_SERVER_ROOTS = [str(allowed)]
    session = import_open(tmp_path, session_id="sess-in", cwd=str(project))
    client.force_login(outsider)
    body = _prompt(client, session)
    assert "allowed project rules" in body
    assert SECRET_RULES not in body  # the default agent dir is outside the roots

    # A symlink under the root pointing at the other team's checkout, and a "..": outside.
    (allowed / "link").symlink_to(server["team"], target_is_directory=True)
    for sid, cwd in (
        ("sess-link", str(allowed / "link")),
        ("sess-dotdot", f"{allowed}/../team-b/checkout"),
    ):
        clear_cache()
        body = _prompt(client, import_open(tmp_path, session_id=sid, cwd=cwd))
        assert TEAM_RULES not in body and "not under a folder this server reads" in body

    # A file symlinked out of the root from inside an allowed folder is not read either.
    (project / "AGENTS.md").unlink()
    (project / "AGENTS.md").symlink_to(server["agent"] / "AGENTS.md")
    clear_cache()
    assert SECRET_RULES not in _prompt(client, session)
    fs = RootedFileSystem([os.path.realpath(allowed)])
    assert not fs.exists(str(project / "AGENTS.md"))
    assert fs.is_dir(str(project)) and not fs.is_dir(str(allowed / "link"))


def test_a_profile_agent_dir_outside_the_roots_is_refused_alike_whether_it_exists_or_not(
    client, owner, tmp_path, server, settings
):
    session = import_open(tmp_path, session_id="sess-prof", cwd="/work/prof")
    ProjectMembership.objects.create(project=session.project, user=owner, role="owner")
    client.force_login(owner)
    url = reverse("inspector:profile", args=[session.project.pk])
    answers = []
    for agent_dir in (str(server["agent"]), str(server["tmp"] / "missing" / "agent")):
        response = client.post(url, {"agent_dir": agent_dir, "next": "/"}, follow=True)
        body = response.content.decode()
        assert "under a folder this server reads" in body
        answers.append(body.replace(agent_dir, "DIR"))
    assert not ResourceProfile.objects.exists()
    assert answers[0].count("under a folder") == answers[1].count("under a folder")

    settings.CONTEXTLAB_SERVER_ROOTS = [str(server["agent"])]
    client.post(url, {"agent_dir": str(server["agent"]), "next": "/"})
    assert ResourceProfile.objects.get().agent_dir == str(server["agent"])
    clear_cache()
    assert SECRET_RULES in _prompt(client, session)


def test_only_owners_edit_a_resource_profile_and_every_edit_is_audited(
    client, owner, teammate, tmp_path, server
):
    session = import_open(tmp_path, session_id="sess-own", cwd="/work/own")
    ProjectMembership.objects.create(project=session.project, user=owner, role="owner")
    ProjectMembership.objects.create(project=session.project, user=teammate)
    url = reverse("inspector:profile", args=[session.project.pk])
    client.force_login(teammate)
    assert client.post(url, {"tools_text": "read", "next": "/"}).status_code == 403
    assert "Save profile" not in _prompt(client, session)
    assert not ResourceProfile.objects.exists()
    client.force_login(owner)
    assert "Save profile" in _prompt(client, session)
    client.post(url, {"tools_text": "read, bash", "next": "/"})
    client.post(url, {"tools_text": "read", "trust": "no", "next": "/"})
    events = AuditEvent.objects.filter(verb="profile.update").order_by("id")
    assert [(e.actor, e.project_id, e.data["tools"]) for e in events] == [
        (owner, session.project_id, ["read", "bash"]),
        (owner, session.project_id, ["read"]),
    ]
    assert events[1].data["project_trusted"] is False
