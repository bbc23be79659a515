"""``manage.py branch-summary SESSION_FILE --from OLD --to TARGET ... --dry-run --json``.

What Pi's ``/tree`` navigation with a summary would send: the common ancestor, the entries it
collects from the abandoned branch, and the request (``null`` when Pi sends none), then
``summarizedEntryIds``, ``readFiles``, ``modifiedFiles``, ``tokenBudget`` and ``totalTokens``. A
thin wrapper over the engine's summaries (``contextlab.pi.summaries``) in the dialect of the
branch left; the real run (no ``--dry-run``) goes through ``contextlab.jobs.cli`` (a job on a
stored session, or the JSONL line Pi would append to a file).

When the left branch is a Pi 1.x turn (a persisted system message on the old leaf's path, or
``--dialect 1.x``) the preview follows Pi 1.6.0 (context edits applied, tool results left out,
the thinking level as reasoning) and the request carries ``maxTokens`` (pi-ai's clamp for the
session's model, found in the agent dir's models.json, then the catalogue;
``--context-window`` / ``--model-max-tokens`` override it; null while unknown), followed by
``dialect`` and ``dialectSource``.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from contextlab.inspector.cli import load_session, resolve_entry
from contextlab.jobs import cli
from contextlab.pi.tokens import DEFAULT_RESERVE_TOKENS


class Command(BaseCommand):
    help = "Preview (or run) the branch summary Pi would send when leaving a branch."
    # A preview reads one file and touches neither the database nor the URLconf.
    requires_system_checks = ()

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("session_file")
        parser.add_argument(
            "--from", dest="from_id", required=True, help="the leaf being left (id or line:N)"
        )
        parser.add_argument("--to", dest="to_id", required=True, help="the target (id or line:N)")
        parser.add_argument("--instructions", help="custom instructions")
        parser.add_argument(
            "--replace-instructions",
            action="store_true",
            help="the instructions replace the default prompt",
        )
        parser.add_argument(
            "--reserve-tokens",
            type=cli.non_negative,
            default=DEFAULT_RESERVE_TOKENS,
            help="branchSummary.reserveTokens",
        )
        parser.add_argument(
            "--context-window",
            type=cli.non_negative,
            default=0,
            help="model context window (0: the model's, else Pi's 128000 fallback)",
        )
        parser.add_argument(
            "--model-max-tokens",
            type=cli.non_negative,
            default=0,
            help="model maxTokens (Pi 1.x: the clamp; 0: the model's)",
        )
        cli.add_summary_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["dry_run"]:
            session = cli.stored_session(options["session_file"])
            if session is not None:
                job = cli.run_stored(
                    session,
                    kind="branch_summary",
                    leaf=options["from_id"],
                    target=options["to_id"],
                    parameters=cli.branch_parameters(options),
                )
                cli.emit(self.stdout, cli.stored_result(job), options)
                return
        parsed, tree = load_session(options["session_file"], self.stderr)
        old_leaf = resolve_entry(parsed, tree, options["from_id"], "--from")
        target = resolve_entry(parsed, tree, options["to_id"], "--to")
        if not options["dry_run"]:
            # Summarise with the configured model and print the entry Pi would append.
            line = cli.run_file(
                parsed.source,
                parsed.entries,
                kind="branch_summary",
                leaf=old_leaf,
                target=target,
                parameters=cli.branch_parameters(options),
                chosen=options.get("pi_version") or options.get("dialect"),
            )
            self.stdout.write(line)
            return
        result = cli.branch_summary_preview(parsed, tree, old_leaf, target, options)
        cli.emit(self.stdout, result, options)
