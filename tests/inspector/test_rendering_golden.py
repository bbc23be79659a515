"""The tree's rows and the growth chart's table rows are the same bytes whatever renders them:
every recorded session (the conformance corpora and the demo sessions) under several filter
modes, folds, selections and comment counts, and crafted rows and points whose ids, labels,
hints and URLs hold what must be escaped or quoted (<, >, &, quotes, spaces, non-ASCII), are
compared with what the f-string renderer wrote (``rendering_golden.json``: the crafted cases
whole, the recorded sessions as SHA-256 digests). No database.

CONTEXTLAB_WRITE_GOLDEN=1 writes the fixture again (only with a version known to be right).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from contextlab.inspector.rendering import chart_rows_html, tree_rows_html
from contextlab.inspector.tree_pane import TreeState
from contextlab.pi.session import SessionTree
from contextlab.pi.tree_hints import add_context_hints
from contextlab.pi.tree_selector import (
    Row,
    TreeItem,
    TreeView,
    build_view,
    collect_tool_calls,
    finish,
    flatten,
    tree_item,
)
from tests.conftest import REPO

GOLDEN = Path(__file__).with_name("rendering_golden.json")
SESSIONS = sorted((REPO / "tests" / "conformance").glob("corpus*/*/session.jsonl")) + sorted(
    (REPO / "contextlab" / "library" / "demo" / "sessions").glob("*.jsonl")
)
NASTY = "a <b> & \"c\" 'd' é ✂ 日本"
PAGE_URL = "/sessions/7/"


def _name(path: Path) -> str:
    if path.name == "session.jsonl":
        return f"{path.parent.parent.name}/{path.parent.name}"
    return f"demo/{path.stem}"


def _entries(path: Path) -> list[dict[str, Any]]:
    lines = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return [e for e in lines if e.get("type") != "session" and isinstance(e.get("id"), str)]


def _view(entries: list[dict[str, Any]], mode: str, folded: tuple[str, ...]) -> TreeView:
    """As the session index builds it (tree_item, the Pi 1.x hints, Pi's order and labels)."""
    tree = SessionTree(entries)
    calls: dict[str, tuple[str, object]] = {}
    for entry in entries:
        collect_tool_calls(entry, calls)
    items = {e["id"]: tree_item(e, calls) for e in entries}
    for entry_id, item in items.items():
        item.parent_id = tree.parent(entry_id)
    add_context_hints(entries, tree, items)
    order = [i for i in flatten(tree.roots, tree.children, tree.leaf_id) if i in items]
    path = set(tree.path_ids(tree.leaf_id))
    labels = {k: str(v) for k, v in tree.labels.items() if k in items}
    return build_view(order, items, labels, tree.leaf_id, path, mode, "", folded)


def _tree_html(view: TreeView, state: TreeState, selected: str | None, **extra: Any) -> str:
    """The rows as the tree pane asks for them (its fold links and query prefix)."""
    fold_links = {
        row.item.id: state.query_string(fold=",".join(state.toggled(row.item.id)), entry=selected)
        for row in view.rows
        if row.foldable or row.folded
    }
    prefix = state.query_string(entry="")
    finish(view, view.rows)
    return str(
        tree_rows_html(
            view.rows,
            page_url=PAGE_URL,
            qs_prefix=f"{prefix}&" if prefix else "",
            fold_links=fold_links,
            selected_id=selected,
            **extra,
        )
    )


def _session_cases(path: Path) -> dict[str, str]:
    """One session under each mode, folded at its first foldable row, selected at its leaf or
    at a middle row, with and without comment counts."""
    entries = _entries(path)
    out: dict[str, str] = {}
    for mode in ("default", "all", "no-tools"):
        view = _view(entries, mode, ())
        ids = [row.item.id for row in view.rows]
        leaf = next((row.item.id for row in view.rows if row.is_leaf), None)
        middle = ids[len(ids) // 2] if ids else None
        counts = {entry_id: n + 1 for n, entry_id in enumerate(ids[::3])}
        out[f"{mode}/leaf"] = _tree_html(view, TreeState(mode=mode), leaf)
        out[f"{mode}/middle+comments"] = _tree_html(
            view, TreeState(mode=mode, tab="prompt"), middle, comment_counts=counts
        )
        foldable = [row.item.id for row in view.rows if row.foldable]
        for fold in foldable[:2]:
            folded = (fold,)
            folded_view = _view(entries, mode, folded)
            state = TreeState(mode=mode, folded=folded, query="x y")
            out[f"{mode}/folded {fold}"] = _tree_html(folded_view, state, fold)
    return out


def _item(entry_id: str, parent: str | None, **fields: Any) -> TreeItem:
    return TreeItem(id=entry_id, parent_id=parent, type=fields.pop("type", "message"), **fields)


def _crafted_rows() -> list[Row]:
    """Rows with every part a row can have, ids and texts that must be escaped or quoted."""
    user = _item(NASTY, None, role="user", tag="user: ", text=f"hello {NASTY}", css="role-user")
    system = _item(
        "sys&1",
        NASTY,
        role="system",
        text="[system]",
        css="role-dim",
        hint=f"tools changed {NASTY}",
        hint_title=f'"{NASTY}"',
    )
    edit = _item(
        "edit 2",
        "sys&1",
        type="context_edit",
        text=f"[context omit: {NASTY}]",
        css="role-dim",
        hint="✂ omits user",
        hint_title=f"context edit: leaves {NASTY} out",
    )
    edited = _item(
        "e/3?x=1#y",
        "edit 2",
        role="assistant",
        tag="assistant: ",
        text="<script>alert(1)</script>",
        css="role-assistant",
        hint="✂ replaced · omitted 2×",
        hint_title="replaced by context edit e'4",
    )
    compaction = _item("c5", "e/3?x=1#y", type="compaction", text="[compaction: 12k tokens]")
    summary = _item(
        "b6", "c5", type="branch_summary", tag="[branch summary]: ", text=f"gone {NASTY}"
    )
    weird = _item("t7", "b6", type='x"><i>', text="", css="")
    tool = _item("r8", "t7", role="toolResult", text="[read: a&b.py]", css="role-tool")
    return [
        Row(user, indent=0, on_path=True, label=NASTY, visible_children=2, foldable=True),
        Row(
            system,
            indent=1,
            show_connector=True,
            visible_parent=NASTY,
            foldable=True,
            on_path=True,
            prefix="├⊟ ",
            marker_at=1,
        ),
        Row(
            edit,
            indent=2,
            show_connector=True,
            is_last=True,
            visible_parent="sys&1",
            folded=True,
            prefix="│  └⊞ ",
            marker_at=4,
            label="",
        ),
        Row(edited, indent=1, visible_parent="edit 2", folded=True, prefix="   "),
        Row(compaction, indent=0, visible_parent="e/3?x=1#y", foldable=True),
        Row(summary, indent=0, visible_parent="c5", is_leaf=True, label="<b>"),
        Row(weird, indent=0, visible_parent="b6", prefix="│  ─ ", marker_at=3),
        Row(tool, indent=0, visible_parent="t7", on_path=True, is_leaf=True),
    ]


def _crafted_tree_cases() -> dict[str, str]:
    rows = _crafted_rows()
    folds = {
        NASTY: f"fold={NASTY}&entry=x",
        "sys&1": "fold=a%2Cb&entry=%3C",
        "edit 2": 'fold="q"',
        "e/3?x=1#y": "fold=é",
        "c5": "",
    }
    counts = {NASTY: 3, "edit 2": 0, "b6": 12, "r8": 1}
    common: dict[str, Any] = {"page_url": '/s/1/?a=<"é">&', "qs_prefix": "mode=all&q=a+%26+b&"}
    return {
        "crafted/selected nasty": str(
            tree_rows_html(
                rows, fold_links=folds, selected_id=NASTY, comment_counts=counts, **common
            )
        ),
        "crafted/selected edit, no comments": str(
            tree_rows_html(rows, fold_links=folds, selected_id="edit 2", **common)
        ),
        "crafted/no folds, nothing selected": str(
            tree_rows_html(rows, page_url=PAGE_URL, qs_prefix="", fold_links={}, selected_id=None)
        ),
        "crafted/empty": str(
            tree_rows_html([], page_url=PAGE_URL, qs_prefix="", fold_links={}, selected_id=None)
        ),
    }


def _crafted_points() -> list[dict[str, Any]]:
    return [
        {"leaf": NASTY, "estimate": 12, "reported": None, "dialect": "0.80"},
        {
            "leaf": "a/b c?d=e#f",
            "estimate": 30,
            "reported": 40,
            "compaction": {"id": "x", "before": 12345, "after": 900},
            "dialect": None,
        },
        {"leaf": 7, "estimate": None, "reported": 0, "compaction": None, "dialect": ""},
        {
            "leaf": "z",
            "estimate": 1_234_567,
            "reported": 2_500_000.5,
            "compaction": {"before": None, "after": "<many>"},
            "dialect": f"1.x {NASTY}",
        },
        {"leaf": "w", "estimate": 10_000, "compaction": {"before": 9999.9, "after": 0}},
    ]


def _chart_cases() -> dict[str, str]:
    points = _crafted_points()
    many = [
        {
            "leaf": f"e{n:05d}<{n % 7}>",
            "estimate": n * 137,
            "reported": n * 140 if n % 3 else None,
            "compaction": {"before": n * 1000, "after": n * 10} if n % 50 == 0 else None,
            "dialect": ("0.73", "0.80", "1.x", None)[n % 4],
        }
        for n in range(1200)
    ]
    return {
        "crafted/all": str(chart_rows_html(points, page_url='/s/1/?"<é>"&', limit=10)),
        "crafted/limited": str(chart_rows_html(points, page_url="/sessions/1/", limit=2)),
        "crafted/empty": str(chart_rows_html([], page_url="/sessions/1/", limit=1000)),
        "generated/1200 points, first 1000": str(
            chart_rows_html(many, page_url="/sessions/3/", limit=1000)
        ),
    }


def _digest(html: str) -> str:
    return hashlib.sha256(html.encode()).hexdigest()


def _golden() -> dict[str, dict[str, str]]:
    return json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}


def _check(section: str, found: dict[str, str]) -> None:
    golden = _golden()
    if os.environ.get("CONTEXTLAB_WRITE_GOLDEN"):
        golden.setdefault(section, {}).update(found)
        GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    assert found == {k: golden[section][k] for k in found}


@pytest.mark.parametrize("path", SESSIONS, ids=_name)
def test_the_rows_of_a_recorded_session_are_the_same_bytes(path):
    found = _session_cases(path)
    assert any(html for html in found.values())
    _check("tree digests", {f"{_name(path)}/{k}": _digest(html) for k, html in found.items()})


def test_the_crafted_rows_are_the_same_bytes():
    _check("tree", _crafted_tree_cases())


def test_the_chart_table_rows_are_the_same_bytes():
    found = _chart_cases()
    generated = found.pop("generated/1200 points, first 1000")
    _check("chart", found)
    _check("chart digests", {"generated/1200 points, first 1000": _digest(generated)})
