"""A recorded session's entries as if its replies had come from Claude Sonnet 4.5 (the
anthropic-messages api), for the tests of the Anthropic body built from real sessions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CLAUDE = {"provider": "anthropic", "model": "claude-sonnet-4-5", "api": "anthropic-messages"}


def as_claude(path: Path, thinking_level: str | None = None) -> list[dict[str, Any]]:
    """The session's entries with every reply and model change on Claude; with
    `thinking_level`, every thinking-level change set to it."""
    entries = []
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        message = entry.get("message")
        if isinstance(message, dict) and message.get("role") == "assistant":
            message.update(CLAUDE)
        if entry.get("type") == "model_change":
            entry.update(provider=CLAUDE["provider"], modelId=CLAUDE["model"])
        if thinking_level is not None and entry.get("type") == "thinking_level_change":
            entry["thinkingLevel"] = thinking_level
        entries.append(entry)
    return entries
