"""node-ignore 7: the ``ignore`` package Pi applies to .gitignore/.ignore/.fdignore files."""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable

from contextlab.pi.jsutil import path_join, path_relative
from contextlab.pi.resources.filesystem import FileSystem

# node-ignore 7 (the `ignore` package Pi uses for .gitignore/.ignore/.fdignore), ported rule
# by rule from its index.js so that the same patterns produce the same regular expressions.

_IGNORE_FILE_NAMES = (".gitignore", ".ignore", ".fdignore")


def _sanitize_range(text: str) -> str:
    return re.sub(
        r"([0-z])-([0-z])",
        lambda m: m.group(0) if ord(m.group(1)) <= ord(m.group(2)) else "",
        text,
    )


def _clean_range_backslash(slashes: str) -> str:
    return slashes[: len(slashes) - len(slashes) % 2]


def _make_regex_prefix(pattern: str) -> str:
    s = pattern
    s = re.sub(r"^\ufeff", "", s, count=1)
    s = re.sub(
        r"((?:\\\\)*?)(\\?\s+)$",
        lambda m: m.group(1) + (" " if m.group(2).startswith("\\") else ""),
        s,
        count=1,
    )
    s = re.sub(r"(\\+?)\s", lambda m: _clean_range_backslash(m.group(1)) + " ", s)
    s = re.sub(r"[\\$.|*+(){^]", lambda m: "\\" + m.group(0), s)
    s = re.sub(r"(?!\\)\?", "[^/]", s)
    s = re.sub(r"^/", "^", s, count=1)
    s = re.sub(r"/", r"\\/", s)
    s = re.sub(r"^\^*\\\*\\\*\\/", lambda m: "^(?:.*\\/)?", s, count=1)
    starting = "(?:^|\\/)" if not re.search(r"/(?!$)", pattern) else "^"
    s = re.sub(r"^(?=[^^])", lambda m: starting, s, count=1)

    def globstars(m: re.Match[str]) -> str:
        return "(?:\\/[^\\/]+)*" if m.start() + 6 < len(m.string) else "\\/.+"

    s = re.sub(r"\\/\\\*\\\*(?=\\/|$)", globstars, s)
    s = re.sub(
        r"(^|[^\\]+)(\\\*)+(?=.+)",
        lambda m: m.group(1) + m.group(2).replace("\\*", "[^\\/]*"),
        s,
    )
    s = re.sub(r"\\\\\\(?=[$.|*+(){^])", lambda m: "\\", s)
    s = re.sub(r"\\\\", lambda m: "\\", s)

    def ranges(m: re.Match[str]) -> str:
        lead, rng, end, close = m.group(1), m.group(2), m.group(3), m.group(4)
        if lead == "\\":
            return f"\\[{rng}{_clean_range_backslash(end)}{close}"
        if close == "]":
            if len(end) % 2 == 0:
                return f"[{_sanitize_range(rng)}{end}]"
            return "[]"
        return "[]"

    s = re.sub(r"(\\)?\[([^\]/]*?)(\\*)($|\])", ranges, s)
    s = re.sub(
        r"(?:[^*])$",
        lambda m: m.group(0) + "$" if m.group(0).endswith("/") else m.group(0) + "(?=$|\\/$)",
        s,
        count=1,
    )
    return s


def _js_regex_to_python(source: str) -> str:
    # JavaScript's empty class `[]` never matches and `[^]` matches anything; Python reads both
    # differently, so spell them out. `$` becomes \Z: JS `$` does not match before a final \n.
    out = source.replace("[^]", "[\\s\\S]").replace("[]", "(?!)")
    return re.sub(r"(?<!\\)\$", r"\\Z", out)


class _IgnoreRule:
    def __init__(self, pattern: str) -> None:
        negative = pattern.startswith("!")
        body = pattern[1:] if negative else pattern
        body = re.sub(r"^\\!", "!", body, count=1)
        body = re.sub(r"^\\#", "#", body, count=1)
        prefix = _make_regex_prefix(body)

        def trailing(m: re.Match[str]) -> str:
            p1 = m.group(1)
            return (f"{p1}[^/]+" if p1 else "[^/]*") + "(?=$|\\/$)"

        source = re.sub(r"(^|\\/)?\\\*$", trailing, prefix, count=1)
        self.negative = negative
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.regex: re.Pattern[str] | None
            try:
                self.regex = re.compile(_js_regex_to_python(source), re.IGNORECASE)
            except re.error:
                self.regex = None  # a rule JavaScript would also reject


class Ignore:
    """``ignore()`` with the default options Pi uses (case-insensitive, strict paths)."""

    def __init__(self) -> None:
        self.rules: list[_IgnoreRule] = []
        self.cache: dict[str, tuple[bool, bool]] = {}

    def add(self, patterns: Iterable[str]) -> None:
        added = False
        for pattern in patterns:
            if (
                pattern
                and not re.match(r"^\s+$", pattern)
                and not re.search(r"(?:[^\\]|^)\\$", pattern)
                and not pattern.startswith("#")
            ):
                self.rules.append(_IgnoreRule(pattern))
                added = True
        if added:
            self.cache = {}

    def _test(self, path: str, check_unignored: bool) -> tuple[bool, bool]:
        ignored = unignored = False
        for rule in self.rules:
            if (unignored == rule.negative and ignored != unignored) or (
                rule.negative and not ignored and not unignored and not check_unignored
            ):
                continue
            if rule.regex is None or not rule.regex.search(path):
                continue
            ignored = not rule.negative
            unignored = rule.negative
        return ignored, unignored

    def _t(self, path: str, slices: list[str] | None = None) -> tuple[bool, bool]:
        if path in self.cache:
            return self.cache[path]
        if slices is None:
            slices = [s for s in path.split("/") if s]
        slices.pop()
        if not slices:
            result = self._test(path, False)
        else:
            parent = self._t("/".join(slices) + "/", slices)
            result = parent if parent[0] else self._test(path, False)
        self.cache[path] = result
        return result

    def ignores(self, path: str) -> bool:
        if not path:
            raise TypeError("path must not be empty")
        if re.match(r"^\.{0,2}/|^\.{1,2}$", path):
            raise ValueError(f'path should be a `path.relative()`d string, but got "{path}"')
        return self._t(path)[0]


def _prefix_ignore_pattern(line: str, prefix: str) -> str | None:
    trimmed = line.strip()
    if not trimmed:
        return None
    if trimmed.startswith("#") and not trimmed.startswith("\\#"):
        return None
    pattern = line
    negated = False
    if pattern.startswith("!"):
        negated = True
        pattern = pattern[1:]
    elif pattern.startswith("\\!"):
        pattern = pattern[1:]
    if pattern.startswith("/"):
        pattern = pattern[1:]
    prefixed = f"{prefix}{pattern}" if prefix else pattern
    return f"!{prefixed}" if negated else prefixed


def add_ignore_rules(fs: FileSystem, ig: Ignore, directory: str, root: str) -> None:
    relative_dir = path_relative(root, directory)
    prefix = f"{relative_dir}/" if relative_dir else ""
    for filename in _IGNORE_FILE_NAMES:
        ignore_path = path_join(directory, filename)
        if not fs.exists(ignore_path):
            continue
        try:
            content = fs.read_text(ignore_path)
        except OSError:
            continue
        patterns = [
            p
            for p in (_prefix_ignore_pattern(line, prefix) for line in re.split(r"\r?\n", content))
            if p
        ]
        if patterns:
            ig.add(patterns)
