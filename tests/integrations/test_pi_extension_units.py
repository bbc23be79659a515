"""The extension's own unit tests (node --test under Node 24, TypeScript run by type stripping)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.integrations.installed import require_node

EXTENSION = Path(__file__).resolve().parents[2] / "integrations" / "pi-extension"


def test_the_extension_unit_tests_pass_under_node():
    node = require_node()  # skips, or under CI fails, when Node is missing
    result = subprocess.run(
        [node, "--test", "test/*.test.ts"],
        cwd=EXTENSION,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "# fail 0" in result.stdout or "ℹ fail 0" in result.stdout
