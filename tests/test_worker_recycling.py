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


def test_workers_fork_from_a_master_that_loaded_the_application():
    assert _gunicorn_config()["preload_app"] == "True"
    assert _gunicorn_config(GUNICORN_PRELOAD="0")["preload_app"] == "False"


def test_the_preloaded_application_has_every_view_and_template_and_no_connection():
    """What gunicorn's master loads before forking: every view imported and every template
    compiled (a recycled worker's replacement starts with them), and no connection to
    PostgreSQL or Redis (both unreachable here: a connection made before the fork would be one
    socket shared by every worker)."""
    script = (
        "import sys, contextlab.wsgi\n"
        "from django.template import engines\n"
        "loader = engines['django'].engine.template_loaders[0]\n"
        "print('views' if 'contextlab.inspector.views' in sys.modules"
        " and 'contextlab.api.api' in sys.modules else 'no views')\n"
        "print(len(loader.get_template_cache) if hasattr(loader, 'get_template_cache') else 0)\n"
    )
    done = subprocess.run(
        [str(REPO / ".venv" / "bin" / "python"), "-c", script],
        cwd=REPO,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "contextlab.settings",
            "DEBUG": "false",
            "SECRET_KEY": "s" * 50,
            "ALLOWED_HOSTS": "127.0.0.1",
            "DATABASE_URL": "postgres://nobody@127.0.0.1:1/nothing",
            "REDIS_URL": "redis://127.0.0.1:1/0",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    views, templates = done.stdout.split()[-2:]
    assert views == "views"
    on_disk = [p for p in (REPO / "templates").rglob("*.html") if "jinja2" not in p.parts]
    assert int(templates) == len(on_disk)
