"""``manage.py branch-summary SESSION_FILE --from OLD --to TARGET ... --dry-run --json``.

What Pi's ``/tree`` navigation with a summary would send: the common ancestor, the entries it
collects from the abandoned branch, and the request (``null`` when Pi sends none). A thin wrapper
over ``contextlab.pi.branch_summary``; the real run (no ``--dry-run``) goes through
``contextlab.jobs.cli`` (a job on a stored session, or the JSONL line Pi would append to a file).

When the left branch is a Pi 1.x turn (a persisted system message on the old leaf's path; issue
10) the preview follows Pi 1.6.0 (context edits applied, tool results left out, the thinking
level as reasoning) and the request carries ``maxTokens`` (pi-ai's clamp for the model;
``--context-window`` / ``--model-max-tokens`` when the catalogue does not know it, else null),
followed by ``dialect`` and ``dialectSource``.
"""

from __future__ import annotations

import importlib
from typing import Any, ClassVar

from django.core.management.base import BaseCommand, CommandParser

from contextlab.inspector.cli import load_session, resolve_entry
from contextlab.jobs import cli
from contextlab.pi import branch_summary
from contextlab.pi.dialects import pi_1_x, pi_1_x_compaction
from contextlab.pi.dialects.detect import DialectChoice, detect_turn_dialect
from contextlab.pi.session import SessionFile
from contextlab.pi.tokens import DEFAULT_RESERVE_TOKENS

# The module name has no hyphen problem for Django, but Python's import statement needs a name.
_compact = importlib.import_module("contextlab.jobs.management.commands.compact")


def preview_1x(
    parsed: SessionFile,
    tree: Any,
    old_leaf: str,
    target: str,
    options: dict[str, Any],
    choice: DialectChoice,
) -> dict[str, Any]:
    """The dry-run object for leaving a Pi 1.x branch."""
    entries, common = pi_1_x_compaction.collect_entries_for_branch_summary(tree, old_leaf, target)
    projection = pi_1_x.build_session_projection(parsed.entries, old_leaf, tree.by_id)
    model = _compact.model_for_1x(
        projection.model,
        {
            "context_window": options["context_window"] or None,
            "model_max_tokens": options["model_max_tokens"],
        },
    )
    limits = model or {"contextWindow": options["context_window"] or 0, "maxTokens": 0}
    request = None
    if old_leaf != target and entries:
        summary = pi_1_x_compaction.branch_summary_request(
            entries,
            limits,
            thinking_level=projection.thinking_level,
            reserve_tokens=options["reserve_tokens"],
            custom_instructions=options["instructions"] or None,
            replace_instructions=options["replace_instructions"],
            variant=choice.variant or "1.6",
        )
        if summary is not None:
            request = {
                "systemPrompt": pi_1_x_compaction.SUMMARIZATION_SYSTEM_PROMPT,
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": summary.prompt}]}
                ],
                "maxTokens": summary.max_tokens if model else None,
            }
    return {
        "commonAncestorId": common,
        "entryIds": [e.get("id") for e in entries],
        "request": request,
        "dialect": choice.dialect,
        "dialectSource": choice.as_dict(),
    }


class Command(BaseCommand):
    help = "Preview the branch summary request Pi 0.80.2 would send when leaving a branch."
    # A preview reads one file and touches neither the database nor the URLconf.
    requires_system_checks: ClassVar[list[str]] = []

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
            type=_compact.non_negative,
            default=DEFAULT_RESERVE_TOKENS,
            help="branchSummary.reserveTokens",
        )
        parser.add_argument(
            "--context-window",
            type=_compact.non_negative,
            default=0,
            help="model context window (0: Pi's 128000 fallback)",
        )
        parser.add_argument(
            "--model-max-tokens", type=_compact.non_negative, default=0, help="model maxTokens"
        )
        parser.add_argument("--dry-run", action="store_true", help="preview only, call no model")
        parser.add_argument("--json", action="store_true", help="print JSON")

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
                result = cli.stored_result(job)
                if options["json"]:
                    _compact.print_json(self.stdout, result)
                else:
                    self.stdout.write(_compact.render_text(result))
                return
        parsed, tree = load_session(options["session_file"], self.stderr)
        old_leaf = resolve_entry(parsed, tree, options["from_id"], "--from")
        target = resolve_entry(parsed, tree, options["to_id"], "--to")
        if not options["dry_run"]:
            self.run_branch_summary(parsed, old_leaf, target, options)
            return
        choice = detect_turn_dialect(parsed.entries, old_leaf, tree.by_id)
        if choice.dialect == "1.x":
            result = preview_1x(parsed, tree, old_leaf, target, options, choice)
            if options["json"]:
                _compact.print_json(self.stdout, result)
            else:
                self.stdout.write(_compact.render_text(result))
            return
        preview = branch_summary.branch_summary_preview(
            tree,
            old_leaf,
            target,
            branch_summary.BranchSummaryOptions(
                reserve_tokens=options["reserve_tokens"],
                context_window=options["context_window"],
                custom_instructions=options["instructions"] or None,
                replace_instructions=options["replace_instructions"],
            ),
        )
        result = preview.to_json()
        if options["json"]:
            _compact.print_json(self.stdout, result)
        else:
            self.stdout.write(_compact.render_text(result))

    def run_branch_summary(
        self, parsed: SessionFile, old_leaf: str, target: str, options: dict[str, Any]
    ) -> None:
        """Summarise with the configured model and print the entry Pi would append."""
        line = cli.run_file(
            parsed.source,
            parsed.entries,
            kind="branch_summary",
            leaf=old_leaf,
            target=target,
            parameters=cli.branch_parameters(options),
        )
        self.stdout.write(line)
