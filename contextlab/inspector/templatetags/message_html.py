"""`{% message_list messages %}` and `{% message_blocks blocks entry_id %}`: messages and their
content blocks, rendered by the Jinja2 partials of contextlab.inspector.rendering (a message list
is a few hundred blocks, where Django's `{% include %}` per message and per block was most of
the Messages tab's render)."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.safestring import SafeString

from contextlab.inspector.rendering import message_blocks_html, message_list_html

register = template.Library()


@register.simple_tag(takes_context=True)
def message_list(context: template.Context, messages: Any) -> SafeString:
    return message_list_html(messages, session=context["session"], inspection=context["inspection"])


@register.simple_tag(takes_context=True)
def message_blocks(
    context: template.Context, blocks: Any, entry_id: str | None = None
) -> SafeString:
    return message_blocks_html(
        blocks,
        entry_id,
        session=context["session"],
        inspection=context.get("inspection"),
        share_message_prefix=context.get("share_message_prefix"),
    )
