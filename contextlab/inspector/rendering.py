"""HTML of tree rows and of the chart's table, written directly: a large session sends over a
thousand rows at once, and the template engine is ten times slower at it (every other piece of
the session page is a template partial). Everything from the session is escaped here."""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from typing import Any
from urllib.parse import quote

from django.utils.safestring import SafeString, mark_safe

from contextlab.pi.tree_selector import Row


def tokens_text(value: object) -> str:
    """12345 -> "12.3k", 1234567 -> "1.23M": token counts read at a glance in dense tables."""
    if not isinstance(value, int | float):
        return "—" if value is None else str(value)
    number = float(value)
    if abs(number) >= 1_000_000:
        return f"{number / 1_000_000:.2f}M"
    if abs(number) >= 10_000:
        return f"{number / 1000:.1f}k"
    return f"{int(number):,}"


def chart_rows_html(points: list[dict[str, Any]], *, page_url: str, limit: int) -> SafeString:
    """The growth chart's table rows (the first `limit` requests): a thousand rows of six cells
    were most of the chart page's time through the template engine."""
    url = escape(page_url)
    out = []
    for n, point in enumerate(points[:limit]):
        leaf = str(point["leaf"])
        compaction = point.get("compaction")
        badge = (
            f'<span class="badge badge-compaction">{escape(tokens_text(compaction["before"]))}'
            f" → {escape(tokens_text(compaction['after']))}</span>"
            if compaction
            else ""
        )
        out.append(
            f'<tr><td class="num">{n}</td><td><a class="mono" href="{url}?entry='
            f'{escape(quote(leaf, safe="/"))}&amp;tab=context">{escape(leaf)}</a></td>'
            f'<td class="num">{escape(str(point.get("estimate")))}</td>'
            f'<td class="num">{escape(str(point.get("reported") or "—"))}</td>'
            f"<td>{badge}</td><td>{escape(str(point.get('dialect') or ''))}</td></tr>\n"
        )
    return mark_safe("".join(out))  # every value above went through escape()


def _kind(row: Row) -> str:
    if row.item.type == "compaction":
        return "compaction"
    if row.item.type == "branch_summary":
        return "branch"
    return escape(row.item.type)


def _fold(row: Row, page_url: str, query: str, text: str, title: str) -> str:
    action = "unfold" if row.folded else "fold"
    url = escape(f"{page_url}?{query}")
    return (
        f'<a class="fold-toggle fold" data-action="{action}" title="{title}" href="{url}" '
        f'hx-target="#tree">'
        f"{text}</a>"
    )


def tree_rows_html(
    rows: Iterable[Row],
    *,
    page_url: str,
    qs_prefix: str,
    fold_links: dict[str, str],
    selected_id: str | None,
    comment_counts: dict[str, int] | None = None,
) -> SafeString:
    """One <li> per row. Plain links, which htmx boosts (the list's hx-boost: a row fetches the
    inspector, a fold toggle the tree); the selected row is `aria-selected="true"`, every row
    names its entry in `data-entry-id`."""
    out: list[str] = []
    base = escape(f"{page_url}?{qs_prefix}entry=")
    for row in rows:
        item = row.item
        entry_id = escape(item.id)
        parent = (
            f' data-parent="{escape(row.visible_parent)}"' if row.visible_parent is not None else ""
        )
        selected = item.id == selected_id
        mark = ' aria-selected="true"' if selected else ""
        parts = [
            f'<li data-id="{entry_id}" data-entry-id="{entry_id}"{parent} role="treeitem"{mark} '
            f'class="kind-{_kind(row)}">'
        ]
        fold_query = fold_links.get(item.id)
        title = "Unfold this branch" if row.folded else "Fold this branch"
        if row.marker_at >= 0 and fold_query is not None:
            parts.append(f'<span class="prefix">{escape(row.prefix_head)}</span>')
            parts.append(_fold(row, page_url, fold_query, row.prefix_marker, title))
            parts.append(f'<span class="prefix">{escape(row.prefix_tail)}</span>')
        else:
            if row.prefix:
                parts.append(f'<span class="prefix">{escape(row.prefix)}</span>')
            if fold_query is not None:
                parts.append(_fold(row, page_url, fold_query, "⊞ " if row.folded else "⊟ ", title))
        link = f"{base}{escape(quote(item.id, safe=''))}"
        parts.append(
            f'<a class="trow{" selected" if selected else ""}" href="{link}"'
            f"{' aria-current="true"' if selected else ''}>"
        )
        if row.on_path:
            parts.append('<span class="path" title="on the active path">• </span>')
        if row.label is not None:
            parts.append(f'<span class="label">[{escape(row.label)}] </span>')
        hint = ""
        if item.hint:
            kind = "system" if item.role == "system" else "edit"
            hint = (
                f'<span class="hint hint-{kind}" title="{escape(item.hint_title)}">'
                f"{escape(item.hint)}</span>"
            )
        if hint and item.role != "system":
            # Before the line: a long message would clip a hint written after it.
            parts.append(hint)
        parts.append('<span class="text">')
        if item.tag:
            parts.append(f'<span class="tag {item.css}">{escape(item.tag)}</span>')
            parts.append(f"<span>{escape(item.text)}</span>")
        else:
            parts.append(f'<span class="{item.css}">{escape(item.text)}</span>')
        parts.append("</span>")
        if hint and item.role == "system":  # after "[system]", short: "[system] tools changed"
            parts.append(hint)
        if row.is_leaf:
            parts.append('<span class="leaf" title="current leaf: where Pi resumes">leaf</span>')
        comments = comment_counts.get(item.id, 0) if comment_counts else 0
        if comments:
            parts.append(f'<span class="comment-count" title="review comments">✎ {comments}</span>')
        parts.append("</a></li>\n")
        out.append("".join(parts))
    return mark_safe("".join(out))  # every value above went through escape()
