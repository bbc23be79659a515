from __future__ import annotations

from django import template

from contextlab.inspector.rendering import tokens_text

register = template.Library()


@register.filter
def tokens(value: object) -> str:
    """12345 -> "12.3k", 1234567 -> "1.23M": token counts read at a glance in dense tables."""
    return tokens_text(value)


@register.filter
def percent_of(value: object, total: object) -> float:
    if not isinstance(value, int | float) or not isinstance(total, int | float) or total <= 0:
        return 0.0
    return round(min(100.0, 100.0 * value / total), 2)


@register.filter
def percent_left(value: object, total: object) -> float:
    """100 minus percent_of: where a bar of that share starts when it ends at the right."""
    return round(100.0 - percent_of(value, total), 2)
