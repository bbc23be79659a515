"""Settings for the test suite: production's (contextlab.settings, DEBUG off) with what a
test machine needs: a fixed test-only key, plain-HTTP cookies for the live server the browser
tests use, and the hosts that server and Django's test client answer on.

Tests touch only their own: each run has an id (CONTEXTLAB_TEST_RUN, made up here when the
environment gives none, and inherited by pytest-xdist's processes and every subprocess a test
starts), and everything the run writes outside its temporary folders is named after it:
- its PostgreSQL databases, test_<DATABASE_URL's name>_<run>_gw<N> (pytest-xdist adds the _gwN);
- its Redis keys, under the prefix cltest:<run>:<process>: (the Celery queues, acknowledgements
  and the cache), in whatever database REDIS_URL names. Nothing is flushed: the suite deletes its
  own keys at the end (tests/conftest.py), so two runs at once, or a developer's own contextlab
  on the same Redis, never see each other's data;
- the blob store of tests that do not make their own (var/test-blobs/<run>-<process>, removed at
  the end), so no run's `blobs --prune` or sweep judges another's files.
"""

from __future__ import annotations

import os
import secrets

os.environ.setdefault("SECRET_KEY", "tests-only-" + "k" * 40)
os.environ.setdefault("SESSION_COOKIE_SECURE", "false")
os.environ.setdefault("CSRF_COOKIE_SECURE", "false")
os.environ.setdefault("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
# Lower-case letters and digits only: it ends up in database names and Redis keys.
TEST_RUN = os.environ.setdefault("CONTEXTLAB_TEST_RUN", "r" + secrets.token_hex(3))
if not TEST_RUN.isalnum() or not TEST_RUN.islower() or len(TEST_RUN) > 20:
    raise RuntimeError(
        f"CONTEXTLAB_TEST_RUN must be up to 20 lower-case letters and digits, got {TEST_RUN!r}"
    )
# pytest-xdist's process (gw0, gw1 ...): each has its own database, so its own keys too.
TEST_PROCESS = os.environ.get("PYTEST_XDIST_WORKER", "main")

from contextlab.settings import *  # noqa: E402, F403
from contextlab.settings import (  # noqa: E402
    CACHES,
    CELERY_BROKER_TRANSPORT_OPTIONS,
    DATABASES,
    VAR_DIR,
)

if DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3":
    DATABASES["default"].setdefault("TEST", {})
    DATABASES["default"]["TEST"].setdefault(
        "NAME", f"test_{DATABASES['default']['NAME']}_{TEST_RUN}"
    )

# A prefix given by the environment wins: tests/jobs/test_worker.py gives its Celery worker one
# of its own.
CONTEXTLAB_REDIS_PREFIX = (
    os.environ.get("CONTEXTLAB_REDIS_PREFIX") or f"cltest:{TEST_RUN}:{TEST_PROCESS}:"
)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    **CELERY_BROKER_TRANSPORT_OPTIONS,
    "global_keyprefix": CONTEXTLAB_REDIS_PREFIX,
}
CACHES = {"default": {**CACHES["default"], "KEY_PREFIX": CONTEXTLAB_REDIS_PREFIX}}

# The whole suite signs in from 127.0.0.1 many times a minute (browser tests in parallel); the
# sign-in limits' own tests set them low and sign in from addresses of their own.
CONTEXTLAB_LOGIN_ATTEMPTS_PER_ADDRESS_PER_MINUTE = 10_000
CONTEXTLAB_LOGIN_ATTEMPTS_PER_MINUTE = 10_000

# Unless the environment names one (a test's subprocess given its test's store, say).
if "CONTEXTLAB_BLOB_DIR" not in os.environ:
    CONTEXTLAB_BLOB_DIR = VAR_DIR / "test-blobs" / f"{TEST_RUN}-{TEST_PROCESS}"

# Production hashes a password with PBKDF2 at 1.5M iterations (0.4 s of CPU each): the suite
# creates and signs in users thousands of times, so its passwords use a fast hasher. What is
# measured of passwords (validators, lockouts, sign-in limits) does not depend on the hasher.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
