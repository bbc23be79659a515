"""``manage.py context SESSION_FILE [--leaf ID|line:N] ... --json``: what Pi sent at a leaf.

The command-line contract (docs/pi-engine.md, "The context command"; other parts and outside
checks rely on it):

    python manage.py context SESSION_FILE [--leaf ENTRY_ID] [--agent-dir DIR] [--pi-root DIR]
        [--date YYYY-MM-DD] [--tools a,b,c] --json

prints one JSON object ``{"leafId", "systemPrompt", "layers", "messages", "sent", "model",
"thinkingLevel"}``:

- ``messages``: Pi's ``convertToLlm`` of ``buildSessionContext`` at the leaf (default: the entry
  Pi resumes at, the last line; ``--leaf`` takes an id or ``line:N``, header = line 1);
- ``sent``: those messages after pi-ai's provider-independent ``transformMessages`` for the
  leaf's model (``<agent dir>/models.json`` first, then pi-ai's catalog);
- ``systemPrompt`` and ``layers``: Pi's system prompt for the header's cwd, with the context files,
  skills, SYSTEM.md and APPEND_SYSTEM.md found on disk in the agent dir and the cwd;
- ``model``: ``{"provider", "modelId"}`` or null; ``thinkingLevel`` as buildSessionContext says.

Strings are printed exactly as Pi's ``JSON.stringify`` would print them. Without ``--json``: a
readable rendering with a heading per layer. Bad input: exit status 1 and one line naming the
file, the line and the reason; lines Pi would skip are reported on stderr and skipped.
"""

from __future__ import annotations

import os
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from contextlab.inspector.cli import load_session, resolve_entry
from contextlab.pi.dialects import DEFAULT_DIALECT
from contextlab.pi.jsutil import json_stringify
from contextlab.pi.models import find_model
from contextlab.pi.request import PromptSource, build_request
from contextlab.pi.resources import discover_resources
from contextlab.pi.session import SessionFile, SessionTree

Json = dict[str, Any]


def resolve_leaf(parsed: SessionFile, tree: SessionTree, value: str | None) -> str | None:
    """The leaf's id: the given id, ``line:N``, or (None) the entry Pi resumes at."""
    if value is None:
        return tree.leaf_id
    return resolve_entry(parsed, tree, value, "--leaf")


def local_date(ms: Any) -> str | None:
    """The day of ``ms`` in this process's time zone, as Pi's prompt prints it."""
    if ms is None:
        return None
    if hasattr(time, "tzset"):
        time.tzset()  # honour a TZ set after start-up, as Node reads it per call
    return time.strftime("%Y-%m-%d", time.localtime(ms / 1000))


def build_context(
    parsed: SessionFile,
    tree: SessionTree,
    *,
    leaf_id: str | None,
    agent_dir: str,
    pi_root: str | None,
    date: str | None,
    tools: list[str] | None,
    home: str | None = None,
) -> Json:
    """The command's JSON object (see the module docstring): the engine's request at the leaf."""
    header = parsed.header or {}
    cwd = header.get("cwd") if isinstance(header.get("cwd"), str) else os.getcwd()
    source = PromptSource(
        cwd=cwd,
        resources=discover_resources(cwd=cwd, agent_dir=agent_dir, home=home),
        tools=tools,
        pi_root=pi_root,
        date=date,
        local_date=local_date,
    )
    request = build_request(
        parsed.entries,
        leaf_id,
        by_id=tree.by_id,
        header=parsed.header,
        model_lookup=lambda provider, model_id: find_model(provider, model_id, agent_dir),
        prompt=source,
    )
    result = request.cli_json()
    result["leafId"] = leaf_id
    return result


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
    for layer in result["layers"]:
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
    help = "Print what Pi 0.80.2 sent to the model at a leaf of a session file."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("session_file")
        parser.add_argument("--leaf", help="entry id, or line:N (the header is line 1)")
        parser.add_argument("--agent-dir", help="Pi's agent dir (default: $PI_CODING_AGENT_DIR)")
        parser.add_argument("--pi-root", help="Pi's package folder (README/docs paths)")
        parser.add_argument("--date", help="the prompt's date, YYYY-MM-DD")
        parser.add_argument("--tools", help="active tools, comma-separated")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["session_file"]
        date = options.get("date")
        if date is not None and not _is_date(date):
            raise CommandError(f"{path}: --date {date}: expected YYYY-MM-DD")
        parsed, tree = load_session(path, self.stderr)
        leaf_id = resolve_leaf(parsed, tree, options.get("leaf"))
        tools_arg = options.get("tools")
        tools = (
            [t.strip() for t in tools_arg.split(",") if t.strip()]
            if tools_arg is not None
            else list(DEFAULT_DIALECT.default_active_tools)
        )
        result = build_context(
            parsed,
            tree,
            leaf_id=leaf_id,
            agent_dir=options.get("agent_dir") or settings.PI_AGENT_DIR,
            pi_root=options.get("pi_root"),
            date=date,
            tools=tools,
        )
        if options.get("json"):
            self.stdout.write(json_stringify(result))
        else:
            self.stdout.write(render_text(result), ending="")


def _is_date(text: str) -> bool:
    parts = text.split("-")
    return (
        len(parts) == 3 and [len(p) for p in parts] == [4, 2, 2] and all(p.isdigit() for p in parts)
    )
