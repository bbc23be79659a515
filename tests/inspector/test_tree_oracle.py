"""The web tree against Pi 0.80.2's own /tree selector (TreeList in tree-selector.js), run under
Node on a copy of the same file: the same rows in the same order, printed the same way, for each
filter mode, searches and folds."""

from __future__ import annotations

import importlib.util
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
from tests.inspector.sessions import write_session

pytestmark = pytest.mark.oracle

CORPUS = REPO / "tests" / "conformance" / "corpus"


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


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "gen_large_session", REPO / "tools" / "gen_large_session.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sessions(tmp_path: Path) -> list[Path]:
    paths = [write_session(tmp_path / "rich") if (tmp_path / "rich").mkdir() is None else None]
    for corpus in sorted(CORPUS.glob("*/session.jsonl")):
        copy = tmp_path / f"{corpus.parent.name}.jsonl"
        shutil.copyfile(corpus, copy)
        paths.append(copy)
    generated = tmp_path / "generated.jsonl"
    _generator().write_session(
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
