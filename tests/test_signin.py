"""Sign-in that cannot be turned against users: attempts limited per address and in total before
any password is hashed, and wrong passwords locking a username out from one address only."""

from __future__ import annotations

import secrets

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.signals import user_login_failed
from django.test import RequestFactory
from django.urls import reverse

from contextlab.signin import client_address
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db


def _address() -> str:
    # A fresh address per test: the counters live in the shared cache, across test runs too.
    return f"198.18.{secrets.randbelow(256)}.{secrets.randbelow(254) + 1}"


def _post(client, username: str, password: str, address: str, **headers):  # type: ignore[no-untyped-def]
    return client.post(
        reverse("login"),
        {"username": username, "password": password},
        REMOTE_ADDR=address,
        **headers,
    )


@pytest.fixture
def failures():  # type: ignore[no-untyped-def]
    """Usernames of the attempts that reached authentication (and so a password hash)."""
    seen: list[str] = []

    def record(sender, credentials, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(credentials.get("username"))

    user_login_failed.connect(record)
    yield seen
    user_login_failed.disconnect(record)


def test_it_refuses_random_usernames_from_one_address_before_hashing_past_the_limit(
    client, owner, settings, failures
):
    settings.CONTEXTLAB_LOGIN_ATTEMPTS_PER_ADDRESS_PER_MINUTE = 3
    hammer = _address()
    for _ in range(3):
        assert _post(client, secrets.token_hex(6), "x", hammer).status_code == 200
    assert len(failures) == 3
    refused = _post(client, secrets.token_hex(6), "x", hammer)
    assert refused.status_code == 429 and refused["Retry-After"] == "60"
    assert "Too many sign-in attempts from your address" in refused.content.decode()
    assert len(failures) == 3  # the refused attempt never reached a password hasher
    # The right password from that address waits too; from another address it signs in.
    assert _post(client, "owner", PASSWORD, hammer).status_code == 429
    assert _post(client, "owner", PASSWORD, _address()).status_code == 302


def test_it_refuses_every_address_past_the_global_limit(client, owner, settings, failures):
    settings.CONTEXTLAB_LOGIN_ATTEMPTS_PER_MINUTE = 2
    statuses = [_post(client, secrets.token_hex(6), "x", _address()).status_code for _ in range(4)]
    assert statuses[-1] == 429
    refused = _post(client, "owner", PASSWORD, _address())
    assert refused.status_code == 429
    assert "Too many sign-in attempts right now" in refused.content.decode()
    assert len(failures) <= 2


def test_the_admin_sign_in_is_limited_too(client, settings):
    settings.CONTEXTLAB_LOGIN_ATTEMPTS_PER_ADDRESS_PER_MINUTE = 1
    hammer = _address()
    form = {"username": "admin", "password": "x"}
    assert client.post(reverse("admin:login"), form, REMOTE_ADDR=hammer).status_code == 200
    assert client.post(reverse("admin:login"), form, REMOTE_ADDR=hammer).status_code == 429


def test_wrong_passwords_from_one_address_do_not_lock_the_user_out_elsewhere(
    client, owner, settings
):
    stranger, user = _address(), _address()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _post(client, "owner", "wrong", stranger)
    locked = _post(client, "owner", PASSWORD, stranger)
    assert locked.status_code == 429 and "Too many failed sign-ins" in locked.content.decode()
    assert _post(client, "owner", PASSWORD, user).status_code == 302


def test_behind_a_trusted_proxy_the_lockout_follows_the_forwarded_address(client, owner, settings):
    settings.CONTEXTLAB_TRUSTED_PROXIES = ["10.9.0.0/16"]
    proxy, stranger, user = "10.9.0.2", _address(), _address()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _post(client, "owner", "wrong", proxy, HTTP_X_FORWARDED_FOR=stranger)
    assert AccessAttempt.objects.get(username="owner").ip_address == stranger
    assert _post(client, "owner", PASSWORD, proxy, HTTP_X_FORWARDED_FOR=stranger).status_code == 429
    assert _post(client, "owner", PASSWORD, proxy, HTTP_X_FORWARDED_FOR=user).status_code == 302


def test_it_believes_x_forwarded_for_only_from_a_trusted_proxy(settings):
    settings.CONTEXTLAB_TRUSTED_PROXIES = ["10.9.0.0/16", "10.8.0.1"]
    factory = RequestFactory()

    def address(remote: str, forwarded: str) -> str:
        request = factory.get("/", REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR=forwarded)
        return client_address(request)

    # From a client directly: its own header proves nothing.
    assert address("203.0.113.7", "1.2.3.4") == "203.0.113.7"
    # Through trusted proxies: the first address from the right that is not one of them (what
    # the client wrote on the left is ignored).
    assert address("10.9.0.2", "1.2.3.4, 203.0.113.9, 10.8.0.1") == "203.0.113.9"
    assert address("10.9.0.2", "") == "10.9.0.2"
    assert address("10.9.0.2", "garbage, 203.0.113.9") == "203.0.113.9"
    assert address("10.9.0.2", "203.0.113.9, garbage") == "10.9.0.2"
    settings.CONTEXTLAB_TRUSTED_PROXIES = []
    assert address("10.9.0.2", "1.2.3.4") == "10.9.0.2"


def test_a_malformed_trusted_proxy_stops_the_start_with_a_clear_error():
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    env = {**os.environ, "CONTEXTLAB_TRUSTED_PROXIES": "10.0.0.1,proxy.local"}
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0
    assert "CONTEXTLAB_TRUSTED_PROXIES: 'proxy.local' is not an IP address" in done.stderr
