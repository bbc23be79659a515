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
from tests.library.conftest import chain, header

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
