"""A PyYAML loader that reads frontmatter as the ``yaml`` package (YAML 1.2 core schema) does."""

from __future__ import annotations

import re
from typing import Any, cast

import yaml

from contextlab.pi.jsutil import number_to_string

# Frontmatter (dist/utils/frontmatter.js) with YAML 1.2 core-schema scalars, as the `yaml`
# package parses them: yes/no/on/off stay strings, no timestamps, no sexagesimal numbers.


_LINE_BREAKS = "\r\n\x85\u2028\u2029"
_BLANK_OR_END = "\0 \t" + _LINE_BREAKS


# SafeLoader is Any to mypy where types-PyYAML (requirements-dev.txt) is not installed yet.
class CoreSchemaLoader(yaml.SafeLoader):  # type: ignore[misc, unused-ignore]
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
    return _construct_mapping(loader, cast(yaml.MappingNode, node))


CoreSchemaLoader.yaml_implicit_resolvers = {}
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
    CoreSchemaLoader.add_implicit_resolver(_tag, re.compile(_regex), list(_first))


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


CoreSchemaLoader.add_constructor("tag:yaml.org,2002:int", _construct_core_int)
CoreSchemaLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
CoreSchemaLoader.add_multi_constructor("!", _construct_local_tag)
