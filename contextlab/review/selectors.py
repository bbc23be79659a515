"""Read-side queries of the review app (each one query, whatever the data)."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, QuerySet

from contextlab.library.models import Session
from contextlab.review.models import Comment, SessionLabel


def comments_for_entry(session: Session, entry_id: str) -> QuerySet[Comment]:
    return Comment.objects.filter(session=session, entry_id=entry_id).select_related("author")


def comment_counts(session: Session) -> dict[str, int]:
    """Comments per entry id, for the tree rows."""
    rows = (
        Comment.objects.filter(session=session)
        .values_list("entry_id")
        .annotate(n=Count("id"))
        .order_by()
    )
    return dict(rows)


def session_labels(session: Session) -> list[str]:
    return list(SessionLabel.objects.filter(session=session).values_list("name", flat=True))


def labels_in_use(user: Any) -> list[str]:
    """Label names on the sessions this user sees, for the library's filter."""
    return list(
        SessionLabel.objects.filter(session__in=Session.objects.visible_to(user))
        .values_list("name", flat=True)
        .distinct()
        .order_by("name")
    )


def review_panel(session: Session, entry_id: str | None) -> dict[str, Any]:
    """What the turn inspector shows beside the selected entry."""
    return {
        "comment_entry": entry_id,
        "comments": list(comments_for_entry(session, entry_id)) if entry_id else [],
    }
