"""The web tree against Pi's own /tree selector (TreeList in tree-selector.js), run under Node on a
copy of the same file: the same rows in the same order, printed the same way, for each filter
mode, searches and folds. Pi 0.80.2 for 0.x sessions; Pi 1.6.0 for the 1.x corpus and for 1.x
entry shapes (system messages, context edits, usage entries)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from contextlab.pi.session import SessionTree, parse_session_file
from contextlab.pi.tree_selector import (
    FILTER_MODES,
    build_view,
    collect_tool_calls,
    finish,
    flatten,
    pi_line,
    tree_item,
)
from tests.conformance.conftest import run_oracle
from tests.conftest import REAL_SESSION, REPO
from tests.generated import large_session_generator
from tests.inspector.sessions import write_session

pytestmark = pytest.mark.oracle

CORPUS = REPO / "tests" / "conformance" / "corpus"
CORPUS_1X = REPO / "tests" / "conformance" / "corpus-1.6.0"


def _ours(path: Path, cases: list[dict]) -> list[dict]:
    entries = parse_session_file(path).entries
    tree = SessionTree(entries)
    calls: dict = {}
    for entry in entries:
        collect_tool_calls(entry, calls)
    items = {}
    for entry in entries:
        items[entry["id"]] = tree_item(entry, calls)
        items[entry["id"]].parent_id = tree.parent(entry["id"])
    order = flatten(tree.roots, tree.children, tree.leaf_id)
    labels = {k: str(v) for k, v in tree.labels.items()}
    out = []
    for case in cases:
        view = build_view(
            order, items, labels, tree.leaf_id, set(tree.path_ids(tree.leaf_id)),
            case["mode"], case.get("query", ""), case.get("folded", ()),
        )  # fmt: skip
        finish(view, view.rows)
        out.append(
            {"ids": [r.item.id for r in view.rows], "lines": [pi_line(r) for r in view.rows]}
        )
    return out


def _cases(path: Path) -> list[dict]:
    entries = parse_session_file(path).entries
    tree = SessionTree(entries)
    branch_points = [e["id"] for e in entries if len(tree.children(e["id"])) > 1]
    segment_starts = [c for b in branch_points for c in tree.children(b)]
    cases = [{"mode": mode} for mode in FILTER_MODES]
    cases += [{"mode": "default", "query": q} for q in ("user", "read bash", "the", "zzz-none")]
    cases += [{"mode": "all", "query": "assistant"}]
    if segment_starts:
        cases += [
            {"mode": "default", "folded": segment_starts[:1]},
            {"mode": "all", "folded": segment_starts[-2:]},
        ]
    roots = tree.roots[:1]
    cases += [{"mode": "no-tools", "folded": roots}]
    return cases


def _sessions(tmp_path: Path) -> list[Path]:
    paths = [write_session(tmp_path / "rich") if (tmp_path / "rich").mkdir() is None else None]
    for corpus in sorted(CORPUS.glob("*/session.jsonl")):
        copy = tmp_path / f"{corpus.parent.name}.jsonl"
        shutil.copyfile(corpus, copy)
        paths.append(copy)
    generated = tmp_path / "generated.jsonl"
    large_session_generator().write_session(
        generated,
        entries=3000,
        target_bytes=2 * 1024 * 1024,
        branches=12,
        compactions=3,
        seed=7,
        session_id="tree-oracle",
        cwd="/home/dev/projects/pelican",
    )
    paths.append(generated)
    if REAL_SESSION.exists():
        copy = tmp_path / "real.jsonl"
        shutil.copyfile(REAL_SESSION, copy)  # Pi may rewrite what it opens: never the original
        paths.append(copy)
    return paths


def test_it_lists_the_rows_pi_tree_lists(tmp_path):
    for path in _sessions(tmp_path):
        cases = _cases(path)
        theirs = run_oracle("tree_view.mjs", {"file": str(path), "cases": cases})
        ours = _ours(path, cases)
        for case, mine, pi in zip(cases, ours, theirs, strict=True):
            assert mine["ids"] == pi["ids"], (path.name, case)
            assert mine["lines"] == pi["lines"], (path.name, case)


def _cases_1x(path: Path) -> list[dict]:
    return _cases(path) + [
        {"mode": mode, "query": query}
        for mode in ("default", "all")
        for query in ("context edit", "omit", "replace", "system", "usage", "cache")
    ]


def _edge_session_1x(path: Path) -> Path:
    """1.x shapes the recordings may lack: a usage entry as the leaf and mid-path, edits with an
    absent replacement or target, a labelled edit, read calls with null and string ranges."""

    def _ts(id_: str) -> str:
        return f"2026-11-20T10:00:{int(id_[1:]):02d}.000Z"

    def entry(id_, parent, type_, **data):  # type: ignore[no-untyped-def]
        return {"type": type_, "id": id_, "parentId": parent, "timestamp": _ts(id_), **data}

    def msg(id_, parent, role, content, **extra):  # type: ignore[no-untyped-def]
        message = {"role": role, "content": content, "timestamp": 1763632800000, **extra}
        return entry(id_, parent, "message", message=message)

    def result(n: int):  # type: ignore[no-untyped-def]
        content = [{"type": "text", "text": "ok"}]
        return msg(f"e{4 + n:02d}", f"e{3 + n:02d}", "toolResult", content, toolCallId=f"c{n}")

    usage = {"input": 10, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 11}
    reply = {"api": "openai-completions", "provider": "p", "model": "m", "stopReason": "toolUse"}
    calls = [
        {"type": "toolCall", "id": f"c{n}", "name": "read", "arguments": args}
        for n, args in enumerate(
            [
                {"path": "a.py", "offset": None, "limit": None},
                {"path": "b.py", "offset": "5", "limit": " 3 "},
                {"path": "c.py", "offset": 2.5, "limit": None},
                {"path": "d.py", "offset": "x", "limit": 4},
                {"path": "e.py", "limit": 10},
            ]
        )
    ]
    entries = [
        {"type": "session", "version": 3, "id": "s", "timestamp": _ts("x00"), "cwd": "/w"},
        msg("e01", None, "system", "", sections={"preamble": "P"}, toolsAdded=[]),
        msg("e02", "e01", "user", "read them all"),
        msg("e03", "e02", "assistant", calls, **reply),
        *[result(n) for n in range(len(calls))],
        entry("e09", "e08", "usage", kind="cache_warm", provider="p", model="m", usage=usage),
        entry("e10", "e09", "context_edit", targetId="e04", replacement=None),
        entry("e11", "e10", "context_edit", targetId="e05"),
        entry("e12", "e11", "context_edit", replacement={"content": "x"}),
        entry("e13", "e12", "label", targetId="e10", label="edit-label"),
        msg("e14", "e13", "system", "", sections={"addendum": "<addendum>\nA\n</addendum>"}),
        msg("e15", "e14", "user", "and a branch"),
        msg("e16", "e02", "user", "another branch"),
        entry("e17", "e15", "usage", kind="cache_warm", provider="p", model="m", usage=usage),
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return path


def _sessions_1x(tmp_path: Path) -> list[Path]:
    paths = [_edge_session_1x(tmp_path / "edge-1x.jsonl")]
    for corpus in sorted(CORPUS_1X.glob("*/session.jsonl")):
        copy = tmp_path / f"1x-{corpus.parent.name}.jsonl"
        shutil.copyfile(corpus, copy)
        paths.append(copy)
    return paths


def test_it_lists_the_rows_pi_1_6_0_tree_lists_for_1x_sessions(tmp_path):
    for path in _sessions_1x(tmp_path):
        cases = _cases_1x(path)
        theirs = run_oracle("tree_view.mjs", {"file": str(path), "cases": cases}, version="1.6.0")
        ours = _ours(path, cases)
        for case, mine, pi in zip(cases, ours, theirs, strict=True):
            assert mine["ids"] == pi["ids"], (path.name, case)
            assert mine["lines"] == pi["lines"], (path.name, case)
