"""json_stringify's string quoting against ECMAScript's QuoteJSONString, written out literally."""

from __future__ import annotations

import random
import struct

from contextlab.pi.jsutil import json_stringify

_SHORT = {
    0x08: "\\b",
    0x09: "\\t",
    0x0A: "\\n",
    0x0C: "\\f",
    0x0D: "\\r",
    0x22: '\\"',
    0x5C: "\\\\",
}


def quote_json_string(text: str) -> str:
    """ECMA-262 QuoteJSONString over UTF-16 code units (well-formed JSON.stringify)."""
    raw = text.encode("utf-16-le", "surrogatepass")
    units = list(struct.unpack(f"<{len(raw) // 2}H", raw))
    out = ['"']
    i = 0
    while i < len(units):
        unit = units[i]
        if unit in _SHORT:
            out.append(_SHORT[unit])
        elif unit < 0x20:
            out.append(f"\\u{unit:04x}")
        elif 0xD800 <= unit <= 0xDBFF and i + 1 < len(units) and 0xDC00 <= units[i + 1] <= 0xDFFF:
            out.append(chr(0x10000 + ((unit - 0xD800) << 10) + (units[i + 1] - 0xDC00)))
            i += 1
        elif 0xD800 <= unit <= 0xDFFF:
            out.append(f"\\u{unit:04x}")
        else:
            out.append(chr(unit))
        i += 1
    out.append('"')
    return "".join(out)


def test_it_quotes_every_bmp_character_as_javascript_does() -> None:
    for code in range(0x10000):
        char = chr(code)
        for text in (char, f"a{char}b", char * 2):
            assert json_stringify(text) == quote_json_string(text), hex(code)


def test_it_quotes_mixed_strings_with_surrogates_as_javascript_does() -> None:
    pieces = ["a", '"', "\\", "\n", "\x00", "\x1f", "\x7f", "\u2028", "\ud83d", "\ude00", "é", "😀"]
    rng = random.Random(3)
    for _ in range(20000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 10)))
        assert json_stringify(text) == quote_json_string(text), repr(text)
        assert (
            json_stringify({text: [text]})
            == f"{{{quote_json_string(text)}:[{quote_json_string(text)}]}}"
        )


def test_it_parses_offset_timestamps_to_the_millisecond() -> None:
    import calendar
    from datetime import datetime

    from contextlab.pi.jsutil import date_parse_ms

    rng = random.Random(5)
    for _ in range(20000):
        text = (
            f"{rng.randint(2, 9998):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
            f"T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
            f".{rng.randint(0, 999999):06d}{rng.choice(['Z', '+05:30', '-11:00', '+00:00'])}"
        )
        parsed = datetime.fromisoformat(text)
        expected = calendar.timegm(parsed.utctimetuple()) * 1000 + parsed.microsecond // 1000
        assert date_parse_ms(text) == expected, text
    assert date_parse_ms("2025-11-20T23:33:01.550Z") == 1763681581550
    assert date_parse_ms("1969-12-31T23:59:59.9995Z") == -1
