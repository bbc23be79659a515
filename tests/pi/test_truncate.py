"""Truncation rules of Pi 0.80.2 (docs/pi-engine.md, "Tool output truncation"); the oracle
suite checks them against Pi."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextlab.pi.truncate import (
    DEFAULT_MAX_BYTES,
    OutputAccumulator,
    ReadOffsetError,
    bash_status,
    format_bash_output,
    format_find_output,
    format_grep_output,
    format_ls_output,
    format_read_output,
    format_size,
    grep_context_line,
    grep_match_line,
    locate_notice,
    truncate_head,
    truncate_line,
    truncate_tail,
)


def test_it_formats_sizes_rounding_half_up():
    assert format_size(0) == "0B"
    assert format_size(1023) == "1023B"
    assert format_size(1280) == "1.3KB"
    assert format_size(DEFAULT_MAX_BYTES) == "50.0KB"
    assert format_size(1048576) == "1.0MB"


def test_it_keeps_content_within_limits_unchanged():
    result = truncate_head("a\nb\n")
    assert result.content == "a\nb\n"
    assert (result.truncated, result.truncated_by, result.total_lines) == (False, None, 2)


def test_it_counts_no_lines_for_empty_content():
    assert truncate_tail("").total_lines == 0


def test_it_cuts_head_by_lines_without_trailing_newline():
    result = truncate_head("1\n2\n3\n", max_lines=2)
    assert result.content == "1\n2"
    assert (result.truncated_by, result.output_lines, result.output_bytes) == ("lines", 2, 3)


def test_it_reports_a_first_line_over_the_byte_limit():
    result = truncate_head("x" * 11 + "\nshort", max_bytes=10)
    assert result.content == ""
    assert result.first_line_exceeds_limit and result.truncated_by == "bytes"


def test_it_keeps_the_end_of_an_oversized_last_line_on_a_character_boundary():
    # "€" is 3 bytes: the last 4 bytes start inside a character, so only one "€" and "a" fit.
    result = truncate_tail("€€a", max_bytes=4)
    assert result.content == "€a"
    assert result.last_line_partial and result.output_bytes == 4


def test_it_counts_lone_surrogates_as_three_bytes():
    assert truncate_head("\ud83d", max_bytes=2).first_line_exceeds_limit


def test_it_cuts_lines_in_utf16_units():
    cut = truncate_line("a" + "😀" * 300)
    assert cut.was_truncated
    assert cut.text.endswith("\ud83d... [truncated]")  # the pair is split, as in JavaScript


def test_it_reports_read_notices_counting_the_trailing_newline():
    text = "".join(f"{i}\n" for i in range(3000))
    out = format_read_output(text, "f.txt")
    assert out.notice == "\n\n[Showing lines 1-2000 of 3001. Use offset=2001 to continue.]"
    assert out.details["truncation"]["totalLines"] == 3000
    assert locate_notice("read", out.text) == (len(out.text) - len(out.notice), len(out.text))


def test_it_reports_remaining_lines_after_a_user_limit():
    out = format_read_output("1\n2\n3\n4\n5\n", "f", limit=2)
    assert out.text == "1\n2\n\n[4 more lines in file. Use offset=3 to continue.]"


def test_it_points_at_sed_when_the_first_read_line_is_too_big():
    out = format_read_output("q" * 60000 + "\n", "big.txt")
    assert out.text == (
        "[Line 1 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '1p' big.txt | head -c 51200]"
    )
    assert locate_notice("read", out.text) == (0, len(out.text))


def test_it_rejects_a_read_offset_past_the_end():
    with pytest.raises(
        ReadOffsetError, match=r"^Offset 9 is beyond end of file \(3 lines total\)$"
    ):
        format_read_output("a\nb\n", "f", offset=9)


def test_it_reports_bash_partial_line_as_zero_bytes_when_output_ends_with_newline():
    acc = OutputAccumulator()
    acc.append(b"x" * 60000 + b"\n")
    acc.finish()
    out = format_bash_output(
        acc.snapshot("/tmp/pi-bash-0.log"), last_line_bytes=acc.last_line_bytes()
    )
    assert (
        out.notice
        == "\n\n[Showing last 50.0KB of line 1 (line is 0B). Full output: /tmp/pi-bash-0.log]"
    )
    failed = bash_status(out.text, "Command exited with code 1")
    start, end = locate_notice("bash", failed)
    assert failed[start:end] == out.notice


def test_it_says_no_output_for_silent_bash():
    acc = OutputAccumulator()
    acc.finish()
    assert format_bash_output(acc.snapshot(), last_line_bytes=0).text == "(no output)"
    assert bash_status("", "Command exited with code 2") == "Command exited with code 2"


def test_it_joins_grep_notices_in_one_bracket():
    line = grep_match_line("a.py", 3, "x" * 600 + "\r\n")
    out = format_grep_output(
        [line.text], effective_limit=1, match_limit_reached=True, lines_truncated=line.was_truncated
    )
    assert out.notice == (
        "\n\n[1 matches limit reached. Use limit=2 for more, or refine pattern. "
        "Some lines truncated to 500 chars. Use read tool to see full lines]"
    )
    assert out.details == {"matchLimitReached": 1, "linesTruncated": True}


def test_it_formats_grep_context_lines():
    assert grep_context_line("a", 2, "ctx\r", is_match=False).text == "a-2- ctx"
    assert grep_context_line("a", 3, "hit", is_match=True).text == "a:3: hit"
    assert (
        format_grep_output(
            [], effective_limit=100, match_limit_reached=False, lines_truncated=False
        ).text
        == "No matches found"
    )


def test_it_formats_find_and_ls_notices():
    assert format_find_output(["a", "b"], effective_limit=2).notice == (
        "\n\n[2 results limit reached. Use limit=4 for more, or refine pattern]"
    )
    assert (
        format_find_output(["a"], effective_limit=1, custom_glob=True).notice
        == "\n\n[1 results limit reached]"
    )
    assert format_find_output([]).text == "No files found matching pattern"
    assert format_ls_output(["a/", "b"], effective_limit=2, entry_limit_reached=True).notice == (
        "\n\n[2 entries limit reached. Use limit=4 for more]"
    )
    assert format_ls_output([], entry_limit_reached=False).text == "(empty directory)"


def test_it_finds_no_notice_in_plain_output():
    assert locate_notice("bash", "hello [Showing lines 1-2 of 3]") is None
    assert locate_notice("edit", "anything") is None


lines_text = st.lists(
    st.text(alphabet=st.sampled_from("ab é😀[]."), max_size=30), min_size=0, max_size=60
).map("\n".join)


@settings(max_examples=200, derandomize=True, deadline=None)
@given(
    lines_text,
    st.integers(1, 4000),
    st.one_of(st.none(), st.integers(0, 70)),
    st.one_of(st.none(), st.integers(-3, 70)),
    st.integers(1, 80),
)
def test_it_locates_exactly_the_notices_it_appends(text, repeat, offset, limit, big):
    # Repeat to cross the 2000-line and 50 KB limits now and then.
    content = (text + "\n") * (repeat if repeat % 7 == 0 else 1)
    try:
        out = format_read_output(content, "f.txt", offset=offset, limit=limit)
    except ReadOffsetError:
        out = None
    if out is not None:
        span = locate_notice("read", out.text)
        if out.notice:
            assert span is not None and out.text[span[0] : span[1]] == out.notice
        else:
            assert span is None

    acc = OutputAccumulator(max_lines=big, max_bytes=big * 20)
    acc.append(content.encode("utf-8"))
    acc.finish()
    bash = format_bash_output(
        acc.snapshot("/tmp/pi-bash-x.log"), last_line_bytes=acc.last_line_bytes()
    )
    span = locate_notice("bash", bash.text)
    if bash.notice:
        assert span is not None and bash.text[span[0] : span[1]] == bash.notice
    else:
        assert span is None
