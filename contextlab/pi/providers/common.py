"""What pi-ai's provider modules share: ``sanitizeSurrogates`` and the tool-call id sanitiser."""

from __future__ import annotations

import re

__all__ = ["sanitize_surrogates", "sanitize_tool_call_id"]

_LONE_SURROGATE = re.compile(
    r"[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]"
)
_TOOL_ID_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def sanitize_surrogates(text: str) -> str:
    """``sanitizeSurrogates`` (``dist/utils/sanitize-unicode.js``): drop unpaired UTF-16
    surrogates (valid pairs are kept)."""
    return _LONE_SURROGATE.sub("", text)


def _underscores(match: re.Match[str]) -> str:
    # The JavaScript regex has no `u` flag: it matches each UTF-16 unit of an astral character.
    return "__" if ord(match.group()) > 0xFFFF else "_"


def sanitize_tool_call_id(tool_call_id: str) -> str:
    """``id.replace(/[^a-zA-Z0-9_-]/g, "_")``: one ``_`` per UTF-16 code unit replaced."""
    return _TOOL_ID_UNSAFE.sub(_underscores, tool_call_id)
