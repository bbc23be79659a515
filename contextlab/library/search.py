"""Full-text search over entry text: PostgreSQL tsvector where available, LIKE on SQLite.

Highlighting uses private-use code points as markers so the stored text can be HTML-escaped first
and the markers turned into <mark> afterwards: ts_headline itself does not escape its input.
"""

from __future__ import annotations

import re
from html import escape

from django.contrib.postgres.search import (
    SearchHeadline,
    SearchQuery,
    SearchRank,
    SearchVectorField,
)
from django.db import connection
from django.db.models import F, Func, QuerySet, Value
from django.utils.safestring import SafeString, mark_safe

START, STOP = "\ue000", "\ue001"
CONFIG = "english"
# tsvector holds at most 1 MB; entries are capped well below so one huge tool result cannot fail
# an import, and the cap keeps indexing cost bounded on multi-GB sessions.
MAX_SEARCH_CHARS = 100_000
SNIPPET_RADIUS = 90


class EntryVector(Func):
    """to_tsvector over Entry.search_text: exactly the expression of the GIN index (migration 0002),
    so the planner can use it."""

    template = "to_tsvector('english'::regconfig, %(expressions)s)"
    output_field = SearchVectorField()


def uses_postgres() -> bool:
    return connection.vendor == "postgresql"


def apply_search(qs: QuerySet, query: str) -> QuerySet:
    if uses_postgres():
        tsquery = SearchQuery(query, config=CONFIG, search_type="websearch")
        return (
            qs.annotate(search_vector=EntryVector(F("search_text")))
            .filter(search_vector=tsquery)
            .annotate(
                rank=SearchRank(EntryVector(F("search_text")), tsquery),
                headline=SearchHeadline(
                    "search_text",
                    tsquery,
                    config=CONFIG,
                    start_sel=START,
                    stop_sel=STOP,
                    max_fragments=2,
                    max_words=24,
                    min_words=8,
                    fragment_delimiter=" … ",
                ),
                search_query=Value(query),
            )
            .order_by("-rank", "-session__last_activity", "session_id", "seq")
        )
    terms = query_terms(query)
    if not terms:
        return qs.none()
    for term in terms:
        qs = qs.filter(search_text__icontains=term)
    return qs.annotate(search_query=Value(query)).order_by(
        "-session__last_activity", "session_id", "seq"
    )


def query_terms(query: str) -> list[str]:
    """Words of a websearch-style query, without its operators (for the fallback)."""
    words = re.findall(r"[^\s\"]+", query)
    return [w for w in words if w.lower() not in {"or", "and"} and not w.startswith("-")]


def snippet_html(entry) -> SafeString:  # type: ignore[no-untyped-def]
    headline = getattr(entry, "headline", None)
    if headline is None:
        terms = query_terms(getattr(entry, "search_query", ""))
        headline = _python_headline(entry.search_text, terms)
    html = escape(headline).replace(START, "<mark>").replace(STOP, "</mark>")
    return mark_safe(html)  # escaped above; only our markers become tags


def _python_headline(text: str, terms: list[str]) -> str:
    if not terms:
        return text[: 2 * SNIPPET_RADIUS]
    pattern = re.compile("|".join(re.escape(t) for t in terms), re.IGNORECASE)
    match = pattern.search(text)
    if match is None:
        return text[: 2 * SNIPPET_RADIUS]
    start = max(0, match.start() - SNIPPET_RADIUS)
    end = min(len(text), match.end() + SNIPPET_RADIUS)
    window = text[start:end]
    marked = pattern.sub(lambda m: f"{START}{m.group(0)}{STOP}", window)
    return ("… " if start else "") + marked + (" …" if end < len(text) else "")
