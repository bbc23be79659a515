"""The session tree's rows, the growth chart's table rows and the messages shown in full (with
their content blocks), rendered by Jinja2 partials
(templates/jinja2/inspector/; their environment: contextlab/jinja2.py) and included by the
Django-template pages as they are. A large session sends over a thousand rows at once, where
Django's template engine is slow; Jinja2 is a few times faster than it, and a few times slower
than the f-strings these rows used to be (`python -m bench rows`, the rows of a generated
2,000-entry session and 1,000 chart rows, the same bytes from each; the lowest median of several
runs on the shared 2-vCPU machine, load average 3 to 6):

    milliseconds          f-strings   Jinja2   Django templates
    tree, 1,510 rows            6.1       16                106
    chart, 1,000 rows           1.9      6.5                 28

Every value from the session is escaped by the partials (autoescape); the rows are the bytes the
f-strings wrote (tests/inspector/test_rendering_golden.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.urls import reverse
from django.utils.safestring import SafeString

from contextlab.partials import render_partial
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
    """The growth chart's table rows (the first `limit` requests)."""
    return render_partial(
        "inspector/_chart_rows.html", {"points": points, "page_url": page_url, "limit": limit}
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
    """One <li> per row (`fold_links`: the query of each foldable row's toggle)."""
    return render_partial(
        "inspector/_tree_rows.html",
        {
            "rows": rows,
            "page_url": page_url,
            "qs_prefix": qs_prefix,
            "fold_links": fold_links,
            "selected_id": selected_id,
            "comment_counts": comment_counts,
        },
    )


def middle_messages_html(context: dict[str, Any]) -> SafeString:
    """A page of the collapsed middle of a long projection (`views._middle_html` names the
    context: rows, the URLs, the leaf, what is left)."""
    return render_partial("inspector/_middle_messages.html", context)


def _block_context(
    session: Any, inspection: Any, share_message_prefix: str | None
) -> dict[str, Any]:
    """What the message partials take from the page around them: the session's inspector and
    message-body URLs, the share link's "Show all" prefix, the note on images the model does not
    take (the tool-result variant named where the page holds a projection)."""
    return {
        "page_url": reverse("inspector:session", args=[session.pk]),
        "message_url": reverse("inspector:message", args=[session.pk]),
        "share_message_prefix": share_message_prefix or "",
        "images_dropped": bool(inspection is not None and inspection.images_dropped),
        "images_note_variant": bool(inspection is not None and inspection.messages),
    }


def message_list_html(messages: Iterable[Any], *, session: Any, inspection: Any) -> SafeString:
    """Messages of `inspection` shown in full, one <li> each (the Messages tab's head and
    tail)."""
    partial = _block_context(session, inspection, None)
    partial |= {"messages": messages, "open_from": inspection.open_from}
    return render_partial("inspector/_messages.html", partial)


def message_blocks_html(
    blocks: Iterable[Any],
    entry_id: str | None,
    *,
    session: Any,
    inspection: Any = None,
    share_message_prefix: str | None = None,
) -> SafeString:
    """The content blocks of one message of `session` (`inspection`: the turn the page shows,
    if any; `share_message_prefix`: under a share link)."""
    partial = _block_context(session, inspection, share_message_prefix)
    partial |= {"blocks": blocks, "entry_id": entry_id}
    return render_partial("inspector/_blocks.html", partial)
