"""Shared fixtures: personas (owner, teammate, outsider) and paths to the corpus."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

# As manage.py and the web process do (contextlab/__init__.py): tasks go to contextlab's broker.
import contextlab.celery  # noqa: F401
from tests.environment import delete_redis_keys, unavailable

if TYPE_CHECKING:
    from playwright.sync_api import Page

REPO = Path(__file__).resolve().parent.parent
# A real session recorded by Pi's author (copied from shared/fixtures so the suite never depends on
# what lies beside the checkout).
REAL_SESSION = REPO / "tests" / "fixtures" / "real" / "large-session.jsonl"


@pytest.fixture
def real_session_path() -> Path:
    if not REAL_SESSION.exists():
        pytest.skip(f"{REAL_SESSION} is not on this machine")
    return REAL_SESSION


# Fixtures that need the real Pi under Node, or Chromium: a test using one is an `oracle` or a
# `browser` test even where its module forgot the marker (`make test-fast` leaves both out).
_MARK_BY_FIXTURE = {"oracle": "oracle", "chromium": "browser", "page": "browser"}


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects
def pytest_collection_modifyitems(config, items):  # type: ignore[no-untyped-def]
    for item in items:
        for fixture in getattr(item, "fixturenames", ()):
            marker = _MARK_BY_FIXTURE.get(fixture)
            if marker and not item.get_closest_marker(marker):
                item.add_marker(marker)


@pytest.fixture(scope="session", autouse=True)
def _own_redis_keys_and_blobs_deleted_at_the_end():  # type: ignore[no-untyped-def]
    """This run's Redis keys (the prefix tests/settings.py derives from the run's id) and its
    blob store go when the run ends; nothing else is touched."""
    yield
    import shutil

    from django.conf import settings

    if settings.REDIS_URL and settings.CONTEXTLAB_REDIS_PREFIX:
        delete_redis_keys(settings.REDIS_URL, settings.CONTEXTLAB_REDIS_PREFIX)
    run = getattr(settings, "TEST_RUN", "")  # tests/settings.py's, not production's
    if run:
        store = Path(settings.VAR_DIR) / "test-blobs" / f"{run}-{settings.TEST_PROCESS}"
        if Path(settings.CONTEXTLAB_BLOB_DIR) == store:
            shutil.rmtree(store, ignore_errors=True)


# --- Personas: the owner imported the sessions, a teammate shares the dashboard, an outsider
# --- has an account but no access where access is restricted.
PASSWORD = "correct horse battery staple"


def _user(django_user_model, username: str):  # type: ignore[no-untyped-def]
    return django_user_model.objects.create_user(username=username, password=PASSWORD)


@pytest.fixture
def owner(db, django_user_model):  # type: ignore[no-untyped-def]
    return _user(django_user_model, "owner")


@pytest.fixture
def teammate(db, django_user_model):  # type: ignore[no-untyped-def]
    return _user(django_user_model, "teammate")


@pytest.fixture
def outsider(db, django_user_model):  # type: ignore[no-untyped-def]
    return _user(django_user_model, "outsider")


@pytest.fixture
def owner_client(client, owner):  # type: ignore[no-untyped-def]
    client.force_login(owner)
    return client


# --- A real Chromium for the browser tests (Debian's /usr/bin/chromium, driven by Playwright).
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def chromium():  # type: ignore[no-untyped-def]
    if not CHROMIUM.exists():
        unavailable("Chromium is not installed: run tools/install-system-deps")
    import os

    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop in this thread; the ORM calls the tests make
    # between page actions are still plain synchronous code.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


@pytest.fixture
def page(chromium):  # type: ignore[no-untyped-def]
    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    yield page
    context.close()


def login(page: Page, live_server_url: str, username: str, password: str = PASSWORD) -> None:
    """Sign in through the login form and wait for the redirect to the library."""
    from django.urls import reverse

    page.goto(f"{live_server_url}{reverse('login')}")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server_url}/")


# --- Stored sessions: real Pi 0.80.2 recordings (tests/conformance/corpus) imported through the
# --- library, with blobs in a private directory.
CORPUS = REPO / "tests" / "conformance" / "corpus"
# Sessions the real Pi 1.6.0 wrote (tests/conformance/recorder).
CORPUS_1X = REPO / "tests" / "conformance" / "corpus-1.6.0"


@pytest.fixture
def blob_dir(tmp_path, settings):  # type: ignore[no-untyped-def]
    settings.CONTEXTLAB_BLOB_DIR = tmp_path / "blobs"
    return settings.CONTEXTLAB_BLOB_DIR


@pytest.fixture
def import_corpus(tmp_path, blob_dir):  # type: ignore[no-untyped-def]
    """Import corpus/<name>/session.jsonl (a private copy; `corpus`: another recorded corpus,
    such as CORPUS_1X); returns (Session, path of the copy)."""
    import shutil

    from contextlab.library.importer import import_session_file

    def _import(name: str, corpus: Path = CORPUS):  # type: ignore[no-untyped-def]
        copy = tmp_path / f"{name}.jsonl"
        shutil.copyfile(corpus / name / "session.jsonl", copy)
        result = import_session_file(path=copy, index_search=False)
        assert result.session is not None, result
        result.session.refresh_from_db()
        return result.session, copy

    return _import


@pytest.fixture
def offline_provider(settings):  # type: ignore[no-untyped-def]
    """Summaries by the offline summariser (no network), whatever the environment says."""
    settings.CONTEXTLAB_LLM = {**settings.CONTEXTLAB_LLM, "provider": "offline"}


def corpus_entry_id(name: str, *, user: str, reply: bool = False) -> str:
    """Id of the user message in corpus/<name> whose text starts with `user` (or, with `reply`,
    of the assistant message answering it). Tests name entries this way because the corpus is
    re-recorded with fresh ids whenever the recorder changes."""
    import json

    entries = [json.loads(line) for line in (CORPUS / name / "session.jsonl").open()]
    for entry in entries:
        message = entry.get("message") or {}
        content = message.get("content")
        text = (
            content
            if isinstance(content, str)
            else "".join(b.get("text", "") for b in content or [] if isinstance(b, dict))
        )
        if message.get("role") == "user" and text.startswith(user):
            if not reply:
                return str(entry["id"])
            for child in entries:
                if child.get("parentId") == entry["id"]:
                    return str(child["id"])
    raise LookupError(f"corpus/{name}: no user message starting with {user!r}")


@pytest.fixture
def client_socket_pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    """(the server's end, the client's end) of a connected pair: closing the client's end is a
    browser leaving (contextlab.budgets asks the server's end)."""
    ours, theirs = socket.socketpair()
    yield ours, theirs
    ours.close()
    theirs.close()
