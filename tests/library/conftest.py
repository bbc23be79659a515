"""Fixtures for library tests: a private blob directory and a writer of session files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contextlab.pi.jsutil import json_stringify

HEADER_ID = "0190d6f2-aaaa-7bbb-8ccc-123456789abc"


@pytest.fixture(autouse=True)
def blob_dir(settings, tmp_path: Path) -> Path:
    settings.CONTEXTLAB_BLOB_DIR = tmp_path / "blobs"
    return settings.CONTEXTLAB_BLOB_DIR


def header(**extra: Any) -> dict[str, Any]:
    return {
        "type": "session",
        "version": 3,
        "id": HEADER_ID,
        "timestamp": "2026-01-02T10:00:00.000Z",
        "cwd": "/home/u/proj",
        **extra,
    }


def message(
    entry_id: str, parent: str | None, role: str, text: str, **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": text}]}
    if role == "assistant":
        body.update(
            api="anthropic-messages",
            provider="anthropic",
            model="claude-sonnet-4-5",
            usage={
                "input": 10,
                "output": 5,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": 15,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0.01},
            },
            stopReason="stop",
        )
    body["timestamp"] = 1767348000000
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-02T10:00:01.000Z",
        "message": body,
        **extra,
    }


def tool_result(entry_id: str, parent: str, text: str) -> dict[str, Any]:
    """A ``read`` tool's result holding ``text``."""
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-02T10:00:02.000Z",
        "message": {
            "role": "toolResult",
            "toolCallId": "call_1",
            "toolName": "read",
            "content": [{"type": "text", "text": text}],
            "isError": False,
            "timestamp": 1,
        },
    }


def chain(n: int, start: int = 0, parent: str | None = None) -> list[dict[str, Any]]:
    """n alternating user/assistant messages e0000, e0001, ... each the child of the previous."""
    out = []
    for i in range(start, start + n):
        entry_id = f"e{i:07d}"
        role = "user" if i % 2 == 0 else "assistant"
        out.append(message(entry_id, parent, role, f"message number {i} about pelicans"))
        parent = entry_id
    return out


def lines(*objects: Any) -> bytes:
    return b"".join(
        (o if isinstance(o, bytes) else json_stringify(o).encode("utf-8")) + b"\n" for o in objects
    )


@pytest.fixture
def write_session(tmp_path: Path) -> Callable[..., Path]:
    def write(*objects: Any, name: str = "session.jsonl", raw: bytes | None = None) -> Path:
        path = tmp_path / "sessions" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(raw if raw is not None else lines(*objects))
        return path

    return write
