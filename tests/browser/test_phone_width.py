"""Every page at a phone's width (390 px) in a real Chromium: no element reaches past the
viewport unless it sits in a box that scrolls on its own (a wide table scrolls inside its box,
not the page), and the controls people need (the inspector's tabs, the library's filters) are
on screen. Also at 1440 px, where nothing may be wider either."""

from __future__ import annotations

import pytest
from django.urls import reverse

from contextlab.jobs import services
from contextlab.jobs.parameters import JobParameters
from contextlab.library.importer import import_session_file
from contextlab.review.models import AuditEvent
from tests.conftest import login
from tests.inspector.sessions import linear_session_lines, write_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Elements whose right edge passes the viewport and that no scrolling box holds.
OVERFLOWING = """() => {
  const width = document.documentElement.clientWidth;
  const inScroller = (el) => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const style = getComputedStyle(p);
      if (/(auto|scroll|hidden|clip)/.test(style.overflowX)
          && p.getBoundingClientRect().right <= width + 1) {
        return true;
      }
    }
    return false;
  };
  const bad = [];
  for (const el of document.querySelectorAll("body *")) {
    const box = el.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) continue;
    if (box.right <= width + 1 && box.left >= -1) continue;
    if (inScroller(el)) continue;
    const name = el.tagName.toLowerCase() + (el.id ? "#" + el.id : "")
      + (el.className && typeof el.className === "string"
         ? "." + el.className.trim().split(/\\s+/).join(".") : "");
    const where = el.closest("[id]");
    const span = `[${Math.round(box.left)}..${Math.round(box.right)}]`;
    bad.push(`${name} in #${where ? where.id : "?"} ${span} ` + el.outerHTML.slice(0, 80));
  }
  return bad.slice(0, 12);
}"""


# The words of the matching elements' text that are drawn on more than one line (cut inside).
WORDS_CUT = """(selector) => {
  const cut = [];
  for (const el of document.querySelectorAll(selector)) {
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const word of node.data.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, word.index);
        range.setEnd(node, word.index + word[0].length);
        const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
        if (tops.size > 1) cut.push(word[0]);
      }
    }
  }
  return cut;
}"""


def fits(page, what: str) -> None:  # type: ignore[no-untyped-def]
    bad = page.evaluate(OVERFLOWING)
    assert not bad, f"{what} at {page.viewport_size['width']}px: {bad}"


def test_every_page_fits_the_screen_and_wide_tables_scroll_in_their_own_box(
    wpage, live_server, django_user_model, import_corpus, offline_provider, tmp_path
):
    admin = django_user_model.objects.create_superuser(
        username="admin", password="correct horse battery staple"
    )
    session, _ = import_corpus("branches")
    import_corpus("tools")
    # A project whose folder is long (the library's project filter lists it).
    long_cwd = "/home/someone/work/" + "a-rather-long-folder-name/" * 6 + "project"
    import_session_file(
        path=write_session(tmp_path, linear_session_lines("s-long", long_cwd, "long folder")),
        index_search=False,
    )
    import_session_file(
        path=write_session(
            tmp_path,
            linear_session_lines("s-words", "/home/someone/app", "Refactoring authentication"),
        ),
        index_search=False,
    )
    job = services.job_create(
        session=session,
        kind="compaction",
        parameters=JobParameters(keep_recent_tokens=10),
        requested_by=admin,
        enqueue=False,
    )
    services.job_execute(job_id=job.pk)
    AuditEvent.objects.create(
        actor=admin,
        verb="session.import",
        session=session,
        project=session.project,
        target="/a/very/long/path/" + "segment/" * 30 + "session.jsonl",
        data={"path": "/srv/" + "x" * 200},
    )
    login(wpage, live_server.url, "admin")
    pages = {
        "library": reverse("library:index"),
        "session": reverse("inspector:session", args=[session.pk]),
        "prompt tab": reverse("inspector:session", args=[session.pk]) + "?tab=prompt",
        "chart": reverse("inspector:chart", args=[session.pk]),
        "jobs": reverse("jobs:list", args=[session.pk]),
        "job": reverse("jobs:detail", args=[job.pk]),
        "history": reverse("library:history", args=[session.pk]),
        "audit": reverse("review:audit"),
        "session audit": reverse("review:session_audit", args=[session.pk]),
        "search": reverse("library:search") + "?q=file",
        "share links": reverse("sharing:links"),
        "api tokens": reverse("api:tokens"),
    }
    for what, path in pages.items():
        response = wpage.goto(f"{live_server.url}{path}")
        assert response is not None and response.status == 200, what
        wpage.wait_for_load_state("networkidle")
        fits(wpage, what)
    # The library's sessions keep their names' words whole (the table scrolls in its box rather
    # than squeezing the first column to a letter: "Genera / ted" on a phone before).
    wpage.goto(f"{live_server.url}{pages['library']}")
    assert wpage.locator("td.session-title > a").count() == 4
    assert wpage.evaluate(WORDS_CUT, "td.session-title > a") == []
    # The inspector's tabs are all reachable on a phone (they wrap or scroll in their bar).
    wpage.goto(f"{live_server.url}{pages['session']}")
    for tab in wpage.locator("[role=tab]").all():
        tab.scroll_into_view_if_needed()
        box = tab.bounding_box()
        assert box is not None and box["x"] >= 0
        assert box["x"] + box["width"] <= wpage.viewport_size["width"] + 1, tab.inner_text()
