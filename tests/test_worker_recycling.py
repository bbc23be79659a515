"""Worker recycling in the documented deploy: gunicorn workers after --max-requests (with
jitter), Celery pool children after a number of tasks or a memory peak."""

from __future__ import annotations

import os
import subprocess

from tests.conftest import REPO

GUNICORN = REPO / ".venv" / "bin" / "gunicorn"


def _gunicorn_config(**env: str) -> dict[str, str]:
    done = subprocess.run(
        [str(GUNICORN), "--print-config", "contextlab.wsgi"],
        cwd=REPO,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    pairs = (line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    return {key.strip(): value.strip() for key, value in pairs}


def test_a_plain_gunicorn_start_recycles_workers_with_jitter():
    config = _gunicorn_config()
    assert config["max_requests"] == "1000"
    assert config["max_requests_jitter"] == "100"


def test_the_recycling_follows_the_environment():
    config = _gunicorn_config(GUNICORN_MAX_REQUESTS="250", GUNICORN_MAX_REQUESTS_JITTER="25")
    assert (config["max_requests"], config["max_requests_jitter"]) == ("250", "25")


def test_celery_pool_children_are_replaced_after_tasks_or_a_memory_peak():
    from contextlab.celery import app

    assert app.conf.worker_max_tasks_per_child == 100
    assert app.conf.worker_max_memory_per_child == 512 * 1024


def test_the_readme_deploy_command_recycles_both_kinds_of_worker():
    readme = (REPO / "README.md").read_text()
    assert "--max-requests 1000 --max-requests-jitter 100" in readme
    assert "--max-tasks-per-child 100 --max-memory-per-child 524288" in readme
