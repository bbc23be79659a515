"""Every web request has a budget of time (contextlab.budgets): PostgreSQL cancels a query past
its kind's statement_timeout and long loops stop at its deadline; the user gets a plain 503
page or JSON, the process goes on serving, and the connection is back to no timeout after."""

from __future__ import annotations

import time

import psycopg
import pytest
from django.db import connection
from django.test import RequestFactory
from django.urls import reverse

from contextlab.api.services import api_token_create
from contextlab.budgets import request_kind

pytestmark = pytest.mark.django_db(transaction=True)


def _show_timeout() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        return str(cursor.fetchone()[0])


@pytest.fixture
def locked_sessions(team_session):  # type: ignore[no-untyped-def]
    """Another connection holds the sessions table locked: any query of it waits."""
    params = connection.get_connection_params()
    other = psycopg.connect(
        **{k: v for k, v in params.items() if k in ("dbname", "user", "password", "host", "port")}
    )
    other.execute("LOCK TABLE library_session IN ACCESS EXCLUSIVE MODE")
    yield team_session
    other.rollback()
    other.close()


def test_a_page_whose_query_outlasts_its_budget_gets_a_plain_503(
    owner_client, locked_sessions, settings
):
    settings.CONTEXTLAB_REQUEST_BUDGETS = {**settings.CONTEXTLAB_REQUEST_BUDGETS, "page": 1}
    started = time.monotonic()
    response = owner_client.get(reverse("inspector:session", args=[locked_sessions.pk]))
    assert time.monotonic() - started < 10
    assert response.status_code == 503
    assert response["Retry-After"] == "30"
    page = response.content.decode()
    assert 'data-testid="budget-message"' in page
    assert "took longer than this server allows for one request" in page
    assert _show_timeout() == "0"  # reset for whatever runs next on the connection


@pytest.fixture
def token(owner):  # type: ignore[no-untyped-def]
    return api_token_create(user=owner)[1]


def test_an_api_query_past_its_budget_answers_503_json(token, locked_sessions, client, settings):
    settings.CONTEXTLAB_REQUEST_BUDGETS = {**settings.CONTEXTLAB_REQUEST_BUDGETS, "api": 1}
    response = client.get("/api/v1/sessions", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 503
    assert "took longer than this server allows" in response.json()["detail"]
    assert _show_timeout() == "0"


def test_a_request_past_its_deadline_in_python_answers_503_not_a_killed_worker(
    owner, team_session, client, settings
):
    from contextlab.inspector.services import tree_index_refresh

    tree_index_refresh(session_id=team_session.pk)  # as an import does: the index is stored
    # No time at all for exports: the request is refused at the loop's first check.
    settings.CONTEXTLAB_REQUEST_BUDGETS = {**settings.CONTEXTLAB_REQUEST_BUDGETS, "export": 0}
    token = api_token_create(user=owner)[1]
    url = f"/api/v1/sessions/{team_session.session_id}/context"
    response = client.get(url, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 503
    assert response.json()["detail"].startswith("Building this request took longer")
    # The same process answers the next request within its budget.
    settings.CONTEXTLAB_REQUEST_BUDGETS = {**settings.CONTEXTLAB_REQUEST_BUDGETS, "export": 100}
    assert client.get(url, HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200


def test_within_its_budget_a_request_runs_under_its_kinds_statement_timeout(
    owner_client, team_session, settings
):
    settings.CONTEXTLAB_REQUEST_BUDGETS = {**settings.CONTEXTLAB_REQUEST_BUDGETS, "page": 7}
    seen: list[str] = []

    def spy(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        # Installed first, so outside the budget's wrapper: it looks after the first query.
        result = execute(sql, params, many, context)
        if not seen:
            with context["connection"].connection.cursor() as raw:
                raw.execute("SHOW statement_timeout")
                seen.append(raw.fetchone()[0])
        return result

    with connection.execute_wrapper(spy):
        response = owner_client.get(reverse("inspector:session", args=[team_session.pk]))
    assert response.status_code == 200
    assert seen == ["7s"]
    assert _show_timeout() == "0"


@pytest.mark.parametrize(
    ("method", "path", "kind"),
    [
        ("GET", "/sessions/3/", "page"),
        ("GET", "/sessions/3/request/", "export"),
        ("GET", "/sessions/3/export.jsonl", "export"),
        ("GET", "/api/v1/sessions", "api"),
        ("GET", "/api/v1/sessions/abc/context", "export"),
        ("GET", "/api/v1/sessions/abc/export", "export"),
        ("POST", "/api/v1/sessions/abc/lines", "upload"),
        ("GET", "/api/v1/sessions/abc/lines", "api"),
        ("POST", "/upload/", "upload"),
    ],
)
def test_each_kind_of_request_gets_its_own_budget(method, path, kind):
    assert request_kind(RequestFactory().generic(method, path)) == kind


def _index_not_built_yet(session):  # type: ignore[no-untyped-def]
    """Neither stored nor in this process: the next open builds the session's tree index."""
    from contextlab.inspector.models import TreeIndex
    from contextlab.inspector.selectors import clear_cache

    TreeIndex.objects.all().delete()
    clear_cache()


def test_building_the_tree_index_past_the_budget_answers_a_plain_503_page(
    owner_client, team_session, settings
):
    _index_not_built_yet(team_session)
    # No time at all for pages: the index's loop stops at its first check.
    settings.CONTEXTLAB_REQUEST_BUDGETS = {**settings.CONTEXTLAB_REQUEST_BUDGETS, "page": 0}
    response = owner_client.get(reverse("inspector:session", args=[team_session.pk]))
    assert response.status_code == 503
    page = response.content.decode()
    assert 'data-testid="budget-message"' in page
    assert "Opening this session took longer than this server allows" in page
    # Within its budget the same process opens it.
    settings.CONTEXTLAB_REQUEST_BUDGETS = {**settings.CONTEXTLAB_REQUEST_BUDGETS, "page": 20}
    assert owner_client.get(reverse("inspector:session", args=[team_session.pk])).status_code == 200


def test_building_the_tree_index_past_the_budget_answers_503_json(
    owner, team_session, client, settings
):
    _index_not_built_yet(team_session)
    settings.CONTEXTLAB_REQUEST_BUDGETS = {**settings.CONTEXTLAB_REQUEST_BUDGETS, "export": 0}
    token = api_token_create(user=owner)[1]
    url = f"/api/v1/sessions/{team_session.session_id}/context"
    response = client.get(url, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 503
    assert response.json()["detail"].startswith("Opening this session took longer")


def test_an_import_past_its_budget_still_stores_the_session(team_session, settings):
    """The index an import stores is left for the first open when the import's request is out
    of time (``tree_index_refresh`` outside any request has no deadline at all)."""
    from contextlab import budgets
    from contextlab.inspector.models import TreeIndex
    from contextlab.inspector.services import tree_index_refresh

    _index_not_built_yet(team_session)
    token = budgets._deadline.set(time.monotonic() - 1)
    try:
        tree_index_refresh(session_id=team_session.pk)
    finally:
        budgets._deadline.reset(token)
    assert not TreeIndex.objects.exists()
    tree_index_refresh(session_id=team_session.pk)
    assert TreeIndex.objects.exists()
