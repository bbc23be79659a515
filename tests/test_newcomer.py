"""A newcomer's first hour: what is missing is said in one line (no traceback), `make help` lists
the targets, `make run` checks its port and `make worker` its broker before starting anything."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CORPUS, REPO

SESSION = CORPUS / "tools" / "session.jsonl"
KEY = "k" * 50
# A refusal comes within seconds; the bound is for a loaded machine, where starting Python with
# Django (or Celery) alone has taken a minute.
LIMIT = 300


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a newcomer's shell: none of the suite's settings."""
    drop = ("DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DEBUG", "DJANGO_SETTINGS_MODULE")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("CONTEXTLAB")}
    env.update(CONTEXTLAB_VAR_DIR=str(tmp_path / "var"), **extra)
    return env


def manage(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env=_env(tmp_path, **env),
        capture_output=True,
        text=True,
        timeout=LIMIT,
    )


def make(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`make` as the newcomer runs it; `-o` keeps it from reinstalling the (shared) virtualenv."""
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "-o", ".venv/.runtime", "-o", ".venv/.dev", *args],
        cwd=REPO,
        env=_env(tmp_path, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=LIMIT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # it started what it should have refused to
        out, err = proc.communicate()
        pytest.fail(f"make {' '.join(args)} did not stop: {out}{err}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The refusal: exit status 1, one line on stderr, no traceback."""
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_command_on_a_team_database_without_secret_key_says_so_in_one_line(tmp_path):
    done = manage(
        tmp_path, "import_sessions", str(SESSION), DATABASE_URL="postgres://u@127.0.0.1:1/team"
    )
    line = one_line(done)
    assert line.startswith("manage.py: SECRET_KEY must be set")
    assert "DATABASE_URL names a shared database" in line


def test_a_command_on_a_database_nobody_answers_says_so_in_one_line(tmp_path):
    port = _free_port()
    done = manage(
        tmp_path,
        "import_sessions",
        str(SESSION),
        DATABASE_URL=f"postgres://u:secret@127.0.0.1:{port}/team",
        SECRET_KEY=KEY,
    )
    line = one_line(done)
    assert line.startswith(f"manage.py: the database at 127.0.0.1:{port}/team cannot be reached")
    assert line.endswith("start PostgreSQL or fix DATABASE_URL")
    assert "secret" not in line  # the URL's password is not printed


def test_a_command_on_a_database_without_its_migrations_says_to_migrate(tmp_path):
    empty = tmp_path / "empty.sqlite3"
    done = manage(
        tmp_path,
        "import_sessions",
        str(SESSION),
        DATABASE_URL=f"sqlite:///{empty}",
        SECRET_KEY=KEY,
    )
    line = one_line(done)
    assert line.startswith(f"manage.py: the database at {empty} lacks ")
    assert line.endswith("migration(s): run .venv/bin/python manage.py migrate")


def test_make_help_lists_the_targets_with_the_dashboards_address(tmp_path):
    done = make(tmp_path, "help", "PORT=8123")
    assert done.returncode == 0, done.stderr
    listed = {line.split()[1] for line in done.stdout.splitlines() if line.startswith("  make ")}
    assert {"run", "worker", "test", "test-fast", "lint", "bench", "install"} <= listed
    assert "http://127.0.0.1:8123/" in done.stdout
    # Plain `make` is the same list.
    assert make(tmp_path).stdout == make(tmp_path, "help").stdout


def test_make_test_fast_leaves_out_the_oracle_browser_and_fault_tests(tmp_path):
    done = make(tmp_path, "-n", "test-fast")
    assert done.returncode == 0, done.stderr
    assert '-m "not oracle and not browser and not faults"' in done.stdout


def test_make_run_on_a_busy_port_stops_before_migrate_and_demo(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = make(tmp_path, "run", f"PORT={port}")
    line = done.stderr.strip().splitlines()[0]
    assert done.returncode != 0
    assert line.startswith(f"port {port} on 127.0.0.1 is taken")
    assert f"PORT={port + 1} make run" in line
    assert "manage.py migrate" not in done.stdout and "demo" not in done.stdout
    assert not (tmp_path / "var").exists()  # nothing was created, the demo user untouched


def test_make_worker_refuses_to_start_without_redis(tmp_path):
    done = make(tmp_path, "worker")
    assert done.returncode != 0
    assert done.stderr.startswith("REDIS_URL is not set: a worker needs the Redis")
    assert "celery" not in done.stdout  # never started


def test_make_worker_refuses_a_redis_that_does_not_answer(tmp_path):
    port = _free_port()
    done = make(tmp_path, "worker", REDIS_URL=f"redis://:pw@127.0.0.1:{port}/0", SECRET_KEY=KEY)
    assert done.returncode != 0
    line = done.stderr.splitlines()[0]  # then make's own "Error 1"
    assert line.startswith(f"no Redis answers at redis://127.0.0.1:{port}/0 (")
    assert line.endswith("start Redis or fix REDIS_URL")
    assert "celery" not in done.stdout


def test_a_celery_worker_on_the_memory_broker_refuses_to_start(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "contextlab", "worker", "--pool=solo"],
        cwd=REPO,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=LIMIT,
    )
    assert done.returncode == 1
    assert "celery worker: REDIS_URL is not set" in done.stderr


def _readme_block(start: str) -> str:
    """The README's indented command block that begins with `start`."""
    lines = (REPO / "README.md").read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if line.strip().startswith(start))
    block = []
    for line in lines[first:]:
        if not line.startswith("    "):
            break
        block.append(line)
    return "\n".join(block)


def test_the_readme_gives_the_address_and_runs_every_command_with_the_virtualenvs_python():
    readme = (REPO / "README.md").read_text()
    assert "http://127.0.0.1:8000/" in readme and "PORT=8001 make run" in readme
    commands = [line.strip() for line in readme.splitlines() if "manage.py " in line]
    bare = [c for c in commands if c.startswith(("python", "manage.py", "./manage.py"))]
    assert bare == []  # `python` outside .venv has no Django


def test_the_readmes_context_synopsis_has_every_option_of_the_command():
    from django.core.management.base import BaseCommand

    from contextlab.inspector.management.commands.context import Command

    django_own = {
        opt
        for action in BaseCommand().create_parser("manage.py", "x")._actions
        for opt in action.option_strings
    }
    options = {
        opt
        for action in Command().create_parser("manage.py", "context")._actions
        for opt in action.option_strings
        if opt.startswith("--") and opt not in django_own
    }
    synopsis = _readme_block(".venv/bin/python manage.py context SESSION_FILE")
    assert {"--dialect", "--context-window", "--model-max-tokens"} <= options
    assert [o for o in sorted(options) if o not in synopsis] == []
