"""`manage.py reimport_sessions SESSION_ID... | --all [--json]`: redo imports from the original
bytes kept in the blob store.

Each session's current revision is read again from its stored copy into a new revision (the
old one stays, with its entries), for instance after an upgrade of contextlab that reads
sessions differently; the session files themselves are not needed. Entries contextlab added
(compactions, branch summaries) are carried over, as when a file is rewritten. The output is
import_sessions' (`--json`: the same object, status "revised" or "failed"); exit status 1 when a
session could not be re-imported.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from contextlab.inspector.services import store_tree_indexes
from contextlab.library.importer import ImportResult, Status, import_session_file
from contextlab.library.management.commands.import_sessions import results_json
from contextlab.library.models import Session
from contextlab.pi.session import Problem
from contextlab.review.services import audit_imports, command_actor

REASON = "re-imported from the stored original bytes"


class Command(BaseCommand):
    help = "Re-import sessions from the original bytes kept when they were imported."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("session_ids", nargs="*", help="Pi session ids (the header's id)")
        parser.add_argument("--all", action="store_true", help="every stored session")
        parser.add_argument(
            "--json", action="store_true", help="print one JSON object, as import_sessions does"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        ids: list[str] = options["session_ids"]
        if bool(ids) == bool(options["all"]):
            raise CommandError("Give session ids, or --all (not both).")
        sessions = Session.objects.select_related("current_revision").order_by("pk")
        if ids:
            sessions = sessions.filter(session_id__in=ids)
            missing = sorted(set(ids) - set(sessions.values_list("session_id", flat=True)))
            if missing:
                raise CommandError(f"No stored session with id {', '.join(missing)}")
        started = time.perf_counter()
        actor = command_actor("reimport_sessions")

        def audit(result: ImportResult) -> None:
            audit_imports(results=[result], actor_label=actor, statuses=(Status.REVISED,))

        results = [reimport(session, audit) for session in sessions]
        seconds = time.perf_counter() - started
        store_tree_indexes(results)
        if options["json"]:
            self.stdout.write(json.dumps(results_json(results, seconds), ensure_ascii=False))
        else:
            for result in results:
                line = f"{result.status:<9} {result.session_id}  {result.entries} entries"
                self.stdout.write(line)
                for problem in result.problems if result.status == Status.FAILED else ():
                    self.stderr.write(f"  {problem.reason}")
            revised = sum(r.status == Status.REVISED for r in results)
            self.stdout.write(
                f"{revised} of {len(results)} sessions re-imported in {seconds:.2f} s"
            )
        if any(r.status == Status.FAILED for r in results):
            sys.exit(1)


def reimport(
    session: Session, within: Callable[[ImportResult], None] | None = None
) -> ImportResult:
    """Read the session's current revision again, from its stored bytes, into a new revision
    (`within`: as import_session_file's)."""
    revision = session.current_revision
    if revision is None:
        return _failed(session, "the session has no revision to re-import")
    try:
        handle = revision.open_blob()
    except OSError as exc:
        return _failed(
            session,
            f"the stored bytes of revision r{revision.number} cannot be read "
            f"({revision.blob_file}: {exc.strerror or exc}); nothing was changed",
        )
    with handle:
        return import_session_file(
            fileobj=handle,
            name=revision.source_path or revision.blob_path,
            revise=REASON,
            within=within,
        )


def _failed(session: Session, reason: str) -> ImportResult:
    return ImportResult(
        path=session.source_path,
        status=Status.FAILED,
        session_id=session.session_id,
        entries=session.entry_count,
        problems=[Problem(0, reason)],
        session=session,
    )
