"""The Jinja2 environment of the partials under templates/jinja2/ (settings.TEMPLATES' second
engine): the session tree's rows, the growth chart's table rows, the library's rows and search
hits, the Messages tab's messages and their blocks: the long repeated parts of pages
(`contextlab.inspector.rendering` renders them, and says why Jinja2).

Autoescape is on (the backend's default, and settings say so): every value a partial writes is
escaped by MarkupSafe. A name a partial does not have reads as Jinja's plain `Undefined` (empty,
false) whatever DEBUG says: Django's backend would make it DebugUndefined, which prints the
expression, under DEBUG only."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from jinja2 import Environment, Undefined

from contextlab.inspector.rendering import tokens_text


def _quote(value: object, safe: str) -> str:
    """A URL part as `urllib.parse.quote(value, safe)` writes it (Jinja's `urlencode` filter
    leaves more marks unquoted)."""
    return quote(str(value), safe=safe)


def environment(**options: Any) -> Environment:
    options["undefined"] = Undefined
    env = Environment(**options)
    env.filters.update({"tokens": tokens_text, "quote": _quote})
    return env
