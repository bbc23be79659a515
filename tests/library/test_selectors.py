"""Selectors used by the UI and the jobs: query counts and full-text search on PostgreSQL."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.db import connection

from contextlab.library.importer import import_session_file
from contextlab.library.models import Entry, Session
from contextlab.library.search import snippet_html
from contextlab.library.selectors import engine_entries, search_entries, session_problems
from tests.library.conftest import chain, header, message
from tests.waiting import wait_until

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(write_session) -> Session:
    tool = {
        "type": "message",
        "id": "t0000001",
        "parentId": "e0000009",
        "timestamp": "2026-01-02T10:00:02.000Z",
        "message": {
            "role": "toolResult",
            "toolCallId": "call_1",
            "toolName": "bash",
            "content": [{"type": "text", "text": "<script>alert(1)</script> flamingo output"}],
            "isError": False,
            "timestamp": 1,
        },
    }
    path = write_session(header(), *chain(10), tool, b"broken line")
    return Session.objects.get(session_id=import_session_file(path=path).session_id)


def test_it_loads_engine_entries_in_one_query(session, django_assert_num_queries) -> None:
    with django_assert_num_queries(1):
        entries = engine_entries(session)
    assert [e["id"] for e in entries] == [f"e{i:07d}" for i in range(10)] + ["t0000001"]


def test_it_lists_entries_in_file_order_in_one_query(session, django_assert_num_queries) -> None:
    with django_assert_num_queries(1):
        rows = list(Entry.objects.for_session(session))
    assert [r.seq for r in rows] == list(range(11))
    assert [r.line_no for r in rows] == list(range(2, 13))


def test_it_searches_tool_results_with_escaped_highlights(
    session, django_assert_num_queries
) -> None:
    # One to count the word hits (ranked or newest first, words or substrings), one for them;
    # around the count, one to have it read the index (and, inside a caller's transaction as
    # here, one to put the planner back).
    with django_assert_num_queries(4 if connection.vendor == "postgresql" else 1):
        hits = list(search_entries("flamingo"))
    assert [h.entry_id for h in hits] == ["t0000001"]
    html = snippet_html(hits[0])
    assert "<mark>flamingo</mark>" in html
    assert "<script>" not in html
    # The fallback highlighter (SQLite) escapes the text before marking it.
    plain = Entry.objects.get(entry_id="t0000001")
    plain.search_query = "flamingo"
    assert "&lt;script&gt;alert(1)&lt;/script&gt; <mark>flamingo</mark>" in snippet_html(plain)
    assert hits[0].session.project.cwd == "/home/u/proj"  # select_related: no extra query


def test_it_finds_stemmed_words_and_phrases_on_postgresql(session) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL full-text search")
    assert len(search_entries("pelican")) == 10  # stemmed: "pelicans"
    assert [h.entry_id for h in search_entries('"message number 3"')] == ["e0000003"]
    assert len(search_entries("pelicans -flamingo")) == 10


def test_it_searches_only_current_revisions(session, write_session) -> None:
    path = write_session(header(), message("z0000001", None, "user", "only flamingo now"))
    import_session_file(path=path)  # same header id, other content: a new revision
    assert [h.entry_id for h in search_entries("flamingo")] == ["z0000001"]


def test_it_hides_everything_from_anonymous_users(session) -> None:
    assert list(search_entries("flamingo", user=AnonymousUser())) == []
    member = get_user_model().objects.create_user("member", password="x" * 12)
    assert len(search_entries("flamingo", user=member)) == 1


def test_it_lists_the_problems_of_the_current_revision(session) -> None:
    problems = list(session_problems(session))
    assert [(p.line, p.reason.split(":")[0]) for p in problems] == [(13, "invalid JSON")]


def test_search_can_use_the_full_text_index_that_leaves_out_rows_without_vectors(session) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's full-text index")
    from django.contrib.postgres.search import SearchQuery

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_indexdef('library_entry_search_vector'::regclass)")
        assert cursor.fetchone()[0].endswith("WHERE (search_vector IS NOT NULL)")
        # As on a table too big to scan: then only the full-text index can answer `@@`.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_indexscan = off")
    query = SearchQuery("flamingo", config="english", search_type="websearch")
    plan = Entry.objects.filter(search_vector=query).explain()
    assert "Bitmap Index Scan on library_entry_search_vector" in plan


@pytest.mark.django_db(transaction=True)
def test_it_fills_search_vectors_on_several_connections_after_a_large_import(
    write_session, settings
) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's full-text index")
    from contextlab.library.search import index_revision

    settings.CONTEXTLAB_INDEX_WORKERS = 3
    result = import_session_file(path=write_session(header(), *chain(57)), index_search=False)
    before = _connections()

    indexed = index_revision(result.session.current_revision_id, batch=5)  # 12 batches

    assert indexed == 57
    assert not Entry.objects.filter(search_indexed=False).exists()
    assert Entry.objects.filter(search_vector__isnull=True).count() == 0
    assert len(search_entries("pelicans")) == 57
    wait_until(
        lambda: _connections() <= before, timeout=5, what="the workers' connections to close"
    )


@pytest.mark.django_db(transaction=True)
def test_it_reports_a_failure_of_a_search_indexing_connection(
    write_session, settings, monkeypatch
) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's full-text index")
    from psycopg.errors import UndefinedObject

    from contextlab.library import search

    settings.CONTEXTLAB_INDEX_WORKERS = 2
    result = import_session_file(path=write_session(header(), *chain(20)), index_search=False)
    before = _connections()
    monkeypatch.setattr(search, "CONFIG", "no_such")
    with pytest.raises(UndefinedObject, match="no_such"):
        search.index_revision(result.session.current_revision_id, batch=5)
    wait_until(
        lambda: _connections() <= before, timeout=5, what="the workers' connections to close"
    )


def _connections() -> int:
    """This database's connections (a closed connection's server process may linger in
    pg_stat_activity for a moment: wait for the count to come down)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        return cursor.fetchone()[0]
