"""The settings module: embedded defaults, and a loud refusal of unsafe or malformed values."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

PROBE = (
    "import contextlab.settings as s;"
    "print(s.DATABASES['default']['ENGINE'], s.CONTEXTLAB_JOBS_EMBEDDED,"
    " s.CACHES['default']['BACKEND'])"
)


def load_settings(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if k
        not in (
            "DATABASE_URL",
            "REDIS_URL",
            "DEBUG",
            "SECRET_KEY",
            "ALLOWED_HOSTS",
            "CONTEXTLAB_SERVER_ROOTS",
            "EMAIL_HOST",
        )
    }
    base.update(CONTEXTLAB_VAR_DIR=str(tmp_path / "var"), **env)
    return subprocess.run(
        [sys.executable, "-c", PROBE], env=base, cwd=REPO, capture_output=True, text=True
    )


def test_it_defaults_to_sqlite_and_in_process_jobs(tmp_path: Path) -> None:
    done = load_settings(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        "django.db.backends.sqlite3",
        "True",
        "django.core.cache.backends.locmem.LocMemCache",
    ]
    assert (tmp_path / "var").is_dir()


def test_it_uses_postgresql_and_redis_when_configured(tmp_path: Path) -> None:
    done = load_settings(
        tmp_path,
        DATABASE_URL="postgres://u@127.0.0.1:5432/x",
        REDIS_URL="redis://127.0.0.1:6379/3",
        SECRET_KEY="k" * 50,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        "django.db.backends.postgresql",
        "False",
        "django.core.cache.backends.redis.RedisCache",
    ]


def test_it_refuses_debug_off_with_the_placeholder_key(tmp_path: Path) -> None:
    done = load_settings(tmp_path, DEBUG="false", SECRET_KEY="dev-only-insecure-contextlab-key")
    assert done.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY must be set" in done.stderr


def test_it_refuses_a_team_database_without_a_key(tmp_path: Path) -> None:
    done = load_settings(tmp_path, DATABASE_URL="postgres://u@127.0.0.1:5432/x")
    assert done.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY must be set" in done.stderr


def test_it_has_debug_off_unless_it_is_set(tmp_path: Path) -> None:
    probe = "import contextlab.settings as s; print(s.DEBUG, s.CONTEXTLAB_SERVER_ROOTS)"
    env = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "DATABASE_URL", "SECRET_KEY")}
    env.pop("CONTEXTLAB_SERVER_ROOTS", None)
    env["CONTEXTLAB_VAR_DIR"] = str(tmp_path / "var")
    run = [sys.executable, "-c", probe]
    done = subprocess.run(run, env=env, cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "[]"]
    # The single-user embedded setup (no DATABASE_URL) keeps a random key of its own in var/,
    # the same on every start, readable by its owner only.
    key_file = tmp_path / "var" / "secret_key"
    assert len(key_file.read_text()) >= 32 and key_file.stat().st_mode & 0o077 == 0
    key = key_file.read_text()
    subprocess.run(run, env=env, cwd=REPO, capture_output=True, text=True, check=True)
    assert key_file.read_text() == key


def test_make_run_sets_debug_and_the_users_agent_dir_as_the_only_server_root() -> None:
    makefile = (REPO / "Makefile").read_text()
    done = subprocess.run(
        ["make", "-n", "run", "HOME=/home/ann"], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "runserver" in done.stdout and "run:" in makefile
    runserver = next(line for line in done.stdout.splitlines() if "runserver" in line)
    assert "DEBUG=true" in runserver
    assert "CONTEXTLAB_SERVER_ROOTS=/home/ann/.pi/agent" in runserver


def test_it_starts_with_debug_off_and_a_real_key(tmp_path: Path) -> None:
    done = load_settings(tmp_path, DEBUG="false", SECRET_KEY="k" * 50, ALLOWED_HOSTS="a.example")
    assert done.returncode == 0, done.stderr


def test_it_refuses_a_malformed_boolean(tmp_path: Path) -> None:
    done = load_settings(tmp_path, DEBUG="maybe")
    assert "DEBUG must be a boolean" in done.stderr


def test_it_refuses_a_malformed_database_url(tmp_path: Path) -> None:
    done = load_settings(tmp_path, DATABASE_URL="nosuchscheme://x", SECRET_KEY="k" * 50)
    assert done.returncode != 0
    assert "DATABASE_URL is malformed" in done.stderr
