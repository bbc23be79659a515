"""The Messages tab's rows: each message of a request's context with its entry, its estimate in
the request's dialect and a running total; for Pi 1.x, the context edit that changed it (the
replacement shown, the original beside it) and the messages an edit omitted, where they stood."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from contextlab.budgets import check_deadline
from contextlab.inspector.blocks import MessageView, sent_blocks
from contextlab.pi import context as pi_context
from contextlab.pi import tokens as pi_tokens
from contextlab.pi.dialects import pi_1_x
from contextlab.pi.request import PiRequest, steps_of

# The messages shown in full: the leading ones (a compaction's summary, a Pi 1.x prompt) and the
# last FULL_TAIL; the middle ones are one line each with their body loaded on demand.
FULL_TAIL = 25

_ROLE_CSS = {
    "compactionSummary": "compaction-summary",
    "branchSummary": "branch-summary",
    "custom": "custom",
    "system": "system-message",
}
_ROLE_TITLE = {
    "compactionSummary": "compaction summary",
    "branchSummary": "branch summary",
    "toolResult": "tool result",
    "bashExecution": "bash (!cmd)",
    "system": "system prompt patch",
}
_HEAD_ROLES = ("compactionSummary", "system")

# (the message as the context holds it, or None when an edit omitted it; the entry it came from;
# the context_edit entry that changed it; the entry's own message before the edit)
Row = tuple[
    dict[str, Any] | None, dict[str, Any] | None, dict[str, Any] | None, dict[str, Any] | None
]


def context_rows(request: PiRequest) -> Iterator[Row]:
    """The request's messages in context order with their entries; for a Pi 1.x projection also
    the edit that changed each and, where an edit omitted an entry's messages, those."""
    projection = request.context.projection
    if not isinstance(projection, pi_1_x.Projection):
        owners = request.owners
        for n, message in enumerate(request.agent_messages):
            yield message, owners[n] if n < len(owners) else None, None, None
        return
    rows: list[Row] = []
    for entry, messages in projection.entries:
        edit = projection.edits.get(entry.get("id"))
        if edit is None:
            rows.extend((m, entry, None, None) for m in messages)
            continue
        originals = pi_1_x.entry_messages(entry)
        if not messages:
            rows.extend((None, entry, edit, original) for original in originals)
            continue
        for n, message in enumerate(messages):
            original = originals[n] if n < len(originals) else None
            changed = original is not None and original is not message
            rows.append((message, entry, edit if changed else None, original if changed else None))
    yield from rows


# A deep turn's views check the request's deadline (and whether its client is still there) every
# this many messages.
CHECK_EVERY = 1024


def message_views(request: PiRequest, leaf_id: str) -> tuple[list[MessageView], int, int, int]:
    """Per-message views with running totals and reported usage, the total, and where the
    messages shown in full start and end (head, tail)."""
    estimate = steps_of(request.dialect).estimate_tokens
    views: list[MessageView] = []
    running: int | float = 0
    position = 0
    for row, (message, owner, edit, original) in enumerate(context_rows(request), 1):
        if row % CHECK_EVERY == 0:
            check_deadline("Building this request")  # and stop if its client left
        if message is None:
            assert original is not None and edit is not None
            views.append(_omitted(original, owner, edit, estimate(original), running))
            continue
        position += 1
        tokens = estimate(message)
        running += tokens
        view = _view(message, position, owner, tokens, running)
        if edit is not None and original is not None:
            view.edit = {
                "id": edit.get("id"),
                "kind": "replaced",
                "tokens": estimate(original),
                "original": original,
                "blocks": [],
            }
        if view.entry_id == leaf_id:
            view.css += " is-leaf"
        views.append(view)
    head_count = 0
    while head_count < len(views) and views[head_count].role in _HEAD_ROLES:
        head_count += 1
    head_count = min(head_count, 2)
    tail_start = max(head_count, len(views) - FULL_TAIL)
    for n in [*range(head_count), *range(tail_start, len(views))]:
        fill_blocks(views[n])
    return views, int(running), head_count, tail_start


def message_totals(request: PiRequest) -> tuple[int, int]:
    """What ``message_views`` counts, without the views: the estimate total and the messages of
    the context (a message a context edit omitted counts as neither)."""
    estimate = steps_of(request.dialect).estimate_tokens
    running: int | float = 0
    count = 0
    for message, _, _, _ in context_rows(request):
        if message is not None:
            count += 1
            running += estimate(message)
    return int(running), count


def fill_blocks(view: MessageView) -> None:
    """The blocks of a view shown in full (and of the original an edit replaced)."""
    if not view.omitted:
        view.blocks = sent_blocks(view.message)
    if view.edit is not None:
        view.edit["blocks"] = sent_blocks(view.edit["original"])


def _view(
    message: dict[str, Any], position: int, owner: dict[str, Any] | None, tokens: Any, running: Any
) -> MessageView:
    role = str(message.get("role"))
    usage = message.get("usage") if role == "assistant" else None
    view = MessageView(
        position=position,
        role=role,
        entry_id=owner.get("id") if owner else None,
        entry_type=str(owner.get("type")) if owner else "",
        tokens=tokens,
        running=running,
        blocks=[],
        sent_as=(
            "the system prompt" if role == "system" else pi_context.sent_role(message) or role
        ),
        usage=usage if isinstance(usage, dict) else None,
        css=_ROLE_CSS.get(role, ""),
        title=_ROLE_TITLE.get(role, role),
        message=message,
    )
    if view.usage:
        view.usage_tokens = pi_tokens.calculate_context_tokens(view.usage)
    dropped = pi_context.dropped_by(message)
    if dropped == "transformMessages":
        view.dropped = f"stopReason {message.get('stopReason')}: pi-ai's transformMessages skips it"
    elif dropped == "convertToLlm" and role == "bashExecution":
        view.dropped = "!!cmd (excludeFromContext): convertToLlm drops it"
    if role == "custom":
        view.extra["customType"] = message.get("customType")
        view.extra["display"] = message.get("display")
    if role == "toolResult":
        view.extra["toolName"] = message.get("toolName")
        view.extra["isError"] = message.get("isError")
    if role == "compactionSummary":
        view.extra["tokensBefore"] = message.get("tokensBefore")
    return view


def _omitted(
    original: dict[str, Any],
    owner: dict[str, Any] | None,
    edit: dict[str, Any],
    tokens: Any,
    running: Any,
) -> MessageView:
    """A message a context edit omitted: shown where it stood, counted as nothing, not sent."""
    role = str(original.get("role"))
    view = _view(original, 0, owner, 0, running)
    view.css = f"{view.css} omitted".strip()
    view.sent_as = role
    view.dropped = ""
    view.edit = {
        "id": edit.get("id"),
        "kind": "omitted",
        "tokens": tokens,
        "original": original,
        "blocks": [],
    }
    return view
