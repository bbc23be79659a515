"""Install every published Pi release (0.70.0 to 1.6.0, both package names) outside the repository.

    python tools/pi_releases.py list                 # the releases, oldest first
    python tools/pi_releases.py install [X.Y.Z ...]  # into $PI_RELEASES (default /work/pi-releases)

Each release goes to ``<PI_RELEASES>/<version>/`` with a ``package.json`` that pins the coding
agent and its sibling packages (npm ``overrides``) to that release — or, for a sibling that never
published it, to its last earlier release (1.0.3 depends on a ``chord`` 1.0.3 that was never
released) — installed with the system ``npm --ignore-scripts``. Nothing here is committed: the
generated release table (``tools/gen_release_table.py``) is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path

ROOT = Path(os.environ.get("PI_RELEASES", "/work/pi-releases"))
OLD_SCOPE = "@mariozechner"
NEW_SCOPE = "@earendil-works"
FIRST, LAST = (0, 70, 0), (1, 6, 0)
SIBLINGS = (
    "pi-ai",
    "pi-agent-core",
    "pi-tui",
    "pi-codemode",
    "pi-mcp",
    "pi-schema",
    "pi-telemetry",
    "chord",
    "pi-client",
    "pi-protocol",
    "pi-server",
)
# Packages a release's dist imports without declaring them (0.85.0's dist/main.js imports
# dist/experimental/server.js, which imports @earendil-works/pi-server, missing from its
# package.json): installed beside it, pinned like the siblings.
UNDECLARED = {"0.85.0": ("pi-server",)}


def vkey(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


@cache
def published(package: str) -> tuple[str, ...]:
    out = subprocess.run(
        ["npm", "view", package, "versions", "--json"], capture_output=True, text=True
    )
    if out.returncode != 0:
        return ()
    versions = json.loads(out.stdout)
    if isinstance(versions, str):
        versions = [versions]
    return tuple(v for v in versions if "-" not in v)


def scope_of(version: str) -> str:
    return OLD_SCOPE if vkey(version) < (0, 74, 0) else NEW_SCOPE


def releases() -> list[str]:
    found = set()
    for scope in (OLD_SCOPE, NEW_SCOPE):
        for v in published(f"{scope}/pi-coding-agent"):
            if FIRST <= vkey(v) <= LAST and scope_of(v) == scope:
                found.add(v)
    return sorted(found, key=vkey)


def package_json(version: str) -> dict[str, object]:
    scope = scope_of(version)
    overrides = {}
    for sibling in SIBLINGS:
        earlier = [v for v in published(f"{scope}/{sibling}") if vkey(v) <= vkey(version)]
        if earlier:
            overrides[f"{scope}/{sibling}"] = max(earlier, key=vkey)
    return {
        "name": f"pi-release-{version.replace('.', '-')}",
        "private": True,
        "type": "module",
        "dependencies": {
            f"{scope}/pi-coding-agent": version,
            **{
                f"{scope}/{name}": overrides[f"{scope}/{name}"]
                for name in UNDECLARED.get(version, ())
            },
        },
        "overrides": overrides,
    }


def agent_dir(version: str) -> Path:
    return ROOT / version / "node_modules" / scope_of(version) / "pi-coding-agent"


def install(version: str) -> Path:
    target = ROOT / version
    done = target / "node_modules" / ".installed"
    if done.exists():
        return target
    target.mkdir(parents=True, exist_ok=True)
    (target / "package.json").write_text(json.dumps(package_json(version), indent=2) + "\n")
    proc = subprocess.run(
        ["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=target,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"npm install {version} failed:\n{proc.stderr}")
    done.write_text(version + "\n")
    return target


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("list", "install"):
        raise SystemExit(__doc__)
    if argv[0] == "list":
        print("\n".join(releases()))
        return 0
    for version in argv[1:] or releases():
        print(version, install(version), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
