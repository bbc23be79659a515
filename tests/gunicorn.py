"""contextlab under gunicorn, the README's server, as its own process on the test database: for
the tests that measure a real web process (its memory) or kill it (-9) and start it again on
the same port while the real Pi pushes."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.db import connection

from tests.conftest import REPO


def own_database_url() -> str:
    """The URL of the database this test uses (a per-run name), for a process of its own."""
    db = connection.settings_dict
    return "postgres://{}:{}@{}:{}/{}".format(
        quote(db["USER"] or "", safe=""),
        quote(db["PASSWORD"] or "", safe=""),
        db["HOST"] or "127.0.0.1",
        db["PORT"] or 5432,
        quote(db["NAME"], safe=""),
    )


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid`."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


class Gunicorn:
    """One gunicorn master with one worker (`options` are added to its command line) on a port
    of its own, kept across restarts."""

    def __init__(self, log: Path, *options: str) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        self.log = log
        self.options = options
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 120) -> None:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.settings",
            "DATABASE_URL": own_database_url(),
            "CONTEXTLAB_BLOB_DIR": str(settings.CONTEXTLAB_BLOB_DIR),
        }
        command = [str(REPO / ".venv" / "bin" / "gunicorn"), "contextlab.wsgi"]
        command += ["--bind", f"127.0.0.1:{self.port}", "--workers", "1", *self.options]
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                command, env=env, cwd=REPO, stdout=log, stderr=log, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        while not self._answers():
            assert time.monotonic() < deadline, self.log.read_text()
            time.sleep(0.2)

    def _answers(self) -> bool:
        assert self.proc is not None and self.proc.poll() is None, self.log.read_text()
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/openapi.json", timeout=5) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False

    @property
    def worker(self) -> int:
        """The worker's pid."""
        assert self.proc is not None
        workers = children(self.proc.pid)
        assert len(workers) == 1, workers
        return workers[0]

    def stop(self) -> None:
        """A clean stop (SIGTERM; SIGKILL if it does not end within 30 s)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.proc = None

    def kill(self) -> None:
        """A crash: the server and its worker die at once (SIGKILL), whatever they were doing."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        self.proc = None
