"""The generated release table (``releases_data.py``) folded into one release's values.

Kept apart from ``releases`` (which builds dialects on the engine) so that detection can read the
table without importing the request builder.
"""

from __future__ import annotations

import argparse
from functools import cache
from typing import Any

from contextlab.pi.dialects import releases_data as data

__all__ = ["RELEASES", "ReleaseTexts", "parse_release", "release_argument", "release_values"]

RELEASES: tuple[str, ...] = data.RELEASES


def parse_release(value: str) -> str:
    """``X.Y.Z`` of a release in the table; ``ValueError`` naming the known range otherwise."""
    if value not in RELEASES:
        raise ValueError(
            f"unknown Pi release {value!r}: the release table holds {len(RELEASES)} releases, "
            f"{RELEASES[0]} to {RELEASES[-1]}"
        )
    return value


def release_argument(value: str) -> str:
    """``--pi-version``'s argparse type: a release of the table, else a usage error naming it."""
    try:
        return parse_release(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _tool(value: Any) -> Any:
    """A ``TOOL_DEFS`` definition with its texts: an int in it is an index into ``TEXTS`` (a
    definition holds no numbers; a boolean stays)."""
    if type(value) is int:
        return data.TEXTS[value]
    if isinstance(value, dict):
        return {k: _tool(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_tool(v) for v in value]
    return value


def _resolve(ref: Any) -> Any:
    if isinstance(ref, int):
        return data.TEXTS[ref]
    if isinstance(ref, list):
        return [_resolve(item) for item in ref]
    kind, value = ref
    return _tool(data.TOOL_DEFS[value]) if kind == "tool" else value


@cache
def release_values(version: str) -> dict[str, Any]:
    """Every value the table holds for ``version`` (keys as in ``releases_data.CHANGES``)."""
    parse_release(version)
    values: dict[str, Any] = {}
    for release, changes in data.CHANGES:
        for key, ref in changes.items():
            values[key] = _resolve(ref)
        if release == version:
            break
    return {k: v for k, v in values.items() if v is not None}


class ReleaseTexts:
    """One release's texts from the table under the names the extractors give them
    (``texts.BASH_RAN_OPEN``), and its built-in tool definitions in registry order
    (``texts.TOOLS``): what the proved dialects (0.73.1, 0.80.2, 1.6.0) are built from, so that
    each text is stored once, in ``releases_data.py``. A text the release does not have is an
    ``AttributeError``."""

    def __init__(self, version: str) -> None:
        values = release_values(version)
        self.version = version
        self.TOOLS: list[dict[str, Any]] = [values[f"TOOL.{name}"] for name in values["TOOLS"]]
        self._texts: dict[str, str] = {
            k: v for k, v in values.items() if "." not in k and isinstance(v, str)
        }

    def __getattr__(self, name: str) -> str:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._texts[name]
        except KeyError:
            raise AttributeError(f"Pi {self.version} has no text {name}") from None
