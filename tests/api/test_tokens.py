"""API tokens: made by the command or the dashboard, shown once, stored as a hash, revocable."""

from __future__ import annotations

import io

from django.core.management import call_command

from contextlab.api.models import ApiToken
from contextlab.api.services import hash_token
from tests.api.conftest import Api


def test_api_token_command_prints_a_new_token_once_and_stores_only_its_hash(owner, client):
    out = io.StringIO()
    call_command("api_token", "owner", "--name", "laptop", stdout=out)
    token = out.getvalue().strip()
    row = ApiToken.objects.get(user=owner)
    assert row.name == "laptop"
    assert row.key_hash == hash_token(token)
    assert token not in str(list(ApiToken.objects.values()))
    assert Api(client, token).get("/projects").status_code == 200


def test_it_answers_401_without_a_token_with_a_wrong_one_and_with_a_revoked_one(client, owner_api):
    assert client.get("/api/v1/projects").status_code == 401
    assert Api(client, "cl_not-a-token").get("/projects").status_code == 401
    assert client.get("/api/v1/projects", HTTP_AUTHORIZATION="Basic abc").status_code == 401
    assert owner_api.get("/projects").status_code == 200
    ApiToken.objects.update(revoked_at="2020-01-01T00:00:00Z")
    response = owner_api.get("/projects")
    assert response.status_code == 401
    assert response.json() == {"detail": "Unauthorized"}


def test_a_signed_in_browser_session_is_not_an_api_credential(owner_client):
    assert owner_client.get("/api/v1/projects").status_code == 401


def test_the_tokens_page_creates_shows_once_lists_and_revokes(owner_client, owner, outsider):
    page = owner_client.post("/account/api-tokens/", {"name": "ci"})
    assert page.status_code == 200
    token = page.context["new_token"]
    assert token.startswith("cl_") and token in page.content.decode()
    assert page["Cache-Control"] == "no-store"
    row = ApiToken.objects.get(user=owner)
    listing = owner_client.get("/account/api-tokens/").content.decode()
    assert row.prefix in listing and token not in listing
    assert Api(owner_client, token).get("/projects").status_code == 200

    # Another user's token cannot be revoked by id.
    other = ApiToken.objects.create(user=outsider, key_hash="x" * 64, prefix="cl_xxxx")
    assert owner_client.post(f"/account/api-tokens/{other.pk}/revoke/").status_code == 404
    assert owner_client.post(f"/account/api-tokens/{row.pk}/revoke/").status_code == 302
    row.refresh_from_db()
    assert row.revoked_at is not None
    assert Api(owner_client, token).get("/projects").status_code == 401


def test_the_docs_page_loads_its_scripts_from_this_server(client):
    page = client.get("/api/v1/docs")
    assert page.status_code == 200
    html = page.content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in html
    assert "cdn" not in html.lower()
    schema = client.get("/api/v1/openapi.json").json()
    assert schema["openapi"].startswith("3.")
    assert "/api/v1/sessions/{session_id}/lines" in schema["paths"]
