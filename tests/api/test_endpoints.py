"""The API answers what the pages show, to whom the pages show it (outsiders get 404)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from contextlab.jobs.models import Job
from contextlab.library.models import Entry
from contextlab.library.search import index_revision
from contextlab.library.selectors import engine_entries
from contextlab.pi.session import SessionTree
from contextlab.review.models import AuditEvent, Comment, SessionLabel

pytestmark = pytest.mark.django_db


def test_a_member_lists_projects_and_sessions_with_their_figures(owner_api, team_session):
    projects = owner_api.get("/projects").json()
    assert [(p["id"], p["restricted"], p["role"]) for p in projects] == [
        (team_session.project_id, True, "owner")
    ]
    assert owner_api.get(f"/projects/{team_session.project_id}").json()["cwd"] == (
        team_session.project.cwd
    )
    page = owner_api.get("/sessions").json()
    assert page["count"] == 1
    item = page["items"][0]
    assert item["sessionId"] == team_session.session_id
    assert item["entryCount"] == team_session.entry_count
    assert item["leafEntryId"] == team_session.leaf_entry_id
    detail = owner_api.get(f"/sessions/{team_session.session_id}").json()
    assert detail["header"]["id"] == team_session.session_id
    assert detail["revision"] == 1


def test_session_list_applies_the_library_filters(owner_api, team_session, import_corpus):
    other, _ = import_corpus("tools")  # an open project: the owner sees it too
    assert owner_api.get("/sessions").json()["count"] == 2
    only = owner_api.get("/sessions", project=team_session.project_id).json()
    assert [s["sessionId"] for s in only["items"]] == [team_session.session_id]
    branched = owner_api.get("/sessions", flag="branched").json()["items"]
    assert team_session.session_id in [s["sessionId"] for s in branched]
    SessionLabel.objects.create(session=other, name="bug")
    labelled = owner_api.get("/sessions", reviewLabel="bug").json()
    assert [s["sessionId"] for s in labelled["items"]] == [other.session_id]
    assert labelled["items"][0]["reviewLabels"] == ["bug"]
    assert owner_api.get("/sessions", limit=1).json()["count"] == 2
    assert len(owner_api.get("/sessions", limit=1).json()["items"]) == 1
    assert owner_api.get("/sessions", flag="nonsense").status_code == 422


def test_an_outsider_gets_404_on_every_url_of_a_restricted_session(outsider_api, team_session):
    sid = team_session.session_id
    entry = Entry.objects.for_session(team_session).first()
    assert outsider_api.get("/projects").json() == []
    assert outsider_api.get("/sessions").json() == {"count": 0, "items": []}
    for path in (
        f"/projects/{team_session.project_id}",
        f"/sessions/{sid}",
        f"/sessions/{sid}/history",
        f"/sessions/{sid}/entries",
        f"/sessions/{sid}/entries/{entry.entry_id}",
        f"/sessions/{sid}/context",
        f"/sessions/{sid}/export",
        f"/sessions/{sid}/jobs",
        f"/sessions/{sid}/comments",
        f"/sessions/{sid}/labels",
        f"/sessions/{sid}/lines",
    ):
        response = outsider_api.get(path)
        assert response.status_code == 404, path
        assert sid not in response.content.decode()
    for path, body in (
        (f"/sessions/{sid}/jobs", {"kind": "compaction"}),
        (f"/sessions/{sid}/jobs/preview", {"kind": "compaction"}),
        (f"/sessions/{sid}/comments", {"entryId": entry.entry_id, "body": "hi"}),
        (f"/sessions/{sid}/labels", {"name": "bug"}),
    ):
        assert outsider_api.post(path, body).status_code == 404, path
    assert outsider_api.get("/search", q="the").json() == []
    assert not Comment.objects.exists() and not SessionLabel.objects.exists()
    assert not Job.objects.exists()


def test_entries_page_in_file_order_and_one_entry_by_id(owner_api, team_session):
    sid = team_session.session_id
    stored = list(Entry.objects.for_session(team_session))
    first = owner_api.get(f"/sessions/{sid}/entries", limit=5).json()
    rest = owner_api.get(f"/sessions/{sid}/entries", limit=500, offset=5).json()
    assert first["count"] == len(stored)
    assert [e["entryId"] for e in first["items"] + rest["items"]] == [e.entry_id for e in stored]
    one = owner_api.get(f"/sessions/{sid}/entries/{stored[3].entry_id}").json()
    assert one["data"] == stored[3].data and one["lineNo"] == stored[3].line_no
    assert owner_api.get(f"/sessions/{sid}/entries/nope").status_code == 404


def test_history_lists_the_revisions(owner_api, team_session):
    history = owner_api.get(f"/sessions/{team_session.session_id}/history").json()
    assert [(r["number"], r["current"], r["entries"]) for r in history] == [
        (1, True, team_session.entry_count)
    ]


def test_an_outsider_gets_404_on_a_job_or_a_comment_of_a_restricted_session(
    client, outsider, outsider_api, owner, team_session
):
    job = Job.objects.create(
        kind="compaction", session=team_session, leaf_entry_id=team_session.leaf_entry_id
    )
    comment = Comment.objects.create(
        session=team_session, entry_id=team_session.leaf_entry_id, author=owner, body="mine"
    )
    assert outsider_api.get(f"/jobs/{job.pk}").status_code == 404
    assert outsider_api.post(f"/jobs/{job.pk}/cancel").status_code == 404
    assert outsider_api.patch(f"/comments/{comment.pk}", {"body": "theirs"}).status_code == 404
    assert outsider_api.delete(f"/comments/{comment.pk}").status_code == 404
    # The pages apply the same rule (Job.objects.visible_to, Comment.objects.visible_to).
    client.force_login(outsider)
    assert client.get(reverse("jobs:detail", args=[job.pk])).status_code == 404
    assert client.post(reverse("review:comment_delete", args=[comment.pk])).status_code == 404
    job.refresh_from_db()
    assert job.status == Job.Status.QUEUED
    assert Comment.objects.get(pk=comment.pk).body == "mine"


def test_search_finds_only_what_the_user_sees(owner_api, outsider_api, team_session):
    index_revision(team_session.current_revision_id)
    word = "branch"
    hits = owner_api.get("/search", q=word).json()
    assert hits and {h["sessionId"] for h in hits} == {team_session.session_id}
    assert "<mark>" in hits[0]["snippetHtml"].lower()
    assert outsider_api.get("/search", q=word).json() == []


def test_a_compaction_is_previewed_queued_read_and_cancelled(
    owner_api, team_session, offline_provider
):
    sid = team_session.session_id
    preview = owner_api.post(
        f"/sessions/{sid}/jobs/preview", {"kind": "compaction", "keepRecentTokens": 10}
    )
    assert preview.status_code == 200, preview.content
    assert preview.json()["leafEntryId"] == team_session.leaf_entry_id
    assert not Job.objects.exists()
    created = owner_api.post(f"/sessions/{sid}/jobs", {"kind": "compaction"})
    assert created.status_code == 201, created.content
    job = created.json()
    assert job["status"] == "queued" and job["sessionId"] == sid
    again = owner_api.post(f"/sessions/{sid}/jobs", {"kind": "compaction"})
    assert again.status_code == 409
    assert owner_api.get(f"/jobs/{job['id']}").json()["id"] == job["id"]
    assert [j["id"] for j in owner_api.get(f"/sessions/{sid}/jobs").json()] == [job["id"]]
    cancelled = owner_api.post(f"/jobs/{job['id']}/cancel").json()
    assert cancelled["cancelled"] is True and cancelled["job"]["status"] == "cancelled"
    assert owner_api.post(f"/jobs/{job['id']}/cancel").json()["cancelled"] is False
    verbs = list(
        AuditEvent.objects.filter(verb__startswith="job.")
        .order_by("id")
        .values_list("verb", flat=True)
    )
    assert verbs == ["job.create", "job.cancel"]
    bad = owner_api.post(f"/sessions/{sid}/jobs", {"kind": "compaction", "leaf": "nope"})
    assert bad.status_code == 400 and "nope" in bad.json()["detail"]
    branch = owner_api.post(f"/sessions/{sid}/jobs/preview", {"kind": "branch_summary"})
    assert branch.status_code == 400


def test_comments_and_labels_through_the_api(owner_api, teammate_api, team_session):
    sid = team_session.session_id
    entry = Entry.objects.for_session(team_session).last()
    made = owner_api.post(f"/sessions/{sid}/comments", {"entryId": entry.entry_id, "body": "why?"})
    assert made.status_code == 201
    comment = made.json()
    assert comment["author"] == "owner"
    listed = teammate_api.get(f"/sessions/{sid}/comments", entry=entry.entry_id).json()
    assert [c["body"] for c in listed] == ["why?"]
    edit = f"/comments/{comment['id']}"
    assert teammate_api.patch(edit, {"body": "mine"}).status_code == 403
    edited = owner_api.patch(edit, {"body": "why, really?"}).json()
    assert edited["body"] == "why, really?" and edited["editedAt"] is not None
    assert owner_api.patch(edit, {"body": "  "}).status_code == 400
    assert teammate_api.delete(f"/comments/{comment['id']}").status_code == 403
    assert owner_api.delete(f"/comments/{comment['id']}").status_code == 204
    assert not Comment.objects.exists()
    assert (
        owner_api.post(f"/sessions/{sid}/comments", {"entryId": "x", "body": "a"}).status_code
        == 404
    )

    assert owner_api.post(f"/sessions/{sid}/labels", {"name": "Needs Review"}).json() == {
        "name": "needs-review",
        "added": True,
    }
    assert (
        owner_api.post(f"/sessions/{sid}/labels", {"name": "needs-review"}).json()["added"] is False
    )
    assert owner_api.post(f"/sessions/{sid}/labels", {"name": "!!"}).status_code == 400
    assert teammate_api.get(f"/sessions/{sid}/labels").json() == ["needs-review"]
    removed = owner_api.delete(f"/sessions/{sid}/labels/needs-review").json()
    assert removed == {"name": "needs-review", "removed": True}


def test_export_is_the_session_file_and_is_audited(owner_api, import_corpus, owner):
    session, path = import_corpus("tools")
    response = owner_api.get(f"/sessions/{session.session_id}/export")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson"
    assert b"".join(response.streaming_content) == path.read_bytes()
    assert AuditEvent.objects.filter(verb="session.export", actor=owner).count() == 1


def test_the_session_list_costs_the_same_queries_for_one_session_or_many(
    owner_api, import_corpus, django_assert_max_num_queries
):
    for name in ("tools", "branches", "compaction", "interactive"):
        session, _ = import_corpus(name)
        SessionLabel.objects.create(session=session, name="bug")
    # Token lookup, count, page, labels (one prefetch) and the token's last-use stamp.
    with django_assert_max_num_queries(5):
        page = owner_api.get("/sessions").json()
    assert page["count"] == 4 and all(s["reviewLabels"] == ["bug"] for s in page["items"])


def test_a_nul_character_anywhere_is_a_clear_400_not_a_server_error(owner_api, team_session):
    sid = team_session.session_id
    for path, params in (
        ("/sessions", {"q": "a\x00b"}),
        ("/sessions/a\x00b", {}),
        ("/search", {"q": "a\x00"}),
        (f"/sessions/{sid}/context", {"leaf": "a\x00"}),
        (f"/sessions/{sid}/comments", {"entry": "a\x00"}),
    ):
        response = owner_api.get(path, **params)
        assert response.status_code == 400, path
        assert "NUL" in response.json()["detail"]
    for path, body in (
        (f"/sessions/{sid}/labels", {"name": "a\x00"}),
        (f"/sessions/{sid}/comments", {"entryId": "x", "body": "a\x00"}),
        (f"/sessions/{sid}/jobs", {"kind": "compaction", "leaf": "a\x00"}),
    ):
        assert owner_api.post(path, body).status_code == 400, path
    assert owner_api.get(f"/sessions/{sid}").status_code == 200


def test_a_malformed_multipart_body_is_a_json_400_under_the_api_and_the_400_page_elsewhere(
    owner_api, client, owner, team_session
):
    sid = team_session.session_id
    broken = {"content_type": "multipart/form-data; boundary=", "data": b"--\r\nx"}
    response = owner_api.client.post(
        f"/api/v1/sessions/{sid}/labels", **broken, **owner_api._headers()
    )
    assert response.status_code == 400
    assert response["Content-Type"].startswith("application/json")
    assert "parse" in response.json()["detail"]
    client.force_login(owner)
    page = client.post(f"/sessions/{sid}/labels", **broken)
    assert page.status_code == 400
    assert page["Content-Type"].startswith("text/html")


def test_a_branch_summary_is_previewed_and_queued_for_an_entry_off_the_current_branch(
    owner_api, team_session, offline_provider
):
    entries = engine_entries(team_session)
    tree = SessionTree(entries)
    on_path = {e["id"] for e in tree.path(team_session.leaf_entry_id)}
    target = next(
        e["id"]
        for e in entries
        if e["id"] not in on_path and (e.get("message") or {}).get("role") == "assistant"
    )
    sid = team_session.session_id
    body = {"kind": "branch_summary", "target": target, "customInstructions": "Be short."}
    preview = owner_api.post(f"/sessions/{sid}/jobs/preview", body)
    assert preview.status_code == 200, preview.content
    answer = preview.json()
    assert answer["targetEntryId"] == target and answer["nothing"] is None
    assert answer["calls"] == 1 and answer["plan"]
    created = owner_api.post(f"/sessions/{sid}/jobs", body)
    assert created.status_code == 201, created.content
    job = created.json()
    assert job["kind"] == "branch_summary" and job["targetEntryId"] == target
    assert job["parameters"] == {"customInstructions": "Be short.", "replaceInstructions": False}
