"""The ``skills`` patterns of settings.json (package-manager.js applyPatterns /
isEnabledByOverrides) and the minimatch subset they use."""

from __future__ import annotations

import posixpath
import re
from typing import Any

from contextlab.pi.jsutil import path_relative

# Settings patterns for skills (package-manager.js applyPatterns / isEnabledByOverrides) and the
# part of minimatch 10 (default options) they rely on: *, ?, [...], **, {a,b}, escapes, no dot
# files. Extglobs (+(a|b) ...) are not supported and match literally.


def is_pattern(entry: str) -> bool:
    return entry.startswith(("!", "+", "-")) or "*" in entry or "?" in entry


def _brace_expand(pattern: str) -> list[str]:
    depth = 0
    start = -1
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if char == "{":
            if depth == 0:
                start = i
            depth += 1
        elif char == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                body = pattern[start + 1 : i]
                parts = _split_top_level_commas(body)
                if len(parts) > 1:
                    head, tail = pattern[:start], pattern[i + 1 :]
                    out: list[str] = []
                    for part in parts:
                        out.extend(_brace_expand(head + part + tail))
                    return out
        i += 1
    return [pattern]


def _split_top_level_commas(body: str) -> list[str]:
    parts, depth, current = [], 0, ""
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            current += body[i : i + 2]
            i += 2
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
        i += 1
    parts.append(current)
    return parts


def _segment_regex(segment: str) -> re.Pattern[str] | str:
    """A pattern segment as a regex, or the literal string when it has no magic."""
    out = ""
    magic = False
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "\\" and i + 1 < len(segment):
            out += re.escape(segment[i + 1])
            i += 2
            continue
        if char == "*":
            magic = True
            out += "[^/]*?"
        elif char == "?":
            magic = True
            out += "[^/]"
        elif char == "[":
            end = segment.find("]", i + 2 if segment[i + 1 : i + 2] in ("!", "^", "]") else i + 1)
            if end == -1:
                out += re.escape(char)
            else:
                magic = True
                body = segment[i + 1 : end]
                negate = body[:1] in ("!", "^")
                if negate:
                    body = body[1:]
                escaped = body.replace("\\", "\\\\").replace("[", "\\[")
                out += f"[{'^' if negate else ''}{escaped}]"
                i = end + 1
                continue
        else:
            out += re.escape(char)
        i += 1
    if not magic:
        return re.sub(r"\\(.)", r"\1", segment)
    # dot: false -- wildcards never match a leading dot; a magic segment never matches "".
    prefix = "(?=.)" + ("" if segment.startswith(".") else "(?!\\.)")
    try:
        return re.compile(f"{prefix}{out}\\Z", re.DOTALL)
    except re.error:
        return segment


def _match_parts(path: list[str], pattern: list[Any]) -> bool:
    if not pattern:
        return not path
    head = pattern[0]
    if head == "**":
        if len(pattern) == 1:
            # A trailing ** needs at least one more part ("a/**" matches "a/" but not "a").
            return bool(path) and all(not p.startswith(".") for p in path)
        for index in range(len(path) + 1):
            if _match_parts(path[index:], pattern[1:]):
                return True
            if index < len(path) and path[index].startswith("."):
                return False
        return False
    if not path:
        return False
    segment = path[0]
    if isinstance(head, str):
        if segment != head:
            return False
    elif not head.match(segment):
        return False
    return _match_parts(path[1:], pattern[1:])


def minimatch(path: str, pattern: str) -> bool:
    """``minimatch(path, pattern)`` with minimatch 10's default options (subset, see above)."""
    if pattern.startswith("#"):
        return False
    negated = False
    while pattern.startswith("!"):
        negated = not negated
        pattern = pattern[1:]
    if pattern == "":
        return (path == "") != negated
    found = False
    for alternative in _brace_expand(pattern):
        parts: list[Any] = [
            "**" if part == "**" else _segment_regex(part) for part in alternative.split("/")
        ]
        if _match_parts(path.split("/"), parts):
            found = True
            break
    return found != negated


def _pattern_candidates(file_path: str, base: str) -> list[str]:
    candidates = [path_relative(base, file_path), posixpath.basename(file_path), file_path]
    if posixpath.basename(file_path) == "SKILL.md":
        parent = posixpath.dirname(file_path)
        candidates += [path_relative(base, parent), posixpath.basename(parent), parent]
    return candidates


def _matches_any_pattern(file_path: str, patterns: list[str], base: str) -> bool:
    candidates = _pattern_candidates(file_path, base)
    return any(minimatch(c, p) for p in patterns for c in candidates)


def _matches_any_exact_pattern(file_path: str, patterns: list[str], base: str) -> bool:
    candidates = _pattern_candidates(file_path, base)
    rel_or_full = candidates[0], candidates[2]
    for pattern in patterns:
        normalized = pattern[2:] if pattern.startswith(("./", ".\\")) else pattern
        if normalized in rel_or_full:
            return True
        if len(candidates) > 3 and normalized in (candidates[3], candidates[5]):
            return True
    return False


def is_enabled_by_overrides(file_path: str, entries: list[str], base: str) -> bool:
    excludes = [p[1:] for p in entries if p.startswith("!")]
    force_in = [p[1:] for p in entries if p.startswith("+")]
    force_out = [p[1:] for p in entries if p.startswith("-")]
    enabled = True
    if excludes and _matches_any_pattern(file_path, excludes, base):
        enabled = False
    if force_in and _matches_any_exact_pattern(file_path, force_in, base):
        enabled = True
    if force_out and _matches_any_exact_pattern(file_path, force_out, base):
        enabled = False
    return enabled


def apply_patterns(all_paths: list[str], patterns: list[str], base: str) -> set[str]:
    includes = [p for p in patterns if not p.startswith(("+", "-", "!"))]
    excludes = [p[1:] for p in patterns if p.startswith("!")]
    force_in = [p[1:] for p in patterns if p.startswith("+")]
    force_out = [p[1:] for p in patterns if p.startswith("-")]
    result = (
        [p for p in all_paths if _matches_any_pattern(p, includes, base)]
        if includes
        else list(all_paths)
    )
    if excludes:
        result = [p for p in result if not _matches_any_pattern(p, excludes, base)]
    for path in all_paths:
        if force_in and path not in result and _matches_any_exact_pattern(path, force_in, base):
            result.append(path)
    if force_out:
        result = [p for p in result if not _matches_any_exact_pattern(p, force_out, base)]
    return set(result)
