"""The session page's tree pane: what the URL says about the tree (`TreeState`), the tree view it
asks for, and the rows the page sends (the ones around the selection and the leaf; the rest as
placeholders that load lazily). Everything the pane keeps in the index's memo is written here,
under the keys declared below."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode

from django.http import QueryDict
from django.urls import reverse

from contextlab.inspector.rendering import tree_rows_html
from contextlab.inspector.selectors import SessionIndex
from contextlab.library.models import Session
from contextlab.pi.tree_selector import FILTER_MODES, TreeView, build_view, finish, select_rows
from contextlab.review.selectors import comment_counts

TABS = ("context", "prompt", "diff", "json", "entry")

# The tree pane's keys in `SessionIndex.memo` (the index's own views are kept by the index).
MEMO_TREE_IDS = "tree-ids"  # (MEMO_TREE_IDS,): every entry in Pi's tree
MEMO_VIEW_SHOWING = "view-showing"  # (MEMO_VIEW_SHOWING, entry, mode, query, folds): see tree_view


@dataclass(frozen=True)
class TreeState:
    """What the URL says about the tree and the selection."""

    mode: str = "default"
    query: str = ""
    folded: tuple[str, ...] = ()
    entry: str | None = None
    tab: str = "context"

    @classmethod
    def from_query(cls, params: QueryDict) -> TreeState:
        mode = params.get("mode", "default")
        tab = params.get("tab", "context")
        folded = tuple(f for f in params.get("fold", "").split(",") if f)[:200]
        return cls(
            mode=mode if mode in FILTER_MODES else "default",
            query=params.get("q", "").strip()[:200],
            folded=folded,
            entry=params.get("entry") or None,
            tab=tab if tab in TABS else "context",
        )

    def query_string(self, **changes: object) -> str:
        """The URL query for this state with `changes` applied (defaults left out, `entry` last:
        permalinks read well with the entry at the end)."""
        values: dict[str, object] = {
            "mode": self.mode,
            "q": self.query,
            "fold": ",".join(self.folded),
            "tab": self.tab,
            "entry": self.entry or "",
        }
        values.update(changes)
        defaults = {"mode": "default", "tab": "context"}
        pairs = [(k, v) for k, v in values.items() if v and defaults.get(k) != v and k != "entry"]
        if values["entry"]:
            pairs.append(("entry", values["entry"]))
        return urlencode(pairs)

    def toggled(self, entry_id: str) -> tuple[str, ...]:
        if entry_id in self.folded:
            return tuple(f for f in self.folded if f != entry_id)
        return (*self.folded, entry_id)


def tree_view(index: SessionIndex, state: TreeState, selected: str | None) -> TreeView:
    """The tree under the URL's mode, search and folds, showing the selected entry if only the
    "assistant message with tool calls only" rule hides it (Pi shows such an entry when it is
    the leaf; the inspector links to replies, which are often such messages). An entry that a
    fold, the search or the mode hides is not shown: the selection moves to its nearest visible
    ancestor, as in Pi's /tree."""
    view = index.view(state.mode, state.query, state.folded)
    if selected is None or selected in view.index_of or index.leaf_id == selected:
        return view
    item = index.items.get(selected)
    if item is None or not item.toolcall_only or _folded_away(index, state, selected):
        return view
    key = (MEMO_VIEW_SHOWING, selected, state.mode, state.query, state.folded)
    kept = index.memo.get(key)
    if isinstance(kept, TreeView):
        return kept
    items = dict(index.items)
    items[selected] = replace(item, toolcall_only=False)
    kept = build_view(
        index.order,
        items,
        index.labels,
        index.leaf_id,
        set(index.path_ids),
        mode=state.mode,
        query=state.query,
        folded=state.folded,
    )
    index.remember(key, kept)
    return kept


def tree_ids(index: SessionIndex) -> frozenset[str]:
    """Entries in Pi's tree. An entry of a parentId cycle is stored but in no tree: the
    inspector can show it, no row can be selected for it."""
    ids = index.memo.get((MEMO_TREE_IDS,))
    if not isinstance(ids, frozenset):
        ids = frozenset(index.order)
        index.remember((MEMO_TREE_IDS,), ids)
    return ids


def _folded_away(index: SessionIndex, state: TreeState, entry_id: str) -> bool:
    if not state.folded:
        return False
    folded = set(state.folded)
    parent = index.parent_of.get(entry_id)
    hops = 0
    while parent is not None and hops <= len(index.items):
        if parent in folded:
            return True
        parent = index.parent_of.get(parent)
        hops += 1
    return False


@dataclass(frozen=True)
class RowLinks:
    """What every row's links are made of (the arguments of `rendering.tree_rows_html`)."""

    page_url: str
    qs_prefix: str
    fold_links: dict[str, str]
    selected_id: str | None
    comment_counts: dict[str, int]

    def html(self, view: TreeView, first: int, last: int) -> str:
        rows = view.rows[first : last + 1]
        finish(view, rows)
        return tree_rows_html(
            rows,
            page_url=self.page_url,
            qs_prefix=self.qs_prefix,
            fold_links=self.fold_links,
            selected_id=self.selected_id,
            comment_counts=self.comment_counts,
        )


@dataclass(frozen=True)
class TreePane:
    """The tree pane for one request: the view, the entry it selects, and its rows' links."""

    view: TreeView
    selected_id: str | None
    links: RowLinks
    state: TreeState

    def segments(self, ranges: list[tuple[int, int]], start: int, end: int) -> list[dict[str, Any]]:
        """Rows to render and the gaps between them (placeholders that load lazily)."""
        out: list[dict[str, Any]] = []
        cursor = start
        for first, last in ranges:
            first, last = max(first, start), min(last, end)
            if first > last:
                continue
            if first > cursor:
                out.append(self._gap(cursor, first - 1))
            out.append({"html": self.links.html(self.view, first, last)})
            cursor = last + 1
        if cursor <= end:
            out.append(self._gap(cursor, end))
        return out

    def _gap(self, first: int, last: int) -> dict[str, Any]:
        rows = self.view.rows
        finish(self.view, [rows[first]])
        return {
            "gap": True,
            "start": first,
            "end": last,
            "count": last - first + 1,
            "first_id": rows[first].item.id,
            "last_id": rows[last].item.id,
            "prefix": rows[first].prefix,
        }

    def row_html(self, entry_id: str) -> str:
        """The one row of `entry_id` (empty if the tree does not show it)."""
        at = self.view.index_of.get(entry_id)
        return "" if at is None else self.links.html(self.view, at, at)


def tree_pane(
    session: Session, index: SessionIndex, state: TreeState, selected: str | None
) -> TreePane:
    view = tree_view(index, state, selected)
    selected_index = -1
    if selected is not None and selected in tree_ids(index):
        selected_index = view.nearest_visible(selected, index.parent_of.get)
    selected_id = view.rows[selected_index].item.id if selected_index >= 0 else None
    # The link keeps the selection: a fold that hides it moves it to the folded entry.
    fold_links = {
        row.item.id: state.query_string(
            fold=",".join(state.toggled(row.item.id)), entry=selected_id or ""
        )
        for row in view.rows
        if row.foldable or row.folded
    }
    prefix = state.query_string(entry="")
    links = RowLinks(
        page_url=reverse("inspector:session", args=[session.pk]),
        qs_prefix=f"{prefix}&" if prefix else "",
        fold_links=fold_links,
        selected_id=selected_id,
        comment_counts=comment_counts(session),  # one query, whatever the tree's size
    )
    return TreePane(view=view, selected_id=selected_id, links=links, state=state)


def tree_context(pane: TreePane, session: Session, index: SessionIndex) -> dict[str, object]:
    """The template context of the tree partial: the rows around the selection and the leaf."""
    view, state = pane.view, pane.state
    leaf_index = view.index_of.get(index.leaf_id or "", -1)
    selected_index = view.index_of.get(pane.selected_id or "", -1)
    ranges = select_rows(view, [selected_index, leaf_index])
    return {
        "page_url": pane.links.page_url,
        "qs_prefix": pane.links.qs_prefix,
        "selected_id": pane.selected_id,
        "view": view,
        "segments": pane.segments(ranges, 0, len(view.rows) - 1),
        "rows_url": reverse("inspector:tree_rows", args=[session.pk]),
        "mode_links": [
            (m, state.query_string(mode=m, fold="", entry=pane.selected_id or ""))
            for m in FILTER_MODES
        ],
        "tree_state": state.query_string(entry="", tab="context"),
    }
