"""Indexing resumes: entries a killed process left without search text are indexed by the next
import of their file (even an unchanged one) and by a worker's sweep; two indexers of one
revision do not both do the work."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from contextlab.jobs.tasks import index_pending_entries
from contextlab.library.importer import Status, import_session_file
from contextlab.library.models import Entry
from contextlab.library.search import _indexing_lock, index_revision
from tests.environment import unavailable
from tests.library.conftest import chain, header, message

pytestmark = pytest.mark.django_db


def _leave_unindexed() -> None:
    Entry.objects.update(search_indexed=False, search_text="")


def test_an_unchanged_import_indexes_what_a_killed_process_left(write_session):
    path = write_session(header(), *chain(5))
    import_session_file(path=path)
    _leave_unindexed()
    result = import_session_file(path=path)
    assert result.status == Status.UNCHANGED
    assert not Entry.objects.filter(search_indexed=False).exists()
    assert "pelicans" in Entry.objects.first().search_text


def test_the_sweep_task_indexes_what_is_left(write_session):
    import_session_file(path=write_session(header(), *chain(5)))
    _leave_unindexed()
    assert index_pending_entries() == 5
    assert not Entry.objects.filter(search_indexed=False).exists()


@pytest.mark.django_db(transaction=True)
def test_a_revision_being_indexed_elsewhere_is_left_to_that_indexer(write_session):
    if connection.vendor != "postgresql":
        unavailable("advisory locks are PostgreSQL's (set DATABASE_URL)")
    result = import_session_file(path=write_session(header(), *chain(5)), index_search=False)
    revision_id = result.session.current_revision_id
    held, release = threading.Event(), threading.Event()

    def other_indexer() -> None:
        with _indexing_lock(True, revision_id):
            held.set()
            release.wait(10)
        connection.close()

    thread = threading.Thread(target=other_indexer)
    thread.start()
    assert held.wait(10)
    assert index_revision(revision_id) == 0  # the other one has it
    release.set()
    thread.join(10)
    assert index_revision(revision_id) == 5


@pytest.mark.django_db(transaction=True)
def test_a_large_indexing_leaves_statistics_on_every_table_a_search_joins(
    write_session, monkeypatch
):
    """Autovacuum never analyzes a table of a few rows: without this, the first large import's
    searches were planned as if the current revision held 1 entry in 80 (a common phrase over
    1 GB sorted every hit, 265 ms, instead of reading the newest entries back, 8 ms)."""
    if connection.vendor != "postgresql":
        unavailable("planner statistics are PostgreSQL's (set DATABASE_URL)")
    monkeypatch.setattr("contextlab.library.search.ANALYZE_AFTER", 5)
    import_session_file(path=write_session(header(), *chain(6)))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, reltuples FROM pg_class WHERE relname = ANY(%s)",
            [["library_entry", "library_sessionrevision", "library_session", "library_project"]],
        )
        estimated = dict(cursor.fetchall())
    assert estimated == {
        "library_entry": 6,
        "library_sessionrevision": 1,
        "library_session": 1,
        "library_project": 1,
    }


def test_an_entry_orjson_refuses_is_indexed_all_the_same(write_session):
    # An integer past 64 bits (JSON.parse reads it as a float; orjson gives up on it).
    odd = message("e0000009", "e0000004", "user", "the zebracorn count", count=10**30)
    import_session_file(path=write_session(header(), *chain(5), odd), index_search=False)
    _leave_unindexed()
    index_revision(Entry.objects.first().revision_id)
    assert not Entry.objects.filter(search_indexed=False).exists()
    assert "zebracorn" in Entry.objects.get(entry_id="e0000009").search_text
