"""Heavy turns at a lower CPU priority (contextlab.heavy): what the other users' pages gain.

Two processes build deep turns of a large session without pause (each turn 0.2-1 s of CPU)
while a third opens ordinary turns one after another, as a reviewer clicking through a session
of a few thousand entries does (each opened cold: its projection not kept). On 2 cores the two
builders and the reviewer want three: with the deep turns built inline the reviewer gets about
two thirds of a core, with them on the lane (nice +10) nearly a whole one. Measured side by side
in one run, rounds alternated (inline, lane, inline, lane), plus the reviewer alone for the
floor; reported: the reviewer's p50 / p95 each way and their ratio (lane / inline: below 1 is
the gain), and the deep turns built per second each way (what the builders give up).

The load test (`make bench-load`) mixes these pages with everything else at a rate where three
CPU-bound requests rarely coincide on this machine: its p95 moved within its run-to-run noise
either way. This benchmark isolates the case the lane exists for.

Environment: BENCH_HEAVY_BYTES (the large session, default 150M), BENCH_HEAVY_SECONDS (each
round, default 40), BENCH_HEAVY_ROUNDS (per mode, default 2).
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.bench_import import REPO, parse_size, scratch_database

USER = "bench-heavy"
HTMX_INSPECTOR = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "inspector"}


def _sessions(directory: Path, size: int) -> None:
    sys.path.insert(0, str(REPO / "tools"))
    from gen_large_session import write_session

    write_session(
        directory / "large.jsonl",
        entries=max(2000, size // 10_000),
        target_bytes=size,
        branches=5,
        compactions=2,
        seed=999,
        session_id=None,
        cwd="/home/dev/large",
    )
    for seed in (1, 2, 3):
        write_session(
            directory / f"ordinary-{seed}.jsonl",
            entries=4000,
            target_bytes=2_400_000,
            branches=5,
            compactions=2,
            seed=seed,
            session_id=None,
            cwd=f"/home/dev/ordinary-{seed}",
        )


def _import(directory: Path) -> None:
    from django.contrib.auth import get_user_model

    from contextlab.library.importer import import_session_file

    for path in sorted(directory.glob("*.jsonl")):
        result = import_session_file(path=path, index_search=False)
        assert result.session is not None, result
    get_user_model().objects.create_superuser(USER, "bench@example.com", "not-used-0123456789")


def _child(role: str, nice: int, seconds: float) -> None:
    """One builder (``heavy``) or the reviewer (``ordinary``): its figures as JSON on stdout."""
    import logging
    import warnings

    import django

    django.setup()
    logging.getLogger("axes").setLevel(logging.WARNING)  # a sign-in per process, not news
    warnings.filterwarnings("ignore", message="No directory at")  # no collectstatic needed
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.test.utils import override_settings

    from contextlab.inspector import computed, selectors
    from contextlab.library.models import Entry, Session

    computed.found = lambda key: None  # every turn built, none read from the shared cache
    client = Client()
    client.force_login(get_user_model().objects.get(username=USER))
    random.seed(os.getpid())

    def ids(session: Session) -> list[str]:
        rows = Entry.objects.filter(revision_id=session.current_revision_id).order_by("seq")
        return list(rows.values_list("entry_id", flat=True))

    def turn(session_pk: int, entry: str) -> None:
        url = f"/sessions/{session_pk}/?entry={entry}&tab=context"
        assert client.get(url, **HTMX_INSPECTOR).status_code == 200

    with override_settings(CONTEXTLAB_HEAVY_NICE=nice):
        if role == "heavy":
            large = Session.objects.get(source_path__endswith="large.jsonl")
            # Deep turns: the second half of the file (paths of thousands of entries).
            entries = ids(large)
            deep = entries[len(entries) // 2 :: max(1, len(entries) // 80)]
            turn(large.pk, deep[0])
            built, started = 0, time.monotonic()
            while time.monotonic() - started < seconds:
                turn(large.pk, random.choice(deep))
                built += 1
            print(json.dumps({"built": built, "seconds": time.monotonic() - started}))
            return
        work = [
            (session.pk, entry)
            for session in Session.objects.exclude(source_path__endswith="large.jsonl")
            for entry in ids(session)[::40]
        ]
        random.shuffle(work)
        for session_pk, entry in work[:3]:
            turn(session_pk, entry)  # indexes loaded, as a running worker has them
        time.sleep(2)  # the builders are at work
        times: list[float] = []
        started = time.monotonic()
        for session_pk, entry in work[3:]:
            if time.monotonic() - started > seconds - 4:
                break
            for index in list(selectors._cache.values()):
                index.memo.clear()  # opened cold
            began = time.perf_counter()
            turn(session_pk, entry)
            times.append(time.perf_counter() - began)
            time.sleep(0.05)  # a reviewer's pause
        print(json.dumps({"times": times}))


def _round(url: str, nice: int, seconds: float, builders: int) -> dict[str, Any]:
    env = dict(os.environ, DATABASE_URL=url)
    command = [sys.executable, "-m", "bench.bench_heavy", "--child"]
    heavy = [
        subprocess.Popen(
            [*command, "heavy", str(nice), str(seconds + 4)],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(builders)
    ]
    reviewer = subprocess.run(
        [*command, "ordinary", "0", str(seconds)],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    built = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in heavy]
    times = json.loads(reviewer.stdout.strip().splitlines()[-1])["times"]
    return {"times": times, "built_per_s": sum(b["built"] / b["seconds"] for b in built)}


def _summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "turns": len(ordered),
        "p50_ms": round(statistics.median(ordered) * 1000, 1),
        "p95_ms": round(ordered[max(0, int(len(ordered) * 0.95) - 1)] * 1000, 1),
    }


def main() -> dict[str, Any]:
    size = parse_size(os.environ.get("BENCH_HEAVY_BYTES", "150M"))
    seconds = float(os.environ.get("BENCH_HEAVY_SECONDS", "40"))
    rounds = int(os.environ.get("BENCH_HEAVY_ROUNDS", "2"))
    with scratch_database() as url, tempfile.TemporaryDirectory() as tmp:
        if not url:
            return {"skipped": "needs PostgreSQL (DATABASE_URL)"}
        _sessions(Path(tmp), size)
        _import(Path(tmp))
        alone = _round(url, 0, seconds, builders=0)
        runs: dict[str, list[dict[str, Any]]] = {"inline": [], "lane": []}
        for _ in range(rounds):
            runs["inline"].append(_round(url, 0, seconds, builders=2))
            runs["lane"].append(_round(url, 10, seconds, builders=2))
    figures: dict[str, Any] = {
        "cores": os.cpu_count(),
        "large_session_bytes": size,
        "round_seconds": seconds,
        "rounds_per_mode": rounds,
        "reviewer_alone": _summary(alone["times"]),
    }
    for mode, done in runs.items():
        figures[f"reviewer_beside_2_builders_{mode}"] = _summary(
            [t for run in done for t in run["times"]]
        )
        figures[f"deep_turns_per_s_{mode}"] = round(
            statistics.mean(run["built_per_s"] for run in done), 2
        )
    inline, lane = (
        figures["reviewer_beside_2_builders_inline"],
        figures["reviewer_beside_2_builders_lane"],
    )
    figures["ratio_reviewer_p50_lane_vs_inline"] = round(lane["p50_ms"] / inline["p50_ms"], 2)
    figures["ratio_reviewer_p95_lane_vs_inline"] = round(lane["p95_ms"] / inline["p95_ms"], 2)
    figures["ratio_deep_turns_lane_vs_inline"] = round(
        figures["deep_turns_per_s_lane"] / figures["deep_turns_per_s_inline"], 2
    )
    return figures


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    else:
        print(json.dumps(main(), indent=2))
