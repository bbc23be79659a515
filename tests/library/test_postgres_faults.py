"""PostgreSQL stopped under a running import, on a throwaway cluster of our own.

The cluster is made with initdb under /tmp on a free port and stopped with `pg_ctl stop -m
immediate` (what a crash or an OOM kill of the server looks like) while `import_sessions` runs
in a subprocess: once while it writes the entries, once while it fills their search text. After
PostgreSQL is back, one more import of the same file must leave nothing lost, no entry without
its search text and no orphan blob.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.environment import postgres_tool, unavailable
from tests.waiting import wait_until

REPO = Path(__file__).resolve().parents[2]
SESSION_ID = "0190d6f2-fa01-7bbb-8ccc-00000000fa01"
pytestmark = pytest.mark.faults


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    data: Path
    port: int
    as_postgres: list[str]
    pg_ctl_path: str = "pg_ctl"

    @property
    def psql(self) -> list[str]:
        return ["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres"]

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/cl"

    def pg_ctl(self, *args: str) -> None:
        subprocess.run(
            [*self.as_postgres, self.pg_ctl_path, "-D", str(self.data), *args],
            check=True,
            capture_output=True,
            timeout=60,
        )

    def start(self) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.data} -c fsync=off"
        self.pg_ctl("-o", options, "-l", str(self.data / "log"), "-w", "start")

    def crash(self) -> None:
        self.pg_ctl("-m", "immediate", "stop")

    def sql(self, query: str) -> str:
        done = subprocess.run(
            [*self.psql, "-d", "cl", "-At", "-c", query],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        return done.stdout.strip() if done.returncode == 0 else ""


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    initdb, pg_ctl = postgres_tool("initdb"), postgres_tool("pg_ctl")
    if not initdb or not pg_ctl:
        unavailable("initdb/pg_ctl not installed (Debian: postgresql)")
    as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    root = Path(tempfile.mkdtemp(prefix="cl-pg-fault-"))
    if as_postgres:
        shutil.chown(root, "postgres")
    data = root / "data"
    subprocess.run(
        [*as_postgres, initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    pg = Cluster(data, _free_port(), as_postgres, pg_ctl)
    pg.start()
    try:
        subprocess.run(
            [*pg.psql, "-c", "CREATE DATABASE cl"],
            check=True,
            capture_output=True,
            timeout=30,
        )
        pg_manage(pg, root / "blobs", "migrate", "--noinput")
        yield pg
    finally:
        subprocess.run([*as_postgres, pg_ctl, "-D", str(data), "-m", "immediate", "stop"])
        shutil.rmtree(root, ignore_errors=True)


def pg_env(pg: Cluster, blobs: Path) -> dict[str, str]:
    env = {**os.environ, "DATABASE_URL": pg.url, "CONTEXTLAB_BLOB_DIR": str(blobs)}
    env.pop("REDIS_URL", None)
    env["CONTEXTLAB_INDEX_WORKERS"] = "1"
    return env


def pg_manage(pg: Cluster, blobs: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env=pg_env(pg, blobs),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module")
def big_file() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="cl-pg-fault-file-"))
    path = folder / "big.jsonl"
    size = ["--entries", "8000", "--bytes", "12M", "--session-id", SESSION_ID]
    subprocess.run(
        [sys.executable, "tools/gen_large_session.py", str(path), *size],
        cwd=REPO,
        check=True,
        capture_output=True,
        timeout=300,
    )
    yield path
    shutil.rmtree(folder, ignore_errors=True)


def pg_reset(pg: Cluster, blobs: Path) -> None:
    pg.sql("TRUNCATE library_project, library_session, library_entry CASCADE")
    shutil.rmtree(blobs, ignore_errors=True)


def _counts(pg: Cluster) -> tuple[int, int]:
    raw = pg.sql("SELECT count(*), count(*) FILTER (WHERE NOT search_indexed) FROM library_entry")
    total, unindexed = (int(x) for x in raw.split("|")) if raw else (-1, -1)
    return total, unindexed


def _recover_and_check(pg: Cluster, blobs: Path, big_file: Path, expected_status: str) -> None:
    pg.start()
    started = time.monotonic()
    done = pg_manage(pg, blobs, "import_sessions", str(big_file), "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    assert f'"status": "{expected_status}"' in done.stdout, done.stdout[:500]
    assert time.monotonic() - started < 60
    total, unindexed = _counts(pg)
    lines = sum(1 for line in big_file.read_bytes().splitlines() if line.strip()) - 1
    assert (total, unindexed) == (lines, 0)  # nothing lost, everything searchable
    check = pg_manage(pg, blobs, "blobs", "--check", "--grace", "0")
    assert check.returncode == 0, check.stdout  # no orphan, nothing missing


def test_postgresql_stopped_mid_import_stores_nothing_and_the_next_import_reads_everything(
    cluster, big_file, tmp_path
):
    blobs = tmp_path / "blobs"
    pg_reset(cluster, blobs)
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "import_sessions", str(big_file), "--json"],
        cwd=REPO,
        env=pg_env(cluster, blobs),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        # Bytes are being copied to the blob store: the import's transaction is open.
        wait_until(
            lambda: any(p.stat().st_size > 2_000_000 for p in (blobs / "tmp").glob("*.part")),
            timeout=120,
            interval=0.02,
            what="the import to be half-way",
        )
        cluster.crash()
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert [p for p in blobs.rglob("*") if p.is_file()] == []  # the partial blob is gone
    _recover_and_check(cluster, blobs, big_file, "new")


def test_postgresql_stopped_mid_indexing_and_the_next_import_though_unchanged_indexes_the_rest(
    cluster, big_file, tmp_path
):
    blobs = tmp_path / "blobs"
    pg_reset(cluster, blobs)
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "import_sessions", str(big_file), "--json"],
        cwd=REPO,
        env=pg_env(cluster, blobs),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        # The entries are committed and their search text is being filled.
        wait_until(
            lambda: (lambda c: c[0] > c[1] > 1000)(_counts(cluster)),
            timeout=120,
            interval=0.05,
            what="the import to be indexing",
        )
        cluster.crash()
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    _recover_and_check(cluster, blobs, big_file, "unchanged")
