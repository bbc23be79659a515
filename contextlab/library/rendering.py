"""The library table's rows, rendered by a Jinja2 partial (templates/jinja2/library/): a team's
library is hundreds of rows on the page everyone opens first, where Django's template engine
spent most of the page's time (a library of 51 sessions: 20 ms a page, two thirds of it the
rows). Each value is prepared here the way the Django filters the table used wrote it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.template.defaultfilters import floatformat
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString
from django.utils.text import Truncator

from contextlab.library.models import Entry, Project, Session
from contextlab.library.search import snippet_html
from contextlab.partials import render_partial

_PK = 987654321  # a placeholder pk: each URL is reversed once per page, not once per row


def _url_for(name: str) -> Callable[[Any], str]:
    """pk -> the URL `name` takes a pk for, reversed once (Django's reverse per row was a large
    part of a long table's time)."""
    url, marker = reverse(name, args=[_PK]), str(_PK)
    return lambda pk: url.replace(marker, str(pk))


def _dates(value: datetime | None) -> tuple[str, str]:
    """ISO 8601 and "Y-m-d H:i" in the current time zone, as `|date:'c'` and `|date:"Y-m-d H:i"`
    write them ("" and "—" without a date). Written directly: Django's date filter (a
    DateFormat per call, each format character looked up) was a third of the rows' time, two
    dates per row (measured on the load test's library)."""
    if value is None:
        return "", "—"
    aware = settings.USE_TZ and timezone.is_aware(value)
    local = timezone.localtime(value) if aware else value  # as templates show a date
    # DateFormat.c is isoformat(); Y, m, d, H, i are zero-padded fields.
    day = f"{local.year:04d}-{local.month:02d}-{local.day:02d}"
    shown = f"{day} {local.hour:02d}:{local.minute:02d}"
    return local.isoformat(), shown


def _session_row(session: Session, url: str) -> dict[str, Any]:
    first_iso, first = _dates(session.first_activity)
    last_iso, last = _dates(session.last_activity)
    return {
        "url": url,
        "title": Truncator(str(session.title)).chars(110),
        "session_id": session.session_id,
        "labels": [label.name for label in session.review_labels.all()],
        "first_iso": first_iso,
        "first": first,
        "last_iso": last_iso,
        "last": last,
        "models": session.models_used or [],
        "entry_count": session.entry_count,
        "tokens_estimated": session.tokens_estimated,
        "usage_tokens": session.usage_tokens,
        "cost": floatformat(session.cost_total, 2) if session.cost_total else "",
        "compaction_count": session.compaction_count,
        "branch_count": session.branch_count,
        "problem_count": session.problem_count,
    }


def session_rows_html(groups: Iterable[tuple[Project, list[Session]]]) -> SafeString:
    """One <tbody> per (project, its sessions): the project's row, then a row per session."""
    session_url = _url_for("inspector:session")
    members_url = _url_for("review:members")
    audit_url = _url_for("review:project_audit")
    prepared = []
    for project, sessions in groups:
        head = {
            "name": project.name,
            "cwd": project.cwd,
            "members_url": members_url(project.pk),
            "audit_url": audit_url(project.pk),
        }
        rows = [_session_row(s, session_url(s.pk)) for s in sessions]
        prepared.append((head, rows))
    return render_partial("library/_session_rows.html", {"groups": prepared})


def search_hits_html(hits: Sequence[Entry]) -> SafeString:
    """The search page's hits (`search_entries`' rows: with their session and project, and
    what the search found to mark), as the Django template wrote them: a page of 100 hits spent
    most of its rendering in Django's `{% url %}`, `truncatechars` and `date` per hit."""
    session_url = _url_for("inspector:session")
    prepared = []
    for hit in hits:
        url = session_url(hit.session_id)
        prepared.append(
            {
                "entry_id": hit.entry_id,
                # Django's urlencode filter: quote() with "/" safe.
                "url": f"{url}?entry={quote(str(hit.entry_id), safe='/')}&tab=context",
                "title": Truncator(str(hit.session.title)).chars(80),
                "place": hit.place,
                "project": hit.session.project.name,
                # `|date` writes nothing for a missing date.
                "when": _dates(hit.timestamp)[1] if hit.timestamp else "",
                "snippet_html": snippet_html(hit),
            }
        )
    return render_partial("library/_search_hits.html", {"hits": prepared})
