from __future__ import annotations

from django import template

register = template.Library()


@register.simple_tag
def fold_link(links: dict[str, str], entry_id: str) -> str:
    """The query string that toggles the fold of `entry_id` (built once per request)."""
    return links.get(entry_id, "")
