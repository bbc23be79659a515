"""``manage.py compact SESSION_FILE ... --dry-run --json``: what Pi's ``/compact`` would send.

A thin wrapper over ``contextlab.pi.compaction``: read the file, pick the leaf, print the preview
(``{"firstKeptEntryId", "tokensBefore", "isSplitTurn", "request", "turnPrefixRequest", ...}``).
``--what-if`` prints where auto-compaction would have run along the path instead.

For a Pi 1.x turn (a persisted system message on the leaf's path; docs/pi-dialects.md) the
preview follows Pi 1.6.0: the cut over the projection (context edits applied), the 1.x
turn-prefix prompt, each request's ``maxTokens`` = pi-ai's clamp for the model
(``--context-window`` and ``--model-max-tokens`` when the catalogue does not know it; null
otherwise), and, after the usual keys, ``systemMessage`` (what the entry would carry),
``dialect`` and ``dialectSource``.
``--dialect 0.73`` previews a 0.x turn as Pi 0.73.1 (its summarisation system prompt, budgets not
capped by the model's maxTokens) and adds ``dialect`` / ``dialectSource``.

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
from contextlab.pi.dialects import DEFAULT_DIALECT, pi_1_x, pi_1_x_compaction
from contextlab.pi.dialects.detect import CHOICES, DialectChoice, detect_turn_dialect
from contextlab.pi.dialects.pi_0_73 import PI_0_73
from contextlab.pi.jsutil import json_stringify
from contextlab.pi.models import find_model
from contextlab.pi.session import SessionFile, SessionTree
from contextlab.pi.tokens import DEFAULT_KEEP_RECENT_TOKENS, DEFAULT_RESERVE_TOKENS


def non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(text)
    return value


def model_for_1x(projection_model: Any, options: dict[str, Any]) -> dict[str, Any] | None:
    """The leaf's model with its limits (catalogue, then ``--context-window`` /
    ``--model-max-tokens``); None when a limit stays unknown."""
    found = None
    if projection_model:
        found = find_model(projection_model.get("provider"), projection_model.get("modelId"))
    model: dict[str, Any] = dict(found) if found else {}
    if options.get("context_window") is not None:
        model["contextWindow"] = options["context_window"]
    if options.get("model_max_tokens"):
        model["maxTokens"] = options["model_max_tokens"]
    if not model.get("contextWindow") or not model.get("maxTokens"):
        return None
    if projection_model and "id" not in model:
        model["id"] = projection_model.get("modelId")
        model["provider"] = projection_model.get("provider")
    return model


def preview_1x(
    parsed: SessionFile,
    tree: SessionTree,
    leaf: Any,
    path: list[dict[str, Any]],
    options: dict[str, Any],
    choice: DialectChoice,
) -> dict[str, Any]:
    """``compact --dry-run`` of a Pi 1.x turn: the requests ``compact`` would send (no budget of
    their own: ``maxTokens`` is pi-ai's clamp for the model, null when its limits are unknown)
    and the ``systemMessage`` the entry would carry."""
    plan = pi_1_x_compaction.prepare_compaction(
        path, keep_recent_tokens=options["keep_recent_tokens"]
    )
    projection = pi_1_x.build_session_projection(parsed.entries, leaf, tree.by_id)
    result: dict[str, Any] = {
        "firstKeptEntryId": None,
        "tokensBefore": None,
        "isSplitTurn": None,
        "request": None,
        "turnPrefixRequest": None,
    }
    if plan is None:
        already = bool(path) and path[-1].get("type") == "compaction"
        result["nothingToCompact"] = (
            "Already compacted" if already else "Nothing to compact (session too small)"
        )
    else:
        model = model_for_1x(projection.model, options)
        limits = model or {"contextWindow": 0, "maxTokens": 0}
        requests = pi_1_x_compaction.compaction_requests(
            plan,
            limits,
            thinking_level=projection.thinking_level,
            custom_instructions=options["instructions"] or None,
            variant=choice.variant or "1.6",
        )
        by_kind = {
            r.kind: {
                "systemPrompt": pi_1_x_compaction.SUMMARIZATION_SYSTEM_PROMPT,
                "messages": [{"role": "user", "content": [{"type": "text", "text": r.prompt}]}],
                "maxTokens": r.max_tokens if model else None,
            }
            for r in requests
        }
        result.update(
            {
                "firstKeptEntryId": plan.first_kept_entry_id,
                "tokensBefore": plan.tokens_before,
                "isSplitTurn": plan.is_split_turn,
                "request": by_kind.get("history"),
                "turnPrefixRequest": by_kind.get("turnPrefix"),
                "previousSummary": plan.previous_summary,
            }
        )
        if options["context_window"] is not None:
            result["shouldCompact"] = compaction.should_compact(
                plan.tokens_before, options["context_window"], options["reserve_tokens"]
            )
    result["systemMessage"] = pi_1_x.current_system_message(projection.messages)
    result["dialect"] = choice.dialect
    result["dialectSource"] = choice.as_dict()
    return result


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
        parser.add_argument(
            "--dialect",
            choices=CHOICES,
            help="the Pi version (default: detected; 0.80 for 0.x turns)",
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

        chosen = options.get("dialect")
        choice = detect_turn_dialect(parsed.entries, leaf, tree.by_id, chosen=chosen)
        if choice.dialect == "1.x":
            self._emit(preview_1x(parsed, tree, leaf, path, options, choice), options)
            return

        preview = compaction.compaction_preview(
            path,
            compaction.CompactionOptions(
                reserve_tokens=options["reserve_tokens"],
                keep_recent_tokens=options["keep_recent_tokens"],
                # 0.73 did not cap the summary budgets by the model's maxTokens.
                model_max_tokens=0 if choice.dialect == "0.73" else options["model_max_tokens"],
                custom_instructions=options["instructions"] or None,
            ),
            PI_0_73 if choice.dialect == "0.73" else DEFAULT_DIALECT,
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
        if chosen is not None:
            result["dialect"] = choice.dialect
            result["dialectSource"] = choice.as_dict()
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
