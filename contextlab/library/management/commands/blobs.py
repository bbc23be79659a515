"""`manage.py blobs --check | --prune [--grace SECONDS] [--json]`: compare the blob store
(CONTEXTLAB_BLOB_DIR) with the database.

`--check` lists orphans (files no revision or failed import points to, older than the grace
period), missing blobs (a revision whose file is gone) and short ones (holding fewer bytes than
were read); exit status 1 when it finds any. `--prune` removes the orphans (missing and short
blobs cannot be repaired here: restore them from a backup) and exits 1 only if some of those
remain. Files younger than `--grace` seconds (default 600) are left alone: they may belong to an
import still running.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from contextlab.library.importer.blobs import GRACE_SECONDS, blob_dir, blobs_check


class Command(BaseCommand):
    help = "Find orphan and missing blobs (--check), remove the orphans (--prune)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--check", action="store_true", help="report, change nothing")
        parser.add_argument("--prune", action="store_true", help="remove orphan blobs")
        parser.add_argument(
            "--grace", type=float, default=GRACE_SECONDS, help="seconds (default 600)"
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["check"] == options["prune"]:
            raise CommandError("Give --check or --prune.")
        report = blobs_check(prune=options["prune"], grace_seconds=options["grace"])
        if options["json"]:
            self.stdout.write(json.dumps({"root": str(blob_dir()), **report.as_json()}))
        else:
            for path in report.missing:
                self.stdout.write(f"missing  {path}")
            for path in report.short:
                self.stdout.write(f"short    {path}")
            pruned = set(report.pruned)
            for path in report.orphans:
                self.stdout.write(f"{'pruned' if path in pruned else 'orphan':<8} {path}")
            self.stdout.write(
                f"{len(report.orphans)} orphan(s){' removed' if options['prune'] else ''}, "
                f"{len(report.missing)} missing, {len(report.short)} short, "
                f"{len(report.young)} recent file(s) left alone, under {blob_dir()}"
            )
        if not report.ok:
            sys.exit(1)
