"""Property-based checks of the served OpenAPI schema (schemathesis, fixed seed, bounded):
no server error, and every answer — status code, content type, body — as the schema says, for a
member of the session's project and for an outsider, on a real stored session."""

from __future__ import annotations

import json

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import Client
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from contextlab.api.services import api_token_create
from contextlab.jobs.models import Job
from contextlab.library.models import Entry
from contextlab.review.services import comment_create

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


def served_schema():  # type: ignore[no-untyped-def]
    """The schema as /api/v1/openapi.json serves it; requests go to the WSGI application, in
    this process and the test's transaction."""
    from contextlab.wsgi import application

    loaded = schemathesis.openapi.from_dict(
        json.loads(Client(HTTP_HOST="localhost").get("/api/v1/openapi.json").content)
    )
    loaded.app = application
    return loaded


@pytest.fixture(autouse=True)
def keep_the_test_connection(db, offline_provider):  # type: ignore[no-untyped-def]
    """As Django's test client does: the end of a request must not close the test's database
    connection (the WSGI handler would, through close_old_connections)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def real_ids(team_session, owner):  # type: ignore[no-untyped-def]
    """Ids of real objects, put into the generated paths so that most requests reach real data."""
    entry = Entry.objects.for_session(team_session).last()
    comment = comment_create(session=team_session, entry_id=entry.entry_id, author=owner, body="x")
    job = Job.objects.create(kind="compaction", session=team_session, leaf_entry_id=entry.entry_id)
    return {
        "session_id": team_session.session_id,
        "project_id": team_session.project_id,
        "entry_id": entry.entry_id,
        "comment_id": comment.pk,
        "job_id": job.pk,
    }


schema = served_schema()
BOUNDED = settings(
    max_examples=5,
    derandomize=True,  # a fixed seed: the same requests on every run
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)


def call_and_check(case, user, real_ids):  # type: ignore[no-untyped-def]
    token = api_token_create(user=user)[1]
    for name, value in real_ids.items():
        if case.path_parameters and name in case.path_parameters:
            case.path_parameters[name] = value
    response = case.call(headers={"Authorization": f"Bearer {token}"})
    case.validate_response(response, checks=CHECKS)
    return response


@schema.parametrize()
@BOUNDED
def test_every_answer_to_a_member_is_as_the_schema_says(case, teammate, real_ids):  # type: ignore[no-untyped-def]
    call_and_check(case, teammate, real_ids)


@schema.parametrize()
@BOUNDED
def test_every_answer_to_an_outsider_is_as_the_schema_says_and_reveals_nothing(  # type: ignore[no-untyped-def]
    case, outsider, real_ids
):
    response = call_and_check(case, outsider, real_ids)
    if case.path_parameters and set(case.path_parameters) & set(real_ids):
        # Never an answer that depends on the restricted data: not found, or refused before
        # looking (no or bad credentials, a method the path does not have, malformed input).
        detail = response.json()["detail"] if response.status_code == 400 else ""
        unparsable = "parse" in detail or "NUL" in detail
        if case.path.endswith("/lines") and response.status_code in (200, 409):
            # A push answers a session the user cannot see as one that is not stored (README,
            # "Pushing a session's lines"): offset 0, nothing of it.
            answer = response.json()
            assert (answer["offset"], answer["entries"], answer["tailBytes"]) == (0, 0, 0)
            return
        assert unparsable or response.status_code in (401, 404, 405, 422), (
            case.method,
            case.path,
            response.status_code,
        )
