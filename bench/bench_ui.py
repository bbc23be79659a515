"""Dashboard speed on a generated 20k-entry session with branches and compactions.

Figures (targets, on this 2-core machine):
- tree page: first response and warm, and its HTML size (target < 300 ms and < 1 MB). "First"
  is measured in fresh Python processes (subprocesses on the same test database), as a server
  worker meets a session for the first time: Django set up, one request served (the login page,
  so URLconf and middleware are loaded), then the tree page, timed. Two cases: the revision's
  tree index stored (what import, upload and jobs leave behind: the usual case), and no index
  stored at all (the very first open ever, which builds and stores it). Each is run several
  times (the machine is shared): the median and every run are reported;
- inspector for a deep entry on the active path: p50/p95 over repeated requests
  (target p50 < 50 ms, p95 < 150 ms).

Runs in a throw-away test database (created and dropped here), through Django's full request
stack (middleware, auth, sessions, templates) with the test client.

`python -m bench.bench_ui --first-open <session pk> <username>` is the subprocess's side.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.generator import large_session_generator

REPO = Path(__file__).resolve().parent.parent
ENTRIES = 20_000
INSPECTOR_RUNS = 60
FIRST_OPEN_RUNS = 5


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def _first_open(session_pk: int, username: str) -> dict[str, float]:
    """In a fresh process: set up Django, serve one unrelated page, then time the tree page."""
    started = time.perf_counter()
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.test.utils import setup_test_environment
    from django.urls import reverse

    setup_test_environment()
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(get_user_model().objects.get(username=username))
    client.get(reverse("login"))
    setup_ms = (time.perf_counter() - started) * 1000
    url = reverse("inspector:session", args=[session_pk])
    started, cpu = time.perf_counter(), time.process_time()
    response = client.get(url)
    first_ms = (time.perf_counter() - started) * 1000
    cpu_ms = (time.process_time() - cpu) * 1000
    if response.status_code != 200:
        raise RuntimeError(f"tree page answered {response.status_code}")
    return {
        "setup_ms": round(setup_ms, 1),
        "first_ms": round(first_ms, 1),
        "first_cpu_ms": round(cpu_ms, 1),
        "bytes": len(response.content),
    }


def _first_open_in_subprocess(session_pk: int, username: str) -> dict[str, float]:
    from django.db import connection

    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        raise RuntimeError("the fresh-process figures need PostgreSQL (DATABASE_URL)")
    # The same server, the test database this run created.
    base, _, _ = url.rpartition("/")
    env = {**os.environ, "DATABASE_URL": f"{base}/{connection.settings_dict['NAME']}"}
    done = subprocess.run(
        [sys.executable, "-m", "bench.bench_ui", "--first-open", str(session_pk), username],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"first-open subprocess failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> dict[str, Any]:
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import setup_test_environment, teardown_test_environment
    from django.urls import reverse

    from contextlab.inspector.models import TreeIndex
    from contextlab.inspector.selectors import clear_cache, session_index
    from contextlab.inspector.services import tree_index_refresh
    from contextlab.library.importer import import_session_file

    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    work = Path(tempfile.mkdtemp(prefix="bench-ui-"))
    settings.CONTEXTLAB_BLOB_DIR = work / "blobs"
    try:
        path = work / "large.jsonl"
        large_session_generator().write_session(
            path,
            entries=ENTRIES,
            target_bytes=20 * 1024 * 1024,
            branches=20,
            compactions=5,
            seed=1,
            session_id="bench-ui-20k",
            cwd="/home/dev/projects/pelican",
        )
        imported = import_session_file(path=path, index_search=False)
        session = imported.session
        assert session is not None
        user = get_user_model().objects.create_user("bench", password="bench-password-1")
        # Committed: the subprocesses read this database through their own connections.
        started = time.perf_counter()
        tree_index_refresh(session_id=session.pk)  # what import_sessions / upload / jobs do
        index_store_ms = (time.perf_counter() - started) * 1000

        stored_runs = [
            _first_open_in_subprocess(session.pk, "bench") for _ in range(FIRST_OPEN_RUNS)
        ]
        unstored_runs = []
        for _ in range(FIRST_OPEN_RUNS):
            TreeIndex.objects.all().delete()
            unstored_runs.append(_first_open_in_subprocess(session.pk, "bench"))

        client = Client(HTTP_HOST="127.0.0.1")
        client.force_login(user)
        url = reverse("inspector:session", args=[session.pk])
        # In this process: nothing cached in memory, the index stored (templates compiled by now
        # or not: this process has served nothing yet either).
        clear_cache()
        started, cpu = time.perf_counter(), time.process_time()
        cold = client.get(url)
        cold_ms = (time.perf_counter() - started) * 1000
        cold_cpu_ms = (time.process_time() - cpu) * 1000
        assert cold.status_code == 200, cold.status_code
        warm_times = []
        for _ in range(5):
            started = time.perf_counter()
            warm = client.get(url)
            warm_times.append((time.perf_counter() - started) * 1000)
        tree_only = client.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="tree")

        index = session_index(session)
        deep = index.path_ids[int(len(index.path_ids) * 0.9)]
        depth = len(index.path(deep))
        times, cpu_times = [], []
        for _ in range(INSPECTOR_RUNS):
            started, cpu = time.perf_counter(), time.process_time()
            response = client.get(
                url, {"entry": deep}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="inspector"
            )
            times.append((time.perf_counter() - started) * 1000)
            cpu_times.append((time.process_time() - cpu) * 1000)
            assert response.status_code == 200
        # Different deep entries, each asked for the first time (no per-entry reuse).
        distinct = []
        for step in range(1, 11):
            other = index.path_ids[int(len(index.path_ids) * (0.5 + step * 0.045))]
            started = time.perf_counter()
            client.get(url, {"entry": other}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="inspector")
            distinct.append((time.perf_counter() - started) * 1000)
        chart_started = time.perf_counter()
        chart = client.get(reverse("inspector:chart", args=[session.pk]))
        chart_ms = (time.perf_counter() - chart_started) * 1000
        return {
            "entries": session.entry_count,
            "branches": session.branch_count,
            "compactions": session.compaction_count,
            "file_mb": round(path.stat().st_size / 1e6, 1),
            "tree_index_store_after_import_ms": round(index_store_ms, 1),
            "tree_page_first_open_fresh_process_ms_median": statistics.median(
                r["first_ms"] for r in stored_runs
            ),
            "tree_page_first_open_fresh_process_runs_ms": [r["first_ms"] for r in stored_runs],
            "tree_page_first_open_fresh_process_cpu_ms_median": statistics.median(
                r["first_cpu_ms"] for r in stored_runs
            ),
            "tree_page_first_open_no_stored_index_ms_median": statistics.median(
                r["first_ms"] for r in unstored_runs
            ),
            "tree_page_first_open_no_stored_index_runs_ms": [r["first_ms"] for r in unstored_runs],
            "fresh_process_django_setup_ms_median": statistics.median(
                r["setup_ms"] for r in stored_runs
            ),
            "tree_page_cold_in_process_ms": round(cold_ms, 1),
            "tree_page_cold_in_process_cpu_ms": round(cold_cpu_ms, 1),
            "tree_page_warm_ms_median": round(statistics.median(warm_times), 1),
            "tree_page_bytes": len(warm.content),
            "tree_partial_bytes": len(tree_only.content),
            "tree_rows_sent": warm.content.count(b'class="trow'),
            "inspector_deep_entry_depth": depth,
            "inspector_p50_ms": round(_percentile(times, 0.5), 1),
            "inspector_p95_ms": round(_percentile(times, 0.95), 1),
            "inspector_cpu_p50_ms": round(_percentile(cpu_times, 0.5), 1),
            "inspector_distinct_entries_p50_ms": round(_percentile(distinct, 0.5), 1),
            "load_average_1m": round(os.getloadavg()[0], 2),
            "inspector_bytes": len(response.content),
            "chart_ms": round(chart_ms, 1),
            "chart_points": chart.content.count(b'"leaf"'),
            "targets": "tree < 300 ms and < 1 MB; inspector p50 < 50 ms, p95 < 150 ms",
        }
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
        teardown_test_environment()


if __name__ == "__main__":
    if sys.argv[1:2] != ["--first-open"] or len(sys.argv) != 4:
        raise SystemExit("usage: python -m bench.bench_ui --first-open <session pk> <username>")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextlab.settings")
    print(json.dumps(_first_open(int(sys.argv[2]), sys.argv[3])))
