"""Load test: gunicorn (4 workers) on PostgreSQL, a library of many sessions plus one large one,
simulated users browsing for minutes. Not part of `make test` or `make bench`; run it with

    make bench-load            # or: python -m bench.load [--sessions 50] [--entries 200000]
                               #        [--big 500M] [--users 50] [--minutes 5] [--workers 4]
                               #        [--workload ordinary|adversarial|both] [--runs 3]

It needs DATABASE_URL (a PostgreSQL server: a database `contextlab_load`, or $LOAD_DATABASE, is
created there and dropped at the end) and the locust virtualenv (`.venv-load`, made by
`make bench-load` from bench/requirements-load.txt, kept apart from the app's dependencies).

1. Generate the sessions (tools/gen_large_session.py), import them with `import_sessions`.
2. Start gunicorn with DEBUG off and Redis as the team deploy has it (REDIS_URL: $LOAD_REDIS_URL,
   else $TEST_REDIS_URL, $REDIS_URL or 127.0.0.1:6379/0; keys under the run's own prefix, deleted
   at the end), sign-in by a user made for the run.
3. Run locust headless (bench/locustfile.py) while sampling each gunicorn worker's RSS from /proc.
   Two workloads, each for --minutes, one after the other on the same server (default both):
   "ordinary" (every user browsing) and "adversarial" (2 users holding `j` on the largest
   session, 1 comparing its two ends, 1 client posting random usernames to the sign-in form,
   the others browsing; bench/locustfile.py).
4. Print, per workload, the table (requests, errors, p50/p95/max per page type, peak RSS per
   worker, the cores gunicorn, PostgreSQL, Redis and locust used) and each target with its
   verdict (zero errors; p95 of ordinary sessions' pages under 300 ms, under 1 s in the
   adversarial workload; the large session's pages under 1 s in the ordinary one; peak RSS per
   worker under 400 MB), write bench/results/load.json, and exit 1 when a target is not met.
   With --runs N each workload runs N times in turn and is judged on the median run: each page's
   median p95 over the runs (a single run's p95 moves by 50-120 ms between runs of one commit on
   this 2-vCPU machine), every run's errors, the highest RSS of any run.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

REPO = Path(__file__).resolve().parent.parent
LOCUST = REPO / ".venv-load" / "bin" / "locust"
# A scratch database per run (two load tests at once on one server never drop each other's).
DB_NAME = os.environ.get("LOAD_DATABASE") or f"contextlab_load_{secrets.token_hex(3)}"
# The Redis the served app caches in (its keys prefixed with DB_NAME, deleted at the end).
REDIS_URL = (
    os.environ.get("LOAD_REDIS_URL")
    or os.environ.get("TEST_REDIS_URL")
    or os.environ.get("REDIS_URL")
    or "redis://127.0.0.1:6379/0"
)


def _size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].isalpha() else int(text)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _database_urls() -> tuple[str, str]:
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    parts = urlsplit(base)
    admin = urlunsplit(parts._replace(path="/postgres"))
    return admin, urlunsplit(parts._replace(path=f"/{DB_NAME}"))


def _psql(admin: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql)


def _forget_keys(url: str, prefix: str) -> None:
    """Delete this run's keys (and only them) from the Redis the app cached in."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        for key in client.scan_iter(match=f"{prefix}*", count=1000):
            client.delete(key)
    except redis.RedisError as error:
        print(f"could not delete the run's Redis keys ({prefix}*): {error}", file=sys.stderr)


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    try:
        return [int(p) for p in path.read_text().split()]
    except OSError:
        return []


def _sample_rss(master: int, peaks: dict[int, int], stop: threading.Event) -> None:
    while not stop.wait(0.5):
        for pid in _children(master):
            peaks[pid] = max(peaks.get(pid, 0), _rss_kb(pid))


def _cpu_seconds(master: int) -> dict[str, float]:
    """CPU seconds used so far by the server's processes, from /proc: gunicorn (the master, its
    live workers and, in the master's children's times, the workers it already replaced), the
    machine's PostgreSQL (every backend and what the postmaster reaped) and Redis. Sampled
    before and after a run, they show where the machine's cores went."""
    tick = os.sysconf("SC_CLK_TCK")
    used = {"gunicorn": 0, "postgres": 0, "redis": 0}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        parent = int(fields[1])
        own = int(fields[11]) + int(fields[12])  # utime, stime
        reaped = int(fields[13]) + int(fields[14])  # cutime, cstime: children it waited for
        if int(entry.name) == master:
            used["gunicorn"] += own + reaped
        elif parent == master:
            used["gunicorn"] += own
        elif name.startswith("postgres"):
            used["postgres"] += own + reaped
        elif name.startswith("redis-server"):
            used["redis"] += own
    return {kind: ticks / tick for kind, ticks in used.items()}


def _children_cpu_seconds() -> float:
    """CPU seconds of this process's children that have ended (locust, once its run is over)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _generate(folder: Path, args: argparse.Namespace) -> list[Path]:
    gen = [sys.executable, str(REPO / "tools" / "gen_large_session.py")]
    per_session = max(10, args.entries // args.sessions)
    files = []
    for i in range(args.sessions):
        path = folder / f"s{i:03d}.jsonl"
        shape = ["--entries", str(per_session), "--bytes", str(per_session * 600)]
        shape += ["--seed", str(i + 1), "--branches", "5", "--compactions", "2"]
        subprocess.run(
            [*gen, str(path), *shape],
            check=True,
        )
        files.append(path)
    if args.big:
        path = folder / "big.jsonl"
        entries = max(1000, _size(args.big) // 10_000)
        subprocess.run(
            [*gen, str(path), "--bytes", args.big, "--entries", str(entries), "--seed", "999"],
            check=True,
        )
        files.append(path)
    return files


def _targets(env: dict[str, str], big_file: Path | None, out: Path) -> None:
    """Session pks and entry ids along each session's path, read through Django."""
    script = """
import json, sys
import django
django.setup()
from contextlab.library.models import Entry, Session
big = sys.argv[2]
sessions = []
for s in Session.objects.all():
    ids = list(Entry.objects.filter(revision_id=s.current_revision_id)
               .order_by("seq").values_list("entry_id", flat=True))
    step = max(1, len(ids) // 40)
    is_big = bool(big) and s.source_path.endswith(big)
    middle = len(ids) * 2 // 5
    sessions.append({"pk": s.pk, "entries": ids[::step][:40] or [s.leaf_entry_id],
                     "big": is_big, "first": ids[0] if ids else s.leaf_entry_id,
                     "leaf": s.leaf_entry_id,
                     # Rows one after the other, for a user holding `j` (adversarial workload).
                     "run": ids[middle:middle + 600] if is_big else []})
words = ["context", "compaction", "pelican", "migration", "readFileUtf8", "token", "branch"]
open(sys.argv[1], "w").write(json.dumps({"sessions": sessions, "words": words}))
"""
    subprocess.run(
        [sys.executable, "-c", script, str(out), big_file.name if big_file else ""],
        cwd=REPO,
        env=env,
        check=True,
    )


SIGNED_IN = """
from importlib import import_module
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import User
user = User.objects.create_user("load", password={password!r})
store = import_module(settings.SESSION_ENGINE).SessionStore()
store[SESSION_KEY] = str(user.pk)
store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
store[HASH_SESSION_KEY] = user.get_session_auth_hash()
store.create()
print(settings.SESSION_COOKIE_NAME + "=" + store.session_key)
"""


def _report(csv_path: Path, peaks: dict[int, int], args: argparse.Namespace) -> dict[str, Any]:
    rows = []
    with csv_path.open() as fh:
        for row in csv.DictReader(fh):
            rows.append(
                {
                    "page": f"{row['Type']} {row['Name']}".strip(),
                    "requests": int(row["Request Count"]),
                    "errors": int(row["Failure Count"]),
                    "p50_ms": float(row["50%"] or 0),
                    "p95_ms": float(row["95%"] or 0),
                    "max_ms": float(row["Max Response Time"] or 0),
                }
            )
    return {
        "config": vars(args),
        "pages": rows,
        "peak_rss_mb_per_worker": sorted(round(kb / 1024, 1) for kb in peaks.values()),
    }


# What the run must show (pages of ordinary sessions, pages of the large one, memory).
P95_MS_ORDINARY = 300
P95_MS_LARGE = 1000
PEAK_RSS_MB_PER_WORKER = 400
# The workloads (bench/locustfile.py's user classes) and, under the adversarial one, the p95
# ordinary pages must keep (the large session's pages are reported, with no target, there).
WORKLOADS = {
    "ordinary": ["Browser"],
    "adversarial": ["Browser", "HoldingJ", "ComparingEnds", "SignInHammer"],
}
P95_MS_ORDINARY_UNDER_ATTACK = 1000
# The adversaries' own requests (named so by the locustfile): counted for errors only.
ADVERSARY = "adversary: "


def verdicts(figures: dict[str, Any], workload: str = "ordinary") -> list[dict[str, Any]]:
    """Each target of the load test with the measured figure and whether it is met."""
    out: list[dict[str, Any]] = []
    pages = [r for r in figures["pages"] if r["page"] and not r["page"].endswith("Aggregated")]
    errors = sum(r["errors"] for r in pages)
    out.append({"target": "zero errors", "measured": errors, "met": errors == 0})
    attacked = workload == "adversarial"
    for row in pages:
        if ADVERSARY in row["page"]:
            continue
        if row["page"].endswith("(large)"):
            if attacked:
                continue
            limit = P95_MS_LARGE
        else:
            limit = P95_MS_ORDINARY_UNDER_ATTACK if attacked else P95_MS_ORDINARY
        out.append(
            {
                "target": f"{row['page']}: p95 < {limit} ms",
                "measured": row["p95_ms"],
                "met": row["p95_ms"] < limit,
            }
        )
    peak = max(figures["peak_rss_mb_per_worker"] or [0])
    out.append(
        {
            "target": f"peak RSS per worker < {PEAK_RSS_MB_PER_WORKER} MB",
            "measured": peak,
            "met": peak < PEAK_RSS_MB_PER_WORKER,
        }
    )
    return out


def combine(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One workload's figures over several runs of it: per page the requests and errors of all
    runs, the median of their p50 and p95 (each run's p95 kept beside it) and the highest max;
    the peaks per worker of the run with the highest; the mean of the cores used."""
    if len(runs) == 1:
        return runs[0]
    by_page: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        for row in run["pages"]:
            by_page.setdefault(row["page"], []).append(row)
    pages = [
        {
            "page": page,
            "requests": sum(r["requests"] for r in rows),
            # A page missing from a run (no request of that kind came) is no error.
            "errors": sum(r["errors"] for r in rows),
            "p50_ms": statistics.median(r["p50_ms"] for r in rows),
            "p95_ms": statistics.median(r["p95_ms"] for r in rows),
            "max_ms": max(r["max_ms"] for r in rows),
            "p95_ms_runs": [r["p95_ms"] for r in rows],
        }
        for page, rows in by_page.items()
    ]
    worst = max(runs, key=lambda run: max(run["peak_rss_mb_per_worker"] or [0]))
    combined: dict[str, Any] = {
        "config": runs[0]["config"],
        "pages": pages,
        "peak_rss_mb_per_worker": worst["peak_rss_mb_per_worker"],
        "runs": len(runs),
    }
    cores = [run["cpu_cores_used"] for run in runs if "cpu_cores_used" in run]
    if cores:
        combined["cpu_cores_used"] = {
            kind: round(statistics.mean(c[kind] for c in cores), 2) for kind in cores[0]
        }
    for key in ("load_average_1_5_15", "cpus", "workload"):
        if key in runs[-1]:
            combined[key] = runs[-1][key]
    return combined


def _print(figures: dict[str, Any]) -> None:
    if figures.get("runs", 1) > 1:
        print(f"median of {figures['runs']} runs (requests and errors: all runs)")
    print("| page | requests | errors | p50 ms | p95 ms | max ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in figures["pages"]:
        each = (
            f" (runs: {', '.join(f'{x:.0f}' for x in r['p95_ms_runs'])})"
            if "p95_ms_runs" in r
            else ""
        )
        print(
            f"| {r['page']} | {r['requests']} | {r['errors']} | {r['p50_ms']:.0f} "
            f"| {r['p95_ms']:.0f}{each} | {r['max_ms']:.0f} |"
        )
    print(f"peak RSS per gunicorn worker (MB): {figures['peak_rss_mb_per_worker']}")
    print(f"load average {figures['load_average_1_5_15']} on {figures['cpus']} CPUs")
    if "cpu_cores_used" in figures:
        used = ", ".join(f"{kind} {n}" for kind, n in figures["cpu_cores_used"].items())
        print(f"CPU used during the run, in cores: {used}")
    for verdict in figures["verdicts"]:
        mark = "met" if verdict["met"] else "NOT MET"
        print(f"{mark:8s} {verdict['target']} (measured {verdict['measured']})")


def _run_workload(
    name: str,
    master: int,
    port: int,
    load_env: dict[str, str],
    work: Path,
    args: argparse.Namespace,
    tag: str = "",
) -> dict[str, Any]:
    """One locust run of `args.minutes` with the workload's user classes; its figures."""
    peaks: dict[int, int] = {}
    stop = threading.Event()
    sampler = threading.Thread(target=_sample_rss, args=(master, peaks, stop))
    sampler.start()
    run = ["-u", str(args.users), "-r", str(max(1, args.users // 10))]
    run += ["-t", f"{int(args.minutes * 60)}s", "--host", f"http://127.0.0.1:{port}"]
    run += ["--csv", str(work / f"locust-{name}{tag}"), "--only-summary"]
    cpu_before, locust_before, started = (
        _cpu_seconds(master),
        _children_cpu_seconds(),
        time.monotonic(),
    )
    try:
        subprocess.run(
            [
                str(LOCUST),
                "-f",
                str(REPO / "bench" / "locustfile.py"),
                "--headless",
                *run,
                *WORKLOADS[name],
            ],
            cwd=REPO,
            env=load_env,
            check=False,
        )
    finally:
        stop.set()
        sampler.join()
    elapsed = time.monotonic() - started
    cpu_after = _cpu_seconds(master)
    figures = _report(work / f"locust-{name}{tag}_stats.csv", peaks, args)
    figures["workload"] = name
    # Where the cores went: on a machine that runs the load and the server, the page times are
    # mostly queueing for a CPU once these add up to the machine's cores.
    cores = {kind: (cpu_after[kind] - cpu_before[kind]) / elapsed for kind in cpu_after}
    cores["locust"] = (_children_cpu_seconds() - locust_before) / elapsed
    figures["cpu_cores_used"] = {kind: round(value, 2) for kind, value in cores.items()}
    # The machine's load during the run: on a shared machine the figures are queueing too.
    figures["load_average_1_5_15"] = [round(x, 1) for x in os.getloadavg()]
    figures["cpus"] = os.cpu_count()
    figures["verdicts"] = verdicts(figures, name)
    figures["all_met"] = all(v["met"] for v in figures["verdicts"])
    return figures


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--entries", type=int, default=200_000, help="over all small sessions")
    parser.add_argument("--big", default="500M", help="size of the large session ('' for none)")
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--minutes", type=float, default=5)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument(
        "--workload",
        choices=[*WORKLOADS, "both"],
        default="both",
        help="ordinary browsing, the adversarial mix, or both in turn (default) on one server",
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=1,
        help="runs of each workload, judged on the median run's figures (default 1)",
    )
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if not LOCUST.exists():
        raise SystemExit(f"{LOCUST} is missing: run `make bench-load` (it makes .venv-load)")
    admin, url = _database_urls()
    work = Path(tempfile.mkdtemp(prefix="contextlab-load-"))
    password = secrets.token_urlsafe(16)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "contextlab.settings",
        "DATABASE_URL": url,
        "CONTEXTLAB_BLOB_DIR": str(work / "blobs"),
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SESSION_COOKIE_SECURE": "false",
        "CSRF_COOKIE_SECURE": "false",
        "LOG_LEVEL": "WARNING",
        # Collected as the README's team deploy does, so WhiteNoise serves the CSS and scripts.
        "STATIC_ROOT": str(work / "static_root"),
    }
    env.pop("REDIS_URL", None)
    _psql(admin, f"DROP DATABASE IF EXISTS {DB_NAME}")
    _psql(admin, f"CREATE DATABASE {DB_NAME}")
    gunicorn = None
    try:
        manage = [sys.executable, "manage.py"]
        subprocess.run([*manage, "migrate", "--noinput"], cwd=REPO, env=env, check=True)
        subprocess.run(
            [*manage, "collectstatic", "--noinput"],
            cwd=REPO,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        started = time.perf_counter()
        # LOAD_FILES: a folder to keep the generated files in between runs (same arguments).
        folder = Path(os.environ.get("LOAD_FILES") or work / "files")
        files = sorted(folder.glob("*.jsonl")) if folder.exists() else []
        if not files:
            folder.mkdir(parents=True, exist_ok=True)
            files = _generate(folder, args)
        print(f"generated {len(files)} files in {time.perf_counter() - started:.0f}s", flush=True)
        started = time.perf_counter()
        subprocess.run(
            [*manage, "import_sessions", str(folder), "--json"],
            cwd=REPO,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        print(f"imported in {time.perf_counter() - started:.0f}s", flush=True)
        # Users arrive signed in: one session made here, shared by every simulated user (50
        # password checks at PBKDF2's cost would measure the hasher, not the pages).
        cookie = (
            subprocess.run(
                [*manage, "shell", "-c", SIGNED_IN.format(password=password)],
                cwd=REPO,
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
            .stdout.strip()
            .splitlines()[-1]
        )
        targets = work / "targets.json"
        big_file = next((f for f in files if f.name == "big.jsonl"), None)
        _targets(env, big_file, targets)
        port = _free_port()
        serve = ["--bind", f"127.0.0.1:{port}", "--workers", str(args.workers), "--timeout", "120"]
        # Served as the README's team deploy serves: with Redis (the cache every web process
        # shares: kept turns, sign-in sessions), under this run's own key prefix.
        served = {
            **env,
            "REDIS_URL": REDIS_URL,
            "CONTEXTLAB_REDIS_PREFIX": f"{DB_NAME}:",
        }
        gunicorn = subprocess.Popen(
            [str(REPO / ".venv" / "bin" / "gunicorn"), "contextlab.wsgi", *serve],
            cwd=REPO,
            env=served,
            start_new_session=True,
        )
        time.sleep(3)
        load_env = {
            **os.environ,
            "LOAD_TARGETS": str(targets),
            "LOAD_COOKIE": cookie,
        }
        names = list(WORKLOADS) if args.workload == "both" else [args.workload]
        runs = {}
        for name in names:
            each = []
            for n in range(args.runs):
                print(f"== workload {name}, run {n + 1} of {args.runs}", flush=True)
                each.append(_run_workload(name, gunicorn.pid, port, load_env, work, args, f"-{n}"))
                if args.runs > 1:
                    _print(each[-1])
            runs[name] = combine(each)
            runs[name]["verdicts"] = verdicts(runs[name], name)
            runs[name]["all_met"] = all(v["met"] for v in runs[name]["verdicts"])
            if args.runs > 1:
                runs[name]["each_run"] = each
                print(f"== workload {name}: the median of {args.runs} runs", flush=True)
            _print(runs[name])
        figures = runs[names[0]] if len(names) == 1 else {"workloads": runs}
        figures["all_met"] = all(run["all_met"] for run in runs.values())
        results = REPO / "bench" / "results"
        results.mkdir(exist_ok=True)
        (results / "load.json").write_text(json.dumps(figures, indent=2) + "\n")
        return figures
    finally:
        if gunicorn is not None and gunicorn.poll() is None:
            os.killpg(gunicorn.pid, signal.SIGTERM)
            try:
                gunicorn.wait(timeout=30)
            except subprocess.TimeoutExpired:
                # Workers still rendering requests whose clients left long ago (held keys).
                os.killpg(gunicorn.pid, signal.SIGKILL)
                gunicorn.wait(timeout=30)
        _psql(admin, f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
        _forget_keys(REDIS_URL, f"{DB_NAME}:")
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(0 if main()["all_met"] else 1)
