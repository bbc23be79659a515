"""API personas: a bearer token each for the owner, a teammate and an outsider, and a corpus
session in a project restricted to the owner and the teammate."""

from __future__ import annotations

from typing import Any

import pytest

from contextlab.api.services import api_token_create
from contextlab.review.models import ProjectMembership


class Api:
    """The Django test client speaking to /api/v1/ with one bearer token."""

    def __init__(self, client: Any, token: str) -> None:
        self.client = client
        self.token = token

    def _headers(self) -> dict[str, str]:
        return {"HTTP_AUTHORIZATION": f"Bearer {self.token}"}

    def get(self, path: str, **params: Any) -> Any:
        return self.client.get(f"/api/v1{path}", params, **self._headers())

    def post(self, path: str, data: Any = None, **kwargs: Any) -> Any:
        return self.client.post(
            f"/api/v1{path}",
            data or {},
            content_type="application/json",
            **self._headers(),
            **kwargs,
        )

    def push(self, session_id: str, offset: int, body: bytes) -> Any:
        return self.client.post(
            f"/api/v1/sessions/{session_id}/lines?offset={offset}",
            body,
            content_type="application/x-ndjson",
            **self._headers(),
        )

    def delete(self, path: str) -> Any:
        return self.client.delete(f"/api/v1{path}", **self._headers())


@pytest.fixture
def owner_api(client, owner):  # type: ignore[no-untyped-def]
    return Api(client, api_token_create(user=owner, name="test")[1])


@pytest.fixture
def teammate_api(client, teammate):  # type: ignore[no-untyped-def]
    return Api(client, api_token_create(user=teammate)[1])


@pytest.fixture
def outsider_api(client, outsider):  # type: ignore[no-untyped-def]
    return Api(client, api_token_create(user=outsider)[1])


@pytest.fixture
def team_session(import_corpus, owner, teammate):  # type: ignore[no-untyped-def]
    """corpus/branches imported, its project restricted to the owner and the teammate."""
    session, _path = import_corpus("branches")
    ProjectMembership.objects.create(
        project=session.project, user=owner, role=ProjectMembership.Role.OWNER
    )
    ProjectMembership.objects.create(project=session.project, user=teammate)
    return session
