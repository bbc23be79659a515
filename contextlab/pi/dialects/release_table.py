"""The generated release table (``releases_data.py``) folded into one release's values.

Kept apart from ``releases`` (which builds dialects on the engine) so that detection can read the
table without importing the request builder.
"""

from __future__ import annotations

import argparse
from functools import cache
from typing import Any

from contextlab.pi.dialects import releases_data as data

__all__ = ["RELEASES", "parse_release", "release_argument", "release_values"]

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


def _resolve(ref: Any) -> Any:
    if isinstance(ref, int):
        return data.TEXTS[ref]
    if isinstance(ref, list):
        return [_resolve(item) for item in ref]
    kind, value = ref
    return data.TOOL_DEFS[value] if kind == "tool" else value


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
