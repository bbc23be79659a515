"""The library table's rows come from a Jinja2 partial (contextlab/library/rendering.py): the
same rows, value for value, as the Django template that wrote them before (kept here as it was),
for sessions with and without labels, dates, models, cost, compactions and problems, titles
past the truncation and text that must be escaped."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.template import engines

from contextlab.library.models import Project, Session
from contextlab.library.rendering import session_rows_html
from contextlab.review.models import SessionLabel

pytestmark = pytest.mark.django_db

# The rows as templates/library/index.html wrote them with Django's template engine.
DJANGO_ROWS = (
    "{% load humanize_tokens %}" + (Path(__file__).parent / "library_rows_before.html").read_text()
)


def _space(html: str) -> str:
    return re.sub(r"\s+", " ", html).strip()


def test_the_library_rows_are_the_rows_the_django_template_wrote(settings, django_user_model):
    settings.TIME_ZONE = "Europe/Paris"  # dates are written in the current time zone
    odd = Project.objects.create(cwd="/work/<odd> & \"quoted\" 'dir'")
    plain = Project.objects.create(cwd="/srv/app")
    sessions = [
        Session.objects.create(
            project=odd,
            session_id="s-1",
            name="a <b>bold</b> & 'quoted' title " + "long " * 40,
            first_activity=datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
            last_activity=datetime(2026, 6, 30, 23, 59, tzinfo=UTC),
            models_used=["anthropic/claude", "openai/<gpt>"],
            entry_count=4000,
            tokens_estimated=1_234_567,
            usage_tokens=0,
            cost_total=12.3456,
            compaction_count=2,
            branch_count=5,
            problem_count=1,
        ),
        Session.objects.create(project=odd, session_id="s-2", entry_count=0, problem_count=3),
        Session.objects.create(
            project=plain,
            session_id="s-3",
            name="ünïcode ✓ title",
            tokens_estimated=12_345,
            usage_tokens=999,
            cost_total=0.004,
        ),
    ]
    SessionLabel.objects.create(session=sessions[0], name="needs review & <care>")
    SessionLabel.objects.create(session=sessions[0], name="ok")
    found = Session.objects.select_related("project").prefetch_related("review_labels")
    loaded = {s.pk: s for s in found}
    groups = [
        (odd, [loaded[sessions[0].pk], loaded[sessions[1].pk]]),
        (plain, [loaded[sessions[2].pk]]),
    ]

    before = engines["django"].from_string(DJANGO_ROWS).render({"groups": groups})
    after = session_rows_html(groups)

    assert "&lt;b&gt;bold" in after and "needs%20review%20%26%20%3Ccare%3E" in after
    assert _space(after) == _space(before)


@pytest.mark.parametrize(
    "value",
    [
        datetime(2026, 3, 29, 0, 59, 59, 999999, tzinfo=UTC),  # the hour Paris skips
        datetime(2026, 10, 25, 1, 30, tzinfo=UTC),  # the hour Paris repeats
        datetime(5, 1, 2, 3, 4, tzinfo=UTC),  # a four-digit year written with zeros
        datetime(2026, 12, 7, 9, 5),  # naive, as stored with USE_TZ off
    ],
)
def test_a_rows_dates_are_written_as_djangos_date_filter_writes_them(settings, value):
    from django.template.defaultfilters import date as date_filter
    from django.utils import timezone

    from contextlab.library.rendering import _dates

    settings.TIME_ZONE = "Europe/Paris"
    local = timezone.localtime(value) if timezone.is_aware(value) else value
    assert _dates(value) == (date_filter(local, "c"), date_filter(local, "Y-m-d H:i"))


def test_the_search_hits_are_the_hits_the_django_template_wrote(settings):
    from contextlab.library.models import Entry, SessionRevision
    from contextlab.library.rendering import search_hits_html
    from contextlab.library.search import START, STOP, snippet_html

    settings.TIME_ZONE = "Europe/Paris"
    project = Project.objects.create(cwd="/work/<odd> & \"quoted\" 'dir'")
    session = Session.objects.create(
        project=project, session_id="s-1", name="a <b>bold</b> & 'quoted' " + "long " * 30
    )
    revision = SessionRevision.objects.create(session=session, number=1, blob_path="x")
    for n, (entry_id, role, stamp) in enumerate(
        [
            ("ab12cd34", "user", datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
            ("odd id/&?#<x>", "toolResult", None),
        ]
    ):
        Entry.objects.create(
            session=session,
            revision=revision,
            seq=n,
            entry_id=entry_id,
            type="message",
            role=role,
            timestamp=stamp,
            data={},
        )
    # As search_entries gives them: with their session and project, and the headline it cut.
    hits = list(Entry.objects.select_related("session", "session__project").order_by("seq"))
    for hit in hits:
        hit.headline = f"the {START}pelican{STOP} & <co>"
        hit.search_query = "pelican"

    after = search_hits_html(hits)
    for hit in hits:
        hit.snippet_html = snippet_html(hit)  # what the search view set for the Django loop
    template = (Path(__file__).parent / "search_hits_before.html").read_text()
    before = engines["django"].from_string(template).render({"hits": hits})

    assert "odd%20id/%26%3F%23%3Cx%3E" in after and "<mark>pelican</mark> &amp; &lt;co&gt;" in after
    assert _space(after) == _space(before)
