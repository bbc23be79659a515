"""The browser tests' page at a phone's width and a desktop's (each test runs at both)."""

from __future__ import annotations

import pytest


@pytest.fixture(params=[390, 1440], ids=lambda w: f"{w}px")
def wpage(request, chromium):  # type: ignore[no-untyped-def]
    context = chromium.new_context(
        viewport={"width": request.param, "height": 844 if request.param < 800 else 900}
    )
    page = context.new_page()
    yield page
    context.close()
