"""``manage.py context SESSION_FILE [--leaf ID|line:N] ... --json``: what Pi sent at a leaf.

The command-line contract (docs/pi-engine.md, "The context command"; other parts and outside
checks rely on it):

    python manage.py context SESSION_FILE [--leaf ENTRY_ID] [--agent-dir DIR] [--pi-root DIR]
        [--date YYYY-MM-DD] [--tools a,b,c] --json

prints one JSON object ``{"leafId", "systemPrompt", "layers", "messages", "sent", "model",
"thinkingLevel", "tools"}``:

- ``messages``: Pi's ``convertToLlm`` of ``buildSessionContext`` at the leaf (default: the entry
  Pi resumes at, the last line; ``--leaf`` takes an id or ``line:N``, header = line 1);
- ``sent``: those messages after pi-ai's provider-independent ``transformMessages`` for the
  leaf's model (``<agent dir>/models.json`` first, then pi-ai's catalog);
- ``systemPrompt`` and ``layers``: Pi's system prompt for the header's cwd, with the context files,
  skills, SYSTEM.md and APPEND_SYSTEM.md found on disk in the agent dir and the cwd;
- ``model``: ``{"provider", "modelId"}`` or null; ``thinkingLevel`` as buildSessionContext says;
- ``tools``: the tool declarations sent with the prompt (``[{name, description, parameters}]``:
  the active set, ``--tools`` or Pi's default).

A prompt captured by contextlab's Pi extension for the request (a ``contextlab.prompt`` custom
entry; ``contextlab.pi.captured``) is what Pi sent: ``systemPrompt`` and ``tools`` are then the
captured ones, ``layers`` one layer holding it.

For a Pi 1.x turn (docs/pi-dialects.md; detected per turn: the leaf's path holds a persisted
``system`` message, or chosen with ``--dialect``) the object is instead ``{"leafId", "systemPrompt",
"tools", "messages", "sent", "model", "thinkingLevel", "maxTokens", "dialect"}`` followed by
``dialectSource``: the prompt and tool declarations are the replay of the session's system
messages, ``messages`` shows them in place with their sections and tool names, ``maxTokens`` is
pi-ai's clamp (null when the model's limits are unknown: give ``--context-window`` /
``--model-max-tokens``); then ``promptSections`` (``[{name, entryId}]``: the entry that last
set each part of the prompt, ``name`` "" for appended content) and ``toolOrigins`` (tool ->
entry). With ``--dialect 0.73|0.80`` a 0.x turn's object is built in that
version's dialect (0.73: markdown project context, no project trust, its guideline) and gets
``maxTokens`` (0.73: pi-ai's ``min(model.maxTokens, 32000)``; 0.80 sends none: null),
``dialect`` and ``dialectSource`` after its usual keys.

Strings are printed exactly as Pi's ``JSON.stringify`` would print them. Without ``--json``: a
readable rendering with a heading per layer. Bad input: exit status 1 and one line naming the
file, the line and the reason; lines Pi would skip are reported on stderr and skipped.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from contextlab.inspector.cli import load_session, resolve_leaf
from contextlab.inspector.turns import cli_inputs, context_json
from contextlab.pi.dialects.detect import CHOICES
from contextlab.pi.dialects.release_table import release_argument
from contextlab.pi.entries import Json
from contextlab.pi.jsutil import json_stringify
from contextlab.pi.request import LimitOverrides


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "thinking":
            parts.append(f"[thinking] {block.get('thinking', '')}")
        elif kind == "toolCall":
            arguments = json_stringify(block.get("arguments"))
            parts.append(f"[tool call {block.get('name')} {block.get('id')}] {arguments}")
        elif kind == "image":
            parts.append(f"[image {block.get('mimeType', '')}]")
    return "\n".join(parts)


def render_text(result: Json) -> str:
    """The readable rendering: a heading per prompt layer, then the messages sent."""
    out = [f"# Context at leaf {result['leafId']}"]
    model = result["model"]
    model_text = f"{model.get('provider')}/{model.get('modelId')}" if model else "(none)"
    out.append(f"model: {model_text}   thinking level: {result['thinkingLevel']}")
    if "dialectSource" in result:
        source = result["dialectSource"]
        how = "detected" if source["detected"] else "chosen"
        out.append(f"dialect: Pi {result['dialect']} ({how}: {source['reason']})")
    if "maxTokens" in result:
        out.append(f"max tokens sent: {result['maxTokens']}")
    if "layers" not in result:
        out.append(f"\n## System prompt (replayed from the session)\n{result['systemPrompt']}")
        names = ", ".join(str(t["name"]) for t in result["tools"])
        out.append(f"\n## Tools ({len(result['tools'])}): {names}")
    for layer in result.get("layers", []):
        sources = ", ".join(layer["sources"])
        out.append(f"\n## {layer['title']} (~{layer['tokens']} tokens)")
        if sources:
            out.append(f"sources: {sources}")
        out.append(layer["text"].strip("\n"))
    out.append(f"\n## Messages sent ({len(result['sent'])})")
    for index, message in enumerate(result["sent"]):
        role = message.get("role")
        label = f"{role} ({message.get('toolName')})" if role == "toolResult" else role
        out.append(f"\n### {index + 1}. {label}")
        out.append(_content_text(message.get("content")))
    return "\n".join(out) + "\n"


class Command(BaseCommand):
    help = "Print what Pi sent to the model at a leaf of a session file (in the turn's dialect)."
    # A file in, JSON out: no database, no URLs. The system checks would import the URL
    # configuration, and with it the whole web stack and the REST API's schema.
    requires_system_checks = ()

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("session_file")
        parser.add_argument("--leaf", help="entry id, or line:N (the header is line 1)")
        parser.add_argument("--agent-dir", help="Pi's agent dir (default: $PI_CODING_AGENT_DIR)")
        parser.add_argument("--pi-root", help="Pi's package folder (README/docs paths)")
        parser.add_argument("--date", help="the prompt's date, YYYY-MM-DD")
        parser.add_argument("--tools", help="active tools, comma-separated")
        parser.add_argument(
            "--dialect",
            choices=CHOICES,
            help="the Pi version that sent the turn (default: detected; 0.80 for 0.x turns)",
        )
        parser.add_argument(
            "--pi-version",
            type=release_argument,
            help="the Pi release X.Y.Z that sent the turn (default: told from the file)",
        )
        parser.add_argument("--context-window", type=int, help="the model's context window")
        parser.add_argument("--model-max-tokens", type=int, help="the model's maxTokens")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["session_file"]
        date = options.get("date")
        if date is not None and not _is_date(date):
            raise CommandError(f"{path}: --date {date}: expected YYYY-MM-DD")
        parsed, tree = load_session(path, self.stderr)
        tools_arg = options.get("tools")
        inputs = cli_inputs(
            parsed.header,
            agent_dir=options.get("agent_dir") or settings.PI_AGENT_DIR,
            pi_root=options.get("pi_root"),
            date=date,
            tools=[t.strip() for t in tools_arg.split(",") if t.strip()]
            if tools_arg is not None
            else None,
            chosen=options.get("pi_version") or options.get("dialect"),
            limits=LimitOverrides(options.get("context_window"), options.get("model_max_tokens")),
        )
        leaf_id = resolve_leaf(parsed, tree, options.get("leaf"))
        result = context_json(parsed, tree, leaf_id=leaf_id, inputs=inputs)
        self._write(result, options)

    def _write(self, result: Json, options: dict[str, Any]) -> None:
        if options.get("json"):
            self.stdout.write(json_stringify(result))
        else:
            self.stdout.write(render_text(result), ending="")


def _is_date(text: str) -> bool:
    parts = text.split("-")
    return (
        len(parts) == 3 and [len(p) for p in parts] == [4, 2, 2] and all(p.isdigit() for p in parts)
    )
