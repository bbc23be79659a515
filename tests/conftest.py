"""Shared fixtures: personas (owner, teammate, outsider) and paths to the corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
REAL_SESSION = SHARED / "fixtures" / "real" / "large-session.jsonl"


@pytest.fixture
def real_session_path() -> Path:
    if not REAL_SESSION.exists():
        pytest.skip(f"{REAL_SESSION} is not on this machine")
    return REAL_SESSION


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
        pytest.skip("Chromium is not installed: run tools/install-system-deps")
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
