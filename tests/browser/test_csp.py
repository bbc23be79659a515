"""Every main page under the Content-Security-Policy in a real Chromium:
no inline script, no style attribute, no eval; any CSP violation fails the test. Also the export
of a session whose id tries to inject a file name saves under its real name (finding 8)."""

from __future__ import annotations

import io
import json
from urllib.parse import urlencode

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from contextlab.inspector.selectors import clear_cache
from contextlab.library.importer import import_session_file
from contextlab.library.models import Session
from contextlab.review.models import ProjectMembership
from tests.conftest import PASSWORD, login
from tests.inspector.sessions import linear_session_lines

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
});
"""


@pytest.fixture
def demo(live_server, blob_dir):
    clear_cache()
    call_command("demo", password=PASSWORD, force=True, stdout=io.StringIO())
    session = Session.objects.filter(compaction_count__gt=0).order_by("-compaction_count").first()
    user = get_user_model().objects.get(username="demo")
    # The demo may have made its user an owner already.
    ProjectMembership.objects.get_or_create(
        project=session.project, user=user, defaults={"role": "owner"}
    )
    return session


def _watch(page):  # type: ignore[no-untyped-def]
    console: list[str] = []
    page.add_init_script(RECORD_VIOLATIONS)
    page.on(
        "console",
        lambda m: (
            console.append(m.text)
            if "Content Security Policy" in m.text or "Refused to" in m.text
            else None
        ),
    )
    return console


def _violations(page, console):  # type: ignore[no-untyped-def]
    return [*page.evaluate("window.__csp || []"), *console]


def test_every_main_page_passes_the_csp(page, live_server, demo):
    console = _watch(page)
    login(page, live_server.url, "demo")
    pk = demo.pk
    entry = demo.leaf_entry_id
    session_url = reverse("inspector:session", args=[pk])
    urls = [
        reverse("library:index"),
        reverse("library:search") + "?q=file",
        *(
            f"{session_url}?entry={entry}&tab={tab}"
            for tab in ("context", "prompt", "diff", "json", "entry")
        ),
        reverse("inspector:chart", args=[pk]),
        reverse("library:history", args=[pk]),
        reverse("jobs:list", args=[pk]),
        reverse("jobs:compact", args=[pk]) + f"?leaf={entry}",
        reverse("jobs:continue", args=[pk]),
        reverse("jobs:what_if", args=[pk]),
        reverse("review:members", args=[demo.project_id]),
        reverse("review:project_audit", args=[demo.project_id]),
        reverse("review:session_audit", args=[pk]),
        reverse("password_change"),
    ]
    for url in urls:
        response = page.goto(f"{live_server.url}{url}")
        assert response is not None and response.status == 200, url
        policy = response.headers.get("content-security-policy", "")
        assert "script-src 'self'" in policy and "style-src 'self'" in policy, url
        page.wait_for_load_state("networkidle")
        assert _violations(page, console) == [], url

    # htmx swaps under the policy: select entries in the tree, open a folded message, load the
    # compaction preview, the chart draws (uPlot).
    page.goto(f"{live_server.url}{session_url}")
    page.wait_for_selector("#tree a.trow")
    page.locator("#tree li a.trow").nth(2).click()
    page.wait_for_selector("#inspector .crumbs")
    page.locator("#tree li a.trow").nth(4).click()
    page.wait_for_load_state("networkidle")
    page.locator("a.button:has-text('Compact here')").first.click()
    page.wait_for_selector("#compact-form")
    page.wait_for_load_state("networkidle")
    page.goto(f"{live_server.url}{reverse('inspector:chart', args=[pk])}")
    page.wait_for_selector("canvas")
    assert page.evaluate("typeof htmx !== 'undefined' && htmx.config.allowEval") is False
    assert page.evaluate("htmx.config.selfRequestsOnly && !htmx.config.allowScriptTags")
    assert _violations(page, console) == []


def test_the_login_page_passes_the_csp_and_static_files_come_from_the_app(page, live_server):
    console = _watch(page)
    page.goto(f"{live_server.url}{reverse('login')}")
    page.wait_for_load_state("networkidle")
    color = page.evaluate("getComputedStyle(document.querySelector('.topbar')).display")
    assert color != "inline"  # app.css applied
    assert _violations(page, console) == []


def test_chromium_saves_an_export_under_its_real_name(page, live_server, blob_dir, tmp_path):
    hostile = "b-x\"; filename*=UTF-8''evil.html; x=\""
    path = tmp_path / "hostile.jsonl"
    path.write_text(
        "".join(json.dumps(line) + "\n" for line in linear_session_lines(hostile, "/x", "hi"))
    )
    session = import_session_file(path=path).session
    get_user_model().objects.create_user("ann", password=PASSWORD)
    login(page, live_server.url, "ann")
    url = f"{live_server.url}{reverse('jobs:export', args=[session.pk])}"
    with page.expect_download() as download:
        page.evaluate("url => { window.location.href = url; }", url)
    name = download.value.suggested_filename
    assert not name.endswith(".html") and name.endswith(".jsonl")
    assert "evil.html" in name  # the id is part of the name, not a parameter of the header


def test_chromium_saves_a_request_download_under_its_real_name(
    page, live_server, blob_dir, tmp_path
):
    hostile = "e\"; filename*=UTF-8''evil.html; x=\""
    lines = linear_session_lines("s-request-download", "/x", "hi")
    lines.append(
        {
            "type": "message",
            "id": hostile,
            "parentId": "aaaa0002",
            "timestamp": "2025-01-02T00:00:03.000Z",
            "message": {"role": "user", "content": "again", "timestamp": 1735776003000},
        }
    )
    path = tmp_path / "hostile-entry.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    session = import_session_file(path=path).session
    get_user_model().objects.create_user("ann", password=PASSWORD)
    login(page, live_server.url, "ann")
    query = urlencode({"entry": hostile, "download": "1"})
    url = f"{live_server.url}{reverse('inspector:request', args=[session.pk])}?{query}"
    with page.expect_download() as download:
        page.evaluate("url => { window.location.href = url; }", url)
    name = download.value.suggested_filename
    assert not name.endswith(".html") and name.endswith(".json")
    assert "evil.html" in name


def test_a_style_set_on_the_page_survives_a_swap_without_a_csp_violation(page, live_server, demo):
    """htmx copies the old element's settling attributes onto the new one by id; a style one
    (set from script, as a browser extension or a password manager sets it on a form field) was
    copied with setAttribute, which the policy blocks: a violation on every swap after it."""
    console = _watch(page)
    login(page, live_server.url, "demo")
    session_url = reverse("inspector:session", args=[demo.pk])
    page.goto(f"{live_server.url}{session_url}?entry={demo.leaf_entry_id}")
    page.wait_for_selector("#comment-body", state="attached")
    page.evaluate("document.querySelector('#comment-body').style.outline = '2px solid red'")
    page.locator("[role=tab]", has_text="System prompt").click()
    page.wait_for_selector("#inspector[data-tab=prompt]")
    page.wait_for_load_state("networkidle")
    assert page.locator("#comment-body").count() == 1
    assert _violations(page, console) == []
