"""Settings for the test suite: production's (contextlab.settings, DEBUG off) with what a
test machine needs: a fixed test-only key, plain-HTTP cookies for the live server the browser
tests use, and the hosts that server and Django's test client answer on."""

from __future__ import annotations

import os

os.environ.setdefault("SECRET_KEY", "tests-only-" + "k" * 40)
os.environ.setdefault("SESSION_COOKIE_SECURE", "false")
os.environ.setdefault("CSRF_COOKIE_SECURE", "false")
os.environ.setdefault("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")

from contextlab.settings import *  # noqa: F403

# The whole suite signs in from 127.0.0.1 many times a minute (browser tests in parallel); the
# sign-in limits' own tests set them low and sign in from addresses of their own.
CONTEXTLAB_LOGIN_ATTEMPTS_PER_ADDRESS_PER_MINUTE = 10_000
CONTEXTLAB_LOGIN_ATTEMPTS_PER_MINUTE = 10_000
