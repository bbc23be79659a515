"""Projection speed: every entry of the real large session as leaf, ours next to Pi 0.80.2's.

Both sides compute, for each of the session's entries as leaf, the context
(``buildSessionContext``), its LLM messages (``convertToLlm``) and what the provider receives
(pi-ai ``transformMessages`` for the leaf's model), without serialising anything:

- Pi (Node 24, tests/conformance/oracle/project.mjs "bench" mode): re-walks the path per leaf;
- contextlab (``contextlab.pi.request.iter_leaf_projections``): one depth-first walk sharing a
  parent's work with its children.

Each side runs BENCH_RUNS times (default 5) in one process; the median is compared (Node's JIT
warms up over the runs, as our caches do not carry over between runs). Parsing is timed apart.
Target: ratio ours/Pi <= 1 (docs/pi-engine.md, "The request at a leaf").
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
REAL_SESSION = REPO / "tests" / "fixtures" / "real" / "large-session.jsonl"
NOW_MS = 1_767_225_600_000


def _ours(path: Path, runs: int) -> dict[str, Any]:
    from contextlab.pi.request import iter_leaf_projections
    from contextlab.pi.session import parse_session_file

    started = time.perf_counter()
    parsed = parse_session_file(path)
    load = time.perf_counter() - started
    seconds = []
    leaves = messages = 0
    for _ in range(runs):
        started = time.perf_counter()
        leaves = messages = 0
        for projection in iter_leaf_projections(parsed.entries, now_ms=NOW_MS):
            leaves += 1
            messages += len(projection.llm) + len(projection.sent or ())
        seconds.append(time.perf_counter() - started)
    return {"seconds": seconds, "loadSeconds": load, "leaves": leaves, "messages": messages}


def _pi(path: Path, runs: int) -> dict[str, Any]:
    sys.path.insert(0, str(REPO))
    from tests.conformance.conftest import run_oracle

    with tempfile.TemporaryDirectory(prefix="contextlab-bench-") as scratch:
        copy = Path(scratch) / "session.jsonl"
        shutil.copyfile(path, copy)
        payload = {"file": str(copy), "nowMs": NOW_MS, "mode": "bench", "runs": runs}
        result: dict[str, Any] = run_oracle("project.mjs", payload)
        return result


def main() -> dict[str, Any]:
    runs = int(os.environ.get("BENCH_RUNS", "5"))
    path = Path(os.environ.get("BENCH_PROJECTION_FILE", str(REAL_SESSION)))
    ours = _ours(path, runs)
    pi = _pi(path, runs)
    assert ours["leaves"] == pi["leaves"], (ours["leaves"], pi["leaves"])
    assert ours["messages"] == pi["messages"], (ours["messages"], pi["messages"])
    ours_median = statistics.median(ours["seconds"])
    pi_median = statistics.median(pi["seconds"])
    return {
        "file": str(path),
        "leaves": ours["leaves"],
        "messages_projected": ours["messages"],
        "runs": runs,
        "ours_seconds_median": round(ours_median, 4),
        "pi_seconds_median": round(pi_median, 4),
        "ours_seconds_first": round(ours["seconds"][0], 4),
        "pi_seconds_first": round(pi["seconds"][0], 4),
        "ratio_ours_over_pi": round(ours_median / pi_median, 3),
        "target_met": ours_median <= pi_median,
        "ours_parse_seconds": round(ours["loadSeconds"], 4),
        "pi_parse_seconds": round(pi["loadSeconds"], 4),
    }
