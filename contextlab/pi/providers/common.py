"""What pi-ai's provider modules share: ``sanitizeSurrogates`` and the tool-call id sanitiser."""

from __future__ import annotations

import re

__all__ = ["sanitize_surrogates", "sanitize_tool_call_id", "short_hash"]

_LONE_SURROGATE = re.compile(
    r"[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]"
)
_TOOL_ID_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def sanitize_surrogates(text: str) -> str:
    """``sanitizeSurrogates`` (``dist/utils/sanitize-unicode.js``): drop unpaired UTF-16
    surrogates (valid pairs are kept).

    A string that encodes to UTF-8 holds no surrogate at all (Python keeps an astral character
    as one code point, so even a "pair" of surrogates fails to encode): it is returned as it
    is, at the encoder's speed. Only the rest goes through the regular expression, which took
    over a second across the context of a 6,000-message session."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub("", text)
    return text


def _underscores(match: re.Match[str]) -> str:
    # The JavaScript regex has no `u` flag: it matches each UTF-16 unit of an astral character.
    return "__" if ord(match.group()) > 0xFFFF else "_"


def sanitize_tool_call_id(tool_call_id: str) -> str:
    """``id.replace(/[^a-zA-Z0-9_-]/g, "_")``: one ``_`` per UTF-16 code unit replaced."""
    return _TOOL_ID_UNSAFE.sub(_underscores, tool_call_id)


def _imul(a: int, b: int) -> int:
    """``Math.imul``: the low 32 bits of the product, as a signed 32-bit integer."""
    product = (a * b) & 0xFFFFFFFF
    return product - 0x1_0000_0000 if product & 0x8000_0000 else product


def _to_base36(value: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        value, rest = divmod(value, 36)
        out = digits[rest] + out
        if value == 0:
            return out


def short_hash(text: str) -> str:
    """``shortHash`` (``dist/utils/hash.js``): two 32-bit multiplicative hashes over the UTF-16
    units, printed in base 36."""
    h1, h2 = 0xDEADBEEF, 0x41C6CE57
    units = text.encode("utf-16-le", "surrogatepass")
    for index in range(0, len(units), 2):
        unit = units[index] | units[index + 1] << 8
        h1 = _imul(h1 ^ unit, 2654435761)
        h2 = _imul(h2 ^ unit, 1597334677)
    h1 = _imul(h1 ^ ((h1 & 0xFFFFFFFF) >> 16), 2246822507) ^ _imul(
        h2 ^ ((h2 & 0xFFFFFFFF) >> 13), 3266489909
    )
    h2 = _imul(h2 ^ ((h2 & 0xFFFFFFFF) >> 16), 2246822507) ^ _imul(
        h1 ^ ((h1 & 0xFFFFFFFF) >> 13), 3266489909
    )
    return _to_base36(h2 & 0xFFFFFFFF) + _to_base36(h1 & 0xFFFFFFFF)
