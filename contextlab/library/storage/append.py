"""The one way entries are written to a stored session: `EntryAppender` places each entry in the
tree (sequence number, depth, branches), estimates its tokens, keeps the session's figures and
writes its row. The import (a file read from the start, or a sync of the lines Pi appended) feeds
it line by line; `append_entries` uses it for the entries contextlab itself writes (a job's
compaction or branch summary), then has the search vectors and the tree index follow.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.db import transaction

from contextlab.library.models import Entry, Session, SessionRevision
from contextlab.library.search import index_revision
from contextlab.library.signals import entries_appended
from contextlab.library.storage.copy import EntryWriter
from contextlab.library.storage.figures import Figures, entry_tokens
from contextlab.library.storage.tree import TreeState
from contextlab.library.storage.values import clean_text, dump_data, entry_datetime, pi_iso_datetime
from contextlab.pi.session import Problem

logger = logging.getLogger(__name__)


class EntryAppender:
    """Appends entries to one revision: rows through `writer`, depths through `tree`, the
    session's figures in `figures`; `seq` is the next sequence number. `finish()` once done."""

    def __init__(
        self,
        session: Session,
        revision: SessionRevision,
        *,
        tree: TreeState,
        figures: Figures,
        writer: EntryWriter,
        seq: int,
    ) -> None:
        self.session = session
        self.revision = revision
        self.tree = tree
        self.figures = figures
        self.writer = writer
        self.seq = seq

    @classmethod
    def after_stored(cls, session: Session, revision: SessionRevision) -> EntryAppender:
        """An appender that goes on after the revision's stored entries (a sync of the lines Pi
        appended, `append_entries`): its tree and the session's figures as stored, and the next
        sequence number, kept by every append and read under the caller's row lock on the
        session, so that concurrent appends get distinct numbers."""
        return cls(
            session,
            revision,
            tree=TreeState(revision),
            figures=Figures.of(session),
            writer=EntryWriter(session, revision),
            seq=revision.next_seq,
        )

    def add(
        self,
        box: list[dict[str, Any]],
        *,
        line_no: int | None,
        origin: str,
        problems: list[Problem],
        exact: bytes | None = None,
    ) -> None:
        """Append the entry held in `box` (a one-item list, emptied here: for a line of 100 MB the
        parsed entry is let go before its row is built, not held by the caller meanwhile).

        The entry has a string `id` and `type`. `exact` is its JSON text as read, when it can be
        stored as is; `problems` receives what the tree or the storage found."""
        value = box.pop()
        entry_id: str = value["id"]
        kind: str = value["type"]
        parent = value.get("parentId")
        parent = parent if isinstance(parent, str) else None
        depth, leaves, found = self.tree.add(entry_id, parent, line_no or 0)
        problems.extend(found)
        stamp = value.get("timestamp")
        when = pi_iso_datetime(stamp)
        # For COPY: Pi's own text where it has that form (formatting the datetime again cost
        # more than anything else in a row), else the datetime.
        stored_time: datetime | str | None = stamp
        if when is None:
            stored_time = when = entry_datetime(stamp)
        tokens = entry_tokens(value)
        self.figures.add(value, when, tokens)
        self.figures.branch_count += leaves
        message = value.get("message")
        role = message.get("role") if kind == "message" and isinstance(message, dict) else ""
        if exact is not None:
            data = exact  # the line as written: its exact JSON text, nothing to redo
        else:
            data, problem = dump_data(value, line_no)
            if problem is not None:
                problems.append(problem)
        # Everything needed from the parsed entry is taken: let it go before the row is built
        # (for a line of 100 MB, its decoded text is another 100 MB held meanwhile).
        del value, message
        row = (
            self.session.pk,
            self.revision.pk,
            self.seq,
            line_no,
            clean_text(entry_id[:100]),
            clean_text(parent[:100]) if parent is not None else None,
            clean_text(kind[:64]),
            clean_text(role[:64]) if isinstance(role, str) else "",
            stored_time,
            data,
            tokens,
            depth,
            origin,
            "",  # search text and vector: filled by search.index_revision once committed
            False,
        )
        self.writer.add(row, len(data))
        self.seq += 1

    def finish(self, problems: list[Problem]) -> None:
        """Write the rows still buffered and settle the depths of entries whose parent came
        after them (forward references, cycles: reported into `problems`)."""
        self.writer.close()
        changed, leaves, found = self.tree.finish()
        self.figures.branch_count += leaves
        problems.extend(found)
        for entry_id, depth in changed.items():
            Entry.objects.filter(revision=self.revision, entry_id=entry_id).update(depth=depth)


def append_entries(
    *, session: Session, revision: SessionRevision, entries: list[dict[str, Any]]
) -> list[Problem]:
    """Append entries contextlab wrote (not read from the file) to the session's current
    revision, after its other entries, as an export writes them; returns what the tree found.

    The caller holds the session's and the revision's row locks (select_for_update, in its
    transaction), as the import does before it appends synced lines: concurrent appends get
    distinct sequence numbers. Once the transaction commits, the new entries get their search
    vectors and `entries_appended` is sent (the inspector stores the grown tree index).
    """
    appender = EntryAppender.after_stored(session, revision)
    problems: list[Problem] = []
    for entry in entries:
        appender.add([entry], line_no=None, origin=Entry.Origin.CONTEXTLAB, problems=problems)
    appender.finish(problems)
    SessionRevision.objects.filter(pk=revision.pk).update(next_seq=appender.seq)
    revision.next_seq = appender.seq
    appender.figures.apply_to(session)
    session.save(update_fields=list(Figures.__dataclass_fields__))
    revision_id, session_id = revision.pk, session.pk
    transaction.on_commit(lambda: index_revision(revision_id))
    transaction.on_commit(lambda: _announce(session_id), robust=True)
    return problems


def _announce(session_id: int) -> None:
    for receiver, outcome in entries_appended.send_robust(sender=Session, session_id=session_id):
        if isinstance(outcome, Exception):
            logger.error("entries_appended receiver %r failed", receiver, exc_info=outcome)
