"""Dashboard speed on a generated 20k-entry session with branches and compactions.

Figures (targets from issue 4, on this 2-core machine):
- tree page: first response (cold: nothing cached in the process) and warm, and its HTML size
  (target < 300 ms and < 1 MB);
- inspector for a deep entry on the active path: p50/p95 over repeated requests
  (target p50 < 50 ms, p95 < 150 ms).

Runs in a throw-away test database (created and dropped here), through Django's full request
stack (middleware, auth, sessions, templates) with the test client.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
ENTRIES = 20_000
INSPECTOR_RUNS = 60


def _generator() -> Any:
    path = REPO / "tools" / "gen_large_session.py"
    spec = importlib.util.spec_from_file_location("gen_large_session", path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"{path} is missing")
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_large_session"] = module
    spec.loader.exec_module(module)
    return module


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def main() -> dict[str, Any]:
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import setup_test_environment, teardown_test_environment
    from django.urls import reverse

    from contextlab.inspector.selectors import clear_cache, session_index
    from contextlab.library.services import import_session_file

    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    work = Path(tempfile.mkdtemp(prefix="bench-ui-"))
    settings.CONTEXTLAB_BLOB_DIR = work / "blobs"
    try:
        path = work / "large.jsonl"
        _generator().write_session(
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
        client = Client(HTTP_HOST="127.0.0.1")
        client.force_login(user)
        url = reverse("inspector:session", args=[session.pk])

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
            "tree_page_cold_ms": round(cold_ms, 1),
            "tree_page_cold_cpu_ms": round(cold_cpu_ms, 1),
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
