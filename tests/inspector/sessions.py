"""Session files for the dashboard tests, written as Pi 0.80.2 writes them (one JSON per line).

`rich_session_lines()` has everything the inspector shows differently: a branch, a compaction,
a branch summary, a custom message, a label, a session name, thinking, tool calls, a truncated
tool result, an image, an error reply, and HTML/script in messages, tool output and file names.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import CORPUS
from tests.generated import large_session_generator

SESSION_ID = "0193a1b2-0000-7000-8000-00000000beef"
CWD = "/home/ann/<script>proj</script>"
# A 1x1 transparent PNG.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
XSS = '<script>window.__xss = 1</script><img src=x onerror="window.__xss=2">'
NOTICE = "\n\n[Showing lines 1-2000 of 5000. Use offset=2001 to continue.]"


def _ts(n: int) -> str:
    return f"2025-11-20T10:{n // 60:02d}:{n % 60:02d}.000Z"


def _usage(inp: int, out: int) -> dict:
    return {
        "input": inp,
        "output": out,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": inp + out,
        "cost": {"input": 0.001, "output": 0.002, "cacheRead": 0, "cacheWrite": 0, "total": 0.003},
    }


def _assistant(
    content: list, n: int, stop: str = "stop", usage: tuple = (100, 20), **extra
) -> dict:
    return {
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": _usage(*usage),
        "stopReason": stop,
        "timestamp": 1763632800000 + n * 1000,
        **extra,
    }


def _user(content, n: int) -> dict:
    return {"role": "user", "content": content, "timestamp": 1763632800000 + n * 1000}


def rich_session_lines() -> list[dict]:
    lines: list[dict] = [
        {"type": "session", "version": 3, "id": SESSION_ID, "timestamp": _ts(0), "cwd": CWD}
    ]
    parent: str | None = None
    n = 0

    def add(entry: dict, entry_id: str, parent_id: str | None = None) -> str:
        nonlocal parent, n
        n += 1
        head = {"type": entry.pop("type"), "id": entry_id}
        head["parentId"] = parent if parent_id is None else parent_id
        head["timestamp"] = _ts(n)
        lines.append({**head, **entry})
        parent = entry_id
        return entry_id

    add(
        {"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"},
        "m0000001",
    )
    add({"type": "thinking_level_change", "thinkingLevel": "medium"}, "t0000001")
    add({"type": "message", "message": _user(f"Please read the file {XSS}", 3)}, "u0000001")
    add(
        {
            "type": "message",
            "message": _assistant(
                [
                    {"type": "thinking", "thinking": "I should read it </pre><script>x()</script>"},
                    {"type": "text", "text": "Reading it."},
                    {
                        "type": "toolCall",
                        "id": "call_1",
                        "name": "read",
                        "arguments": {"path": "/tmp/<img src=x onerror=alert(1)>.py"},
                    },
                ],
                4,
                stop="toolUse",
                usage=(1200, 40),
            ),
        },
        "a0000001",
    )
    add(
        {
            "type": "message",
            "message": {
                "role": "toolResult",
                "toolCallId": "call_1",
                "toolName": "read",
                "content": [{"type": "text", "text": f"print('{XSS}')" + NOTICE}],
                "isError": False,
                "timestamp": 1763632805000,
            },
        },
        "r0000001",
    )
    fork = add(
        {
            "type": "message",
            "message": _assistant(
                [{"type": "text", "text": "It prints HTML."}], 6, usage=(1500, 30)
            ),
        },
        "a0000002",
    )
    # The abandoned branch: a question and its error reply.
    add({"type": "message", "message": _user("First attempt <b>bold</b>", 7)}, "u0000002")
    add(
        {
            "type": "message",
            "message": _assistant([], 8, stop="error", errorMessage="overloaded_error"),
        },
        "a0000003",
    )
    # Back at the fork (Pi's /tree with a summary): the branch summary, then the active branch.
    parent = fork
    add(
        {
            "type": "branch_summary",
            "fromId": fork,
            "summary": "Tried <i>bold</i>; the API was overloaded.",
        },
        "b0000001",
    )
    add(
        {
            "type": "message",
            "message": _user(
                [
                    {"type": "text", "text": "Look at this"},
                    {"type": "image", "data": PNG, "mimeType": "image/png"},
                ],
                10,
            ),
        },
        "u0000003",
    )
    add(
        {
            "type": "message",
            "message": _assistant(
                [{"type": "text", "text": "A tiny image."}], 11, usage=(3000, 25)
            ),
        },
        "a0000004",
    )
    add(
        {
            "type": "compaction",
            "summary": f"## Goal\nRead files {XSS}",
            "firstKeptEntryId": "u0000003",
            "tokensBefore": 3025,
            "details": {"readFiles": ["/tmp/x.py"], "modifiedFiles": []},
            "fromHook": False,
        },
        "c0000001",
    )
    add(
        {
            "type": "custom_message",
            "customType": "note<script>",
            "content": "Extension says <script>hi</script>",
            "display": True,
        },
        "x0000001",
    )
    add({"type": "message", "message": _user("And now?", 14)}, "u0000004")
    add(
        {
            "type": "message",
            "message": _assistant([{"type": "text", "text": "Done."}], 15, usage=(900, 10)),
        },
        "a0000005",
    )
    add({"type": "label", "targetId": "u0000003", "label": "image <b>here</b>"}, "l0000001")
    add({"type": "session_info", "name": "Rich <script>session</script>"}, "s0000001")
    return lines


def linear_session_lines(
    session_id: str, cwd: str, text: str, *, reply: str = "ok", cost: float = 0.5
) -> list[dict]:
    """A header, one user message and one assistant reply (with usage and a cost)."""
    return [
        {
            "type": "session",
            "version": 3,
            "id": session_id,
            "timestamp": "2025-01-02T00:00:00.000Z",
            "cwd": cwd,
        },
        {
            "type": "message",
            "id": "aaaa0001",
            "parentId": None,
            "timestamp": "2025-01-02T00:00:01.000Z",
            "message": {"role": "user", "content": text, "timestamp": 1735776001000},
        },
        {
            "type": "message",
            "id": "aaaa0002",
            "parentId": "aaaa0001",
            "timestamp": "2025-01-02T00:00:02.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": reply}],
                "api": "openai-responses",
                "provider": "openai",
                "model": "gpt-5.1-codex",
                "usage": {
                    "input": 10,
                    "output": 2,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "totalTokens": 12,
                    "cost": {
                        "input": 0,
                        "output": 0,
                        "cacheRead": 0,
                        "cacheWrite": 0,
                        "total": cost,
                    },
                },
                "stopReason": "stop",
                "timestamp": 1735776002000,
            },
        },
    ]


def write_session(
    directory: Path, lines: list[dict] | None = None, name: str | None = None
) -> Path:
    lines = lines if lines is not None else rich_session_lines()
    path = directory / (name or f"2025-11-20T10-00-00-000Z_{lines[0]['id']}.jsonl")
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    return path


def generated_session(directory: Path) -> Path:
    """A generated session of 2,500 entries (about 1 MB): 10 branches, 4 compactions."""
    return large_session_generator().write_session(
        directory / "gen.jsonl",
        entries=2500,
        target_bytes=1024 * 1024,
        branches=10,
        compactions=4,
        seed=3,
        session_id="condensed",
        cwd="/srv/gen",
    )


def session_file_named(name: str, directory: Path) -> Path:
    """A session file in ``directory``: ``rich`` (`rich_session_lines`), ``generated``
    (`generated_session`), else a copy of the recorded corpus/<name>."""
    if name == "rich":
        return write_session(directory)
    if name == "generated":
        return generated_session(directory)
    copy = directory / f"{name}.jsonl"
    shutil.copyfile(CORPUS / name / "session.jsonl", copy)
    return copy


def second_turn_lines() -> list[dict]:
    """What follows `linear_session_lines`' reply when the session goes on: the user's "again"
    (aaaa0003) and the reply "more" (aaaa0004)."""
    return [
        {
            "type": "message",
            "id": "aaaa0003",
            "parentId": "aaaa0002",
            "timestamp": "2025-01-02T00:00:03.000Z",
            "message": _user("again", 3),
        },
        {
            "type": "message",
            "id": "aaaa0004",
            "parentId": "aaaa0003",
            "timestamp": "2025-01-02T00:00:04.000Z",
            "message": _assistant([{"type": "text", "text": "more"}], 4),
        },
    ]


def append_lines(path: Path, lines: list[dict]) -> None:
    """Append ``lines`` to a session file, as Pi does while the session goes on."""
    with path.open("a", encoding="utf-8") as handle:
        for line in lines:
            handle.write(json.dumps(line) + "\n")
