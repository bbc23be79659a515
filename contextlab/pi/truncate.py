"""Tool-output truncation and the notices Pi's tools append, as Pi 0.80.2 does them.

Truth: ``dist/core/tools/truncate.js``, ``dist/core/tools/output-accumulator.js`` and the tool files
``read.js``, ``bash.js``, ``grep.js``, ``find.js``, ``ls.js`` (docs/pi-engine.md, "Tool output
truncation").

Byte counts follow Node's ``Buffer.byteLength``: a lone surrogate (possible after a UTF-16 cut)
counts as the 3-byte U+FFFD. Character counts (``truncate_line``) are UTF-16 code units.

Every ``format_*_output`` function returns a :class:`ToolText` whose ``notice`` is the exact text
the tool appended (empty when none), so a UI can highlight it: ``text.endswith(notice)`` holds,
except for read's oversized-first-line case, where the notice *is* the whole text.
"""

from __future__ import annotations

import codecs
import functools
import re
import string
from dataclasses import dataclass

from contextlab.pi.dialects import DEFAULT_DIALECT, Dialect
from contextlab.pi.dialects.base import ToolTexts
from contextlab.pi.entries import Json
from contextlab.pi.jsutil import js_len, js_slice, number_to_string, to_fixed, utf8_len

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "GREP_MAX_LINE_LENGTH",
    "MAX_SAFE_INTEGER",
    "OutputAccumulator",
    "OutputSnapshot",
    "ReadOffsetError",
    "ToolText",
    "TruncatedLine",
    "TruncationResult",
    "bash_notice",
    "bash_status",
    "find_notice",
    "format_bash_output",
    "format_find_output",
    "format_grep_output",
    "format_ls_output",
    "format_read_file",
    "format_read_output",
    "format_size",
    "grep_context_line",
    "grep_match_line",
    "locate_notice",
    "truncate_head",
    "truncate_line",
    "truncate_tail",
]

DEFAULT_MAX_LINES = 2000
DEFAULT_MAX_BYTES = 50 * 1024
GREP_MAX_LINE_LENGTH = 500
# grep, find and ls pass Number.MAX_SAFE_INTEGER as maxLines: bytes are their only limit.
MAX_SAFE_INTEGER = 2**53 - 1


@dataclass(frozen=True)
class TruncationResult:
    """Pi's ``TruncationResult`` (stored under ``details.truncation`` of tool results)."""

    content: str
    truncated: bool
    truncated_by: str | None  # "lines" | "bytes" | None
    total_lines: int
    total_bytes: int
    output_lines: int
    output_bytes: int
    last_line_partial: bool
    first_line_exceeds_limit: bool
    max_lines: int
    max_bytes: int

    def to_dict(self) -> Json:
        """The object as Pi stores it, keys in Pi's order."""
        return {
            "content": self.content,
            "truncated": self.truncated,
            "truncatedBy": self.truncated_by,
            "totalLines": self.total_lines,
            "totalBytes": self.total_bytes,
            "outputLines": self.output_lines,
            "outputBytes": self.output_bytes,
            "lastLinePartial": self.last_line_partial,
            "firstLineExceedsLimit": self.first_line_exceeds_limit,
            "maxLines": self.max_lines,
            "maxBytes": self.max_bytes,
        }


@dataclass(frozen=True)
class TruncatedLine:
    text: str
    was_truncated: bool


@dataclass(frozen=True)
class ToolText:
    """What a tool returns to the model: the text, its ``details``, and the notice it appended."""

    text: str
    details: Json | None = None
    notice: str = ""


def _node_utf8(text: str) -> bytes:
    """``Buffer.from(text, 'utf-8')``: surrogate pairs joined, lone surrogates as U+FFFD."""
    if text.isascii():
        return text.encode("ascii")
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace").encode("utf-8")


def _split_lines_for_counting(content: str) -> list[str]:
    # A trailing newline ends the last line rather than opening a new, empty one.
    if content == "":
        return []
    lines = content.split("\n")
    if content.endswith("\n"):
        lines.pop()
    return lines


def format_size(size: int | float) -> str:
    """Pi's ``formatSize``: ``512B``, ``1.3KB``, ``2.0MB`` (``toFixed`` rounds half-up)."""
    if size < 1024:
        return f"{number_to_string(size)}B"
    if size < 1024 * 1024:
        return f"{to_fixed(size / 1024, 1)}KB"
    return f"{to_fixed(size / (1024 * 1024), 1)}MB"


def _untruncated(
    content: str, lines: int, size: int, max_lines: int, max_bytes: int
) -> TruncationResult:
    return TruncationResult(
        content=content,
        truncated=False,
        truncated_by=None,
        total_lines=lines,
        total_bytes=size,
        output_lines=lines,
        output_bytes=size,
        last_line_partial=False,
        first_line_exceeds_limit=False,
        max_lines=max_lines,
        max_bytes=max_bytes,
    )


def _truncated(
    kept: list[str],
    truncated_by: str,
    total_lines: int,
    total_bytes: int,
    max_lines: int,
    max_bytes: int,
    *,
    last_line_partial: bool = False,
) -> TruncationResult:
    """The result of a cut that kept the lines ``kept`` (both directions end the same way)."""
    output = "\n".join(kept)
    return TruncationResult(
        content=output,
        truncated=True,
        truncated_by=truncated_by,
        total_lines=total_lines,
        total_bytes=total_bytes,
        output_lines=len(kept),
        output_bytes=utf8_len(output),
        last_line_partial=last_line_partial,
        first_line_exceeds_limit=False,
        max_lines=max_lines,
        max_bytes=max_bytes,
    )


def truncate_head(
    content: str, *, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> TruncationResult:
    """Keep the start of ``content``; never a partial line.

    1. Within both limits: the content unchanged (trailing newline kept).
    2. First line alone over ``max_bytes``: empty content, ``firstLineExceedsLimit``.
    3. Otherwise whole lines while under ``max_lines`` and ``max_bytes`` (a newline costs a byte).
    """
    total_bytes = utf8_len(content)
    lines = _split_lines_for_counting(content)
    total_lines = len(lines)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return _untruncated(content, total_lines, total_bytes, max_lines, max_bytes)

    if utf8_len(lines[0]) > max_bytes:
        return TruncationResult(
            content="",
            truncated=True,
            truncated_by="bytes",
            total_lines=total_lines,
            total_bytes=total_bytes,
            output_lines=0,
            output_bytes=0,
            last_line_partial=False,
            first_line_exceeds_limit=True,
            max_lines=max_lines,
            max_bytes=max_bytes,
        )

    kept: list[str] = []
    kept_bytes = 0
    truncated_by = "lines"
    for i, line in enumerate(lines):
        if i >= max_lines:
            break
        line_bytes = utf8_len(line) + (1 if i > 0 else 0)
        if kept_bytes + line_bytes > max_bytes:
            truncated_by = "bytes"
            break
        kept.append(line)
        kept_bytes += line_bytes
    if len(kept) >= max_lines and kept_bytes <= max_bytes:
        truncated_by = "lines"
    return _truncated(kept, truncated_by, total_lines, total_bytes, max_lines, max_bytes)


def _truncate_string_to_bytes_from_end(text: str, max_bytes: int) -> str:
    """The last ``max_bytes`` bytes of ``text``, starting on a character boundary."""
    buf = _node_utf8(text)
    if len(buf) <= max_bytes:
        return text
    start = len(buf) - max_bytes
    while start < len(buf) and (buf[start] & 0xC0) == 0x80:
        start += 1
    return buf[start:].decode("utf-8", "replace")


def truncate_tail(
    content: str, *, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> TruncationResult:
    """Keep the end of ``content``.

    Whole lines are taken from the end; if the very last line alone is over ``max_bytes``, its
    last ``max_bytes`` bytes are kept (moved forward to a character start), ``lastLinePartial``.
    """
    total_bytes = utf8_len(content)
    lines = _split_lines_for_counting(content)
    total_lines = len(lines)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return _untruncated(content, total_lines, total_bytes, max_lines, max_bytes)

    kept: list[str] = []
    kept_bytes = 0
    truncated_by = "lines"
    last_line_partial = False
    i = len(lines) - 1
    while i >= 0 and len(kept) < max_lines:
        line = lines[i]
        line_bytes = utf8_len(line) + (1 if kept else 0)
        if kept_bytes + line_bytes > max_bytes:
            truncated_by = "bytes"
            if not kept:
                partial = _truncate_string_to_bytes_from_end(line, max_bytes)
                kept.append(partial)
                kept_bytes = utf8_len(partial)
                last_line_partial = True
            break
        kept.append(line)
        kept_bytes += line_bytes
        i -= 1
    kept.reverse()  # collected from the end
    if len(kept) >= max_lines and kept_bytes <= max_bytes:
        truncated_by = "lines"
    return _truncated(
        kept,
        truncated_by,
        total_lines,
        total_bytes,
        max_lines,
        max_bytes,
        last_line_partial=last_line_partial,
    )


def truncate_line(
    line: str, max_chars: int = GREP_MAX_LINE_LENGTH, *, dialect: Dialect = DEFAULT_DIALECT
) -> TruncatedLine:
    """Cut a line to ``max_chars`` UTF-16 units plus ``... [truncated]`` (grep's match lines)."""
    if js_len(line) <= max_chars:
        return TruncatedLine(line, False)
    suffix = dialect.tool_texts.truncated_line_suffix
    return TruncatedLine(js_slice(line, 0, max_chars) + suffix, True)


# ---------------------------------------------------------------------------------------------
# bash: the streaming accumulator and the notice


@dataclass(frozen=True)
class OutputSnapshot:
    content: str
    truncation: TruncationResult
    full_output_path: str | None


class OutputAccumulator:
    """Pi's ``OutputAccumulator`` without the temp file: totals, rolling tail, snapshot.

    Whether Pi would have written a temp file is reported by :attr:`needs_temp_file`; the path it
    would name (random in Pi) is the caller's business.
    """

    def __init__(self, *, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES):
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self.max_rolling_bytes = max(max_bytes * 2, 1)
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._tail_text = ""
        self._tail_bytes = 0
        self._tail_starts_at_line_boundary = True
        self.total_raw_bytes = 0
        self.total_decoded_bytes = 0
        self._completed_lines = 0
        self.total_lines = 0
        self._current_line_bytes = 0
        self._has_open_line = False
        self._finished = False
        self.needs_temp_file = False

    def append(self, data: bytes) -> None:
        if self._finished:
            raise RuntimeError("Cannot append to a finished output accumulator")
        self.total_raw_bytes += len(data)
        self._append_decoded(self._decoder.decode(data))
        if self.needs_temp_file or self._should_use_temp_file():
            self.needs_temp_file = True

    def finish(self) -> None:
        if self._finished:
            return
        self._finished = True
        self._append_decoded(self._decoder.decode(b"", final=True))
        if self._should_use_temp_file():
            self.needs_temp_file = True

    def last_line_bytes(self) -> int:
        """Bytes of the unfinished last line: 0 when the output ends with a newline (Pi quirk)."""
        return self._current_line_bytes

    def snapshot(self, full_output_path: str | None = None) -> OutputSnapshot:
        tail = truncate_tail(
            self._snapshot_text(), max_lines=self.max_lines, max_bytes=self.max_bytes
        )
        truncated = self.total_lines > self.max_lines or self.total_decoded_bytes > self.max_bytes
        truncated_by = None
        if truncated:
            truncated_by = tail.truncated_by or (
                "bytes" if self.total_decoded_bytes > self.max_bytes else "lines"
            )
        truncation = TruncationResult(
            content=tail.content,
            truncated=truncated,
            truncated_by=truncated_by,
            total_lines=self.total_lines,
            total_bytes=self.total_decoded_bytes,
            output_lines=tail.output_lines,
            output_bytes=tail.output_bytes,
            last_line_partial=tail.last_line_partial,
            first_line_exceeds_limit=tail.first_line_exceeds_limit,
            max_lines=self.max_lines,
            max_bytes=self.max_bytes,
        )
        return OutputSnapshot(tail.content, truncation, full_output_path)

    def _append_decoded(self, text: str) -> None:
        if text == "":
            return
        size = utf8_len(text)
        self.total_decoded_bytes += size
        self._tail_text += text
        self._tail_bytes += size
        if self._tail_bytes > self.max_rolling_bytes * 2:
            self._trim_tail()
        newlines = text.count("\n")
        if newlines == 0:
            self._current_line_bytes += size
            self._has_open_line = True
        else:
            self._completed_lines += newlines
            rest = text[text.rindex("\n") + 1 :]
            self._current_line_bytes = utf8_len(rest)
            self._has_open_line = rest != ""
        self.total_lines = self._completed_lines + (1 if self._has_open_line else 0)

    def _trim_tail(self) -> None:
        buf = self._tail_text.encode("utf-8")
        if len(buf) <= self.max_rolling_bytes:
            self._tail_bytes = len(buf)
            return
        start = len(buf) - self.max_rolling_bytes
        while start < len(buf) and (buf[start] & 0xC0) == 0x80:
            start += 1
        if start != 0:
            self._tail_starts_at_line_boundary = buf[start - 1] == 0x0A
        self._tail_text = buf[start:].decode("utf-8", "replace")
        self._tail_bytes = utf8_len(self._tail_text)

    def _snapshot_text(self) -> str:
        if self._tail_starts_at_line_boundary:
            return self._tail_text
        newline = self._tail_text.find("\n")
        return self._tail_text if newline == -1 else self._tail_text[newline + 1 :]

    def _should_use_temp_file(self) -> bool:
        return (
            self.total_raw_bytes > self.max_bytes
            or self.total_decoded_bytes > self.max_bytes
            or self.total_lines > self.max_lines
        )


def bash_notice(
    truncation: TruncationResult,
    *,
    last_line_bytes: int,
    full_output_path: str,
    dialect: Dialect = DEFAULT_DIALECT,
) -> str:
    """The bracket bash appends to truncated output (``""`` when not truncated)."""
    if not truncation.truncated:
        return ""
    t = dialect.tool_texts
    start = truncation.total_lines - truncation.output_lines + 1
    end = truncation.total_lines
    if truncation.last_line_partial:
        return t.bash_notice_last_line.format(
            format_size(truncation.output_bytes),
            end,
            format_size(last_line_bytes),
            full_output_path,
        )
    if truncation.truncated_by == "lines":
        return t.bash_notice_lines.format(start, end, truncation.total_lines, full_output_path)
    return t.bash_notice_bytes.format(
        start, end, truncation.total_lines, format_size(DEFAULT_MAX_BYTES), full_output_path
    )


def format_bash_output(
    snapshot: OutputSnapshot,
    *,
    last_line_bytes: int,
    empty_text: str | None = None,
    dialect: Dialect = DEFAULT_DIALECT,
) -> ToolText:
    """bash's ``formatOutput``: the tail, ``(no output)`` when empty, the notice when truncated."""
    if empty_text is None:
        empty_text = dialect.tool_texts.bash_empty_output
    text = snapshot.content or empty_text
    if not snapshot.truncation.truncated:
        return ToolText(text)
    path = snapshot.full_output_path or "undefined"
    notice = bash_notice(
        snapshot.truncation, last_line_bytes=last_line_bytes, full_output_path=path, dialect=dialect
    )
    details = {
        "truncation": snapshot.truncation.to_dict(),
        "fullOutputPath": snapshot.full_output_path,
    }
    return ToolText(text + notice, details, notice)


def bash_status(text: str, status: str, *, dialect: Dialect = DEFAULT_DIALECT) -> str:
    """The error text of a failed run: ``<output>\\n\\n<status>`` (status alone without output).

    ``status`` is ``Command exited with code N``, ``Command timed out after N seconds`` or
    ``Command aborted`` (the dialect's ``bash_status_*`` texts).
    """
    return text + dialect.tool_texts.bash_status_separator + status if text else status


# ---------------------------------------------------------------------------------------------
# read


class ReadOffsetError(ValueError):
    """The error read throws for an offset past the end (its message is the tool result)."""


def format_read_output(
    file_text: str,
    path: str,
    *,
    offset: int | None = None,
    limit: int | None = None,
    dialect: Dialect = DEFAULT_DIALECT,
) -> ToolText:
    """What read returns for a text file's decoded content, as the model sees it.

    ``path`` is the path as the model gave it (it appears in the oversized-line notice). Notices
    count lines with ``split("\\n")``, so a trailing newline is an extra line there while
    ``details.truncation`` does not count it (docs/pi-engine.md, "Tool output truncation").
    """
    t = dialect.tool_texts
    all_lines = file_text.split("\n")
    total_file_lines = len(all_lines)
    start_line = max(0, offset - 1) if offset else 0
    start_display = start_line + 1
    if start_line >= total_file_lines:
        raise ReadOffsetError(
            t.read_offset_beyond_end.format(number_to_string(offset or 0), total_file_lines)
        )
    user_limited: int | None = None
    if limit is not None:
        end_line = min(start_line + limit, total_file_lines)
        selected = "\n".join(all_lines[start_line:end_line])
        user_limited = end_line - start_line  # negative limits slice from the end, as in JS
    else:
        selected = "\n".join(all_lines[start_line:])

    truncation = truncate_head(selected)
    if truncation.first_line_exceeds_limit:
        first_size = format_size(utf8_len(all_lines[start_line]))
        notice = t.read_notice_first_line.format(
            start_display,
            first_size,
            format_size(DEFAULT_MAX_BYTES),
            start_display,
            path,
            DEFAULT_MAX_BYTES,
        )
        return ToolText(notice, {"truncation": truncation.to_dict()}, notice)
    if truncation.truncated:
        end_display = start_display + truncation.output_lines - 1
        if truncation.truncated_by == "lines":
            notice = t.read_notice_lines.format(
                start_display, end_display, total_file_lines, end_display + 1
            )
        else:
            notice = t.read_notice_bytes.format(
                start_display,
                end_display,
                total_file_lines,
                format_size(DEFAULT_MAX_BYTES),
                end_display + 1,
            )
        return ToolText(truncation.content + notice, {"truncation": truncation.to_dict()}, notice)
    if user_limited is not None and start_line + user_limited < total_file_lines:
        remaining = total_file_lines - (start_line + user_limited)
        next_offset = start_line + user_limited + 1
        notice = t.read_notice_more_lines.format(remaining, next_offset)
        return ToolText(truncation.content + notice, None, notice)
    return ToolText(truncation.content)


def format_read_file(
    data: bytes,
    path: str,
    *,
    offset: int | None = None,
    limit: int | None = None,
    dialect: Dialect = DEFAULT_DIALECT,
) -> ToolText:
    """read on a text file's bytes: decoded as Node's ``buffer.toString("utf-8")`` does (invalid
    sequences become U+FFFD, a BOM is kept), then :func:`format_read_output`."""
    text = data.decode("utf-8", "replace")
    return format_read_output(text, path, offset=offset, limit=limit, dialect=dialect)


# ---------------------------------------------------------------------------------------------
# grep, find, ls


def grep_match_line(
    relative_path: str, line_number: int, line_text: str, *, dialect: Dialect = DEFAULT_DIALECT
) -> TruncatedLine:
    """A match line without context, from rg's ``lines.text`` (``path:N: text``)."""
    sanitized = re.sub(r"\n$", "", line_text.replace("\r\n", "\n").replace("\r", ""))
    cut = truncate_line(sanitized, dialect=dialect)
    return TruncatedLine(f"{relative_path}:{line_number}: {cut.text}", cut.was_truncated)


def grep_context_line(
    relative_path: str,
    line_number: int,
    line_text: str,
    *,
    is_match: bool,
    dialect: Dialect = DEFAULT_DIALECT,
) -> TruncatedLine:
    """A line of a context block (``path:N: text`` for the match, ``path-N- text`` around it)."""
    cut = truncate_line(line_text.replace("\r", ""), dialect=dialect)
    sep = ":" if is_match else "-"
    return TruncatedLine(f"{relative_path}{sep}{line_number}{sep} {cut.text}", cut.was_truncated)


def _bracket(notices: list[str], dialect: Dialect) -> str:
    if not notices:
        return ""
    t = dialect.tool_texts
    return t.notices_open + t.notices_separator.join(notices) + t.notices_close


def format_grep_output(
    output_lines: list[str],
    *,
    effective_limit: int,
    match_limit_reached: bool,
    lines_truncated: bool,
    dialect: Dialect = DEFAULT_DIALECT,
) -> ToolText:
    """grep's result for formatted lines (``No matches found`` when there were no matches)."""
    t = dialect.tool_texts
    if not output_lines:
        return ToolText(t.grep_no_matches)
    truncation = truncate_head("\n".join(output_lines), max_lines=MAX_SAFE_INTEGER)
    details: Json = {}
    notices: list[str] = []
    if match_limit_reached:
        notices.append(t.grep_match_limit.format(effective_limit, effective_limit * 2))
        details["matchLimitReached"] = effective_limit
    if truncation.truncated:
        notices.append(t.byte_limit_reached.format(format_size(DEFAULT_MAX_BYTES)))
        details["truncation"] = truncation.to_dict()
    if lines_truncated:
        notices.append(t.grep_lines_truncated.format(GREP_MAX_LINE_LENGTH))
        details["linesTruncated"] = True
    notice = _bracket(notices, dialect)
    return ToolText(truncation.content + notice, details or None, notice)


def find_notice(
    *,
    effective_limit: int,
    result_limit_reached: bool,
    truncated: bool,
    custom_glob: bool = False,
    dialect: Dialect = DEFAULT_DIALECT,
) -> str:
    t = dialect.tool_texts
    notices: list[str] = []
    if result_limit_reached:
        if custom_glob:
            notices.append(t.find_result_limit_custom_glob.format(effective_limit))
        else:
            notices.append(t.find_result_limit.format(effective_limit, effective_limit * 2))
    if truncated:
        notices.append(t.byte_limit_reached.format(format_size(DEFAULT_MAX_BYTES)))
    return _bracket(notices, dialect)


def format_find_output(
    relative_paths: list[str],
    *,
    effective_limit: int = 1000,
    custom_glob: bool = False,
    dialect: Dialect = DEFAULT_DIALECT,
) -> ToolText:
    """find's result for paths already relative to the search dir (fd's order)."""
    if not relative_paths:
        return ToolText(dialect.tool_texts.find_no_files)
    limit_reached = len(relative_paths) >= effective_limit
    truncation = truncate_head("\n".join(relative_paths), max_lines=MAX_SAFE_INTEGER)
    details: Json = {}
    if limit_reached:
        details["resultLimitReached"] = effective_limit
    if truncation.truncated:
        details["truncation"] = truncation.to_dict()
    notice = find_notice(
        effective_limit=effective_limit,
        result_limit_reached=limit_reached,
        truncated=truncation.truncated,
        custom_glob=custom_glob,
        dialect=dialect,
    )
    return ToolText(truncation.content + notice, details or None, notice)


def format_ls_output(
    entries: list[str],
    *,
    effective_limit: int = 500,
    entry_limit_reached: bool,
    dialect: Dialect = DEFAULT_DIALECT,
) -> ToolText:
    """ls's result for entries already sorted and suffixed (``/`` for directories)."""
    t = dialect.tool_texts
    if not entries:
        return ToolText(t.ls_empty)
    truncation = truncate_head("\n".join(entries), max_lines=MAX_SAFE_INTEGER)
    details: Json = {}
    notices: list[str] = []
    if entry_limit_reached:
        notices.append(t.ls_entry_limit.format(effective_limit, effective_limit * 2))
        details["entryLimitReached"] = effective_limit
    if truncation.truncated:
        notices.append(t.byte_limit_reached.format(format_size(DEFAULT_MAX_BYTES)))
        details["truncation"] = truncation.to_dict()
    notice = _bracket(notices, dialect)
    return ToolText(truncation.content + notice, details or None, notice)


# ---------------------------------------------------------------------------------------------
# Finding notices in stored tool results (for highlighting)

_SIZE = r"\d+(?:\.\d)?(?:B|KB|MB)"  # what format_size prints
_INT = r"\d+"
_SIGNED = r"-?\d+"


def _template_pattern(template: str, *fields: str) -> str:
    """Regex source matching ``template.format(...)`` where the n-th field matches ``fields[n]``."""
    out: list[str] = []
    for literal, field, _spec, _conversion in string.Formatter().parse(template):
        out.append(re.escape(literal))
        if field is not None:
            out.append(f"(?:{fields[int(field)]})")
    return "".join(out)


def _either(*sources: str) -> str:
    return "(?:" + "|".join(sources) + ")"


@functools.cache
def _notice_patterns(t: ToolTexts) -> dict[str, tuple[re.Pattern[str], ...]]:
    """The shapes of each tool's notice, built from the dialect's templates."""
    read = (
        re.compile(
            _either(
                _template_pattern(t.read_notice_lines, _INT, _INT, _INT, _INT),
                _template_pattern(t.read_notice_bytes, _INT, _INT, _INT, _SIZE, _INT),
            )
            + r"\Z"
        ),
        re.compile(_template_pattern(t.read_notice_more_lines, _SIGNED, _SIGNED) + r"\Z"),
        re.compile(
            r"\A"
            + _template_pattern(t.read_notice_first_line, _INT, _SIZE, _SIZE, _INT, ".*", _INT)
            + r"\Z",
            re.S,
        ),
    )
    # A failed run appends its status after the notice.
    status = _either(
        _template_pattern(t.bash_status_exit_code, _SIGNED),
        _template_pattern(t.bash_status_timed_out, r"\S+"),
        re.escape(t.bash_status_aborted),
    )
    bash = (
        re.compile(
            _either(
                _template_pattern(t.bash_notice_last_line, _SIZE, _INT, _SIZE, r"[^\n]*"),
                _template_pattern(t.bash_notice_lines, _INT, _INT, _INT, r"[^\n]*"),
                _template_pattern(t.bash_notice_bytes, _INT, _INT, _INT, _SIZE, r"[^\n]*"),
            )
            + rf"(?=\Z|{re.escape(t.bash_status_separator)}{status}\Z)"
        ),
    )
    part = _either(
        _template_pattern(t.grep_match_limit, _INT, _INT),
        _template_pattern(t.find_result_limit, _INT, _INT),
        _template_pattern(t.find_result_limit_custom_glob, _INT),
        _template_pattern(t.ls_entry_limit, _INT, _INT),
        _template_pattern(t.byte_limit_reached, _SIZE),
        _template_pattern(t.grep_lines_truncated, _INT),
    )
    bracket = (
        re.compile(
            re.escape(t.notices_open)
            + part
            + f"(?:{re.escape(t.notices_separator)}{part})*"
            + re.escape(t.notices_close)
            + r"\Z"
        ),
    )
    return {"read": read, "bash": bash, "grep": bracket, "find": bracket, "ls": bracket}


def locate_notice(
    tool_name: str, text: str, *, dialect: Dialect = DEFAULT_DIALECT
) -> tuple[int, int] | None:
    """Where the truncation/limit notice of ``tool_name`` sits in ``text`` (Python indices).

    Stored tool results only carry the text, so the notice is recognised by its exact shape at
    the end (bash's may be followed by the ``Command exited…`` status of a failed run).
    """
    for pattern in _notice_patterns(dialect.tool_texts).get(tool_name, ()):
        match = pattern.search(text)
        if match is not None:
            return match.start(), match.end()
    return None
