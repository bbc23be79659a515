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
        if k not in ("DATABASE_URL", "REDIS_URL", "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS")
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
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        "django.db.backends.postgresql",
        "False",
        "django.core.cache.backends.redis.RedisCache",
    ]


def test_it_refuses_debug_off_with_the_placeholder_key(tmp_path: Path) -> None:
    done = load_settings(tmp_path, DEBUG="false")
    assert done.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY must be set" in done.stderr


def test_it_starts_with_debug_off_and_a_real_key(tmp_path: Path) -> None:
    done = load_settings(tmp_path, DEBUG="false", SECRET_KEY="k" * 50, ALLOWED_HOSTS="a.example")
    assert done.returncode == 0, done.stderr


def test_it_refuses_a_malformed_boolean(tmp_path: Path) -> None:
    done = load_settings(tmp_path, DEBUG="maybe")
    assert "DEBUG must be a boolean" in done.stderr


def test_it_refuses_a_malformed_database_url(tmp_path: Path) -> None:
    done = load_settings(tmp_path, DATABASE_URL="nosuchscheme://x")
    assert done.returncode != 0
    assert "DATABASE_URL is malformed" in done.stderr
