"""What the session page and the API's /context say of a turn (its release above all), for the
tests that hold one against the other."""

from __future__ import annotations

import html
import json
import re
from typing import Any

from django.urls import reverse

from contextlab.api.services import api_token_create

INSPECTOR = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "inspector"}


def inspector_page(client: Any, session: Any, entry: str, tab: str = "context") -> str:
    """The session page's inspector at ``entry`` (an htmx swap), HTML entities decoded."""
    url = reverse("inspector:session", args=[session.pk])
    response = client.get(url, {"entry": entry, "tab": tab}, **INSPECTOR)
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def text_by_testid(page: str, name: str) -> str:
    """The text of the page's ``data-testid=name`` line (a span or a paragraph), tags removed."""
    found = re.search(rf'data-testid="{name}"[^>]*>(.*?)</(?:span|p)>', page, re.S)
    assert found, f"no {name} on the page"
    return re.sub(r"<[^>]+>", "", found.group(1))


def api_context(client: Any, user: Any, session: Any, leaf: str) -> dict[str, Any]:
    """The API's /context of the turn at ``leaf``, asked with a token of ``user``."""
    token = api_token_create(user=user, name="release")[1]
    response = client.get(
        f"/api/v1/sessions/{session.session_id}/context",
        {"leaf": leaf},
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 200, response.content
    return json.loads(b"".join(response.streaming_content))  # type: ignore[no-any-return]
