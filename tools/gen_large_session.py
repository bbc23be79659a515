#!/usr/bin/env python3
"""Generate a large, realistic Pi 0.80.2 (v3) session file for benchmarks and UI tests.

    python tools/gen_large_session.py OUT.jsonl [--entries 20000] [--bytes 1G] [--branches 20]
        [--compactions 5] [--seed 1] [--session-id ID] [--cwd /home/u/proj]

The file has what a long Pi session has: a model change and thinking level at the start, user
prompts, assistant turns with thinking and tool calls, tool results (read/bash/grep output; they
carry most of the bytes), `!` bash executions, labels, a session name, compactions whose
firstKeptEntryId points into the recent path, and branches: a fork back to an earlier entry
followed by a branch summary, as Pi's /tree writes them. Keys are in the order Pi writes them.
It streams to disk, so any size can be generated in constant memory; the output is deterministic
for a given seed.

`--bytes` is a target (K/M/G suffixes): tool-result sizes are padded so the file ends near it.
Used by bench/bench_import.py, bench/bench_sync.py and the dashboard's 20k-entry benchmark.
"""

from __future__ import annotations

import argparse
import random
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

WORDS = (  # noqa: SIM905 - easier to read as prose
    "the context window model token compaction branch summary session file entry parent leaf "
    "tree label prompt system user assistant tool result read bash grep find edit write path "
    "function return import class def self value error retry timeout cache usage cost provider "
    "pelican migration header version append sync revision blob offset fingerprint stream line"
).split()
CODE = [
    "def {w}_{v}(self, {a}: int) -> str:",
    "    return self.{w}[{a}:] + {v!r}",
    "const {w}{V} = await load{V}({a});",
    "if ({a} > {n}) {{ throw new Error('{w} {v}'); }}",
    "    for {a} in range({n}):",
    "// {w} {v}: keep the {a} in order",
    "export function {w}{V}({a}) {{ return {a} * {n}; }}",
]


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().removesuffix("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


class Text:
    """A deterministic pool of code-like text; slices of it fill tool results cheaply."""

    def __init__(self, rng: random.Random, size: int = 4 << 20) -> None:
        lines = []
        total = 0
        while total < size:
            w, v, a = rng.choice(WORDS), rng.choice(WORDS), rng.choice(WORDS)
            line = rng.choice(CODE).format(w=w, v=v, a=a, V=v.capitalize(), n=rng.randint(1, 999))
            lines.append(line)
            total += len(line) + 1
        self.pool = "\n".join(lines)
        self.rng = rng

    def take(self, n: int) -> str:
        n = max(1, min(n, len(self.pool) - 1))
        start = self.rng.randrange(0, len(self.pool) - n)
        return self.pool[start : start + n]

    def sentence(self, words: int) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(words))


def generate(
    *,
    entries: int,
    target_bytes: int,
    branches: int,
    compactions: int,
    seed: int,
    session_id: str | None,
    cwd: str,
) -> Iterator[bytes]:
    """Yield the file's lines (with their newlines)."""
    rng = random.Random(seed)
    text = Text(rng)
    sid = session_id or str(uuid.UUID(int=rng.getrandbits(128)))
    clock = datetime(2026, 1, 5, 9, 0, 0, tzinfo=UTC)

    def stamp() -> tuple[str, int]:
        nonlocal clock
        clock += timedelta(milliseconds=rng.randint(50, 4000))
        return clock.isoformat(timespec="milliseconds").replace("+00:00", "Z"), int(
            clock.timestamp() * 1000
        )

    used: set[str] = set()

    def new_id() -> str:
        while True:
            candidate = f"{rng.getrandbits(32):08x}"
            if candidate not in used:
                used.add(candidate)
                return candidate

    def line(obj: dict[str, Any]) -> bytes:
        return orjson.dumps(obj) + b"\n"

    iso, _ = stamp()
    yield line({"type": "session", "version": 3, "id": sid, "timestamp": iso, "cwd": cwd})
    written = 0
    path: list[str] = []  # ids of the current branch, root first
    # Share of the byte budget per tool result (the other entries are small).
    tool_results = max(1, entries // 4)
    per_result = max(200, (target_bytes - entries * 700) // tool_results)
    fork_at = set(
        rng.sample(
            range(entries // 10, max(entries // 10 + 1, entries - 2)),
            min(branches, max(0, entries - entries // 10 - 2)),
        )
    )
    compact_at = set(
        rng.sample(
            range(entries // 5, max(entries // 5 + 1, entries - 1)),
            min(compactions, max(0, entries - entries // 5 - 1)),
        )
    )
    call = 0

    def emit(obj: dict[str, Any]) -> bytes:
        nonlocal written
        written += 1
        path.append(obj["id"])
        return line(obj)

    def envelope(kind: str) -> dict[str, Any]:
        iso, _ = stamp()
        return {
            "type": kind,
            "id": new_id(),
            "parentId": path[-1] if path else None,
            "timestamp": iso,
        }

    head = envelope("model_change")
    head.update(provider="anthropic", modelId="claude-sonnet-4-5")
    yield emit(head)
    level = envelope("thinking_level_change")
    level["thinkingLevel"] = "medium"
    yield emit(level)

    step = 0
    named = False
    while written < entries:
        if written in fork_at and len(path) > 4:
            # /tree: go back to an earlier entry and continue from there with a branch summary.
            back = rng.randint(2, min(40, len(path) - 2))
            old_leaf = path[-1]
            del path[-back:]
            summary = envelope("branch_summary")
            summary.update(
                fromId=path[-1],
                summary="The user explored a different conversation branch before returning here.\n"
                f"Summary of that exploration:\n\n## Goal\n{text.sentence(12)}\n",
                details={"readFiles": [f"src/{rng.choice(WORDS)}.py"], "modifiedFiles": []},
                fromHook=False,
            )
            yield emit(summary)
            if rng.random() < 0.5:
                label = envelope("label")
                label.update(targetId=old_leaf, label=f"abandoned-{written}")
                yield emit(label)
            continue
        if written in compact_at and len(path) > 10:
            compaction = envelope("compaction")
            compaction.update(
                summary=f"## Goal\n{text.sentence(30)}\n\n## Progress\n{text.sentence(60)}\n",
                firstKeptEntryId=path[-min(8, len(path) - 1)],
                tokensBefore=rng.randint(80_000, 190_000),
                details={
                    "readFiles": [f"src/{w}.py" for w in rng.sample(WORDS, 3)],
                    "modifiedFiles": [],
                },
                fromHook=False,
            )
            yield emit(compaction)
            continue
        kind = step % 4
        step += 1
        if kind == 0:
            entry = envelope("message")
            _, ms = stamp()
            if rng.random() < 0.05:
                output = text.take(rng.randint(100, 2000))
                entry["message"] = {
                    "role": "bashExecution",
                    "command": f"ls {rng.choice(WORDS)}",
                    "output": output,
                    "exitCode": 0,
                    "cancelled": False,
                    "truncated": False,
                    "timestamp": ms,
                }
            else:
                entry["message"] = {
                    "role": "user",
                    "content": [{"type": "text", "text": text.sentence(rng.randint(5, 60))}],
                    "timestamp": ms,
                }
            yield emit(entry)
        elif kind == 1:
            call += 1
            entry = envelope("message")
            _, ms = stamp()
            entry["message"] = {
                "role": "assistant",
                "content": [
                    {
                        "type": "thinking",
                        "thinking": text.sentence(rng.randint(10, 80)),
                        "thinkingSignature": "sig",
                    },
                    {
                        "type": "toolCall",
                        "id": f"toolu_{call:06d}",
                        "name": "read",
                        "arguments": {"path": f"src/{rng.choice(WORDS)}.py"},
                    },
                ],
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": {
                    "input": rng.randint(1000, 150000),
                    "output": rng.randint(50, 4000),
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "totalTokens": 0,
                    "cost": {
                        "input": 0.01,
                        "output": 0.02,
                        "cacheRead": 0,
                        "cacheWrite": 0,
                        "total": 0.03,
                    },
                },
                "stopReason": "toolUse",
                "timestamp": ms,
            }
            usage = entry["message"]["usage"]
            usage["totalTokens"] = usage["input"] + usage["output"]
            yield emit(entry)
        elif kind == 2:
            entry = envelope("message")
            _, ms = stamp()
            size = max(50, int(rng.uniform(0.5, 1.5) * per_result))
            entry["message"] = {
                "role": "toolResult",
                "toolCallId": f"toolu_{call:06d}",
                "toolName": "read",
                "content": [{"type": "text", "text": text.take(size)}],
                "isError": False,
                "timestamp": ms,
            }
            yield emit(entry)
        else:
            entry = envelope("message")
            _, ms = stamp()
            entry["message"] = {
                "role": "assistant",
                "content": [{"type": "text", "text": text.sentence(rng.randint(20, 120))}],
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": {
                    "input": 1000,
                    "output": 200,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "totalTokens": 1200,
                    "cost": {
                        "input": 0.003,
                        "output": 0.003,
                        "cacheRead": 0,
                        "cacheWrite": 0,
                        "total": 0.006,
                    },
                },
                "stopReason": "stop",
                "timestamp": ms,
            }
            yield emit(entry)
            if not named:
                named = True
                name = envelope("session_info")
                name["name"] = "Generated benchmark session"
                yield emit(name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--entries", type=int, default=20_000)
    parser.add_argument("--bytes", default="20M", help="size target, e.g. 20M or 1G")
    parser.add_argument("--branches", type=int, default=20)
    parser.add_argument("--compactions", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--session-id", default=None)
    parser.add_argument("--cwd", default="/home/dev/projects/pelican")
    args = parser.parse_args(argv)
    write_session(
        args.out,
        entries=args.entries,
        target_bytes=parse_size(args.bytes),
        branches=args.branches,
        compactions=args.compactions,
        seed=args.seed,
        session_id=args.session_id,
        cwd=args.cwd,
    )
    print(f"{args.out}: {args.out.stat().st_size} bytes", file=sys.stderr)
    return 0


def write_session(out: Path, **options: Any) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb", buffering=1 << 20) as f:
        for chunk in generate(**options):
            f.write(chunk)
    return out


if __name__ == "__main__":
    sys.exit(main())
