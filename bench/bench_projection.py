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

``pi_1_x``: the same session as Pi 1.x would have written it (``as_1x_session``: the
persisted system message first, a prompt patch and two context edits on the way), every entry as
leaf through Pi 1.6.0's ``buildSessionProjection`` + ``convertToLlm`` + system replay
(tests/conformance/oracle-1.6.0/bench_project.mjs) next to
``contextlab.pi.dialects.pi_1_x.iter_leaf_projections_1x``. Target: ratio ours/Pi <= 0.2.
"""

from __future__ import annotations

import itertools
import json
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


def as_1x_session(source: Path, target: Path) -> None:
    """``source`` rewritten as a Pi 1.x session: the first system message of the recorded 1.6.0
    ``patches`` corpus becomes the root, a section patch is inserted after a third of the entries,
    and two context edits (omitting a reply, replacing a tool result or question) after two
    thirds; each insertion goes between an entry and its children."""
    corpus = REPO / "tests" / "conformance" / "corpus-1.6.0" / "patches" / "session.jsonl"
    recorded = [json.loads(line) for line in corpus.read_text().splitlines()]
    systems = [e for e in recorded if e.get("message", {}).get("role") == "system"]
    lines = source.read_text().splitlines()
    header, entries = lines[0], [json.loads(line) for line in lines[1:] if line.strip()]
    root = {**systems[0], "id": "sys00001", "parentId": None}
    for entry in entries:
        if entry.get("parentId") is None:
            entry["parentId"] = root["id"]
    inserted: dict[str, list[dict[str, Any]]] = {}

    def insert_after(anchor: dict[str, Any], chain: list[dict[str, Any]]) -> None:
        chain[0]["parentId"] = anchor["id"]
        for previous, entry in itertools.pairwise(chain):
            entry["parentId"] = previous["id"]
        for entry in entries:
            if entry.get("parentId") == anchor["id"]:
                entry["parentId"] = chain[-1]["id"]
        inserted[anchor["id"]] = chain

    messages = [e for e in entries if e.get("type") == "message"]
    insert_after(messages[len(messages) // 3], [{**systems[1], "id": "sys00002"}])
    anchor = messages[2 * len(messages) // 3]
    edits = []
    for n, message in enumerate(m for m in messages[: messages.index(anchor)][-6:]):
        role = message["message"].get("role")
        if role not in ("user", "assistant", "toolResult") or len(edits) == 2:
            continue
        edits.append(
            {
                "type": "context_edit",
                "id": f"edit{n:04d}",
                "timestamp": anchor.get("timestamp"),
                "targetId": message["id"],
                "replacement": None if role == "assistant" else {"content": "[edited]"},
            }
        )
    insert_after(anchor, edits)
    out = [root]
    for entry in entries:
        out.append(entry)
        out.extend(inserted.get(entry["id"], []))
    text = "\n".join([header, *(json.dumps(e, ensure_ascii=False) for e in out)])
    target.write_text(text + "\n")


def _ours_1x(path: Path, runs: int) -> dict[str, Any]:
    from contextlab.pi.dialects.pi_1_x import iter_leaf_projections_1x
    from contextlab.pi.session import SessionTree, parse_session_file

    started = time.perf_counter()
    parsed = parse_session_file(path)
    load = time.perf_counter() - started
    seconds = []
    figures: dict[str, int] = {}
    for _ in range(runs):
        started = time.perf_counter()
        figures = {"leaves": 0, "messages": 0, "promptChars": 0, "tools": 0}
        for leaf in iter_leaf_projections_1x(parsed.entries, SessionTree(parsed.entries)):
            figures["leaves"] += 1
            figures["messages"] += len(leaf.messages)
            figures["promptChars"] += len(leaf.system_prompt.encode("utf-16-le")) // 2
            figures["tools"] += len(leaf.tools)
        seconds.append(time.perf_counter() - started)
    return {"seconds": seconds, "loadSeconds": load, **figures}


def bench_1x(source: Path, runs: int) -> dict[str, Any]:
    sys.path.insert(0, str(REPO))
    from tests.conformance.conftest import run_oracle

    with tempfile.TemporaryDirectory(prefix="contextlab-bench-1x-") as scratch:
        path = Path(scratch) / "session-1x.jsonl"
        as_1x_session(source, path)
        ours = _ours_1x(path, runs)
        copy = Path(scratch) / "copy.jsonl"
        shutil.copyfile(path, copy)
        pi: dict[str, Any] = run_oracle(
            "bench_project.mjs", {"file": str(copy), "runs": runs}, version="1.6.0"
        )
    for key in ("leaves", "messages", "promptChars", "tools"):
        assert ours[key] == pi[key], (key, ours[key], pi[key])
    ours_median = statistics.median(ours["seconds"])
    pi_median = statistics.median(pi["seconds"])
    return {
        "leaves": ours["leaves"],
        "messages_projected": ours["messages"],
        "ours_seconds_median": round(ours_median, 4),
        "pi_seconds_median": round(pi_median, 4),
        "ratio_ours_over_pi": round(ours_median / pi_median, 3),
        "target_met": ours_median <= 0.2 * pi_median,
    }


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
        "pi_1_x": bench_1x(path, runs),
    }
