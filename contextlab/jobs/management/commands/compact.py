"""``manage.py compact SESSION_FILE ... --dry-run --json``: what Pi's ``/compact`` would send.

A thin wrapper over ``contextlab.pi.compaction``: read the file, pick the leaf, print the preview
(``{"firstKeptEntryId", "tokensBefore", "isSplitTurn", "request", "turnPrefixRequest", ...}``).
``--what-if`` prints where auto-compaction would have run along the path instead.

Without ``--dry-run`` it runs for real through ``contextlab.jobs.cli``: for a stored session (its
session id, or ``pk:N``) a job appends the entry; for a file, the JSONL line Pi would append is
printed (the file is not written).
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.core.management.base import BaseCommand, CommandError, CommandParser

from contextlab.inspector.cli import load_session, resolve_entry
from contextlab.jobs import cli
from contextlab.pi import compaction
from contextlab.pi.jsutil import json_stringify
from contextlab.pi.session import SessionFile
from contextlab.pi.tokens import DEFAULT_KEEP_RECENT_TOKENS, DEFAULT_RESERVE_TOKENS


def non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(text)
    return value


def print_json(stdout: Any, value: Any) -> None:
    stdout.write(json_stringify(value))


class Command(BaseCommand):
    help = "Preview the summarisation request(s) Pi 0.80.2's /compact would send at a leaf."
    # A preview reads one file and touches neither the database nor the URLconf.
    requires_system_checks: ClassVar[list[str]] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("session_file")
        parser.add_argument("--leaf", help="entry id or line:N (default: the session's leaf)")
        parser.add_argument("--instructions", help="custom instructions (/compact <text>)")
        parser.add_argument("--reserve-tokens", type=non_negative, default=DEFAULT_RESERVE_TOKENS)
        parser.add_argument(
            "--keep-recent-tokens", type=non_negative, default=DEFAULT_KEEP_RECENT_TOKENS
        )
        parser.add_argument(
            "--context-window", type=non_negative, help="model context window (should-compact)"
        )
        parser.add_argument(
            "--model-max-tokens", type=non_negative, default=0, help="model maxTokens (0: none)"
        )
        parser.add_argument("--dry-run", action="store_true", help="preview only, call no model")
        parser.add_argument("--json", action="store_true", help="print JSON")
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
                self._emit(cli.stored_result(job), options)
                return
        parsed, tree = load_session(options["session_file"], self.stderr)
        leaf = tree.leaf_id
        if options["leaf"]:
            leaf = resolve_entry(parsed, tree, options["leaf"], "--leaf")
        path = tree.path(leaf)

        if options["what_if"]:
            if options["context_window"] is None:
                raise CommandError("--what-if needs --context-window")
            found = compaction.auto_compaction_what_if(
                path,
                context_window=options["context_window"],
                reserve_tokens=options["reserve_tokens"],
                keep_recent_tokens=options["keep_recent_tokens"],
            )
            self._emit({"compactions": [c.to_json() for c in found]}, options)
            return

        if not options["dry_run"]:
            self.run_compaction(parsed, leaf, options)
            return

        preview = compaction.compaction_preview(
            path,
            compaction.CompactionOptions(
                reserve_tokens=options["reserve_tokens"],
                keep_recent_tokens=options["keep_recent_tokens"],
                model_max_tokens=options["model_max_tokens"],
                custom_instructions=options["instructions"] or None,
            ),
        )
        result = preview.to_json()
        if path and path[-1].get("type") == "compaction":
            result["nothingToCompact"] = "Already compacted"
        elif preview.preparation is None:
            result["nothingToCompact"] = "Nothing to compact (session too small)"
        if options["context_window"] is not None and preview.preparation is not None:
            result["shouldCompact"] = compaction.should_compact(
                preview.preparation.tokens_before,
                options["context_window"],
                options["reserve_tokens"],
            )
        self._emit(result, options)

    def run_compaction(
        self, parsed: SessionFile, leaf_id: str | None, options: dict[str, Any]
    ) -> None:
        """Summarise with the configured model and print the entry Pi would append."""
        line = cli.run_file(
            parsed.source,
            parsed.entries,
            kind="compaction",
            leaf=leaf_id or "",
            parameters=cli.compaction_parameters(options),
        )
        self.stdout.write(line)

    def _emit(self, value: Any, options: dict[str, Any]) -> None:
        if options["json"]:
            print_json(self.stdout, value)
            return
        self.stdout.write(render_text(value))


def render_text(value: dict[str, Any]) -> str:
    """A readable rendering: scalar fields, then each request's system prompt and user text."""
    lines: list[str] = []
    for key, item in value.items():
        if isinstance(item, dict) and "messages" in item:
            lines.append(f"== {key} (maxTokens {item['maxTokens']}) ==")
            lines.append(item["systemPrompt"])
            for message in item["messages"]:
                lines.append(f"-- {message['role']} --")
                lines.extend(block.get("text", "") for block in message["content"])
        elif isinstance(item, list) and item and isinstance(item[0], dict):
            lines.append(f"{key}:")
            lines.extend(f"  {json_stringify(i)}" for i in item)
        else:
            lines.append(f"{key}: {json_stringify(item)}")
    return "\n".join(lines)
