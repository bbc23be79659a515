"""A restricted project never falls open: not when an upload is cut off after its import
committed, not when its last member is deleted."""

from __future__ import annotations

import pytest
from django.contrib.admin.sites import site
from django.test import RequestFactory
from django.urls import reverse

from contextlab.library import views as library_views
from contextlab.library.admin import ProjectMembershipAdmin
from contextlab.library.models import Project, Session
from contextlab.review.models import ProjectMembership
from tests.review.helpers import session_lines, team_session, upload


@pytest.mark.django_db(transaction=True)
def test_an_upload_cut_off_after_its_import_committed_leaves_the_project_owned(
    client, owner, outsider, blob_dir, monkeypatch
):
    """The worker dies (gunicorn's timeout raises SystemExit in the worker) right after the
    import's transaction committed, as it hands the search indexing to the job worker: the
    project already has its owner, so it is not open to everyone, and the owner's re-upload
    still works."""

    def killed(session_id: int) -> None:
        raise SystemExit("worker timeout")

    monkeypatch.setattr(library_views, "enqueue_after_import", killed)
    client.force_login(owner)
    with pytest.raises(SystemExit):
        upload(client, session_lines(session_id="sess-cut-off", cwd="/work/cut-off"))
    session = Session.objects.get(session_id="sess-cut-off")  # the import committed
    membership = ProjectMembership.objects.get(project=session.project)
    assert (membership.user, membership.role) == (owner, "owner")
    assert Project.objects.get(pk=session.project_id).restricted
    assert not Session.objects.visible_to(outsider).exists()
    client.force_login(outsider)
    assert client.get(reverse("inspector:session", args=[session.pk])).status_code == 404
    assert "sess-cut-off" not in client.get(reverse("library:index")).content.decode()

    monkeypatch.undo()
    client.force_login(owner)
    body = upload(client, session_lines(session_id="sess-cut-off", cwd="/work/cut-off"))
    assert "unchanged" in body.content.decode()
    assert client.get(reverse("inspector:session", args=[session.pk])).status_code == 200


@pytest.mark.django_db
def test_deleting_the_only_member_leaves_the_project_closed_to_all_but_superusers(
    client, owner, outsider, tmp_path, blob_dir, django_user_model
):
    session = team_session(tmp_path, owner)
    url = reverse("inspector:session", args=[session.pk])
    owner.delete()  # the account goes, and its membership with it (any path, not only admin)
    assert not ProjectMembership.objects.exists()
    client.force_login(outsider)
    assert client.get(url).status_code == 404
    assert not Session.objects.visible_to(outsider).exists()
    assert not Project.objects.visible_to(outsider).exists()
    admin = django_user_model.objects.create_superuser("admin", password="x")
    client.force_login(admin)
    assert client.get(url).status_code == 200
    # The superuser can give it members again (from the members page).
    members = reverse("review:members", args=[session.project_id])
    client.post(members, {"username": "outsider", "role": "owner"})
    client.force_login(outsider)
    assert client.get(url).status_code == 200


@pytest.mark.django_db
def test_a_member_added_in_the_admin_restricts_the_project_for_good(
    client, owner, outsider, tmp_path, blob_dir, django_user_model
):
    from tests.review.helpers import import_open

    session = import_open(tmp_path, session_id="sess-admin", cwd="/work/admin")
    admin = django_user_model.objects.create_superuser("admin", password="x")
    request = RequestFactory().post("/admin/")
    request.user = admin
    model_admin = ProjectMembershipAdmin(ProjectMembership, site)
    membership = ProjectMembership(project=session.project, user=owner, role="owner")
    model_admin.save_model(request, membership, form=None, change=False)
    model_admin.delete_model(request, membership)  # the admin deletes the only member
    client.force_login(outsider)
    assert client.get(reverse("inspector:session", args=[session.pk])).status_code == 404
