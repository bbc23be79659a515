"""Pi's frontmatter reader (dist/utils/frontmatter.js) and the ``yaml`` package's error messages."""

from __future__ import annotations

import re
from typing import Any

import yaml

from contextlab.pi.jsutil import js_len, js_slice, js_trim
from contextlab.pi.resources.yaml_core import CoreSchemaLoader


class FrontmatterError(ValueError):
    def __init__(self, message: str, *, exact: bool = False) -> None:
        super().__init__(message)
        # True when the message is word for word the `yaml` package's (and so Pi's warning).
        self.exact = exact


# A line "key: value" whose key is a plain scalar: group end = where the value starts.
_COMPACT_KEY = re.compile(r" *(?![-?:,\[\]{}#&*!|>'\"%@`\s])[^\n]*?: +(?=\S)")


def _yaml_package_message(src: str, error: Exception) -> str | None:
    """The `yaml` package's message for the errors this reader can place exactly, else None.

    Two mistakes cover most broken SKILL.md files: an unquoted value holding ": " (yaml:
    "Nested mappings are not allowed in compact mappings", at the value) and a key given
    twice ("Map keys must be unique", at the second key).
    """
    lines = src.split("\n")
    problem = getattr(error, "problem", None)
    if problem == "found unexpected end of stream" and "quoted scalar" in str(
        getattr(error, "context", "")
    ):
        # The unterminated quoted scalar runs to the end of the source, where yaml points.
        if src.endswith("\n"):
            return None
        start = getattr(error, "context_mark", None)
        if start is None:
            return None
        quote = "'" if lines[start.line][start.column] == "'" else '"'
        return _prettify_yaml_error(
            src, f"Missing closing {quote}quote", len(lines) - 1, len(lines[-1])
        )
    mark = getattr(error, "problem_mark", None)
    if mark is None or mark.line >= len(lines):
        return None
    if problem == "mapping values are not allowed here":
        match = _COMPACT_KEY.match(lines[mark.line])
        if match and match.end() <= mark.column:
            return _prettify_yaml_error(
                src, "Nested mappings are not allowed in compact mappings", mark.line, match.end()
            )
    if problem == "Map keys must be unique":
        return _prettify_yaml_error(src, problem, mark.line, mark.column)

    # The next two are only safe to word as yaml does when they are the document's sole
    # mistake (yaml may report another one first): repair the character and parse again.
    def only_mistake_at(line: int, column: int) -> bool:
        fixed = lines[:]
        fixed[line] = fixed[line][:column] + "x" + fixed[line][column + 1 :]
        try:
            yaml.load("\n".join(fixed) + "\n", Loader=CoreSchemaLoader)
        except yaml.YAMLError:
            return False
        return True

    reserved = re.fullmatch(r"found character '(.)' that cannot start any token", problem or "")
    if reserved and reserved.group(1) in "@`%" and only_mistake_at(mark.line, mark.column):
        char = reserved.group(1)
        kind = "directive indicator character" if char == "%" else "reserved character"
        return _prettify_yaml_error(
            src, f"Plain value cannot start with {kind} {char}", mark.line, mark.column
        )
    undefined = re.fullmatch(r"found undefined alias '(.*)'", problem or "", re.DOTALL)
    rest = lines[mark.line][mark.column :]
    if (
        undefined
        and isinstance(error, yaml.composer.ComposerError)
        and rest.rstrip(" \t") == "*" + undefined.group(1)
        and only_mistake_at(mark.line, mark.column)
    ):
        # yaml reports no position for this one.
        return f"Unresolved alias (the anchor must be set before the alias): {undefined.group(1)}"
    return None


def _prettify_yaml_error(src: str, message: str, line_index: int, column: int) -> str:
    """yaml's prettifyError for a one-character range (dist/errors.js), in UTF-16 units."""
    lines = src.split("\n")
    line = line_index + 1
    line_str = lines[line_index]
    col = js_len(line_str[:column]) + 1
    message += f" at line {line}, column {col}"
    ci = col - 1
    if ci >= 60 and js_len(line_str) > 80:
        trim_start = min(ci - 39, js_len(line_str) - 79)
        line_str = "\u2026" + js_slice(line_str, trim_start)
        ci -= trim_start - 1
    if js_len(line_str) > 80:
        line_str = js_slice(line_str, 0, 79) + "\u2026"
    if line > 1 and re.fullmatch(" *", js_slice(line_str, 0, ci)):
        previous = lines[line_index - 1] + "\n"
        if js_len(previous) > 80:
            previous = js_slice(previous, 0, 79) + "\u2026\n"
        line_str = previous + line_str
    if re.search(r"[^ ]", line_str):
        message += f":\n\n{line_str}\n{' ' * ci}^\n"
    return message


def parse_frontmatter(content: str) -> tuple[Any, str]:
    """``parseFrontmatter``: (frontmatter value, body). Raises FrontmatterError on bad YAML."""
    normalized = content.replace("\r\n", "\n").replace("\r", "\n")
    if not normalized.startswith("---"):
        return {}, normalized
    end = normalized.find("\n---", 3)
    if end == -1:
        return {}, normalized
    yaml_string = normalized[4:end]
    body = js_trim(normalized[end + 4 :])
    if not yaml_string:
        return {}, body
    # The `yaml` package ends a final block scalar with its line break even when the text
    # stops right after it (clip chomping); PyYAML needs the break to be there.
    source = yaml_string
    if not yaml_string.endswith("\n"):
        yaml_string += "\n"
    try:
        parsed = yaml.load(yaml_string, Loader=CoreSchemaLoader)
    except yaml.YAMLError as error:
        exact = _yaml_package_message(source, error)
        if exact is not None:
            raise FrontmatterError(exact, exact=True) from error
        raise FrontmatterError(f"invalid YAML frontmatter: {_one_line(str(error))}") from error
    return ({} if parsed is None else parsed), body


def _one_line(text: str) -> str:
    return " ".join(text.split())


def frontmatter_get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else None
