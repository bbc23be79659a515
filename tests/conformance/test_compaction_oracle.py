"""Compaction preview, byte for byte against the real Pi 0.80.2 (oracle/compaction.mjs).

For many leaves of many sessions — the real legacy fixture, helper D's recorded corpus (globbed at
test time) and synthetic sessions generated here — and several keepRecentTokens / reserveTokens /
model maxTokens / instruction settings, Pi's ``prepareCompaction`` and the requests its
``compact()`` hands to a fake stream function are compared with ``compaction_preview``.

The synthetic generator lives here (and is imported by the branch-summary test): each seed gives a
session with branches, tool-call turns (read/write/edit/bash, long and multi-byte results), ``!``
bash executions (some excluded from context), custom messages, model and thinking changes, labels,
names, branch summaries (some with file details, some from hooks), earlier compactions (some
pointing at ids not on the path) and error/aborted/length assistant messages.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from contextlab.pi.compaction import (
    CompactionOptions,
    compaction_preview,
    find_cut_point,
    format_file_operations,
    join_split_turn,
)
from contextlab.pi.jsutil import js_key_order, json_stringify
from contextlab.pi.session import SessionTree, parse_session_file
from tests.conformance.conftest import CORPUS_DIR, run_oracle

PATHS = ["src/app.py", "./src/app.py", "README.md", "docs/ünïcode.md", "tests/test_app.py", "a.txt"]
WORDS = ["alpha", "beta", "gamma", "délta", "€uro", "😀", "fix", "the", "bug", "in", "parser", "\n"]


def _text(rng: random.Random, lo: int, hi: int) -> str:
    n = rng.randint(lo, hi)
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _usage(rng: random.Random, total: int) -> dict[str, Any]:
    inp = max(0, total - 50)
    usage = {"input": inp, "output": 50, "cacheRead": 0, "cacheWrite": 0}
    usage["totalTokens"] = total if rng.random() < 0.8 else 0
    usage["cost"] = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    return usage


class _Builder:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.entries: list[dict[str, Any]] = []
        self.leaf: str | None = None
        self.t0 = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=seed)
        self.tokens = 500

    def add(self, fields: dict[str, Any]) -> dict[str, Any]:
        n = len(self.entries)
        ts = (self.t0 + timedelta(seconds=7 * n)).isoformat(timespec="milliseconds")
        entry = {
            "type": fields.pop("type"),
            "id": f"s{self.seed:02d}e{n:04d}",
            "parentId": self.leaf,
            "timestamp": ts.replace("+00:00", "Z"),
            **fields,
        }
        self.entries.append(entry)
        self.leaf = entry["id"]
        return entry

    def ms(self) -> int:
        return int((self.t0 + timedelta(seconds=7 * len(self.entries))).timestamp() * 1000)

    def path_ids(self) -> list[str]:
        by_id = {e["id"]: e for e in self.entries}
        out = []
        current = self.leaf
        while current is not None:
            out.append(current)
            current = by_id[current]["parentId"]
        return out[::-1]

    def user(self) -> None:
        rng = self.rng
        text = _text(rng, 1, 12) if rng.random() < 0.8 else _text(rng, 200, 1200)
        content: Any = text if rng.random() < 0.3 else [{"type": "text", "text": text}]
        self.add(
            {
                "type": "message",
                "message": {"role": "user", "content": content, "timestamp": self.ms()},
            }
        )

    def assistant(self, blocks: list[dict[str, Any]], stop: str) -> None:
        self.tokens += self.rng.randint(100, 4000)
        message = {
            "role": "assistant",
            "content": blocks,
            "api": "openai-completions",
            "provider": "fake",
            "model": "fake-model",
            "usage": _usage(self.rng, self.tokens),
            "stopReason": stop,
            "timestamp": self.ms(),
        }
        if stop == "error":
            message["errorMessage"] = "boom"
        self.add({"type": "message", "message": message})

    def turn(self) -> None:
        rng = self.rng
        for _ in range(rng.randint(0, 3)):
            calls = []
            for k in range(rng.randint(1, 3)):
                name = rng.choice(["read", "write", "edit", "bash", "ls"])
                args: dict[str, Any]
                if name == "bash":
                    args = {"command": "ls -la", "timeout": 30}
                elif name == "ls":
                    args = {"path": rng.choice(PATHS), "limit": 10}
                else:
                    args = {"path": rng.choice(PATHS)}
                    if name == "write":
                        args["content"] = _text(rng, 3, 40)
                    if name == "edit":
                        args["edits"] = [{"oldText": "a", "newText": "b"}]
                if rng.random() < 0.1:
                    # Integer-like keys: JavaScript objects list them first, in ascending order.
                    args["meta"] = {"k": True, "10": 1, "2": "x"}
                calls.append(
                    {
                        "type": "toolCall",
                        "id": f"c{len(self.entries)}_{k}",
                        "name": name,
                        "arguments": args,
                    }
                )
            blocks: list[dict[str, Any]] = []
            if rng.random() < 0.5:
                blocks.append({"type": "thinking", "thinking": _text(rng, 2, 30)})
            if rng.random() < 0.4:
                blocks.append({"type": "text", "text": _text(rng, 1, 20)})
            self.assistant(blocks + calls, "toolUse")
            for call in calls:
                size = rng.choice([(1, 10), (30, 200), (500, 1500)])
                result = {
                    "role": "toolResult",
                    "toolCallId": call["id"],
                    "toolName": call["name"],
                    "content": [{"type": "text", "text": _text(rng, *size)}],
                    "isError": rng.random() < 0.1,
                    "timestamp": self.ms(),
                }
                self.add({"type": "message", "message": result})
        stop = rng.choices(["stop", "error", "aborted", "length"], [0.85, 0.06, 0.05, 0.04])[0]
        blocks = [{"type": "text", "text": _text(rng, 2, 80)}]
        if rng.random() < 0.3:
            blocks.insert(0, {"type": "thinking", "thinking": _text(rng, 2, 50)})
        self.assistant(blocks, stop)

    def other(self) -> None:
        rng = self.rng
        kind = rng.choice(
            [
                "bash",
                "bash",
                "custom_message",
                "model",
                "thinking",
                "label",
                "name",
                "custom",
                "branch_summary",
                "compaction",
            ]
        )
        if kind == "bash":
            message = {
                "role": "bashExecution",
                "command": rng.choice(["ls", "git status", "cat a.txt"]),
                "output": _text(rng, 1, 300),
                "exitCode": rng.choice([0, 1]),
                "cancelled": False,
                "truncated": False,
                "timestamp": self.ms(),
            }
            if rng.random() < 0.3:
                message["excludeFromContext"] = True
            self.add({"type": "message", "message": message})
        elif kind == "custom_message":
            content: Any = _text(rng, 1, 60)
            if rng.random() < 0.5:
                content = [{"type": "text", "text": content}]
            self.add(
                {
                    "type": "custom_message",
                    "customType": "note",
                    "content": content,
                    "display": rng.random() < 0.5,
                    "details": {"k": 1},
                }
            )
        elif kind == "model":
            self.add(
                {
                    "type": "model_change",
                    "provider": "fake",
                    "modelId": rng.choice(["fake-model", "other"]),
                }
            )
        elif kind == "thinking":
            self.add(
                {"type": "thinking_level_change", "thinkingLevel": rng.choice(["off", "high"])}
            )
        elif kind == "label" and self.entries:
            self.add({"type": "label", "targetId": rng.choice(self.entries)["id"], "label": "mark"})
        elif kind == "name":
            self.add({"type": "session_info", "name": "synthetic"})
        elif kind == "custom":
            self.add({"type": "custom", "customType": "ext", "data": {"x": 1}})
        elif kind == "branch_summary":
            fields: dict[str, Any] = {
                "type": "branch_summary",
                "fromId": self.leaf or "root",
                "summary": "The user explored a different branch before returning here.\n"
                + _text(rng, 5, 60),
            }
            if rng.random() < 0.7:
                fields["details"] = {
                    "readFiles": [rng.choice(PATHS)],
                    "modifiedFiles": [rng.choice(PATHS)],
                }
            if rng.random() < 0.2:
                fields["fromHook"] = True
            self.add(fields)
        elif kind == "compaction":
            path = self.path_ids()
            kept = rng.choice(path[len(path) // 2 :]) if path else "nowhere"
            if rng.random() < 0.15:
                kept = "missing-id"
            fields = {
                "type": "compaction",
                "summary": "## Goal\n" + _text(rng, 5, 80),
                "firstKeptEntryId": kept,
                "tokensBefore": self.tokens,
            }
            if rng.random() < 0.8:
                fields["details"] = {
                    "readFiles": ["old-read.md"],
                    "modifiedFiles": ["old-mod.py", rng.choice(PATHS)],
                }
            if rng.random() < 0.1:
                fields["fromHook"] = True
            self.add(fields)


def synthetic_session_lines(seed: int, steps: int = 70) -> list[str]:
    builder = _Builder(seed)
    rng = builder.rng
    builder.user()
    for _ in range(steps):
        r = rng.random()
        if r < 0.07 and builder.entries:
            builder.leaf = rng.choice(builder.entries)["id"]  # branch from an earlier entry
        elif r < 0.45:
            builder.user()
            builder.turn()
        elif r < 0.6:
            builder.turn()
        else:
            builder.other()
    header = {
        "type": "session",
        "version": 3,
        "id": f"0190c0de-0000-7000-8000-{seed:012d}",
        "timestamp": builder.t0.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "cwd": "/tmp/synthetic",
    }
    return [json.dumps(header, ensure_ascii=False)] + [
        json.dumps(e, ensure_ascii=False) for e in builder.entries
    ]


def write_synthetic_session(directory: Path, seed: int, steps: int = 70) -> Path:
    path = directory / f"synthetic-{seed}.jsonl"
    path.write_text("\n".join(synthetic_session_lines(seed, steps)) + "\n", encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------
# The differential test

LARGE_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "large-session.jsonl"

SETTINGS = [
    # keepRecentTokens, reserveTokens, model maxTokens, custom instructions
    (20000, 16384, 0, None),
    (3000, 4000, 1000, "Focus on the parser."),
    (300, 16384, 0, None),
    (40, 2048, 64000, None),
    (1, 16384, 0, "ünïcode 😀 focus"),
]


def corpus_files() -> list[Path]:
    """Session files of the recorded corpus (helper D's recordings live in sub-directories)."""
    return sorted(
        p for p in CORPUS_DIR.rglob("*.jsonl") if "fs" not in p.relative_to(CORPUS_DIR).parts
    )


def digest(value: Any) -> str:
    """sha256 of ``JSON.stringify(value)`` as Node computes it (UTF-8, JS property order)."""
    text = json_stringify(js_key_order(value))
    data = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace").encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def sessions_for_test(tmp_path: Path) -> list[tuple[Path, bool, int]]:
    """``(private copy, digest mode, leaf stride)`` for every session under test."""
    out: list[tuple[Path, bool, int]] = []
    if LARGE_FIXTURE.exists():
        copy = tmp_path / "large-session.jsonl"
        shutil.copyfile(LARGE_FIXTURE, copy)
        out.append((copy, True, 31))
    for i, src in enumerate(corpus_files()):
        copy = tmp_path / f"corpus-{i}-{src.parent.name}.jsonl"
        shutil.copyfile(src, copy)
        out.append((copy, False, 1))
    for seed in range(8):
        out.append((write_synthetic_session(tmp_path, seed), seed >= 2, 1 if seed < 2 else 3))
    return out


def _maybe_digest(value: Any, use_digest: bool) -> Any:
    return digest(value) if use_digest else value


def _expected_summary(prep, pi_requests: list[dict[str, Any]]) -> str:
    """The summary compact() assembles when the fake model answers SUMMARY<n> per call."""
    if prep.is_split_turn and prep.turn_prefix_messages:
        history = "SUMMARY1" if prep.messages_to_summarize else None
        summary = join_split_turn(history, f"SUMMARY{len(pi_requests)}")
    else:
        summary = "SUMMARY1"
    return summary + format_file_operations(prep.read_files, prep.modified_files)


@pytest.mark.oracle
def test_it_matches_pi_compaction_preview(tmp_path):
    sessions = sessions_for_test(tmp_path)
    payload = []
    plans = []
    for path, use_digest, stride in sessions:
        parsed = parse_session_file(path)
        tree = SessionTree(parsed.entries)
        cases = []
        for n, entry in enumerate(parsed.entries):
            if n % stride:
                continue
            for keep, reserve, max_tokens, instructions in SETTINGS:
                cases.append(
                    {
                        "leafId": entry["id"],
                        "keepRecentTokens": keep,
                        "reserveTokens": reserve,
                        "modelMaxTokens": max_tokens,
                        "customInstructions": instructions,
                    }
                )
        payload.append({"file": str(path), "cases": cases, "digest": use_digest})
        plans.append((path, tree, cases, use_digest))
    got = run_oracle("compaction.mjs", {"sessions": payload})["sessions"]

    counts = {"cases": 0, "prepared": 0, "split": 0, "update": 0, "requests": 0}
    for (path, tree, cases, use_digest), results in zip(plans, got, strict=True):
        for case, theirs in zip(cases, results, strict=True):
            where = f"{path.name} leaf={case['leafId']} {case}"
            entries = tree.path(case["leafId"])
            options = CompactionOptions(
                reserve_tokens=case["reserveTokens"],
                keep_recent_tokens=case["keepRecentTokens"],
                model_max_tokens=case["modelMaxTokens"],
                custom_instructions=case["customInstructions"],
            )
            preview = compaction_preview(entries, options)
            prep = preview.preparation
            counts["cases"] += 1
            assert (prep is not None) == theirs["prepared"], where
            if prep is None:
                assert preview.to_json()["request"] is None
                continue
            counts["prepared"] += 1
            counts["split"] += prep.is_split_turn
            counts["update"] += prep.previous_summary is not None
            assert prep.first_kept_entry_id == theirs["firstKeptEntryId"], where
            assert prep.tokens_before == theirs["tokensBefore"], where
            assert prep.is_split_turn == theirs["isSplitTurn"], where
            assert prep.previous_summary == theirs["previousSummary"], where
            assert prep.boundary_start == theirs["boundaryStart"], where
            cut = find_cut_point(
                entries, prep.boundary_start, len(entries), case["keepRecentTokens"]
            )
            assert [cut.first_kept_entry_index, cut.turn_start_index, cut.is_split_turn] == [
                theirs["cut"]["firstKeptEntryIndex"],
                theirs["cut"]["turnStartIndex"],
                theirs["cut"]["isSplitTurn"],
            ], where
            assert (
                _maybe_digest(prep.messages_to_summarize, use_digest)
                == theirs["messagesToSummarize"]
            ), where
            assert (
                _maybe_digest(prep.turn_prefix_messages, use_digest) == theirs["turnPrefixMessages"]
            ), where
            assert prep.file_ops.to_json() == theirs["fileOps"], where
            assert {"readFiles": prep.read_files, "modifiedFiles": prep.modified_files} == theirs[
                "details"
            ], where

            ours = [r for r in (preview.request, preview.turn_prefix_request) if r is not None]
            assert len(ours) == len(theirs["requests"]), where
            for mine, pis in zip(ours, theirs["requests"], strict=True):
                counts["requests"] += 1
                assert mine["systemPrompt"] == pis["systemPrompt"], where
                assert mine["maxTokens"] == pis["maxTokens"], where
                assert _maybe_digest(mine["messages"], use_digest) == pis["messages"], where
                assert pis["hasReasoning"] is False  # the fake model does not reason
            assert _expected_summary(prep, theirs["requests"]) == theirs["summary"], where
    # The corpus must exercise every branch of the algorithm, or the comparison proves little.
    assert counts["split"] > 20 and counts["update"] > 20 and counts["requests"] > 500, counts
    print(counts)


RECORDED_SETTINGS = {"keepRecentTokens": 150, "reserveTokens": 16384, "modelMaxTokens": 16384}
# The instructions tests/conformance/recorder/driver.mjs passes to session.compact(), in order.
RECORDED_COMPACT_INSTRUCTIONS = [None, "Keep the next steps."]


def recorded_summary_requests(kind_dir: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``(manifest entry, body)`` of the summarisation requests Pi sent while recording."""
    root = CORPUS_DIR / kind_dir
    if not (root / "manifest.json").exists():
        pytest.skip(f"corpus scenario {kind_dir} is not recorded")
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    return [
        (r, json.loads((root / r["body"]).read_text(encoding="utf-8")))
        for r in manifest["requests"]
        if r["kind"] == "summary"
    ]


def test_it_reproduces_the_compaction_requests_pi_sent_while_recording():
    """The recorder ran Pi with keepRecentTokens 150 (its settings.json) against a model with
    maxTokens 16384; each /compact sent the history and the turn-prefix request."""
    sent = recorded_summary_requests("compaction")
    parsed = parse_session_file(CORPUS_DIR / "compaction" / "session.jsonl")
    tree = SessionTree(parsed.entries)
    by_leaf: dict[str, list[dict[str, Any]]] = {}
    for meta, body in sent:
        by_leaf.setdefault(meta["leafId"], []).append(body)
    assert len(by_leaf) == len(RECORDED_COMPACT_INSTRUCTIONS)
    for (leaf, bodies), instructions in zip(
        by_leaf.items(), RECORDED_COMPACT_INSTRUCTIONS, strict=True
    ):
        preview = compaction_preview(
            tree.path(leaf),
            CompactionOptions(
                reserve_tokens=RECORDED_SETTINGS["reserveTokens"],
                keep_recent_tokens=RECORDED_SETTINGS["keepRecentTokens"],
                model_max_tokens=RECORDED_SETTINGS["modelMaxTokens"],
                custom_instructions=instructions,
            ),
        )
        ours = [r for r in (preview.request, preview.turn_prefix_request) if r is not None]
        assert len(ours) == len(bodies)
        for request, body in zip(ours, bodies, strict=True):
            system, user = body["messages"]
            assert system["content"] == request["systemPrompt"]
            assert user["content"] == request["messages"][0]["content"]
            assert (
                body["max_completion_tokens" if "max_completion_tokens" in body else "max_tokens"]
                == request["maxTokens"]
            )


@pytest.mark.oracle
def test_it_cuts_what_if_compactions_as_pi_would(tmp_path):
    """Each auto-compaction of the what-if is cut exactly as Pi's prepareCompaction cuts the path
    that holds the earlier (simulated) compactions: the path is re-written as a linear session
    with the synthetic compaction entries in place, and Pi prepares each one."""
    scenarios = []
    sources = [write_synthetic_session(tmp_path, seed, steps=120) for seed in (20, 21, 22)]
    if LARGE_FIXTURE.exists():
        sources.append(LARGE_FIXTURE)
    for n, source in enumerate(sources):
        tree = SessionTree(parse_session_file(source).entries)
        path = tree.path(tree.leaf_id)
        for window, reserve, keep in (
            (30000, 8000, 4000),
            (60000, 16384, 20000),
            (12000, 2000, 500),
        ):
            found = compaction_what_if_with_entries(path, window, reserve, keep)
            if not found:
                continue
            lines, what_ifs = found
            file = tmp_path / f"what-if-{n}-{window}.jsonl"
            file.write_text("\n".join(lines) + "\n", encoding="utf-8")
            cases = [
                {
                    "leafId": w.after_entry_id,
                    "keepRecentTokens": keep,
                    "reserveTokens": reserve,
                    "modelMaxTokens": 0,
                    "customInstructions": None,
                }
                for w in what_ifs
            ]
            scenarios.append((file, cases, what_ifs))
    checked = sum(len(w) for _, _, w in scenarios)
    assert checked > 10, checked
    print({"what_if_compactions": checked})
    payload = [{"file": str(f), "cases": c, "digest": True} for f, c, _ in scenarios]
    got = run_oracle("compaction.mjs", {"sessions": payload})["sessions"]
    for (file, _, what_ifs), results in zip(scenarios, got, strict=True):
        for w, theirs in zip(what_ifs, results, strict=True):
            assert theirs["prepared"], (file.name, w)
            assert (w.first_kept_entry_id, w.tokens_before, w.is_split_turn) == (
                theirs["firstKeptEntryId"],
                theirs["tokensBefore"],
                theirs["isSplitTurn"],
            ), (file.name, w)


def compaction_what_if_with_entries(path, window, reserve, keep):
    """The what-if compactions of ``path`` and the path re-written as a linear session file with
    a compaction entry after each compaction point (ids ``what-if-<n>``, as the engine names
    them; recorded compactions stay, as in the what-if)."""
    from contextlab.pi.compaction import auto_compaction_what_if

    found = auto_compaction_what_if(
        path, context_window=window, reserve_tokens=reserve, keep_recent_tokens=keep
    )
    if not found:
        return None
    after = {w.after_entry_id: (i, w) for i, w in enumerate(found)}
    header = {
        "type": "session",
        "version": 3,
        "id": "0190c0de-0000-7000-8000-00000000beef",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/tmp/what-if",
    }
    lines = [json.dumps(header)]
    parent = None
    for entry in path:
        lines.append(json.dumps({**entry, "parentId": parent}, ensure_ascii=False))
        parent = entry["id"]
        if entry["id"] in after:
            i, w = after[entry["id"]]
            synthetic = {
                "type": "compaction",
                "id": f"what-if-{i + 1}",
                "parentId": parent,
                "timestamp": entry["timestamp"],
                "summary": "",
                "firstKeptEntryId": w.first_kept_entry_id,
                "tokensBefore": w.tokens_before,
            }
            lines.append(json.dumps(synthetic))
            parent = synthetic["id"]
    return lines, found


def _cut_entry(kind_role: tuple[str, str | None], chars: int, n: int) -> dict[str, Any]:
    kind, role = kind_role
    entry: dict[str, Any] = {"type": kind, "id": f"x{n}", "parentId": f"x{n - 1}" if n else None}
    if kind == "message":
        text = "é" * chars
        if role == "assistant":
            entry["message"] = {"role": role, "content": [{"type": "text", "text": text}]}
        elif role == "bashExecution":
            entry["message"] = {"role": role, "command": "ls", "output": text}
        elif role in ("branchSummary", "compactionSummary"):
            entry["message"] = {"role": role, "summary": text}
        else:
            entry["message"] = {"role": role, "content": text}
    elif kind in ("branch_summary", "compaction"):
        entry["summary"] = "s" * chars
    return entry


KINDS = [
    ("message", "user"),
    ("message", "assistant"),
    ("message", "assistant"),
    ("message", "toolResult"),
    ("message", "toolResult"),
    ("message", "bashExecution"),
    ("message", "custom"),
    ("message", "branchSummary"),
    ("message", "compactionSummary"),
    ("custom_message", None),
    ("branch_summary", None),
    ("compaction", None),
    ("model_change", None),
    ("thinking_level_change", None),
    ("label", None),
    ("custom", None),
    ("session_info", None),
]


@pytest.mark.oracle
def test_it_finds_cut_points_as_pi_on_generated_entry_lists():
    """findCutPoint and findTurnStartIndex on random entry lists with random ranges, budgets
    and indices (seeded) — shapes no recorded session has: cuts at the range start, ranges ending
    on settings entries, tool results everywhere."""
    from contextlab.pi.compaction import find_turn_start_index

    rng = random.Random(7)
    cases = []
    for _ in range(1500):
        size = rng.randint(1, 30)
        entries = [_cut_entry(rng.choice(KINDS), rng.randint(0, 120), n) for n in range(size)]
        start = rng.randint(0, size - 1)
        cases.append(
            {
                "entries": entries,
                "start": start,
                "end": rng.randint(start, size),
                "keep": rng.choice([0, 1, 5, 20, 60, 200, 10**6]),
                "index": rng.randint(start, size - 1),
            }
        )
    got = run_oracle("compaction.mjs", {"cuts": cases})["cuts"]
    splits = 0
    for c, theirs in zip(cases, got, strict=True):
        cut = find_cut_point(c["entries"], c["start"], c["end"], c["keep"])
        splits += cut.is_split_turn
        assert {
            "firstKeptEntryIndex": cut.first_kept_entry_index,
            "turnStartIndex": cut.turn_start_index,
            "isSplitTurn": cut.is_split_turn,
        } == theirs["cut"], c
        assert find_turn_start_index(c["entries"], c["index"], c["start"]) == theirs["turnStart"]
    assert 100 < splits < 1400, splits
