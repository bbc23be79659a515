"""Synthesised session files for the projection and tree conformance tests (edge cases Pi meets).

Each function returns the bytes of one JSONL file; ``SESSIONS`` maps a name to it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

IMAGE = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}


def _jsonl(objs: list[Any]) -> bytes:
    return "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objs).encode("utf-8")


def _ts(second: int) -> str:
    return f"2025-03-01T10:{second // 60:02d}:{second % 60:02d}.000Z"


def _usage(total: int = 120) -> dict[str, Any]:
    return {
        "input": total - 20,
        "output": 20,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": total,
        "cost": {"input": 0.0003, "output": 1e-7, "cacheRead": 0, "cacheWrite": 0, "total": 0.0003},
    }


def _assistant(
    content,
    *,
    provider="anthropic",
    api="anthropic-messages",
    model="claude-sonnet-4-5",
    stop="stop",
    ms=1740823200000,
    **extra,
):
    return {
        "role": "assistant",
        "content": content,
        "api": api,
        "provider": provider,
        "model": model,
        "usage": _usage(),
        "stopReason": stop,
        "timestamp": ms,
        **extra,
    }


def _user(content, ms=1740823200000):
    return {"role": "user", "content": content, "timestamp": ms}


def _tool_result(call_id, name, content, ms=1740823200000, is_error=False):
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": content,
        "isError": is_error,
        "timestamp": ms,
    }


class _Builder:
    def __init__(self, version: int | None = 3, header_id: str = "edge-session") -> None:
        header: dict[str, Any] = {"type": "session"}
        if version is not None:
            header["version"] = version
        header.update({"id": header_id, "timestamp": _ts(0), "cwd": "/tmp/edge"})
        self.lines: list[Any] = [header]
        self.n = 0
        self.version = version

    def add(self, kind: str, parent: str | None = "__prev__", ts: Any = None, **fields) -> str:
        self.n += 1
        entry_id = f"e{self.n:07d}"
        entry: dict[str, Any] = {"type": kind}
        if self.version == 3 or self.version == 2:
            if parent == "__prev__":
                parent = self.last_id
            entry.update({"id": entry_id, "parentId": parent})
        entry["timestamp"] = ts if ts is not None else _ts(self.n)
        entry.update(fields)
        self.lines.append(entry)
        self.last_id = entry_id
        return entry_id

    last_id: str | None = None

    def bytes(self) -> bytes:
        return _jsonl(self.lines)


def legacy_v1() -> bytes:
    """v1: no ids, firstKeptEntryIndex counting the header as 0, hookMessage, bash variants."""
    b = _Builder(version=None, header_id="legacy-v1")
    b.add("message", message=_user("first question"))
    b.add("message", message=_assistant([{"type": "text", "text": "first answer"}]))
    b.add(
        "message",
        message={
            "role": "hookMessage",
            "customType": "hook",
            "content": "hooked",
            "display": True,
            "timestamp": 1740823201000,
        },
    )
    b.add("message", message=_user([{"type": "text", "text": "second"}, IMAGE]))
    b.add("message", message=_assistant([{"type": "text", "text": "second answer"}]))
    b.add("compaction", summary="Summary one", firstKeptEntryIndex=3, tokensBefore=1234)
    b.add(
        "message",
        message={
            "role": "bashExecution",
            "command": "ls",
            "output": "a\nb",
            "exitCode": 0,
            "cancelled": False,
            "truncated": False,
            "timestamp": 1740823202000,
        },
    )
    b.add(
        "message",
        message={
            "role": "bashExecution",
            "command": "make",
            "output": "",
            "exitCode": 2,
            "cancelled": False,
            "truncated": True,
            "fullOutputPath": "/tmp/out.log",
            "timestamp": 1740823203000,
        },
    )
    b.add("message", message=_assistant([{"type": "text", "text": "ok"}]))
    b.add(
        "compaction", summary="Summary two (header index)", firstKeptEntryIndex=0, tokensBefore=99
    )
    b.add("message", message=_user("after the header-index compaction"))
    b.add("compaction", summary="forward index", firstKeptEntryIndex=13, tokensBefore=5)
    b.add("message", message=_user("target of the forward index"))
    b.add("compaction", summary="string index", firstKeptEntryIndex="2", tokensBefore=5)
    b.add("message", message=_user("last"))
    return b.bytes()


def legacy_v2() -> bytes:
    """v2: ids exist, hookMessage renamed, branches, a branch summary and an empty one."""
    b = _Builder(version=2, header_id="legacy-v2")
    root = b.add("message", message=_user("root"))
    a1 = b.add("message", message=_assistant([{"type": "text", "text": "a1"}]))
    b.add(
        "message",
        message={
            "role": "hookMessage",
            "customType": "x",
            "content": [{"type": "text", "text": "hook block"}],
            "display": False,
            "details": {"k": 1},
            "timestamp": 1,
        },
    )
    b.add("message", parent=a1, message=_user("other branch"))
    b.add("branch_summary", fromId=a1, summary="We tried something else.", fromHook=False)
    b.add("branch_summary", fromId=root, summary="", details={"readFiles": []})
    b.add("message", message=_user("after empty summary"))
    return b.bytes()


def tree_shapes() -> bytes:
    """Branches with equal and unparsable timestamps, orphans, self-parents, labels, names."""
    b = _Builder()
    root = b.add("message", message=_user("root"), ts=_ts(10))
    c1 = b.add("message", parent=root, message=_user("child late"), ts=_ts(50))
    b.add("message", parent=root, message=_user("child equal A"), ts=_ts(30))
    b.add("message", parent=root, message=_user("child equal B"), ts=_ts(30))
    b.add("message", parent=root, message=_user("child bad timestamp"), ts="not a date")
    b.add("message", parent=root, message=_user("child early"), ts=_ts(20))
    b.add("message", parent=root, message=_user("child null timestamp"), ts=None)
    b.lines[-1]["timestamp"] = None
    b.add("message", parent=root, message=_user("child without timestamp"))
    del b.lines[-1]["timestamp"]
    b.add("message", parent=root, message=_user("child offset"), ts="2025-03-01T11:00:25+01:00")
    b.add("message", parent="nowhere", message=_user("orphan"))
    self_id = f"e{b.n + 1:07d}"
    b.add("message", parent=self_id, message=_user("self parent"))
    b.add("label", parent=c1, targetId=root, label="start")
    b.add("label", targetId=c1, label="late")
    b.add("label", targetId=root, label="")
    b.add("label", targetId=c1, label="late again")
    b.add("session_info", name="  first name\n")
    b.add("session_info", name="final name ")
    b.add("message", message=_user("after names"))
    b.add("label", targetId=c1)
    b.add("custom", customType="ext-state", data={"x": 1})
    b.add("thinking_level_change", thinkingLevel="high")
    return b.bytes()


def compactions() -> bytes:
    """Two compactions, one whose firstKeptEntryId is off the path; kept ranges with summaries."""
    b = _Builder()
    b.add("model_change", parent=None, provider="anthropic", modelId="claude-sonnet-4-5")
    b.add("thinking_level_change", thinkingLevel="medium")
    u1 = b.add("message", message=_user("one"))
    b.add("message", message=_assistant([{"type": "text", "text": "one!"}]))
    side = b.add("message", parent=u1, message=_user("side branch"))
    b.add("message", parent=u1, message=_assistant([{"type": "text", "text": "main"}]))
    kept = b.add("message", message=_user("kept from here"))
    b.add("custom_message", customType="note", content="custom string", display=True)
    b.add("branch_summary", fromId=u1, summary="branch summary inside the kept range")
    b.add("message", message=_assistant([{"type": "text", "text": "two"}]))
    c1 = b.add(
        "compaction",
        summary="First summary",
        firstKeptEntryId=kept,
        tokensBefore=5000,
        details={"readFiles": ["a"], "modifiedFiles": []},
        fromHook=False,
    )
    b.add("message", message=_user("after first"))
    b.add("message", message=_assistant([{"type": "text", "text": "three"}]))
    b.add("compaction", summary="Second, off-path keep", firstKeptEntryId=side, tokensBefore=6000)
    b.add("message", message=_user("after second"))
    b.add(
        "compaction",
        parent=c1,
        summary="Sibling compaction",
        firstKeptEntryId="missing",
        tokensBefore=1,
    )
    b.add(
        "custom_message",
        customType="img",
        content=[{"type": "text", "text": "see"}, IMAGE],
        display=False,
        details={"why": "test"},
    )
    return b.bytes()


def provider_transform() -> bytes:
    """Error/aborted replies, orphan tool calls, thinking from other models, images, bash."""
    b = _Builder()
    b.add("model_change", parent=None, provider="anthropic", modelId="claude-sonnet-4-5")
    b.add("message", message=_user([{"type": "text", "text": "look"}, IMAGE, IMAGE]))
    b.add(
        "message",
        message=_assistant(
            [
                {"type": "thinking", "thinking": "same-model thought", "thinkingSignature": "sig"},
                {"type": "thinking", "thinking": "  ", "thinkingSignature": "sig2"},
                {"type": "thinking", "thinking": "", "redacted": True},
                {"type": "text", "text": "calling", "textSignature": "ts"},
                {
                    "type": "toolCall",
                    "id": "call_1",
                    "name": "read",
                    "arguments": {"path": "a.txt"},
                    "thoughtSignature": "th",
                },
                {
                    "type": "toolCall",
                    "id": "call_2",
                    "name": "bash",
                    "arguments": {"command": "ls"},
                },
            ]
        ),
    )
    b.add("message", message=_tool_result("call_1", "read", [{"type": "text", "text": "x"}, IMAGE]))
    b.add("message", message=_user("interrupt before call_2's result"))
    b.add(
        "message",
        message=_assistant(
            [
                {"type": "thinking", "thinking": "other model thinking"},
                {"type": "thinking", "thinking": "\u3000\ufeff"},
                {"type": "thinking", "thinking": "redacted other", "redacted": True},
                {"type": "text", "text": "from gpt"},
                {
                    "type": "toolCall",
                    "id": "call_3",
                    "name": "read",
                    "arguments": {"path": "😀.txt"},
                    "thoughtSignature": "drop me",
                },
            ],
            provider="openai",
            api="openai-responses",
            model="gpt-5.1-codex",
        ),
    )
    b.add(
        "message",
        message=_assistant(
            [{"type": "text", "text": "partial"}], stop="error", errorMessage="boom"
        ),
    )
    b.add(
        "message",
        message=_assistant(
            [
                {"type": "toolCall", "id": "call_4", "name": "edit", "arguments": {}},
            ],
            stop="aborted",
        ),
    )
    b.add("message", message=_tool_result("call_4", "edit", [{"type": "text", "text": "late"}]))
    b.add("model_change", provider="cerebras", modelId="gpt-oss-120b")
    b.add("message", message=_user([IMAGE, {"type": "text", "text": "text only model"}]))
    b.add(
        "message",
        message=_assistant(
            [
                {
                    "type": "toolCall",
                    "id": "call_5",
                    "name": "read",
                    "arguments": {"path": "p.png"},
                },
            ],
            provider="cerebras",
            api="openai-completions",
            model="gpt-oss-120b",
        ),
    )
    b.add(
        "message",
        message=_tool_result("call_5", "read", [IMAGE, IMAGE, {"type": "text", "text": "t"}]),
    )
    b.add(
        "message",
        message={
            "role": "bashExecution",
            "command": "rm -rf x",
            "output": "",
            "exitCode": None,
            "cancelled": True,
            "truncated": False,
            "timestamp": 5,
        },
    )
    b.add(
        "message",
        message={
            "role": "bashExecution",
            "command": "secret",
            "output": "hidden",
            "exitCode": 1,
            "cancelled": False,
            "truncated": False,
            "excludeFromContext": True,
            "timestamp": 6,
        },
    )
    b.add(
        "message",
        message={
            "role": "bashExecution",
            "command": "fails",
            "output": "err",
            "exitCode": 127,
            "cancelled": False,
            "truncated": True,
            "timestamp": 7,
        },
    )
    b.add("model_change", provider="custom-lab", modelId="not-in-catalog")
    b.add(
        "message",
        message=_assistant(
            [
                {"type": "thinking", "thinking": "unknown model thought"},
                {"type": "toolCall", "id": "call_6", "name": "write", "arguments": {"n": 1.5e-7}},
            ],
            provider="custom-lab",
            api="openai-completions",
            model="not-in-catalog",
        ),
    )
    b.add(
        "message",
        message={
            "role": "custom",
            "customType": "c",
            "content": "tail custom",
            "display": True,
            "timestamp": 8,
        },
    )
    b.add("message", message={"role": "unknownRole", "content": "dropped"})
    # JSON.parse puts integer-like keys first: the order in the file is not the order Pi sends.
    b.add(
        "message",
        message=_assistant(
            [
                {
                    "type": "toolCall",
                    "id": "call_7",
                    "name": "edit",
                    "arguments": {"path": "x", "10": "ten", "2": "two", "01": "not an index"},
                },
            ],
            provider="custom-lab",
            api="openai-completions",
            model="not-in-catalog",
        ),
    )
    b.add(
        "custom_message",
        customType="keys",
        content=[{"type": "text", "text": "k", "9": 9}],
        display=True,
        details={"b": 1, "0": 0},
    )
    b.add("message", message=_user("end"))
    return b.bytes()


SESSIONS: dict[str, Callable[[], bytes]] = {
    "legacy_v1": legacy_v1,
    "legacy_v2": legacy_v2,
    "tree_shapes": tree_shapes,
    "compactions": compactions,
    "provider_transform": provider_transform,
}
