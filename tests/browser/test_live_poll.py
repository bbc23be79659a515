"""The session page's live poll rests in a hidden tab, at a phone's width (390 px) and a
desktop's (1440 px): while `document.hidden` no poll request goes out, and the tab shown again
polls at once (not at the next tick), then goes on polling."""

from __future__ import annotations

import time

import pytest
from django.urls import reverse

from tests.conftest import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# The page's visibility as a browser reports it when the user switches tabs: `document.hidden`,
# `document.visibilityState` and a `visibilitychange` event on the document.
SET_HIDDEN = """(hidden) => {
  Object.defineProperty(document, 'hidden', {configurable: true, get: () => hidden});
  Object.defineProperty(document, 'visibilityState',
                        {configurable: true, get: () => (hidden ? 'hidden' : 'visible')});
  document.dispatchEvent(new Event('visibilitychange'));
}"""


def test_the_live_poll_rests_while_the_tab_is_hidden_and_asks_at_once_when_shown(
    wpage, live_server, owner, import_corpus
):
    session, _ = import_corpus("branches")
    live = reverse("inspector:live", args=[session.pk])
    polls: list[float] = []
    wpage.on("request", lambda r: polls.append(time.monotonic()) if live in r.url else None)
    login(wpage, live_server.url, owner.username)
    wpage.goto(f"{live_server.url}{reverse('inspector:session', args=[session.pk])}")
    wpage.wait_for_selector("#tree [aria-selected='true'][data-entry-id]")
    with wpage.expect_request(lambda r: live in r.url, timeout=5000):
        pass  # the poll runs while the tab is shown
    wpage.wait_for_timeout(300)  # a poll on its way comes back

    wpage.evaluate(SET_HIDDEN, True)
    hidden_at = time.monotonic()
    wpage.wait_for_timeout(5000)  # two and a half poll intervals
    during = [t for t in polls if t > hidden_at]
    assert during == [], f"{len(during)} poll(s) while hidden"

    shown_at = time.monotonic()
    with wpage.expect_request(lambda r: live in r.url, timeout=1500):
        wpage.evaluate(SET_HIDDEN, False)
    first = min(t for t in polls if t > shown_at) - shown_at
    assert first < 0.6, f"the first poll went out {first:.2f}s after the tab was shown"
    with wpage.expect_request(lambda r: live in r.url, timeout=4000):
        pass  # and the poll goes on
    # The page is as it was: tree, URL and inspector on the same entry.
    selected = wpage.get_attribute("#tree [aria-selected='true'][data-entry-id]", "data-entry-id")
    assert selected == wpage.get_attribute("#inspector", "data-entry-id")
