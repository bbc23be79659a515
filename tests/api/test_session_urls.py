"""The session page answers to the Pi session id the API and Pi use, beside its database
number."""

from __future__ import annotations

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_the_pi_session_id_opens_the_session_page_with_its_query(owner_client, team_session):
    page = reverse("inspector:session", args=[team_session.pk])
    response = owner_client.get(f"/sessions/{team_session.session_id}/?tab=json&entry=x")
    assert response.status_code == 302
    assert response["Location"] == f"{page}?tab=json&entry=x"
    followed = owner_client.get(f"/sessions/{team_session.session_id}/", follow=True)
    assert followed.status_code == 200
    assert followed.redirect_chain == [(page, 302)]
    assert team_session.session_id in followed.content.decode()


def test_the_numeric_url_keeps_opening_the_page(owner_client, team_session):
    page = reverse("inspector:session", args=[team_session.pk])
    assert page == f"/sessions/{team_session.pk}/"
    assert owner_client.get(page).status_code == 200


def test_a_session_the_user_may_not_see_is_404_like_an_unknown_id(client, outsider, team_session):
    client.force_login(outsider)
    assert client.get(f"/sessions/{team_session.session_id}/").status_code == 404
    assert client.get("/sessions/no-such-session/").status_code == 404


def test_signed_out_the_pi_id_url_asks_to_sign_in(client, team_session):
    response = client.get(f"/sessions/{team_session.session_id}/")
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]
