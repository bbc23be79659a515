"""The Messages tab's rows: each message of a request's context with its entry, its estimate in
the request's dialect and a running total; for Pi 1.x, the context edit that changed it (the
replacement shown, the original beside it) and the messages an edit omitted, where they stood."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

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

# A row of `MessageViews`: what a view is made from (a `Row`), its position among the messages
# sent (0: omitted), its estimate and the running total after it.
_Counted = tuple[
    dict[str, Any] | None,
    dict[str, Any] | None,
    dict[str, Any] | None,
    dict[str, Any] | None,
    int,
    Any,
    Any,
]


class _Made:
    """What the views of one request are made from, and those made so far (shared by a
    `MessageViews` and its slices)."""

    __slots__ = ("built", "estimate", "full", "leaf_id", "rows")

    def __init__(self, rows: list[_Counted], estimate: Any, leaf_id: str, full: range) -> None:
        self.rows = rows
        self.estimate = estimate
        self.leaf_id = leaf_id
        self.full = full  # where the views shown in full (with their blocks) start and end
        self.built: dict[int, MessageView] = {}

    def view(self, n: int) -> MessageView:
        made = self.built.get(n)
        if made is not None:
            return made
        message, owner, edit, original, position, tokens, running = self.rows[n]
        if message is None:
            assert original is not None and edit is not None
            view = _omitted(original, owner, edit, tokens, running)
        else:
            view = _view(message, position, owner, tokens, running)
            if edit is not None and original is not None:
                view.edit = {
                    "id": edit.get("id"),
                    "kind": "replaced",
                    "tokens": self.estimate(original),
                    "original": original,
                    "blocks": [],
                }
            if view.entry_id == self.leaf_id:
                view.css += " is-leaf"
        if n < self.full.start or n >= self.full.stop:
            fill_blocks(view)
        self.built[n] = view
        return view


class MessageViews(Sequence[MessageView]):
    """The message views of a request, each made when first asked for: the Messages tab shows a
    few dozen of a deep turn's thousands (its head and tail in full, a page of the middle), and
    making a view costs three times what counting its message does. A slice is another
    `MessageViews` over the same views. The counts (position, estimate, running total) are all
    known at once."""

    __slots__ = ("_made", "_span")

    def __init__(self, made: _Made, span: range) -> None:
        self._made = made
        self._span = span

    def __len__(self) -> int:
        return len(self._span)

    @overload
    def __getitem__(self, at: int) -> MessageView: ...
    @overload
    def __getitem__(self, at: slice) -> MessageViews: ...
    def __getitem__(self, at: int | slice) -> MessageView | MessageViews:
        if isinstance(at, slice):
            return MessageViews(self._made, self._span[at])
        return self._made.view(self._span[at])

    def __iter__(self) -> Iterator[MessageView]:
        view = self._made.view
        for n in self._span:
            yield view(n)

    def __repr__(self) -> str:
        return f"<MessageViews {self._span.start}:{self._span.stop} of {len(self._made.rows)}>"

    @property
    def sent_count(self) -> int:
        """The messages of the context among these (a message a context edit omitted is not
        one), without making their views."""
        rows = self._made.rows
        return sum(1 for n in self._span if rows[n][0] is not None)

    def sent_messages(self) -> Iterator[tuple[dict[str, Any], str]]:
        """(message, the entry it came from) of each message sent that has an entry, without
        making views."""
        rows = self._made.rows
        for n in self._span:
            message, owner = rows[n][0], rows[n][1]
            entry_id = owner.get("id") if owner else None
            if message is not None and entry_id:
                yield message, entry_id

    def entry_ids(self) -> Iterator[tuple[int, str | None]]:
        """(position in this sequence, the entry each message came from), without making views."""
        rows = self._made.rows
        for at, n in enumerate(self._span):
            owner = rows[n][1]
            yield at, owner.get("id") if owner else None


def message_views(request: PiRequest, leaf_id: str) -> tuple[MessageViews, int, int, int]:
    """Per-message views with running totals and reported usage, the total, and where the
    messages shown in full start and end (head, tail)."""
    estimate = steps_of(request.dialect).estimate_tokens
    rows: list[_Counted] = []
    running: int | float = 0
    position = 0
    head_count = 0
    for row, (message, owner, edit, original) in enumerate(context_rows(request), 1):
        if row % CHECK_EVERY == 0:
            check_deadline("Building this request")  # and stop if its client left
        if message is None:
            assert original is not None and edit is not None
            rows.append((None, owner, edit, original, 0, estimate(original), running))
            role = original.get("role")
        else:
            position += 1
            tokens = estimate(message)
            running += tokens
            rows.append((message, owner, edit, original, position, tokens, running))
            role = message.get("role")
        if head_count == row - 1 and role in _HEAD_ROLES:
            head_count = row
    head_count = min(head_count, 2)
    tail_start = max(head_count, len(rows) - FULL_TAIL)
    made = _Made(rows, estimate, leaf_id, range(head_count, tail_start))
    return MessageViews(made, range(len(rows))), int(running), head_count, tail_start


def message_totals(request: PiRequest) -> tuple[int, int]:
    """What ``message_views`` counts, without making a view: the estimate total and the
    messages of the context (a message a context edit omitted counts as neither)."""
    views, running, _, _ = message_views(request, "")
    return running, views.sent_count


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
