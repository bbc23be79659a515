"""The collapsed middle of a long context (a hundred rows a page) comes from a Jinja2 partial:
the same rows, value for value, as the Django template that wrote them before (kept here as it
was), for every kind of row: sent, dropped, sent under another role, edited and omitted by a Pi
1.x context edit, without an entry, with text that must be escaped; and the "show more" link."""

from __future__ import annotations

import re
from pathlib import Path

from django.template import engines

from contextlab.inspector.blocks import MessageView
from contextlab.inspector.rendering import middle_messages_html

BEFORE = Path(__file__).parent / "middle_messages_before.html"


def _view(n: int, **fields) -> MessageView:
    message = fields.pop("message", {"role": "user", "content": f"message {n} <b>&</b> 'q' \"d\""})
    base = {
        "position": n,
        "role": str(message.get("role")),
        "entry_id": f"e/{n}?&",
        "entry_type": "message",
        "tokens": 10 * n,
        "running": 100 * n,
        "blocks": [],
        "sent_as": str(message.get("role")),
        "title": str(message.get("role")),
        "message": message,
    }
    return MessageView(**{**base, **fields})


def _rows() -> list[MessageView]:
    tool = {"role": "toolResult", "toolName": "read", "content": [{"type": "text", "text": "x"}]}
    return [
        _view(1),
        _view(2, message=tool, title="tool result", css="tool-result"),
        _view(3, dropped="stopReason error: pi-ai's transformMessages skips it", css="assistant"),
        _view(4, sent_as="user", css="compaction-summary", title="compaction summary"),
        _view(5, edit={"id": "edit<1>", "kind": "replaced", "original": {}, "blocks": []}),
        _view(6, edit={"id": None, "kind": "omitted", "original": {}, "blocks": []}, css="omitted"),
        _view(7, entry_id=None, tokens=12.5, running=1234.5),
        _view(8, message={"role": "assistant", "content": "ünïcode ✓ " + "long " * 200}),
    ]


def _space(html: str) -> str:
    return re.sub(r"\s+", " ", html).strip()


def test_the_middle_rows_are_the_rows_the_django_template_wrote():
    for leaf, rest in (("leaf/1&x", 0), ("", 250), ("e 9", 3)):
        context = {
            "rows": _rows(),
            "page_url": "/sessions/7/",
            "body_url": "/sessions/7/message/",
            "more_url": "/sessions/7/messages/",
            "entry_id": "leaf/1&x",
            "leaf": leaf,
            "rest": rest,
            "next_start": 100,
            "next_count": min(rest, 100),
        }

        before = engines["django"].from_string(BEFORE.read_text()).render(context)
        after = middle_messages_html(context)

        assert "more messages" in after if rest else "more messages" not in after
        assert (
            "omitted by context_edit" in after and "edited by context_edit edit&lt;1&gt;" in after
        )
        assert _space(after) == _space(before)
