"""Entry rows have no database foreign keys (see the comment on Entry): the paths that write and
delete them must keep every entry attached to its revision and session."""

from __future__ import annotations

import pytest
from django.db import connection

from contextlab.library.importer import Status, import_session_file
from contextlab.library.models import Entry, Session, SessionRevision
from tests.library.conftest import chain, header

pytestmark = pytest.mark.django_db


def orphan_entries() -> int:
    """Entries whose revision or session row is missing, or whose session is not the
    revision's."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT count(*) FROM library_entry e
            LEFT JOIN library_sessionrevision r ON r.id = e.revision_id
            LEFT JOIN library_session s ON s.id = e.session_id
            WHERE r.id IS NULL OR s.id IS NULL OR r.session_id <> e.session_id
            """
        )
        return cursor.fetchone()[0]


def test_imported_entries_belong_to_their_revision_and_session(write_session) -> None:
    path = write_session(header(), *chain(4))
    import_session_file(path=path)
    # An append, then a rewrite into a second revision.
    write_session(header(), *chain(6))
    assert import_session_file(path=path).status == Status.APPENDED
    write_session(header(), *chain(3))
    assert import_session_file(path=path).status == Status.REVISED
    assert Entry.objects.count() == 6 + 3
    assert orphan_entries() == 0


def import_shrinking_session(write_session) -> None:
    """A session of 4 entries whose file then shrank to 2: two revisions."""
    path = write_session(header(), *chain(4))
    import_session_file(path=path)
    write_session(header(), *chain(2))
    assert import_session_file(path=path).status == Status.REVISED


def test_deleting_a_session_deletes_all_its_entries(write_session) -> None:
    import_shrinking_session(write_session)
    other = write_session(header(id="other-session"), *chain(3), name="other.jsonl")
    import_session_file(path=other)

    Session.objects.get(session_id="other-session").delete()

    assert Entry.objects.count() == 4 + 2
    assert orphan_entries() == 0


def test_deleting_a_superseded_revision_deletes_only_its_entries(write_session) -> None:
    import_shrinking_session(write_session)
    old = SessionRevision.objects.get(status=SessionRevision.Status.SUPERSEDED)

    old.delete()

    current = SessionRevision.objects.get()
    assert list(Entry.objects.values_list("revision_id", flat=True).distinct()) == [current.pk]
    assert Entry.objects.count() == 2
    assert orphan_entries() == 0
