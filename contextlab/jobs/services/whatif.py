"""The auto-compaction what-if: where along a stored session's path Pi 0.80.2 would have
compacted on its own, for given settings (no model is called)."""

from __future__ import annotations

from contextlab.jobs.services.errors import JobError
from contextlab.library.models import Session
from contextlab.library.selectors import engine_entries
from contextlab.pi.compaction import auto_compaction_what_if
from contextlab.pi.entries import Json
from contextlab.pi.session import SessionTree

__all__ = ["what_if_auto_compaction"]


def what_if_auto_compaction(
    session: Session,
    *,
    leaf_id: str | None,
    context_window: int,
    reserve_tokens: int,
    keep_recent_tokens: int,
) -> list[Json]:
    """Where along the active path Pi would have auto-compacted, and what each would cut."""
    tree = SessionTree(engine_entries(session))
    leaf = leaf_id or session.leaf_entry_id
    path = tree.path(leaf)
    if not path:
        raise JobError(f"Entry {leaf} is not in session {session.session_id}")
    return [
        w.to_json()
        for w in auto_compaction_what_if(
            path,
            context_window=context_window,
            reserve_tokens=reserve_tokens,
            keep_recent_tokens=keep_recent_tokens,
        )
    ]
