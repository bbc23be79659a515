"""What Pi reads from disk to build its system prompt, found exactly as Pi 0.80 finds it.

Truth: ``loadProjectContextFiles`` and ``DefaultResourceLoader`` (dist/core/resource-loader.js),
``loadSkills`` (dist/core/skills.js), auto-discovery of skill folders and ignore files
(dist/core/package-manager.js), project trust (dist/core/trust-manager.js,
dist/core/project-trust.js, main.js), settings (dist/core/settings-manager.js) and the
frontmatter reader (dist/utils/frontmatter.js).

Everything goes through a small filesystem protocol so the UI can hand in files uploaded from
another machine under their original absolute paths (``fs={"/home/ann/proj/AGENTS.md": "..."}``);
the default is the real disk. Paths are POSIX: a Windows-style cwd (``C:\\Users\\x``) is never
searched and the result says so.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import yaml  # type: ignore[import-untyped]  # PyYAML ships no stubs

from contextlab.pi.dialects import DEFAULT_DIALECT, Dialect
from contextlab.pi.dialects.base import PromptRules
from contextlab.pi.jsutil import js_len, js_slice, js_trim, js_truthy, number_to_string

# ---------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class ContextFile:
    path: str
    content: str


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    file_path: str
    base_dir: str
    disable_model_invocation: bool = False
    # "user", "project" or "path", as loadSkills labels it.
    source: str = "path"

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "filePath": self.file_path,
            "baseDir": self.base_dir,
            "disableModelInvocation": self.disable_model_invocation,
            "source": self.source,
        }


@dataclass(frozen=True)
class Diagnostic:
    """One of Pi's resource diagnostics (``{type, message, path, collision?}``)."""

    type: str
    message: str
    path: str
    collision: dict[str, str] | None = None
    # False when the message is ours, not Pi's wording (YAML syntax errors: Pi reports the
    # `yaml` package's message, which this engine does not reproduce word for word).
    exact: bool = True

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "message": self.message, "path": self.path}
        if self.collision is not None:
            out["collision"] = dict(self.collision)
        if not self.exact:
            out["exact"] = False
        return out


@dataclass(frozen=True)
class PromptResources:
    cwd: str
    agent_dir: str
    home: str
    context_files: tuple[ContextFile, ...] = ()
    system_prompt: str | None = None
    system_prompt_path: str | None = None
    append_system_prompt: tuple[str, ...] = ()
    append_system_prompt_paths: tuple[str, ...] = ()
    skills: tuple[Skill, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    project_trusted: bool = True
    # How trust was decided ("caller", "no-trust-requiring-resources", "trust.json",
    # "defaultProjectTrust", "ask-noninteractive", "foreign-cwd") and a sentence for people.
    trust_source: str = "caller"
    trust_reason: str = ""
    # Paths Pi would read that did not exist where we looked.
    not_found: tuple[str, ...] = ()
    # Things Pi would take into account that this engine cannot see or does not model.
    unknown: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "cwd": self.cwd,
            "agentDir": self.agent_dir,
            "home": self.home,
            "contextFiles": [{"path": c.path, "content": c.content} for c in self.context_files],
            "systemPrompt": self.system_prompt,
            "systemPromptPath": self.system_prompt_path,
            "appendSystemPrompt": list(self.append_system_prompt),
            "appendSystemPromptPaths": list(self.append_system_prompt_paths),
            "skills": [s.as_dict() for s in self.skills],
            "diagnostics": [d.as_dict() for d in self.diagnostics],
            "projectTrusted": self.project_trusted,
            "trustSource": self.trust_source,
            "trustReason": self.trust_reason,
            "notFound": list(self.not_found),
            "unknown": list(self.unknown),
        }


class ResourceError(ValueError):
    """Bad input to discovery (e.g. an agent dir that is not an absolute path)."""


# ---------------------------------------------------------------------------------------------
# Filesystems


class FileSystem(Protocol):
    def exists(self, path: str) -> bool: ...
    def is_dir(self, path: str) -> bool: ...
    def is_file(self, path: str) -> bool: ...
    def listdir(self, path: str) -> list[str]: ...
    def read_text(self, path: str) -> str: ...
    def realpath(self, path: str) -> str: ...


def _utf8_key(name: str) -> bytes:
    return name.encode("utf-8", "surrogateescape")


class RealFileSystem:
    """The local disk, with Node's semantics where Pi depends on them."""

    def exists(self, path: str) -> bool:
        return os.path.exists(path)  # existsSync follows symlinks too

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def is_file(self, path: str) -> bool:
        return os.path.isfile(path)

    def listdir(self, path: str) -> list[str]:
        # libuv's scandir sorts names with strcmp, so Node's readdirSync order is byte order.
        return sorted(os.listdir(path), key=_utf8_key)

    def read_text(self, path: str) -> str:
        # readFileSync(path, "utf-8") keeps a BOM and turns invalid bytes into U+FFFD.
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")

    def realpath(self, path: str) -> str:
        # canonicalizePath: realpathSync, or the path unchanged when that fails.
        try:
            return os.path.realpath(path, strict=True)
        except OSError:
            return path


class MappingFileSystem:
    """Files given as ``{absolute path: content}``; folders are implied by the paths."""

    def __init__(self, files: Mapping[str, str]) -> None:
        self.files: dict[str, str] = {}
        self.dirs: set[str] = {"/"}
        # Keys that cannot be placed on a POSIX tree (C:\\..., relative paths): kept aside so
        # discovery can say they were not used instead of failing on them.
        self.skipped: list[str] = []
        for raw, content in files.items():
            if is_foreign_path(str(raw)):
                self.skipped.append(str(raw))
                continue
            path = _normalize(str(raw))
            self.files[path] = content
            parent = posixpath.dirname(path)
            while parent not in self.dirs:
                self.dirs.add(parent)
                parent = posixpath.dirname(parent)

    def exists(self, path: str) -> bool:
        return path in self.files or path in self.dirs

    def is_dir(self, path: str) -> bool:
        return path in self.dirs

    def is_file(self, path: str) -> bool:
        return path in self.files

    def listdir(self, path: str) -> list[str]:
        if path not in self.dirs:
            raise FileNotFoundError(path)
        prefix = path.rstrip("/") + "/"
        names = {
            p[len(prefix) :].split("/", 1)[0]
            for p in (*self.files, *self.dirs)
            if p.startswith(prefix) and p != prefix
        }
        return sorted(names, key=_utf8_key)

    def read_text(self, path: str) -> str:
        if path not in self.files:
            raise IsADirectoryError(path) if path in self.dirs else FileNotFoundError(path)
        return self.files[path]

    def realpath(self, path: str) -> str:
        return path


def as_file_system(fs: Any) -> FileSystem:
    if fs is None:
        return RealFileSystem()
    if isinstance(fs, Mapping):
        return MappingFileSystem(fs)
    for method in ("exists", "is_dir", "is_file", "listdir", "read_text", "realpath"):
        if not callable(getattr(fs, method, None)):
            raise ResourceError(f"fs object lacks {method}()")
    return fs  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------------
# Node's path module (POSIX)


def _normalize(path: str) -> str:
    """path.normalize without keeping a trailing slash (what resolve/join results look like)."""
    absolute = path.startswith("/")
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts and parts[-1] != "..":
                parts.pop()
            elif not absolute:
                parts.append("..")
            continue
        parts.append(part)
    joined = "/".join(parts)
    if absolute:
        return "/" + joined
    return joined or "."


def _join(*parts: str) -> str:
    return _normalize("/".join(p for p in parts if p))


def _relative(start: str, target: str) -> str:
    return posixpath.relpath(target, start) if target != start else ""


def _is_under(target: str, root: str) -> bool:
    root = _normalize(root)
    if target == root:
        return True
    prefix = root if root.endswith("/") else root + "/"
    return target.startswith(prefix)


def _expand(path: str, home: str) -> str:
    """normalizePath's tilde expansion (Pi expands ``~`` and ``~/...`` only)."""
    if path == "~":
        return home
    if path.startswith("~/"):
        return _join(home, path[2:])
    return path


_WINDOWS_PATH = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")


def is_foreign_path(path: str) -> bool:
    """True for paths that name nothing on this POSIX server (``C:\\x``, ``\\\\server``)."""
    return bool(_WINDOWS_PATH.match(path)) or not path.startswith("/")


# ---------------------------------------------------------------------------------------------
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


def _add_ignore_rules(fs: FileSystem, ig: Ignore, directory: str, root: str) -> None:
    relative_dir = _relative(root, directory)
    prefix = f"{relative_dir}/" if relative_dir else ""
    for filename in _IGNORE_FILE_NAMES:
        ignore_path = _join(directory, filename)
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


# ---------------------------------------------------------------------------------------------
# Frontmatter (dist/utils/frontmatter.js) with YAML 1.2 core-schema scalars, as the `yaml`
# package parses them: yes/no/on/off stay strings, no timestamps, no sexagesimal numbers.


_LINE_BREAKS = "\r\n\x85\u2028\u2029"
_BLANK_OR_END = "\0 \t" + _LINE_BREAKS


class _CoreSchemaLoader(yaml.SafeLoader):  # type: ignore[misc]
    """PyYAML's loader moved towards YAML 1.2 where the `yaml` package accepts more.

    Tabs count as white space after a line's first token and inside plain scalars; anchors
    take any character but white space and flow indicators; unknown local tags (``!x``) and
    the bare ``!`` read the node as plain text. Still different (rare in SKILL.md files, and
    then the skill is dropped with a warning where Pi would keep it): empty implicit keys
    (a line starting with ``:``), ``?`` inside flow collections, a tab right after a tag.
    """

    def _tab_is_separation(self) -> bool:
        if self.flow_level:
            return True
        line_start = self.buffer.rfind("\n", 0, self.pointer) + 1
        return bool(self.buffer[line_start : self.pointer].strip(" \t"))

    def scan_to_next_token(self) -> None:
        if self.index == 0 and self.peek() == "\ufeff":
            self.forward()
        found = False
        while not found:
            while self.peek() == " " or (self.peek() == "\t" and self._tab_is_separation()):
                self.forward()
            if self.peek() == "#":
                while self.peek() not in "\0" + _LINE_BREAKS:
                    self.forward()
            if self.scan_line_break():
                if not self.flow_level:
                    self.allow_simple_key = True
            else:
                found = True

    def scan_plain_spaces(self, indent: int, start_mark: Any) -> list[str] | None:
        chunks: list[str] = []
        length = 0
        while self.peek(length) in " \t":
            length += 1
        whitespaces = self.prefix(length)
        self.forward(length)
        if self.peek() in _LINE_BREAKS:
            line_break = self.scan_line_break()
            self.allow_simple_key = True
            prefix = self.prefix(3)
            if prefix in ("---", "...") and self.peek(3) in _BLANK_OR_END:
                return None
            breaks = []
            # No tabs here: a tab opening a continuation line is indentation, which the
            # `yaml` package rejects ("Tabs are not allowed as indentation").
            while self.peek() in " " + _LINE_BREAKS:
                if self.peek() == " ":
                    self.forward()
                else:
                    breaks.append(self.scan_line_break())
                    prefix = self.prefix(3)
                    if prefix in ("---", "...") and self.peek(3) in _BLANK_OR_END:
                        return None
            if line_break != "\n":
                chunks.append(line_break)
            elif not breaks:
                chunks.append(" ")
            chunks.extend(breaks)
        elif whitespaces:
            chunks.append(whitespaces)
        return chunks

    def scan_anchor(self, token_class: Any) -> Any:
        start_mark = self.get_mark()
        name = "alias" if self.peek() == "*" else "anchor"
        self.forward()
        length = 0
        while self.peek(length) not in _BLANK_OR_END + ",[]{}":
            length += 1
        if not length:
            raise yaml.scanner.ScannerError(
                f"while scanning an {name}",
                start_mark,
                f"expected an {name} name, but found {self.peek()!r}",
                self.get_mark(),
            )
        value = self.prefix(length)
        self.forward(length)
        return token_class(value, start_mark, self.get_mark())

    def compose_scalar_node(self, anchor: Any) -> Any:
        # The bare "!" tag makes a scalar a string in YAML 1.2 ("!" with no text is "").
        event = self.peek_event()
        if event.tag == "!":
            event.tag = "tag:yaml.org,2002:str"
        return super().compose_scalar_node(anchor)


def _construct_local_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return _construct_mapping(loader, node)


_CoreSchemaLoader.yaml_implicit_resolvers = {}
for _tag, _regex, _first in (
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
):
    _CoreSchemaLoader.add_implicit_resolver(_tag, re.compile(_regex), list(_first))


def _construct_core_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int | float:
    value = str(loader.construct_scalar(node))
    if value.startswith("0o"):
        number = int(value[2:], 8)
    elif value.startswith("0x"):
        number = int(value[2:], 16)
    else:
        number = int(value)
    # JavaScript numbers are doubles: past 2**53 integers lose precision.
    return float(number) if abs(number) > 2**53 else number


def _flow_key(value: Any) -> str:
    """How the `yaml` package turns a collection used as a map key into a string key."""
    if isinstance(value, list):
        return "[ " + ", ".join(_flow_key(v) for v in value) + " ]" if value else "[]"
    if isinstance(value, dict):
        items = ", ".join(f"{_flow_key(k)}: {_flow_key(v)}" for k, v in value.items())
        return "{ " + items + " }" if value else "{}"
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, float):
        return number_to_string(value)
    return str(value)


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    # The `yaml` package rejects duplicate keys ("Map keys must be unique").
    loader.flatten_mapping(node)
    result: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        # Keys become JavaScript property names (1 -> "1", true -> "true", null -> "").
        key = loader.construct_object(key_node, deep=True)
        key = "" if key is None else key if isinstance(key, str) else _flow_key(key)
        if key in result:
            raise yaml.constructor.ConstructorError(
                None, None, "Map keys must be unique", key_node.start_mark
            )
        result[key] = loader.construct_object(value_node, deep=True)
    return result


_CoreSchemaLoader.add_constructor("tag:yaml.org,2002:int", _construct_core_int)
_CoreSchemaLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
_CoreSchemaLoader.add_multi_constructor("!", _construct_local_tag)


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
            yaml.load("\n".join(fixed) + "\n", Loader=_CoreSchemaLoader)
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
        parsed = yaml.load(yaml_string, Loader=_CoreSchemaLoader)
    except yaml.YAMLError as error:
        exact = _yaml_package_message(source, error)
        if exact is not None:
            raise FrontmatterError(exact, exact=True) from error
        raise FrontmatterError(f"invalid YAML frontmatter: {_one_line(str(error))}") from error
    return ({} if parsed is None else parsed), body


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _js_get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else None


# ---------------------------------------------------------------------------------------------
# Skills (dist/core/skills.js and the auto-discovery of dist/core/package-manager.js)


class _JsTypeError(Exception):
    """What Node throws when Pi calls a string method on a non-string frontmatter value."""


def _validate_name(name: Any, rules: PromptRules) -> list[str]:
    # A non-string name (YAML number, boolean, list, map) reaches name.startsWith() and throws;
    # the warnings collected before that are lost with the exception, as in Pi.
    if not isinstance(name, str):
        raise _JsTypeError("name.startsWith is not a function")
    errors: list[str] = []
    if js_len(name) > rules.skill_max_name_length:
        errors.append(rules.skill_name_too_long.format(rules.skill_max_name_length, js_len(name)))
    if not re.fullmatch(r"[a-z0-9-]+", name):
        errors.append(rules.skill_name_invalid_characters)
    if name.startswith("-") or name.endswith("-"):
        errors.append(rules.skill_name_hyphen_edges)
    if "--" in name:
        errors.append(rules.skill_name_consecutive_hyphens)
    return errors


def _validate_description(description: Any, rules: PromptRules) -> list[str]:
    if not js_truthy(description):
        return [rules.skill_description_required]
    if not isinstance(description, str):
        raise _JsTypeError("description.trim is not a function")
    if js_trim(description) == "":
        return [rules.skill_description_required]
    if js_len(description) > rules.skill_max_description_length:
        limit = rules.skill_max_description_length
        return [rules.skill_description_too_long.format(limit, js_len(description))]
    return []


def load_skill_from_file(
    fs: FileSystem, file_path: str, source: str, *, dialect: Dialect = DEFAULT_DIALECT
) -> tuple[Skill | None, list[Diagnostic]]:
    """``loadSkillFromFile``: the skill (or None) and its warnings."""
    rules = _prompt_rules(dialect)
    diagnostics: list[Diagnostic] = []
    try:
        frontmatter, _body = parse_frontmatter(fs.read_text(file_path))
        skill_dir = posixpath.dirname(file_path)
        parent_dir_name = posixpath.basename(skill_dir)
        description = _js_get(frontmatter, "description")
        for error in _validate_description(description, rules):
            diagnostics.append(Diagnostic("warning", error, file_path))
        raw_name = _js_get(frontmatter, "name")
        name = raw_name if js_truthy(raw_name) else parent_dir_name
        for error in _validate_name(name, rules):
            diagnostics.append(Diagnostic("warning", error, file_path))
        mismatch = rules.skill_name_parent_mismatch_warning
        if mismatch and name != parent_dir_name:
            message = mismatch.format(name=name, parent=parent_dir_name)
            diagnostics.append(Diagnostic("warning", message, file_path))
        if not js_truthy(description) or js_trim(description) == "":
            return None, diagnostics
        return (
            Skill(
                name=name,
                description=description,
                file_path=file_path,
                base_dir=skill_dir,
                disable_model_invocation=_js_get(frontmatter, "disable-model-invocation") is True,
                source=source,
            ),
            diagnostics,
        )
    except FrontmatterError as error:
        diagnostics.append(Diagnostic("warning", str(error), file_path, exact=error.exact))
    except _JsTypeError as error:
        diagnostics.append(Diagnostic("warning", str(error), file_path))
    except OSError as error:
        diagnostics.append(Diagnostic("warning", _node_fs_message(error, "open"), file_path))
    return None, diagnostics


def _node_fs_message(error: OSError, syscall: str) -> str:
    codes = {2: "ENOENT", 13: "EACCES", 21: "EISDIR", 20: "ENOTDIR"}
    code = codes.get(error.errno or 0, "EIO")
    text = {
        "ENOENT": "no such file or directory",
        "EACCES": "permission denied",
        "EISDIR": "illegal operation on a directory",
        "ENOTDIR": "not a directory",
    }.get(code, error.strerror or "i/o error")
    if code == "EISDIR":
        return f"{code}: {text}, read"
    return f"{code}: {text}, {syscall} '{error.filename}'"


def _collect_skill_entries(
    fs: FileSystem, directory: str, mode: str, ig: Ignore | None = None, root: str | None = None
) -> list[str]:
    """``collectSkillEntries``: skill files under an auto-discovered folder, in Pi's order."""
    entries: list[str] = []
    if not fs.exists(directory):
        return entries
    root = root or directory
    ig = ig or Ignore()
    _add_ignore_rules(fs, ig, directory, root)
    try:
        names = fs.listdir(directory)
        for name in names:
            if name != "SKILL.md":
                continue
            full = _join(directory, name)
            if fs.is_file(full) and not ig.ignores(_relative(root, full)):
                entries.append(full)
                return entries
        for name in names:
            if name.startswith(".") or name == "node_modules":
                continue
            full = _join(directory, name)
            is_dir, is_file = fs.is_dir(full), fs.is_file(full)
            rel = _relative(root, full)
            if (
                mode == "pi"
                and directory == root
                and is_file
                and name.endswith(".md")
                and not ig.ignores(rel)
            ):
                entries.append(full)
                continue
            if not is_dir:
                continue
            if ig.ignores(f"{rel}/"):
                continue
            entries.extend(_collect_skill_entries(fs, full, mode, ig, root))
    except (OSError, ValueError, TypeError):
        pass  # Pi swallows errors while scanning and keeps what it found so far
    return entries


def _load_skills_from_dir(
    fs: FileSystem,
    directory: str,
    source: str,
    include_root_files: bool,
    dialect: Dialect,
    ig: Ignore | None = None,
    root: str | None = None,
) -> tuple[list[Skill], list[Diagnostic]]:
    """``loadSkillsFromDirInternal`` (used for folders listed in settings)."""
    skills: list[Skill] = []
    diagnostics: list[Diagnostic] = []
    if not fs.exists(directory):
        return skills, diagnostics
    root = root or directory
    ig = ig or Ignore()
    _add_ignore_rules(fs, ig, directory, root)
    try:
        names = fs.listdir(directory)
        for name in names:
            if name != "SKILL.md":
                continue
            full = _join(directory, name)
            if not fs.is_file(full) or ig.ignores(_relative(root, full)):
                continue
            skill, diags = load_skill_from_file(fs, full, source, dialect=dialect)
            if skill:
                skills.append(skill)
            diagnostics.extend(diags)
            return skills, diagnostics
        for name in names:
            if name.startswith(".") or name == "node_modules":
                continue
            full = _join(directory, name)
            is_dir, is_file = fs.is_dir(full), fs.is_file(full)
            rel = _relative(root, full)
            if ig.ignores(f"{rel}/" if is_dir else rel):
                continue
            if is_dir:
                sub_skills, sub_diags = _load_skills_from_dir(
                    fs, full, source, False, dialect, ig, root
                )
                skills.extend(sub_skills)
                diagnostics.extend(sub_diags)
                continue
            if not is_file or not include_root_files or not name.endswith(".md"):
                continue
            skill, diags = load_skill_from_file(fs, full, source, dialect=dialect)
            if skill:
                skills.append(skill)
            diagnostics.extend(diags)
    except (OSError, ValueError, TypeError):
        pass
    return skills, diagnostics


def load_skills(
    fs: FileSystem,
    *,
    cwd: str,
    agent_dir: str,
    skill_paths: Iterable[str],
    dialect: Dialect = DEFAULT_DIALECT,
) -> tuple[list[Skill], list[Diagnostic]]:
    """``loadSkills({cwd, agentDir, skillPaths, includeDefaults: false})``."""
    rules = _prompt_rules(dialect)
    skill_map: dict[str, Skill] = {}
    real_paths: set[str] = set()
    diagnostics: list[Diagnostic] = []
    collisions: list[Diagnostic] = []
    user_dir = _join(agent_dir, "skills")
    project_dir = _join(cwd, rules.config_dir_name, "skills")

    def add(skills: list[Skill], diags: list[Diagnostic]) -> None:
        diagnostics.extend(diags)
        for skill in skills:
            real = fs.realpath(skill.file_path)
            if real in real_paths:
                continue
            existing = skill_map.get(skill.name)
            if existing:
                collisions.append(
                    Diagnostic(
                        "collision",
                        rules.skill_name_collision.format(skill.name),
                        skill.file_path,
                        {
                            "resourceType": "skill",
                            "name": skill.name,
                            "winnerPath": existing.file_path,
                            "loserPath": skill.file_path,
                        },
                    )
                )
            else:
                skill_map[skill.name] = skill
                real_paths.add(real)

    for raw in skill_paths:
        path = _normalize(raw.strip())
        if not fs.exists(path):
            diagnostics.append(Diagnostic("warning", rules.skill_path_missing, path))
            continue
        if _is_under(path, user_dir):
            source = "user"
        elif _is_under(path, project_dir):
            source = "project"
        else:
            source = "path"
        if fs.is_dir(path):
            add(*_load_skills_from_dir(fs, path, source, True, dialect))
        elif fs.is_file(path) and path.endswith(".md"):
            skill, diags = load_skill_from_file(fs, path, source, dialect=dialect)
            if skill:
                add([skill], diags)
            else:
                diagnostics.extend(diags)
        else:
            diagnostics.append(Diagnostic("warning", rules.skill_path_not_markdown, path))
    return list(skill_map.values()), diagnostics + collisions


def _prompt_rules(dialect: Dialect) -> PromptRules:
    if dialect.prompt is None:
        raise ValueError(f"dialect {dialect.version} has no system-prompt rules")
    return dialect.prompt


# ---------------------------------------------------------------------------------------------
# Context files, SYSTEM.md / APPEND_SYSTEM.md


def _load_context_file_from_dir(
    fs: FileSystem, directory: str, rules: PromptRules, looked: list[str]
) -> ContextFile | None:
    for name in rules.context_file_names:
        path = _join(directory, name)
        if fs.exists(path):
            try:
                return ContextFile(path, fs.read_text(path))
            except OSError:
                continue  # Pi warns on stderr and tries the next name
        looked.append(path)
    return None


def load_project_context_files(
    fs: FileSystem,
    *,
    cwd: str | None,
    agent_dir: str,
    dialect: Dialect = DEFAULT_DIALECT,
    looked: list[str] | None = None,
) -> list[ContextFile]:
    """``loadProjectContextFiles``: the agent dir's file, then ancestors outermost first.

    ``cwd`` None means a cwd that cannot be searched here (foreign path): only the agent dir.
    """
    rules = _prompt_rules(dialect)
    looked = looked if looked is not None else []
    files: list[ContextFile] = []
    seen: set[str] = set()
    global_file = _load_context_file_from_dir(fs, agent_dir, rules, looked)
    if global_file:
        files.append(global_file)
        seen.add(global_file.path)
    ancestors: list[ContextFile] = []
    current = cwd
    while current is not None:
        found = _load_context_file_from_dir(fs, current, rules, looked)
        if found and found.path not in seen:
            ancestors.insert(0, found)
            seen.add(found.path)
        if current == "/":
            break
        parent = posixpath.dirname(current)
        if parent == current:
            break
        current = parent
    files.extend(ancestors)
    return files


def _read_prompt_file(fs: FileSystem, path: str) -> str:
    """resolvePromptInput on a discovered file: its text, or the path itself if unreadable."""
    try:
        return fs.read_text(path)
    except OSError:
        return path


# ---------------------------------------------------------------------------------------------
# Settings and project trust


def _read_json_object(fs: FileSystem, path: str, diagnostics: list[Diagnostic]) -> dict[str, Any]:
    if not fs.exists(path):
        return {}
    try:
        text = fs.read_text(path)
    except OSError as error:
        diagnostics.append(Diagnostic("error", _node_fs_message(error, "open"), path))
        return {}
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as error:
        diagnostics.append(Diagnostic("error", f"invalid JSON: {error}", path, exact=False))
        return {}
    if not isinstance(value, dict):
        return {}
    skills = value.get("skills")
    # SettingsManager.migrateSettings: the old {customDirectories: [...]} form of "skills".
    if isinstance(skills, dict):
        dirs = skills.get("customDirectories")
        if isinstance(dirs, list) and dirs:
            value["skills"] = dirs
        else:
            del value["skills"]
    return value


def has_trust_requiring_project_resources(
    fs: FileSystem, cwd: str, home: str, rules: PromptRules
) -> bool:
    """``hasTrustRequiringProjectResources``: .pi/ entries, or .agents/skills up to the root."""
    user_agents_skills = _join(fs.realpath(home), ".agents", "skills")
    current = fs.realpath(cwd)
    config_dir = _join(current, rules.config_dir_name)
    if any(fs.exists(_join(config_dir, e)) for e in rules.trust_requiring_config_entries):
        return True
    while True:
        agents_skills = _join(current, ".agents", "skills")
        if agents_skills != user_agents_skills and fs.exists(agents_skills):
            return True
        parent = posixpath.dirname(current)
        if parent == current:
            return False
        current = parent


def _trust_store_decision(
    fs: FileSystem, agent_dir: str, cwd: str, diagnostics: list[Diagnostic], rules: PromptRules
) -> tuple[bool, str] | None:
    """The nearest saved decision in ``<agentDir>/trust.json`` for cwd or an ancestor."""
    path = _join(agent_dir, "trust.json")
    if not fs.exists(path):
        return None
    try:
        data = json.loads(fs.read_text(path))
    except (OSError, ValueError) as error:
        # Pi stops at startup with "Failed to read trust store ...".
        message = rules.trust_store_unreadable.format(path, error)
        diagnostics.append(Diagnostic("error", message, path, exact=False))
        return None
    if not isinstance(data, dict):
        diagnostics.append(Diagnostic("error", rules.trust_store_not_object.format(path), path))
        return None
    current = fs.realpath(cwd)
    while True:
        value = data.get(current)
        if value is True or value is False:
            return value, current
        parent = posixpath.dirname(current)
        if parent == current:
            return None
        current = parent


# ---------------------------------------------------------------------------------------------
# Settings patterns for skills (package-manager.js applyPatterns / isEnabledByOverrides) and the
# part of minimatch 10 (default options) they rely on: *, ?, [...], **, {a,b}, escapes, no dot
# files. Extglobs (+(a|b) ...) are not supported and match literally.


def _is_pattern(entry: str) -> bool:
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
    candidates = [_relative(base, file_path), posixpath.basename(file_path), file_path]
    if posixpath.basename(file_path) == "SKILL.md":
        parent = posixpath.dirname(file_path)
        candidates += [_relative(base, parent), posixpath.basename(parent), parent]
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


def _is_enabled_by_overrides(file_path: str, entries: list[str], base: str) -> bool:
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


def _apply_patterns(all_paths: list[str], patterns: list[str], base: str) -> set[str]:
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


# ---------------------------------------------------------------------------------------------
# Discovery


def discover_resources(
    *,
    cwd: str,
    agent_dir: str,
    home: str | None = None,
    project_trusted: bool | None = None,
    fs: Any = None,
    dialect: Dialect = DEFAULT_DIALECT,
    no_context_files: bool = False,
    no_skills: bool = False,
    skill_paths: Iterable[str] = (),
    system_prompt: str | None = None,
    append_system_prompt: Iterable[str] | None = None,
) -> PromptResources:
    """Find the context files, SYSTEM.md/APPEND_SYSTEM.md and skills Pi would load.

    Mirrors ``DefaultResourceLoader.reload()`` without extensions or packages.
    ``project_trusted`` None decides trust as Pi does without a UI (no trust-requiring
    resources, then trust.json, then ``defaultProjectTrust``; "ask" counts as untrusted, which
    is what Pi's print/RPC modes do, while the interactive TUI would have asked). ``home`` is
    ``$HOME`` for ``~/.agents/skills`` (default: this process's HOME).

    The keyword-only CLI equivalents: ``no_context_files`` (``-nc``), ``no_skills``
    (``--no-skills``), ``skill_paths`` (``--skill``), ``system_prompt``
    (``--system-prompt``) and ``append_system_prompt`` (each ``--append-system-prompt``); a
    prompt value naming an existing file is read, otherwise used as text. Relative paths are
    taken from the cwd (Pi takes them from its process cwd, normally the same).
    """
    rules = _prompt_rules(dialect)
    files = as_file_system(fs)
    skipped = list(getattr(files, "skipped", []))
    if is_foreign_path(agent_dir):
        raise ResourceError(f"agent dir {agent_dir!r} is not an absolute POSIX path")
    agent_dir = _normalize(agent_dir)
    if home is None:
        home = os.environ.get("HOME") or os.path.expanduser("~")
    home = _normalize(home)
    foreign = is_foreign_path(cwd)
    search_cwd = None if foreign else _normalize(cwd)
    diagnostics: list[Diagnostic] = []
    unknown: list[str] = []
    looked: list[str] = []

    # 1. Trust (main.js createRuntime + resolveProjectTrusted without a UI).
    global_settings = _read_json_object(files, _join(agent_dir, "settings.json"), diagnostics)
    if project_trusted is not None:
        trusted = project_trusted
        trust_source, trust_reason = "caller", "given by the caller"
    elif search_cwd is None:
        trusted = True
        trust_source = "foreign-cwd"
        trust_reason = (
            f"cwd {cwd} is not a path on this server: its project resources cannot be checked"
        )
    elif not has_trust_requiring_project_resources(files, search_cwd, home, rules):
        trusted, trust_source = True, "no-trust-requiring-resources"
        trust_reason = "the project has no .pi/ resources or .agents/skills that need trust"
    else:
        saved = _trust_store_decision(files, agent_dir, search_cwd, diagnostics, rules)
        default = global_settings.get("defaultProjectTrust")
        if saved is not None:
            trusted, trust_source = saved[0], "trust.json"
            trust_reason = f"trust.json entry for {saved[1]}: {str(saved[0]).lower()}"
        elif default in ("always", "never"):
            trusted, trust_source = default == "always", "defaultProjectTrust"
            trust_reason = f"settings.json defaultProjectTrust is {default!r}"
        else:
            trusted, trust_source = False, "ask-noninteractive"
            trust_reason = (
                "no saved decision and defaultProjectTrust is 'ask': print mode treats the "
                "project as untrusted; the interactive TUI would have asked"
            )
    for raw in skipped:
        unknown.append(f"uploaded file {raw} has no absolute POSIX path: not used")
    if search_cwd is None:
        unknown.append(
            f"cwd {cwd} is not a POSIX path on this server: context files, .pi/ resources and "
            ".agents/skills of the project and its ancestors were not searched"
        )

    project_dir = _join(search_cwd, rules.config_dir_name) if search_cwd else None
    gated = rules.project_trust_gates_resources
    project_allowed = project_dir is not None and (trusted or not gated)
    project_settings = (
        _read_json_object(files, _join(project_dir, "settings.json"), diagnostics)
        if project_allowed and project_dir
        else {}
    )

    # 2. Context files.
    context_files = (
        []
        if no_context_files
        else load_project_context_files(
            files, cwd=search_cwd, agent_dir=agent_dir, dialect=dialect, looked=looked
        )
    )

    def cli_path(value: str) -> str:
        expanded = _expand(value.strip(), home)
        if expanded.startswith("/"):
            return _normalize(expanded)
        return _normalize(_join(search_cwd or "/", expanded))

    def prompt_input(value: str | None) -> tuple[str | None, str | None]:
        """resolvePromptInput: (text, file it came from)."""
        if not value:
            return None, None
        # existsSync(value): no trimming, no tilde expansion.
        path = value if value.startswith("/") else _join(search_cwd or "/", value)
        if files.exists(path):
            return _read_prompt_file(files, path), path
        return value, None

    # 3. SYSTEM.md and APPEND_SYSTEM.md: project (trusted only), else the agent dir's.
    def discover(name: str) -> str | None:
        if project_allowed and project_dir:
            project_path = _join(project_dir, name)
            if files.exists(project_path):
                return project_path
            looked.append(project_path)
        global_path = _join(agent_dir, name)
        if files.exists(global_path):
            return global_path
        looked.append(global_path)
        return None

    system_text, system_path = prompt_input(
        system_prompt if system_prompt is not None else discover("SYSTEM.md")
    )
    append_sources = (
        list(append_system_prompt)
        if append_system_prompt is not None
        else [p for p in [discover("APPEND_SYSTEM.md")] if p]
    )
    append_texts: list[str] = []
    append_paths: list[str] = []
    for source in append_sources:
        text, path = prompt_input(source)
        if text is not None:
            append_texts.append(text)
        if path is not None:
            append_paths.append(path)

    # 4. Skills: settings entries, then auto-discovered folders, sorted by precedence.
    accumulator: dict[str, tuple[int, bool]] = {}

    def add_resource(path: str, rank: int, enabled: bool = True) -> None:
        if path and path not in accumulator:
            accumulator[path] = (rank, enabled)

    def settings_entries(settings: dict[str, Any]) -> list[str]:
        entries = settings.get("skills")
        if not isinstance(entries, list):
            return []
        return [e for e in entries if isinstance(e, str)]

    project_entries = settings_entries(project_settings)
    global_entries = settings_entries(global_settings)
    # resolveLocalEntries: files of the plain entries, enabled by the patterns of the same list.
    for entries, base, rank in ((project_entries, project_dir, 0), (global_entries, agent_dir, 2)):
        if not entries or base is None:
            continue
        plain = [e for e in entries if not _is_pattern(e)]
        patterns = [e for e in entries if _is_pattern(e)]
        for pattern in patterns:
            if re.search(r"[+@!*?]\(", pattern.lstrip("!+-")):
                unknown.append(
                    f"skills pattern {pattern!r} in {_join(base, 'settings.json')} uses an "
                    "extglob, which this engine matches literally"
                )
        all_files: list[str] = []
        for entry in plain:
            expanded = _expand(entry.strip(), home)
            path = _normalize(expanded if expanded.startswith("/") else _join(base, expanded))
            if not files.exists(path):
                continue
            if files.is_file(path):
                all_files.append(path)
            elif files.is_dir(path):
                all_files.extend(_collect_skill_entries(files, path, "pi"))
        enabled_by_patterns = _apply_patterns(all_files, patterns, base)
        for path in all_files:
            add_resource(path, rank, path in enabled_by_patterns)
    # Extensions can register tools, add resources and replace the prompt per run
    # (before_agent_start); none of that is modelled, so say when some are installed.
    extension_dirs = [_join(agent_dir, "extensions")]
    if project_allowed and project_dir:
        extension_dirs.append(_join(project_dir, "extensions"))
    for directory in extension_dirs:
        try:
            installed = files.is_dir(directory) and bool(files.listdir(directory))
        except OSError:
            installed = True  # there, but unreadable to us
        if installed:
            unknown.append(
                f"extensions in {directory} may add tools or change the prompt: not modelled"
            )
    for settings, label in ((project_settings, "project"), (global_settings, "global")):
        if settings.get("packages"):
            unknown.append(f"{label} settings list packages, whose skills are not modelled")

    # addAutoDiscoveredResources: each folder's files, switched off by the override patterns
    # (!, +, -) of the settings of the same scope, matched relative to that folder's base.
    user_agents_skills = _join(home, ".agents", "skills")

    def add_auto(directory: str, mode: str, rank: int, overrides: list[str], base: str) -> None:
        for found in _collect_skill_entries(files, directory, mode):
            add_resource(found, rank, _is_enabled_by_overrides(found, overrides, base))

    if project_allowed and search_cwd and project_dir:
        add_auto(_join(project_dir, "skills"), "pi", 1, project_entries, project_dir)
        for skills_dir in _ancestor_agents_skill_dirs(files, search_cwd):
            if skills_dir != user_agents_skills:
                add_auto(skills_dir, "agents", 1, project_entries, posixpath.dirname(skills_dir))
    add_auto(_join(agent_dir, "skills"), "pi", 3, global_entries, agent_dir)
    add_auto(user_agents_skills, "agents", 3, global_entries, posixpath.dirname(user_agents_skills))

    ordered = sorted(accumulator.items(), key=lambda item: item[1][0])  # stable, like JS sort
    enabled_paths: list[str] = []
    seen_real: set[str] = set()
    for path, (_rank, enabled) in ordered:
        real = files.realpath(path)
        if real in seen_real:
            continue
        seen_real.add(real)
        if enabled:
            enabled_paths.append(path)
    # mergePaths: --skill paths come last; a path already present (same real path) is dropped.
    merged: list[str] = []
    seen_real = set()
    for path in [*([] if no_skills else enabled_paths), *(cli_path(p) for p in skill_paths)]:
        real = files.realpath(path)
        if real not in seen_real:
            seen_real.add(real)
            merged.append(path)
    skills, skill_diagnostics = load_skills(
        files,
        cwd=search_cwd or "/nonexistent-foreign-cwd",
        agent_dir=agent_dir,
        skill_paths=merged,
        dialect=dialect,
    )
    diagnostics.extend(skill_diagnostics)

    return PromptResources(
        cwd=cwd,
        agent_dir=agent_dir,
        home=home,
        context_files=tuple(context_files),
        system_prompt=system_text,
        system_prompt_path=system_path,
        append_system_prompt=tuple(append_texts),
        append_system_prompt_paths=tuple(append_paths),
        skills=tuple(skills),
        diagnostics=tuple(diagnostics),
        project_trusted=trusted,
        trust_source=trust_source,
        trust_reason=trust_reason,
        not_found=tuple(dict.fromkeys(looked)),
        unknown=tuple(unknown),
    )


def _ancestor_agents_skill_dirs(fs: FileSystem, start: str) -> list[str]:
    """``collectAncestorAgentsSkillDirs``: cwd upwards to the git root (or the filesystem root)."""
    git_root: str | None = None
    probe = start
    while True:
        if fs.exists(_join(probe, ".git")):
            git_root = probe
            break
        parent = posixpath.dirname(probe)
        if parent == probe:
            break
        probe = parent
    dirs: list[str] = []
    current = start
    while True:
        dirs.append(_join(current, ".agents", "skills"))
        if git_root is not None and current == git_root:
            break
        parent = posixpath.dirname(current)
        if parent == current:
            break
        current = parent
    return dirs


__all__ = [
    "ContextFile",
    "Diagnostic",
    "FileSystem",
    "MappingFileSystem",
    "PromptResources",
    "RealFileSystem",
    "ResourceError",
    "Skill",
    "as_file_system",
    "discover_resources",
    "has_trust_requiring_project_resources",
    "load_project_context_files",
    "load_skill_from_file",
    "load_skills",
    "parse_frontmatter",
]
