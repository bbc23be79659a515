"""The session page's live poll, its weight and query counts, and the site-wide pages (favicon,
404 and 403 in the layout), over full HTTP requests."""

from __future__ import annotations

import logging
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from contextlab.inspector.chart import context_growth
from contextlab.inspector.selectors import clear_cache, session_index
from contextlab.jobs.models import Job
from contextlab.library.importer import import_session_file
from tests.inspector.sessions import (
    append_lines,
    linear_session_lines,
    second_turn_lines,
    write_session,
)

pytestmark = pytest.mark.django_db

PARTIAL = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture(autouse=True)
def _fresh_index(blob_dir):
    clear_cache()


@pytest.fixture
def real(real_session_path):
    session = import_session_file(path=real_session_path).session
    assert session is not None
    return session


def test_it_answers_not_modified_until_the_session_or_its_jobs_change(owner_client, tmp_path):
    path = write_session(tmp_path, linear_session_lines("live-1", "/w", "hello"))
    session = import_session_file(path=path).session
    url = reverse("inspector:live", args=[session.pk])
    first = owner_client.get(url)
    assert first.status_code == 200
    etag = first["ETag"]
    with CaptureQueriesContext(connection) as queries:
        same = owner_client.get(url, HTTP_IF_NONE_MATCH=etag)
    assert same.status_code == 304 and same.content == b""
    assert len(queries) <= 4  # the session (with the access check) and one aggregate of its jobs

    # A line `--watch` imports changes the session's part of the version.
    append_lines(path, second_turn_lines())
    assert import_session_file(path=path).status == "appended"
    grown = owner_client.get(url, HTTP_IF_NONE_MATCH=etag)
    assert grown.status_code == 200 and grown["ETag"] != etag
    assert grown.json()["session"] != first.json()["session"]
    assert grown.json()["jobs"] == first.json()["jobs"]

    # A job's change changes the jobs' part only.
    Job.objects.create(kind="compaction", session=session, leaf_entry_id="aaaa0004")
    jobs = owner_client.get(url, HTTP_IF_NONE_MATCH=grown["ETag"])
    assert jobs.status_code == 200
    assert jobs.json()["session"] == grown.json()["session"]
    assert jobs.json()["jobs"] != grown.json()["jobs"]


def test_the_poll_sends_the_head_and_the_tree_for_the_page_url_once_the_session_changed(
    owner_client, tmp_path
):
    session = import_session_file(path=write_session(tmp_path)).session
    live = reverse("inspector:live", args=[session.pk])
    page = reverse("inspector:session", args=[session.pk])
    etag = owner_client.get(live)["ETag"]
    unchanged = owner_client.get(live, HTTP_IF_NONE_MATCH=etag, **PARTIAL)
    assert unchanged.status_code == 304 and unchanged.content == b""
    # A tag from before the session changed (its session part differs, its jobs part not).
    stale = '"000000000000.' + etag.strip('"').split(".")[1] + '"'
    body = owner_client.get(
        live,
        HTTP_IF_NONE_MATCH=stale,
        HTTP_HX_CURRENT_URL=f"http://testserver{page}?mode=all&entry=u0000003",
        **PARTIAL,
    ).content.decode()
    # The poll element first, holding the new tag; then the parts that changed, out of band.
    assert body.lstrip().startswith('<div id="live" hidden')
    assert "If-None-Match" in body and etag.strip('"') in body.replace("\\", "")
    assert '<span class="facts" id="facts" hx-swap-oob="true">' in body
    assert re.search(r'<div id="tree"[^>]*hx-swap-oob="true"', body)
    assert 'id="inspector"' not in body and 'id="jobs-panel"' not in body
    # The tree of the page's URL: its mode and its selection.
    assert re.search(r'data-entry-id="u0000003"[^>]*aria-selected="true"', body)
    assert '<a class="mode" href="/sessions/' in body and 'aria-current="true">all</a>' in body

    # A job changed: the job history only.
    Job.objects.create(kind="compaction", session=session, leaf_entry_id="u0000003")
    jobs = owner_client.get(live, HTTP_IF_NONE_MATCH=etag, **PARTIAL).content.decode()
    assert 'id="jobs-panel" hx-swap-oob="true"' in jobs and 'id="tree"' not in jobs


def test_it_holds_the_weight_and_queries_of_the_session_page_on_the_real_session(
    owner_client, real
):
    url = reverse("inspector:session", args=[real.pk])
    owner_client.get(url)  # the tree index is stored on the first visit
    with CaptureQueriesContext(connection) as queries:
        page = owner_client.get(url)
    assert page.status_code == 200
    assert len(page.content) < 420_000, len(page.content)
    # One more than before "Compact here…" knew of the session's active job.
    assert len(queries) <= 11, [q["sql"] for q in queries]

    leaf = session_index(real).leaf_id
    with CaptureQueriesContext(connection) as queries:
        inspector = owner_client.get(url, {"entry": leaf}, HTTP_HX_TARGET="inspector", **PARTIAL)
    assert inspector.status_code == 200
    assert len(inspector.content) < 120_000, len(inspector.content)
    # One more than before the turn was kept for every process: its key holds the project's
    # profile's last save. A repeat is a 304 with fewer.
    assert len(queries) <= 8, [q["sql"] for q in queries]
    with CaptureQueriesContext(connection) as queries:
        again = owner_client.get(
            url,
            {"entry": leaf},
            HTTP_HX_TARGET="inspector",
            HTTP_IF_NONE_MATCH=inspector["ETag"],
            **PARTIAL,
        )
    assert again.status_code == 304 and len(queries) <= 7, [q["sql"] for q in queries]

    with CaptureQueriesContext(connection) as queries:
        panes = owner_client.get(url, {"mode": "user-only"}, HTTP_HX_TARGET="tree", **PARTIAL)
    assert panes.status_code == 200
    assert len(queries) <= 9, [q["sql"] for q in queries]
    # One tree, one inspector, and they name the same entry.
    html = panes.content.decode()
    selected = re.findall(r'data-entry-id="([^"]+)"[^>]*aria-selected="true"', html)
    shown = re.findall(r'<div id="inspector" data-entry-id="([^"]*)"', html)
    assert len(selected) == 1 and shown == selected


def test_it_keeps_the_job_page_light_and_loads_each_payload_on_demand(owner_client, tmp_path):
    session = import_session_file(
        path=write_session(tmp_path, linear_session_lines("job-1", "/w", "hi"))
    ).session
    big = {"role": "summarize", "messages": [{"role": "user", "content": "x" * 500_000}]}
    job = Job.objects.create(
        kind="compaction",
        session=session,
        leaf_entry_id="aaaa0002",
        status="succeeded",
        requests=[big, {**big, "role": "turnPrefix"}],
        responses=[{"role": "summarize", "text": "y" * 200_000}],
        preview={"plan": {"request": big}},
    )
    with CaptureQueriesContext(connection) as queries:
        page = owner_client.get(reverse("jobs:detail", args=[job.pk]))
    assert page.status_code == 200
    assert len(queries) <= 5, [q["sql"] for q in queries]
    assert len(page.content) < 30_000, len(page.content)
    body = page.content.decode()
    second = reverse("jobs:payload", args=[job.pk, "requests", 1])
    assert f'href="{second}"' in body and "Request 2 (turnPrefix)" in body
    assert owner_client.get(second).json()["role"] == "turnPrefix"
    fragment = owner_client.get(second, **PARTIAL).content.decode()
    assert fragment.startswith('<pre class="block payload">')
    assert (
        owner_client.get(reverse("jobs:payload", args=[job.pk, "requests", 2])).status_code == 404
    )
    assert owner_client.get(reverse("jobs:payload", args=[job.pk, "secret"])).status_code == 404


def test_it_serves_a_favicon(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 200
    assert response["Content-Type"] == "image/x-icon"
    assert b"".join(response.streaming_content)[:4] == b"\x00\x00\x01\x00"


def test_it_shows_404_and_403_inside_the_site_layout_and_logs_no_traceback_for_403(
    owner_client, caplog
):
    missing = owner_client.get("/sessions/999999/")
    assert missing.status_code == 404
    assert 'class="topbar"' in missing.content.decode()
    assert "Not found" in missing.content.decode()
    with caplog.at_level(logging.WARNING, logger="django.request"):
        forbidden = owner_client.get(reverse("review:audit"))
    assert forbidden.status_code == 403
    body = forbidden.content.decode()
    assert 'class="topbar"' in body and "The global audit log is for superusers." in body
    records = [r for r in caplog.records if r.name == "django.request"]
    assert records and all(r.exc_info is None for r in records)
    assert "Traceback" not in caplog.text


def test_a_form_refused_by_the_csrf_check_says_so_inside_the_site_layout(owner, caplog):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(owner)
    with caplog.at_level(logging.WARNING, logger="django.security.csrf"):
        response = strict.post(reverse("library:upload"))
    assert response.status_code == 403
    body = response.content.decode()
    assert 'class="topbar"' in body and "<h1>Form refused</h1>" in body
    assert "Nothing was changed" in body and "reload the page" in body
    assert "Traceback" not in caplog.text


def test_it_says_a_reply_was_aborted_instead_of_counting_zero_tokens(owner_client, tmp_path):
    lines = linear_session_lines("aborted-1", "/w", "stop me")
    reply = lines[2]["message"]
    reply["stopReason"] = "aborted"
    reply["content"] = []
    reply["usage"] = {**reply["usage"], "input": 0, "output": 0, "totalTokens": 0}
    session = import_session_file(path=write_session(tmp_path, lines)).session
    url = reverse("inspector:session", args=[session.pk])
    body = owner_client.get(
        url, {"entry": "aaaa0001"}, HTTP_HX_TARGET="inspector", **PARTIAL
    ).content.decode()
    stopped = re.search(r'data-testid="reply-stopped">(.*?)</span>', body, re.S)
    assert stopped and "aborted" in stopped.group(1) and "no usage reported" in stopped.group(1)
    assert "input+cache tokens" not in stopped.group(1)


def test_the_chart_marks_a_compaction_at_the_end_of_the_path(owner_client, tmp_path):
    lines = linear_session_lines("compacted-1", "/w", "long story")
    lines.append(
        {
            "type": "compaction",
            "id": "cccc0001",
            "parentId": "aaaa0002",
            "timestamp": "2025-01-02T00:00:05.000Z",
            "summary": "The user told a long story.",
            "firstKeptEntryId": "aaaa0002",
            "tokensBefore": 4321,
        }
    )
    session = import_session_file(path=write_session(tmp_path, lines)).session
    growth = context_growth(session, session_index(session))
    last = growth["points"][-1]
    assert last["compaction"] and last["compaction"]["id"] == "cccc0001"
    assert last["compaction"]["before"] == 4321
    assert last["leaf"] == "cccc0001" and last["reported"] is None
    page = owner_client.get(reverse("inspector:chart", args=[session.pk])).content.decode()
    assert "badge-compaction" in page


def test_the_audit_tells_projects_of_the_same_name_apart(client, django_user_model, tmp_path):
    admin = django_user_model.objects.create_superuser("root", password="x" * 12)
    client.force_login(admin)
    for n, cwd in enumerate(("/home/a/work", "/srv/b/work")):
        path = write_session(tmp_path, linear_session_lines(f"same-{n}", cwd, "hi"), f"s{n}.jsonl")
        session = import_session_file(path=path).session
        client.post(
            reverse("review:comment_create", args=[session.pk]),
            {"entry": "aaaa0001", "body": "note"},
        )
    body = client.get(reverse("review:audit")).content.decode()
    shown = re.findall(r'data-testid="on-project"[^>]*>([^<]+)<', body)
    assert {"/home/a/work", "/srv/b/work"} <= set(shown), shown


def test_the_session_page_has_no_inline_script_style_or_handler(owner_client, tmp_path):
    """What a Content-Security-Policy without 'unsafe-inline' allows: scripts from files only,
    no style attributes, no on* handlers (the session's own HTML is escaped, never markup)."""
    session = import_session_file(path=write_session(tmp_path)).session
    url = reverse("inspector:session", args=[session.pk])
    for params in ({}, {"entry": "u0000004", "tab": "prompt"}, {"entry": "u0000004"}):
        body = owner_client.get(url, params).content.decode()
        assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", body) == []
        assert " style=" not in body
        assert re.search(r"<[^>]+\son[a-z]+=", body) is None
        assert 'class="meter"' in body or params.get("tab") == "prompt"
