"""The browsable API docs render in a real Chromium from this server's files alone."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_api_docs_render_every_operation_without_loading_anything_from_elsewhere(
    page, live_server
):
    hosts: set[str] = set()
    page.on("request", lambda request: hosts.add(urlsplit(request.url).netloc))
    page.goto(f"{live_server.url}/api/v1/docs")
    page.wait_for_selector(".swagger-ui .opblock", timeout=20_000)
    assert page.locator(".swagger-ui .opblock").count() >= 20
    assert page.locator(
        ".swagger-ui .opblock:has-text('/api/v1/sessions/{session_id}/lines')"
    ).count()
    assert hosts == {urlsplit(live_server.url).netloc}
