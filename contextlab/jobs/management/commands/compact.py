"""``manage.py compact SESSION_FILE ... --dry-run --json``: what Pi's ``/compact`` would send.

A thin wrapper over the engine's summaries (``contextlab.pi.summaries``) in the dialect of the
leaf's turn: read the file, pick the leaf, print the plan (``{"firstKeptEntryId",
"tokensBefore", "isSplitTurn", "request", "turnPrefixRequest", "previousSummary",
"summarizedEntryIds", "turnPrefixEntryIds", "readFiles", "modifiedFiles"}``, then
``nothingToCompact`` / ``shouldCompact`` where they apply). ``--what-if`` prints where
auto-compaction would have run along the path instead.

For a Pi 1.x turn (a persisted system message on the leaf's path, or ``--dialect 1.x``) the plan
follows Pi 1.6.0: the cut over the projection (context edits applied), the 1.x turn-prefix
prompt, each request's ``maxTokens`` = pi-ai's clamp for the session's model (found in the agent
dir's models.json, then the catalogue; ``--context-window`` and ``--model-max-tokens`` override
it; null while unknown), and after the usual keys ``systemMessage`` (what the entry would carry,
stamped now), ``dialect`` and ``dialectSource``. ``--dialect 0.73`` plans a 0.x turn as Pi 0.73.1
(its summarisation system prompt, budgets not capped by the model's maxTokens) and adds
``dialect`` / ``dialectSource``.

Without ``--dry-run`` it runs for real through ``contextlab.jobs.cli``, in the same dialect: for
a stored session (its session id, or ``pk:N``) a job appends the entry; for a file, the JSONL
line Pi would append is printed (the file is not written).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from contextlab.inspector.cli import load_session, resolve_entry
from contextlab.jobs import cli
from contextlab.pi import compaction
from contextlab.pi.tokens import DEFAULT_KEEP_RECENT_TOKENS, DEFAULT_RESERVE_TOKENS


class Command(BaseCommand):
    help = "Preview (or run) the summarisation request(s) Pi's /compact would send at a leaf."
    # A preview reads one file and touches neither the database nor the URLconf.
    requires_system_checks = ()

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("session_file")
        parser.add_argument("--leaf", help="entry id or line:N (default: the session's leaf)")
        parser.add_argument("--instructions", help="custom instructions (/compact <text>)")
        parser.add_argument(
            "--reserve-tokens", type=cli.non_negative, default=DEFAULT_RESERVE_TOKENS
        )
        parser.add_argument(
            "--keep-recent-tokens", type=cli.non_negative, default=DEFAULT_KEEP_RECENT_TOKENS
        )
        parser.add_argument(
            "--context-window",
            type=cli.non_negative,
            help="model context window (should-compact; Pi 1.x: the clamp)",
        )
        parser.add_argument(
            "--model-max-tokens", type=cli.non_negative, default=0, help="model maxTokens (0: none)"
        )
        cli.add_summary_arguments(parser)
        parser.add_argument(
            "--what-if",
            action="store_true",
            help="where auto-compaction would have run along the path (needs --context-window)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["dry_run"] and not options["what_if"]:
            session = cli.stored_session(options["session_file"])
            if session is not None:
                job = cli.run_stored(
                    session,
                    kind="compaction",
                    leaf=options["leaf"],
                    parameters=cli.compaction_parameters(options),
                )
                cli.emit(self.stdout, cli.stored_result(job), options)
                return
        parsed, tree = load_session(options["session_file"], self.stderr)
        leaf = tree.leaf_id
        if options["leaf"]:
            leaf = resolve_entry(parsed, tree, options["leaf"], "--leaf")

        if options["what_if"]:
            if options["context_window"] is None:
                raise CommandError("--what-if needs --context-window")
            found = compaction.auto_compaction_what_if(
                tree.path(leaf),
                context_window=options["context_window"],
                reserve_tokens=options["reserve_tokens"],
                keep_recent_tokens=options["keep_recent_tokens"],
            )
            cli.emit(self.stdout, {"compactions": [c.to_json() for c in found]}, options)
            return

        if not options["dry_run"]:
            # Summarise with the configured model and print the entry Pi would append.
            line = cli.run_file(
                parsed.source,
                parsed.entries,
                kind="compaction",
                leaf=leaf or "",
                parameters=cli.compaction_parameters(options),
                chosen=options.get("pi_version") or options.get("dialect"),
            )
            self.stdout.write(line)
            return
        cli.emit(self.stdout, cli.compaction_preview(parsed, tree, leaf, options), options)
