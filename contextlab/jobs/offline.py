"""The offline summariser: Pi's summary sections filled from the conversation, without a model.

Used when no provider is configured, so compaction and branch summaries work out of the box and
in tests without network. Deterministic: the same messages always give the same text. It reads
the same agent messages Pi would serialise for the model (after the same preparation), takes the
goal from the first user request, the recent tool activity from tool calls and their results, and
the files from the tracked file operations. Jobs that used it are labelled offline in the UI.
"""

from __future__ import annotations

from typing import Any

from contextlab.pi.entries import Json

OFFLINE_NOTE = "(offline summary: written by contextlab without a model)"
RECENT_TOOL_CALLS = 12
LINE_CAP = 200


def _one_line(text: str, cap: int = LINE_CAP) -> str:
    line = " ".join(text.split())
    return line if len(line) <= cap else line[: cap - 1] + "…"


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def _user_texts(messages: list[Json]) -> list[str]:
    texts = []
    for msg in messages:
        role = msg.get("role")
        if role == "user" or role == "custom":
            text = _text_of(msg.get("content"))
            if text.strip():
                texts.append(text)
    return texts


def _call_label(call: Json) -> str:
    raw = call.get("arguments")
    args = raw if isinstance(raw, dict) else {}
    for key in ("path", "command", "pattern", "query"):
        value = args.get(key)
        if isinstance(value, str) and value:
            return f"`{call.get('name')}` {_one_line(value, 120)}"
    return f"`{call.get('name')}`"


def _tool_activity(messages: list[Json]) -> tuple[list[str], list[str]]:
    """(done, blocked): recent tool calls, and the ones whose result was an error."""
    results = {m.get("toolCallId"): m for m in messages if m.get("role") == "toolResult"}
    done: list[str] = []
    blocked: list[str] = []
    for msg in messages:
        if msg.get("role") != "assistant":
            continue
        for block in msg.get("content") or []:
            if not isinstance(block, dict) or block.get("type") != "toolCall":
                continue
            result = results.get(block.get("id"))
            label = _call_label(block)
            if result is not None and result.get("isError"):
                blocked.append(
                    f"- {label} failed: {_one_line(_text_of(result.get('content')), 160)}"
                )
            else:
                done.append(f"- {label}")
    return done[-RECENT_TOOL_CALLS:], blocked[-RECENT_TOOL_CALLS:]


def _last_assistant_text(messages: list[Json]) -> str:
    for msg in reversed(messages):
        if msg.get("role") == "assistant":
            text = _text_of(msg.get("content"))
            if text.strip():
                return text
    return ""


def _previous_section(previous: str | None, heading: str) -> str:
    if not previous:
        return ""
    marker = f"## {heading}\n"
    start = previous.find(marker)
    if start < 0:
        return ""
    body = previous[start + len(marker) :]
    end = body.find("\n## ")
    return (body if end < 0 else body[:end]).strip()


def _bullets(items: list[str], empty: str) -> str:
    return "\n".join(items) if items else empty


def summarise(
    kind: str,
    messages: list[Json],
    *,
    previous_summary: str | None = None,
    read_files: list[str] | None = None,
    modified_files: list[str] | None = None,
) -> str:
    """A summary in the format of Pi's prompt for ``kind``: history, turn_prefix or branch."""
    users = _user_texts(messages)
    done, blocked = _tool_activity(messages)
    last_text = _last_assistant_text(messages)
    first_request = _one_line(users[0]) if users else "(no user request in this part)"
    goal = _previous_section(previous_summary, "Goal") or f"- {first_request}"
    files = []
    if modified_files:
        files.append("- Modified: " + ", ".join(modified_files))
    if read_files:
        files.append("- Read: " + ", ".join(read_files))
    in_progress = f"- {_one_line(last_text)}" if last_text else "- (none recorded)"
    next_steps = (
        f"- {_one_line(users[-1])}" if len(users) > 1 else "- Continue from the kept messages."
    )

    if kind == "turn_prefix":
        return "\n".join(
            [
                "## Original Request",
                first_request,
                "",
                "## Early Progress",
                _bullets(done, "- (no tool calls)"),
                "",
                "## Context for Suffix",
                _bullets(files, "- (no file operations)"),
                f"- {OFFLINE_NOTE}",
            ]
        )

    sections = [
        "## Goal",
        goal,
        "",
        "## Constraints & Preferences",
        f"- {OFFLINE_NOTE}",
        "",
        "## Progress",
        "### Done",
        _bullets(done, "- (no tool calls)"),
        "",
        "### In Progress",
        in_progress,
        "",
        "### Blocked",
        _bullets(blocked, "- (none)"),
        "",
        "## Key Decisions",
        "- (not inferred offline)",
        "",
        "## Next Steps",
        next_steps,
    ]
    if kind != "branch":
        sections += ["", "## Critical Context", _bullets(files, "- (no file operations)")]
    return "\n".join(sections)
