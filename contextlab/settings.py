"""contextlab settings: one module, driven by the environment.

Every value has a local default that works out of the box (SQLite in ./var, background jobs in
process, no Redis); set DATABASE_URL / REDIS_URL to run on PostgreSQL and Redis. Malformed values
raise ImproperlyConfigured at start-up rather than misbehaving later.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("CONTEXTLAB_VAR_DIR", BASE_DIR / "var"))

PLACEHOLDER_SECRET_KEY = "dev-only-insecure-contextlab-key"


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false/1/0), got {raw!r}")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


DEBUG = env_bool("DEBUG", True)
SECRET_KEY = os.environ.get("SECRET_KEY", PLACEHOLDER_SECRET_KEY)
if not DEBUG and (SECRET_KEY == PLACEHOLDER_SECRET_KEY or len(SECRET_KEY) < 32):
    raise ImproperlyConfigured(
        "SECRET_KEY must be set to a random value of at least 32 characters when DEBUG is off"
    )
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "django_htmx",
    "ninja",  # the API docs page from its bundled static files, not a CDN
    "contextlab.library",
    "contextlab.inspector",
    "contextlab.jobs",
    "contextlab.review",
    "contextlab.api",
    "contextlab.sharing",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "contextlab.urls"
WSGI_APPLICATION = "contextlab.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    }
]

DATABASE_URL = os.environ.get("DATABASE_URL", "")
if DATABASE_URL:
    try:
        DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL is malformed: {exc}") from None
else:
    # The embedded default must work on a fresh checkout: create ./var for the SQLite file.
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "contextlab.sqlite3",
            "OPTIONS": {"timeout": 20},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "static_root"))

# Uploaded and synced session files are kept byte for byte (nothing imported is ever lost).
CONTEXTLAB_BLOB_DIR = Path(os.environ.get("CONTEXTLAB_BLOB_DIR", VAR_DIR / "blobs"))
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 10 * 1024 * 1024)
# A session line longer than this is not decoded (it stays in the blob, reported as a problem).
CONTEXTLAB_MAX_LINE_BYTES = env_int("CONTEXTLAB_MAX_LINE_BYTES", 256 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
# Connections that fill search vectors at once after a large import (PostgreSQL's text parser is
# the limit there: one connection keeps one core busy).
CONTEXTLAB_INDEX_WORKERS = env_int("CONTEXTLAB_INDEX_WORKERS", min(4, os.cpu_count() or 1))

# The largest body one push to /api/v1/sessions/<id>/lines may carry (a client pushes a larger
# file in parts), and how long a share link lasts unless its owner picks otherwise.
CONTEXTLAB_API_MAX_PUSH_BYTES = env_int("CONTEXTLAB_API_MAX_PUSH_BYTES", 64 * 1024 * 1024)
CONTEXTLAB_SHARE_DAYS = env_int("CONTEXTLAB_SHARE_DAYS", 7)

# Where Pi's resources live on this server (agent dir: AGENTS.md, skills, SYSTEM.md; Pi root: docs).
# Tilde-expanded as Pi's getAgentDir does, so the dashboard and `manage.py context` agree.
PI_AGENT_DIR = os.path.expanduser(
    os.environ.get("PI_CODING_AGENT_DIR") or str(Path.home() / ".pi" / "agent")
)
PI_PACKAGE_DIR = os.environ.get("PI_PACKAGE_DIR", "")

REDIS_URL = os.environ.get("REDIS_URL", "")
# Without Redis, jobs run in a thread of the web process (embedded mode); with it, on Celery
# workers.
CONTEXTLAB_JOBS_EMBEDDED = not REDIS_URL
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 15 * 60)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 14 * 60)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True


# Summarisation models for compaction and branch-summary jobs. "offline" (the default) needs no
# network and writes a deterministic summary labelled as such; "openai" speaks chat-completions to
# any OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp, LM Studio); "anthropic" speaks
# Anthropic Messages. Each provider has its own model, context window and output cap.
def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from None


def env_costs(name: str) -> list[float]:
    """Prices per million tokens: "input,output,cacheRead,cacheWrite" (missing ones are 0)."""
    raw = os.environ.get(name, "")
    try:
        values = [float(part) for part in raw.split(",") if part.strip()] if raw else []
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be comma-separated numbers, got {raw!r}") from None
    if len(values) > 4:
        raise ImproperlyConfigured(f"{name} takes at most 4 prices, got {raw!r}")
    return values + [0.0] * (4 - len(values))


CONTEXTLAB_LLM_PROVIDER = os.environ.get("CONTEXTLAB_LLM_PROVIDER", "offline").strip().lower()
if CONTEXTLAB_LLM_PROVIDER not in {"offline", "openai", "anthropic"}:
    raise ImproperlyConfigured(
        "CONTEXTLAB_LLM_PROVIDER must be offline, openai or anthropic, "
        f"got {CONTEXTLAB_LLM_PROVIDER!r}"
    )
CONTEXTLAB_LLM = {
    "provider": CONTEXTLAB_LLM_PROVIDER,
    "timeout": env_float("CONTEXTLAB_LLM_TIMEOUT", 120.0),
    "max_retries": env_int("CONTEXTLAB_LLM_MAX_RETRIES", 2),
    "openai": {
        "base_url": os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"),
        "api_key": os.environ.get("OPENAI_API_KEY", ""),
        "provider_name": os.environ.get("OPENAI_PROVIDER_NAME", "openai"),
        "model": os.environ.get("OPENAI_MODEL", "gpt-4.1-mini"),
        "context_window": env_int("OPENAI_CONTEXT_WINDOW", 128000),
        "max_tokens": env_int("OPENAI_MAX_TOKENS", 16384),
        "reasoning": env_bool("OPENAI_REASONING", False),
        "cost": env_costs("OPENAI_COST_PER_MILLION"),
    },
    "anthropic": {
        "base_url": os.environ.get("ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
        "api_key": os.environ.get("ANTHROPIC_API_KEY", ""),
        "provider_name": "anthropic",
        "model": os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5"),
        "context_window": env_int("ANTHROPIC_CONTEXT_WINDOW", 200000),
        "max_tokens": env_int("ANTHROPIC_MAX_TOKENS", 64000),
        "reasoning": env_bool("ANTHROPIC_REASONING", False),
        "cost": env_costs("ANTHROPIC_COST_PER_MILLION"),
    },
}
# Attempts per job (first run included) before it is marked failed, and how long a claim on a
# running job lasts: longer than the hard time limit, so an expired lease means a dead worker.
CONTEXTLAB_JOB_MAX_ATTEMPTS = env_int("CONTEXTLAB_JOB_MAX_ATTEMPTS", 3)
CONTEXTLAB_JOB_LEASE_SECONDS = env_int("CONTEXTLAB_JOB_LEASE_SECONDS", CELERY_TASK_TIME_LIMIT + 60)
CONTEXTLAB_JOB_RETRY_BASE_SECONDS = env_float("CONTEXTLAB_JOB_RETRY_BASE_SECONDS", 2.0)

CACHES = (
    {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
    if REDIS_URL
    else {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
)

if not DEBUG:
    SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", True)
    CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# One console handler, on the root logger. Django's own logging config gives the "django" logger a
# console handler of its own (shown with DEBUG) that would print every Django line a second time
# on its way up to the root: here it keeps no handler and only propagates.
# tests/test_logging.py checks that a line is printed once.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"forbidden": {"()": "contextlab.logfilters.ForbiddenWithoutTraceback"}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    # A 403 logs its warning line without the exception's traceback (it is an answer, not a fault).
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        "django": {"handlers": [], "level": "INFO", "propagate": True},
        "django.request": {"filters": ["forbidden"]},
    },
}
