"""Project membership decides who sees what, through every page that names a session."""

from __future__ import annotations

import pytest
from django.urls import reverse

from contextlab.library.models import Project, ProjectMembership, Session
from contextlab.review.models import AuditEvent
from tests.review.helpers import import_open, session_lines, team_session, upload

pytestmark = pytest.mark.django_db


def test_it_shows_open_projects_to_every_signed_in_user(client, outsider, tmp_path, blob_dir):
    session = import_open(tmp_path)
    client.force_login(outsider)
    assert client.get(reverse("inspector:session", args=[session.pk])).status_code == 200
    assert session.session_id in client.get(reverse("library:index")).content.decode()


def test_it_shows_restricted_projects_to_members_only(
    client, owner, teammate, outsider, tmp_path, blob_dir
):
    session = team_session(tmp_path, owner, teammate)
    other = import_open(tmp_path, session_id="sess-open", cwd="/work/open")
    url = reverse("inspector:session", args=[session.pk])
    for user, status in ((owner, 200), (teammate, 200), (outsider, 404)):
        client.force_login(user)
        assert client.get(url).status_code == status, user
        listed = client.get(reverse("library:index")).content.decode()
        assert (session.session_id in listed) == (status == 200)
        assert other.session_id in listed
    assert list(Session.objects.visible_to(outsider)) == [other]
    assert list(Project.objects.visible_to(outsider)) == [other.project]


def test_it_shows_everything_to_superusers(client, owner, tmp_path, blob_dir, django_user_model):
    session = team_session(tmp_path, owner)
    admin = django_user_model.objects.create_superuser("admin", password="x")
    client.force_login(admin)
    assert client.get(reverse("inspector:session", args=[session.pk])).status_code == 200


def test_it_makes_the_uploader_owner_of_a_project_the_upload_creates(
    client, owner, outsider, blob_dir
):
    client.force_login(owner)
    response = upload(client, session_lines())
    assert response.status_code == 200
    session = Session.objects.get(session_id="sess-review-1")
    membership = ProjectMembership.objects.get(project=session.project)
    assert (membership.user, membership.role) == (owner, "owner")
    event = AuditEvent.objects.get(verb="session.upload")
    assert (event.actor, event.session, event.project) == (owner, session, session.project)
    client.force_login(outsider)
    assert client.get(reverse("inspector:session", args=[session.pk])).status_code == 404


def test_it_leaves_an_open_project_open_when_someone_uploads_into_it(
    client, owner, outsider, tmp_path, blob_dir
):
    import_open(tmp_path, session_id="sess-cli")
    client.force_login(owner)
    upload(client, session_lines(session_id="sess-web"))
    assert not ProjectMembership.objects.exists()
    client.force_login(outsider)
    assert Session.objects.visible_to(outsider).count() == 2


def test_it_refuses_uploads_into_a_hidden_session_and_keeps_new_ones_out_of_the_project(
    client, owner, outsider, tmp_path, blob_dir
):
    session = team_session(tmp_path, owner)
    client.force_login(outsider)
    same_session = [
        *session_lines(),
        {
            "type": "message",
            "id": "aaaa0003",
            "parentId": "aaaa0002",
            "timestamp": "2025-01-02T00:00:03.000Z",
            "message": {"role": "user", "content": "sneaky", "timestamp": 1735776003000},
        },
    ]
    body = upload(client, same_session).content.decode()
    assert "cannot be used by you" in body
    refused_session = body[body.index("refused") :][:200]
    assert "member of" not in refused_session
    # A new session from the same folder goes into a project of the uploader's own, never into
    # the team's (README, "Reviewing as a team").
    body = upload(client, session_lines(session_id="sess-new-in-their-project")).content.decode()
    assert "refused" not in body
    theirs = Session.objects.get(session_id="sess-new-in-their-project").project
    assert theirs != session.project and theirs.cwd == session.project.cwd
    assert list(theirs.memberships.values_list("user", flat=True)) == [outsider.pk]
    session.refresh_from_db()
    assert session.entry_count == 2
    assert list(session.project.sessions.all()) == [session]


def test_it_lets_an_owner_add_and_remove_teammates_without_javascript(
    client, owner, teammate, tmp_path, blob_dir
):
    session = team_session(tmp_path, owner)
    url = reverse("inspector:session", args=[session.pk])
    client.force_login(teammate)
    assert client.get(url).status_code == 404
    client.force_login(owner)
    members_url = reverse("review:members", args=[session.project.pk])
    response = client.post(members_url, {"username": "teammate", "role": "member"}, follow=True)
    assert "teammate added." in response.content.decode()
    membership = ProjectMembership.objects.get(user=teammate)
    assert membership.added_by == owner
    client.force_login(teammate)
    assert client.get(url).status_code == 200
    # A member sees the page but may not manage it.
    page = client.get(members_url)
    assert page.status_code == 200 and "Add member" not in page.content.decode()
    assert client.post(members_url, {"username": "owner", "role": "owner"}).status_code == 403
    client.force_login(owner)
    remove = reverse("review:member_remove", args=[session.project.pk, membership.pk])
    client.post(remove)
    client.force_login(teammate)
    assert client.get(url).status_code == 404
    verbs = list(AuditEvent.objects.order_by("id").values_list("verb", "target"))
    assert verbs == [("membership.add", "teammate as member"), ("membership.remove", "teammate")]


def test_it_reports_unknown_usernames_and_keeps_the_last_owner(client, owner, tmp_path, blob_dir):
    session = team_session(tmp_path, owner)
    client.force_login(owner)
    members_url = reverse("review:members", args=[session.project.pk])
    body = client.post(members_url, {"username": "nobody"}, follow=True).content.decode()
    assert "No user named" in body
    membership = ProjectMembership.objects.get(user=owner)
    remove = reverse("review:member_remove", args=[session.project.pk, membership.pk])
    body = client.post(remove, follow=True).content.decode()
    assert "at least one owner" in body
    demote = {"username": "owner", "role": "member"}
    body = client.post(members_url, demote, follow=True).content.decode()
    assert "at least one owner" in body
    assert ProjectMembership.objects.get(user=owner).role == "owner"


def test_it_hides_the_members_page_from_outsiders_and_needs_post_and_csrf(
    client, owner, outsider, tmp_path, blob_dir
):
    session = team_session(tmp_path, owner)
    membership = ProjectMembership.objects.get(user=owner)
    client.force_login(outsider)
    assert client.get(reverse("review:members", args=[session.project.pk])).status_code == 404
    remove = reverse("review:member_remove", args=[session.project.pk, membership.pk])
    assert client.post(remove).status_code == 404
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(owner)
    assert strict.post(remove).status_code == 403
    assert strict.get(remove).status_code == 405


def test_it_keeps_a_project_that_holds_no_session_visible_by_the_membership_rule(
    client, owner, outsider, tmp_path, blob_dir
):
    session = team_session(tmp_path, owner)
    project = session.project
    session.delete()
    members_url = reverse("review:members", args=[project.pk])
    profile_url = reverse("inspector:profile", args=[project.pk])
    client.force_login(outsider)
    assert client.get(members_url).status_code == 404
    assert client.post(profile_url, {"next": "/"}).status_code == 404
    client.force_login(owner)
    assert client.get(members_url).status_code == 200
    assert client.post(profile_url, {"next": "/"}).status_code == 302
    ProjectMembership.objects.filter(project=project).delete()  # closed, not open
    client.force_login(outsider)
    assert client.get(members_url).status_code == 404


def test_it_answers_404_to_outsiders_on_every_jobs_and_review_url(
    client, owner, teammate, outsider, import_corpus, offline_provider
):
    from contextlab.jobs import services as job_services
    from contextlab.review.models import Comment

    session, _ = import_corpus("tools")
    ProjectMembership.objects.create(project=session.project, user=owner, role="owner")
    ProjectMembership.objects.create(project=session.project, user=teammate)
    job = job_services.job_create(session=session, kind="compaction", enqueue=False)
    comment = Comment.objects.create(
        session=session, entry_id=session.leaf_entry_id, author=owner, body="x"
    )
    gets = [
        reverse("jobs:list", args=[session.pk]),
        reverse("jobs:export", args=[session.pk]),
        reverse("jobs:compact", args=[session.pk]),
        reverse("jobs:continue", args=[session.pk]),
        reverse("jobs:what_if", args=[session.pk]),
        reverse("jobs:detail", args=[job.pk]),
        reverse("review:members", args=[session.project.pk]),
        reverse("review:project_audit", args=[session.project.pk]),
        reverse("review:session_audit", args=[session.pk]),
    ]
    posts = [
        reverse("jobs:cancel", args=[job.pk]),
        reverse("jobs:retry", args=[job.pk]),
        reverse("review:comment_create", args=[session.pk]),
        reverse("review:comment_edit", args=[comment.pk]),
        reverse("review:comment_delete", args=[comment.pk]),
        reverse("review:label_add", args=[session.pk]),
        reverse("review:label_remove", args=[session.pk]),
    ]
    client.force_login(outsider)
    for url in gets:
        assert client.get(url).status_code == 404, url
    for url in posts:
        assert client.post(url, {"entry": session.leaf_entry_id, "name": "x"}).status_code == 404
    client.force_login(teammate)
    for url in gets:
        assert client.get(url).status_code == 200, url
    job.refresh_from_db()
    assert job.status == "queued"
    assert Comment.objects.count() == 1


def test_an_open_projects_first_member_must_be_an_owner(
    client, teammate, tmp_path, blob_dir, django_user_model
):
    """Restricting an open project by adding a plain member would leave nobody who manages its
    members: it is refused with the reason, and the project stays open; an owner first works."""
    session = import_open(tmp_path)
    admin = django_user_model.objects.create_superuser("admin", password="x")
    client.force_login(admin)
    members_url = reverse("review:members", args=[session.project.pk])
    body = client.post(
        members_url, {"username": "teammate", "role": "member"}, follow=True
    ).content.decode()
    assert "first member must be an owner" in body
    project = Project.objects.get(pk=session.project_id)
    assert not project.restricted and not project.memberships.exists()
    assert not AuditEvent.objects.filter(verb__startswith="membership.").exists()
    client.post(members_url, {"username": "teammate", "role": "owner"})
    client.post(members_url, {"username": "admin", "role": "member"})
    roles = dict(project.memberships.values_list("user__username", "role"))
    assert roles == {"teammate": "owner", "admin": "member"}
    assert Project.objects.get(pk=session.project_id).restricted


def test_the_admin_refuses_a_membership_that_leaves_a_project_without_owner(
    client, owner, teammate, tmp_path, blob_dir, django_user_model
):
    open_session = import_open(tmp_path, session_id="sess-open", cwd="/work/open")
    team = team_session(tmp_path, owner)
    admin = django_user_model.objects.create_superuser("admin", password="x")
    client.force_login(admin)
    add_url = reverse("admin:library_projectmembership_add")
    plain = {"project": open_session.project_id, "user": teammate.pk, "role": "member"}
    response = client.post(add_url, plain)
    assert response.status_code == 200  # the form again, with the reason
    assert "first member must be an owner" in response.content.decode()
    assert not Project.objects.get(pk=open_session.project_id).restricted
    assert not ProjectMembership.objects.filter(project=open_session.project_id).exists()
    # Demoting the only owner in the admin is refused as on the members page.
    membership = ProjectMembership.objects.get(user=owner)
    change_url = reverse("admin:library_projectmembership_change", args=[membership.pk])
    demote = {"project": team.project_id, "user": owner.pk, "role": "member"}
    response = client.post(change_url, demote)
    assert response.status_code == 200 and "at least one owner" in response.content.decode()
    assert ProjectMembership.objects.get(user=owner).role == "owner"
    # An owner first is accepted (and restricts the project).
    response = client.post(add_url, {**plain, "role": "owner"})
    assert response.status_code == 302
    assert Project.objects.get(pk=open_session.project_id).restricted
