"""How long the session tree's rows and the growth chart's table rows take to render, a large
session's worth at once: every row of a generated 2,000-entry session (branches, compactions,
labels; Pi's tree in mode "all", a comment count on every tenth row) and 1,000 chart rows.

Two renderers of the same HTML: `contextlab.inspector.rendering` as it stands (Jinja2 partials;
f-strings before #20, the figures of both in its docstring), and Django's template engine given
the same rows (the partials below, written for this measurement only; the
per-row lookups a Django template cannot make, computed in Python first and counted in its
time). Each is checked to write the same bytes, then timed: the median of RUNS renders.

    .venv/bin/python -m bench rows   (no database needed)
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from bench.generator import large_session_generator

REPO = Path(__file__).resolve().parent.parent
ENTRIES = 2_000
CHART_ROWS = 1_000
RUNS = 15

# Django's template engine given the same rows, one line per row as the pages send them.
DJANGO_FOLD = (
    '<a class="fold-toggle fold" data-action="{% if row.folded %}unfold{% else %}fold{% endif %}"'
    ' title="{% if row.folded %}Unfold{% else %}Fold{% endif %} this branch"'
    ' href="{{ page_url }}?{{ r.fold }}" hx-target="#tree">'
)
DJANGO_HINT = (
    '<span class="hint hint-{% if item.role == "system" %}system{% else %}edit{% endif %}"'
    ' title="{{ item.hint_title }}">{{ item.hint }}</span>'
)
DJANGO_TREE = (
    "{% for r in rows %}{% with row=r.row item=r.row.item %}"
    '<li data-id="{{ item.id }}" data-entry-id="{{ item.id }}"'
    '{% if row.visible_parent is not None %} data-parent="{{ row.visible_parent }}"{% endif %}'
    ' role="treeitem"{% if r.selected %} aria-selected="true"{% endif %} class="kind-'
    '{% if item.type == "compaction" %}compaction{% elif item.type == "branch_summary" %}branch'
    '{% else %}{{ item.type }}{% endif %}">'
    "{% if row.marker_at >= 0 and r.fold is not None %}"
    '<span class="prefix">{{ row.prefix_head }}</span>'
    f"{DJANGO_FOLD}{{{{ row.prefix_marker }}}}</a>"
    '<span class="prefix">{{ row.prefix_tail }}</span>'
    "{% else %}"
    '{% if row.prefix %}<span class="prefix">{{ row.prefix }}</span>{% endif %}'
    "{% if r.fold is not None %}"
    f"{DJANGO_FOLD}{{% if row.folded %}}⊞ {{% else %}}⊟ {{% endif %}}</a>"
    "{% endif %}{% endif %}"
    '<a class="trow{% if r.selected %} selected{% endif %}"'
    ' href="{{ page_url }}?{{ qs_prefix }}entry={{ item.id|urlencode:"" }}"'
    '{% if r.selected %} aria-current="true"{% endif %}>'
    '{% if row.on_path %}<span class="path" title="on the active path">• </span>{% endif %}'
    '{% if row.label is not None %}<span class="label">[{{ row.label }}] </span>{% endif %}'
    f'{{% if item.hint and item.role != "system" %}}{DJANGO_HINT}{{% endif %}}'
    '<span class="text">{% if item.tag %}<span class="tag {{ item.css }}">{{ item.tag }}</span>'
    "<span>{{ item.text }}</span>"
    '{% else %}<span class="{{ item.css }}">{{ item.text }}</span>{% endif %}</span>'
    f'{{% if item.hint and item.role == "system" %}}{DJANGO_HINT}{{% endif %}}'
    '{% if row.is_leaf %}<span class="leaf" title="current leaf: where Pi resumes">leaf</span>'
    "{% endif %}"
    '{% if r.comments %}<span class="comment-count" title="review comments">✎ {{ r.comments }}'
    "</span>{% endif %}</a></li>\n{% endwith %}{% endfor %}"
)
DJANGO_CHART = (
    "{% load humanize_tokens %}{% for point in points %}"
    '<tr><td class="num">{{ forloop.counter0 }}</td><td><a class="mono"'
    ' href="{{ page_url }}?entry={{ point.leaf|urlencode }}&amp;tab=context">{{ point.leaf }}</a>'
    '</td><td class="num">{{ point.estimate }}</td>'
    '<td class="num">{{ point.reported|default:"—" }}</td>'
    '<td>{% if point.compaction %}<span class="badge badge-compaction">'
    "{{ point.compaction.before|tokens }} → {{ point.compaction.after|tokens }}</span>"
    "{% endif %}</td><td>{{ point.dialect|default:'' }}</td></tr>\n{% endfor %}"
)


def _tree_inputs() -> dict[str, Any]:
    """Every row of a generated session in Pi's tree, mode "all", as the tree pane asks."""
    from contextlab.pi.session import SessionTree
    from contextlab.pi.tree_hints import add_context_hints
    from contextlab.pi.tree_selector import (
        build_view,
        collect_tool_calls,
        finish,
        flatten,
        tree_item,
    )

    with tempfile.TemporaryDirectory() as tmp:
        path = large_session_generator().write_session(
            Path(tmp) / "large.jsonl",
            entries=ENTRIES,
            target_bytes=4_000_000,
            branches=20,
            compactions=3,
            seed=1,
            session_id=None,
            cwd="/home/u/proj",
        )
        lines = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    entries = [e for e in lines if e.get("type") != "session"]
    tree = SessionTree(entries)
    calls: dict[str, tuple[str, object]] = {}
    for entry in entries:
        collect_tool_calls(entry, calls)
    items = {e["id"]: tree_item(e, calls) for e in entries}
    for entry_id, item in items.items():
        item.parent_id = tree.parent(entry_id)
    add_context_hints(entries, tree, items)
    order = flatten(tree.roots, tree.children, tree.leaf_id)
    labels = {k: str(v) for k, v in tree.labels.items()}
    path_ids = set(tree.path_ids(tree.leaf_id))
    view = build_view(order, items, labels, tree.leaf_id, path_ids, "all")
    finish(view, view.rows)
    ids = [row.item.id for row in view.rows]
    return {
        "rows": view.rows,
        "page_url": "/sessions/1/",
        "qs_prefix": "mode=all&",
        "fold_links": {
            row.item.id: f"mode=all&fold={row.item.id}&entry={tree.leaf_id}"
            for row in view.rows
            if row.foldable or row.folded
        },
        "selected_id": tree.leaf_id,
        "comment_counts": {entry_id: n % 4 + 1 for n, entry_id in enumerate(ids[::10])},
    }


def _chart_inputs() -> dict[str, Any]:
    points = [
        {
            "leaf": f"{n:08x}",
            "reply": f"r{n:07x}",
            "estimate": 1_000 + n * 137,
            "reported": 1_000 + n * 140 if n % 2 else None,
            "compaction": {"id": "c", "before": n * 1000, "after": n * 9} if n % 97 == 0 else None,
            "dialect": "0.80",
        }
        for n in range(CHART_ROWS)
    ]
    return {"points": points, "page_url": "/sessions/1/chart/", "limit": CHART_ROWS}


def _median_ms(render: Callable[[], object]) -> float:
    render()  # templates compiled, caches warm
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        render()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 2)


def main() -> dict[str, Any]:
    import django

    django.setup()
    from django.template import engines

    from contextlab.inspector.rendering import chart_rows_html, tree_rows_html

    django_engine = engines["django"]
    tree_template = django_engine.from_string(DJANGO_TREE)
    chart_template = django_engine.from_string(DJANGO_CHART)
    tree = _tree_inputs()
    chart = _chart_inputs()

    def django_tree() -> str:
        selected, folds, counts = tree["selected_id"], tree["fold_links"], tree["comment_counts"]
        rows = [
            {
                "row": row,
                "selected": row.item.id == selected,
                "fold": folds.get(row.item.id),
                "comments": counts.get(row.item.id, 0),
            }
            for row in tree["rows"]
        ]
        return tree_template.render({**tree, "rows": rows})

    def django_chart() -> str:
        return chart_template.render({**chart, "points": chart["points"][: chart["limit"]]})

    def current_tree() -> str:
        return str(tree_rows_html(**tree))

    def current_chart() -> str:
        return str(chart_rows_html(**chart))

    return {
        "tree_rows": len(tree["rows"]),
        "tree_bytes": len(current_tree().encode()),
        "tree_same_bytes_from_django": django_tree() == current_tree(),
        "tree_ms": {
            "rendering.tree_rows_html": _median_ms(current_tree),
            "django_template": _median_ms(django_tree),
        },
        "chart_rows": CHART_ROWS,
        "chart_bytes": len(current_chart().encode()),
        "chart_same_bytes_from_django": django_chart() == current_chart(),
        "chart_ms": {
            "rendering.chart_rows_html": _median_ms(current_chart),
            "django_template": _median_ms(django_chart),
        },
    }
