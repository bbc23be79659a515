"""Production defaults: login throttling, Django's full password
validators, password reset only with mail, error reports without credentials, HSTS and SSL
redirect behind settings, and static files served by the app under a plain gunicorn."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.test import RequestFactory
from django.urls import NoReverseMatch, reverse
from django.views.debug import ExceptionReporter

from tests.conftest import PASSWORD, REPO


@pytest.mark.django_db
def test_it_locks_out_a_username_after_repeated_wrong_passwords(client, owner, settings):
    login = reverse("login")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        response = client.post(login, {"username": "owner", "password": "wrong"})
        assert response.status_code == 200  # the form again, with its error
    response = client.post(login, {"username": "owner", "password": "wrong"})
    assert response.status_code == 429
    # Now even the right password is refused for a while.
    response = client.post(login, {"username": "owner", "password": PASSWORD})
    assert response.status_code == 429
    assert "Too many failed sign-ins" in response.content.decode()
    assert "_auth_user_id" not in client.session


@pytest.mark.django_db
def test_a_right_password_before_the_limit_still_signs_in(client, owner, settings):
    login = reverse("login")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        client.post(login, {"username": "owner", "password": "wrong"})
    response = client.post(login, {"username": "owner", "password": PASSWORD})
    assert response.status_code == 302


@pytest.mark.django_db
def test_it_applies_all_of_djangos_password_validators(django_user_model):
    user = django_user_model(username="margaret", email="margaret@example.com")
    for weak, reason in (
        ("short1!", "too short"),
        ("password123", "too common"),
        ("48213079165", "entirely numeric"),
        ("margaret_example", "too similar"),
    ):
        with pytest.raises(ValidationError, match=reason):
            validate_password(weak, user)
    validate_password(PASSWORD, user)


def test_password_reset_exists_only_with_a_mail_server(settings):
    assert settings.CONTEXTLAB_PASSWORD_RESET is False  # no EMAIL_HOST in the test environment
    with pytest.raises(NoReverseMatch):
        reverse("password_reset")
    env = {**os.environ, "EMAIL_HOST": "mail.example.com"}
    probe = (
        "import django; django.setup(); from django.urls import reverse;"
        " print(reverse('password_reset'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "/accounts/password_reset/"


def _debug_page(request) -> str:  # type: ignore[no-untyped-def]
    # Raised here, so the traceback's frames hold no copy of the secrets.
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        return ExceptionReporter(request, *sys.exc_info()).get_traceback_html()


def test_a_debug_error_page_shows_no_connection_passwords(settings):
    db_secret, redis_secret = "-".join(["db", "s3cret"]), "-".join(["redis", "s3cret"])
    settings.DEBUG = True
    settings.DATABASE_URL = f"postgres://contextlab:{db_secret}@db:5432/contextlab"
    settings.REDIS_URL = f"redis://:{redis_secret}@redis:6379/0"
    settings.CELERY_BROKER_URL = settings.REDIS_URL
    settings.CACHES = {"default": {**settings.CACHES["default"], "LOCATION": settings.REDIS_URL}}
    # runserver copies the environment into request.META.
    request = RequestFactory().get(
        "/", DATABASE_URL=settings.DATABASE_URL, REDIS_URL=settings.REDIS_URL
    )
    page = _debug_page(request)
    assert "boom" in page and "DATABASE_URL" in page
    assert db_secret not in page and redis_secret not in page


def test_hsts_and_the_ssl_redirect_follow_their_settings(tmp_path):
    probe = (
        "import contextlab.settings as s;"
        "print(s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, s.SECURE_HSTS_INCLUDE_SUBDOMAINS)"
    )
    base = {**os.environ, "CONTEXTLAB_VAR_DIR": str(tmp_path)}
    run = [sys.executable, "-c", probe]
    done = subprocess.run(run, env=base, cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "0", "False"]
    on = {
        **base,
        "SECURE_SSL_REDIRECT": "true",
        "SECURE_HSTS_SECONDS": "31536000",
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    }
    done = subprocess.run(run, env=on, cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "31536000", "True"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_plain_gunicorn_serves_the_css_with_debug_off(tmp_path):
    """The README's team commands: gunicorn contextlab.wsgi, DEBUG off, no other web server."""
    port = _free_port()
    env = {
        k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL")
    }
    env.update(
        DEBUG="false",
        SECRET_KEY="s" * 50,
        ALLOWED_HOSTS="127.0.0.1",
        CONTEXTLAB_VAR_DIR=str(tmp_path),
        STATIC_ROOT=str(tmp_path / "static_root"),
    )
    gunicorn = [
        str(REPO / ".venv" / "bin" / "gunicorn"),
        "contextlab.wsgi",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        "1",
    ]
    proc = subprocess.Popen(gunicorn, env=env, cwd=REPO, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/static/css/app.css") as r:
                    body, kind, status = r.read(), r.headers["Content-Type"], r.status
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                assert time.monotonic() < deadline, "gunicorn did not answer"
                time.sleep(0.2)
        assert status == 200 and kind.startswith("text/css") and b".topbar" in body
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/") as r:
            assert r.status == 200
            assert "script-src 'self'" in r.headers["Content-Security-Policy"]
            assert "css/csp.css" in r.read().decode()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
