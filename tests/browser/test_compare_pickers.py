"""In Chromium: the compare form's pickers offer the requests whose words are typed, and a
message shown whole as "replaced" opens its full text in place."""

from __future__ import annotations

import shutil

import pytest
from django.urls import reverse

from contextlab.inspector import views
from contextlab.inspector.selectors import clear_cache, session_index
from contextlab.library.importer import import_session_file
from tests.conftest import CORPUS, PASSWORD, login
from tests.inspector.sessions import write_session
from tests.inspector.test_compare_bounded import LINES, _log, _siblings_lines

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def person(django_user_model):
    return django_user_model.objects.create_user(username="ann", password=PASSWORD)


def test_typing_words_in_a_picker_offers_the_requests_holding_them(
    page, live_server, person, blob_dir, tmp_path
):
    clear_cache()
    copy = tmp_path / "branches.jsonl"
    shutil.copyfile(CORPUS / "branches" / "session.jsonl", copy)
    session = import_session_file(path=copy).session
    points = dict(views._request_points(session_index(session)))
    licence = sorted(i for i, label in points.items() if "licence" in label.lower())
    assert licence and len(licence) < len(points)
    login(page, live_server.url, "ann")
    page.goto(f"{live_server.url}{reverse('inspector:compare', args=[session.pk])}")
    page.fill("input[name=b]", "licence")
    page.wait_for_function(
        "n => document.querySelectorAll('#compare-choices option').length === n", arg=len(licence)
    )
    offered = page.eval_on_selector_all("#compare-choices option", "os => os.map(o => o.value)")
    assert sorted(offered) == licence
    # Picked: the option's value is the entry id the form sends.
    page.fill("input[name=b]", licence[0])
    page.locator("form.compare-form button[type=submit]").click()
    page.wait_for_selector(f"#compare[data-b='{licence[0]}']")


def test_a_replaced_message_opens_its_full_text_in_place(
    page, live_server, person, blob_dir, tmp_path
):
    clear_cache()
    lines = _siblings_lines(_log(LINES), _log(LINES, suffix=" (retried)"), "browser")
    session = import_session_file(path=write_session(tmp_path, lines, name="s.jsonl")).session
    login(page, live_server.url, "ann")
    url = reverse("inspector:compare", args=[session.pk]) + "?a=s0000001&b=s0000002"
    page.goto(f"{live_server.url}{url}")
    page.wait_for_selector("#compare-note")
    cell = page.locator(".compare-cell[data-side=b][data-diff=replaced]")
    cell.locator("a:has-text('full text')").click()
    cell.locator(".compare-full-text pre").first.wait_for()
    assert "finished step 1499 (retried)" in cell.locator(".compare-full-text").inner_text()
