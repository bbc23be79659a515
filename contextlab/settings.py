"""contextlab settings: one module, driven by the environment.

Every value has a local default that works out of the box (SQLite in ./var, background jobs in
process, no Redis); set DATABASE_URL / REDIS_URL to run on PostgreSQL and Redis. Malformed values
raise ImproperlyConfigured at start-up rather than misbehaving later.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import os
from datetime import timedelta
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


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from None


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


def env_paths(name: str) -> list[str]:
    """Absolute folders, separated by os.pathsep (":") as in PATH."""
    raw = os.environ.get(name, "")
    paths = [item.strip() for item in raw.split(os.pathsep) if item.strip()]
    for path in paths:
        if not os.path.isabs(os.path.expanduser(path)):
            raise ImproperlyConfigured(f"{name} takes absolute folders, got {path!r}")
    return [os.path.expanduser(path) for path in paths]


def _local_secret_key(var_dir: Path) -> str:
    """A random key kept in var/ for the single-user embedded setup (SQLite, no DATABASE_URL),
    so that `manage.py import_sessions` works on a fresh checkout with DEBUG off."""
    import secrets

    path = var_dir / "secret_key"
    try:
        key = path.read_text().strip()
    except FileNotFoundError:
        key = ""
    if len(key) < 32:
        var_dir.mkdir(parents=True, exist_ok=True)
        key = secrets.token_urlsafe(50)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(key)
    return key


# Off unless set: `make run` sets DEBUG=true for the single-user demo.
DEBUG = env_bool("DEBUG", False)
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if DEBUG:
        SECRET_KEY = PLACEHOLDER_SECRET_KEY
    elif not os.environ.get("DATABASE_URL"):
        SECRET_KEY = _local_secret_key(VAR_DIR)
if not DEBUG and (SECRET_KEY == PLACEHOLDER_SECRET_KEY or len(SECRET_KEY) < 32):
    raise ImproperlyConfigured(
        "SECRET_KEY must be set to a random value of at least 32 characters when DEBUG is off"
        + (
            # Teammates' commands on the team database (import_sessions --watch) need one too.
            " and DATABASE_URL names a shared database (the team server's key, or e.g. "
            "SECRET_KEY=$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))'))"
            if not SECRET_KEY
            else ""
        )
    )
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
# A refused form (missing or stale CSRF token) says so inside the site layout, not on Django's
# bare page (whose template is rendered without the request, so no layout could be used).
CSRF_FAILURE_VIEW = "contextlab.urls.csrf_failure"

# django-ninja's bundled templates and static files serve the API docs page (no CDN), found here
# rather than through "ninja" in INSTALLED_APPS: an installed app is imported by every process,
# and ninja brings pydantic along, which commands such as `manage.py context` never use.
_ninja_spec = importlib.util.find_spec("ninja")  # finds the package without importing it
if _ninja_spec is None or _ninja_spec.origin is None:
    raise ImproperlyConfigured("django-ninja is not installed (pip install -r requirements.txt)")
NINJA_DIR = Path(_ninja_spec.origin).parent

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "django_htmx",
    "csp",
    "axes",
    "contextlab.library",
    "contextlab.inspector",
    "contextlab.jobs",
    "contextlab.review",
    "contextlab.api",
    "contextlab.sharing",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files from the app itself, so a plain `gunicorn contextlab.wsgi` serves CSS.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "csp.middleware.CSPMiddleware",
    # Before anything that queries: every query of the request runs under its time budget.
    "contextlab.budgets.RequestBudgetMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # After auth and messages, so that its 400 page renders like any other page.
    "contextlab.middleware.RejectNulMiddleware",
    # Before the login view reads the form: a refused attempt costs no password hash.
    "contextlab.signin.SignInThrottleMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into its lockout response.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "contextlab.urls"
WSGI_APPLICATION = "contextlab.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates", NINJA_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
    # The session tree's rows and the growth chart's table rows, a thousand at a time, where
    # Django's engine is slow (contextlab/inspector/rendering.py); the pages include them.
    {
        "BACKEND": "django.template.backends.jinja2.Jinja2",
        "DIRS": [BASE_DIR / "templates" / "jinja2"],
        "APP_DIRS": False,
        "OPTIONS": {"environment": "contextlab.jinja2.environment", "autoescape": True},
    },
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
            "NAME": str(VAR_DIR / "contextlab.sqlite3"),
            "OPTIONS": {"timeout": 20},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Login throttling (django-axes): after CONTEXTLAB_LOGIN_FAILURE_LIMIT wrong passwords for one
# username from one address, that pair is locked out for CONTEXTLAB_LOGIN_COOLOFF_MINUTES (the
# same username from another address still signs in).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("CONTEXTLAB_LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("CONTEXTLAB_LOGIN_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# No start-up banner on every manage.py command (it would mix into commands' output).
AXES_VERBOSE = False
# The client's address (contextlab/signin.py): REMOTE_ADDR, or X-Forwarded-For as written by
# the proxies listed in CONTEXTLAB_TRUSTED_PROXIES (addresses or networks, comma-separated).
# Behind a proxy that is not listed, every client has the proxy's address: list it.
AXES_CLIENT_IP_CALLABLE = "contextlab.signin.client_address"
CONTEXTLAB_TRUSTED_PROXIES = env_list("CONTEXTLAB_TRUSTED_PROXIES", [])
for _proxy in CONTEXTLAB_TRUSTED_PROXIES:
    try:
        ipaddress.ip_network(_proxy, strict=False)
    except ValueError:
        raise ImproperlyConfigured(
            f"CONTEXTLAB_TRUSTED_PROXIES: {_proxy!r} is not an IP address or network "
            "(such as 10.0.0.1 or 10.0.0.0/8)"
        ) from None
# Sign-in posts counted before any password is hashed (contextlab/signin.py), per client
# address and in total; 0 turns a limit off.
CONTEXTLAB_LOGIN_ATTEMPTS_PER_ADDRESS_PER_MINUTE = env_int(
    "CONTEXTLAB_LOGIN_ATTEMPTS_PER_ADDRESS_PER_MINUTE", 10
)
CONTEXTLAB_LOGIN_ATTEMPTS_PER_MINUTE = env_int("CONTEXTLAB_LOGIN_ATTEMPTS_PER_MINUTE", 30)

# Password reset mails a link, so it exists only when mail can be sent (EMAIL_HOST set).
_email_host = os.environ.get("EMAIL_HOST", "")
if _email_host:
    MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": {
                "host": _email_host,
                "port": env_int("EMAIL_PORT", 587),
                "username": os.environ.get("EMAIL_HOST_USER", ""),
                "password": os.environ.get("EMAIL_HOST_PASSWORD", ""),
                "use_tls": env_bool("EMAIL_USE_TLS", True),
            },
        }
    }
    DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "contextlab@localhost")
CONTEXTLAB_PASSWORD_RESET = bool(_email_host)
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static", NINJA_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "static_root"))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Compressed copies made by collectstatic; no manifest, so pages render without it too.
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Serve straight from the source folders as well: a deploy that skipped collectstatic still
# has its CSS (collectstatic adds the compressed copies).
WHITENOISE_USE_FINDERS = True

# Uploaded and synced session files are kept byte for byte (nothing imported is ever lost).
CONTEXTLAB_BLOB_DIR = Path(os.environ.get("CONTEXTLAB_BLOB_DIR", VAR_DIR / "blobs"))
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 10 * 1024 * 1024)
# A session line longer than this is not decoded (it stays in the blob, reported as a problem).
CONTEXTLAB_MAX_LINE_BYTES = env_int("CONTEXTLAB_MAX_LINE_BYTES", 16 * 1024 * 1024)
# What one page renders at most: collapsed messages of a long context per "show more" page, and
# characters of one message (the rest behind "show all", or the raw entry).
CONTEXTLAB_ENTRIES_PER_PAGE = env_int("CONTEXTLAB_ENTRIES_PER_PAGE", 100)
CONTEXTLAB_MESSAGE_RENDER_CHARS = env_int("CONTEXTLAB_MESSAGE_RENDER_CHARS", 100_000)
# A turn whose path holds at least this many estimated tokens (a deep turn of a large session:
# 0.4-1.5 s of CPU) is built on a thread of lower CPU priority, CONTEXTLAB_HEAVY_NICE above the
# process's own (contextlab.heavy; 0: built like any other), so it cannot slow the other pages.
CONTEXTLAB_HEAVY_TURN_TOKENS = env_int("CONTEXTLAB_HEAVY_TURN_TOKENS", 2_000_000)
CONTEXTLAB_HEAVY_NICE = env_int("CONTEXTLAB_HEAVY_NICE", 10)
# The tree indexes (and their whole-entry caches) a web process keeps, in bytes (estimated).
CONTEXTLAB_INDEX_CACHE_BYTES = env_int("CONTEXTLAB_INDEX_CACHE_BYTES", 128 * 1024 * 1024)
# A web process that grew by more than this since its last trim gives its free heap back to the
# system after the response (contextlab.memory; 0: never).
CONTEXTLAB_TRIM_ABOVE_BYTES = env_int("CONTEXTLAB_TRIM_ABOVE_BYTES", 32 * 1024 * 1024)
# Of a file that yields no session (junk, an image), only this many first bytes are kept for
# its uploader to download (0: none); the rest is not stored.
CONTEXTLAB_UNUSABLE_KEEP_BYTES = env_int("CONTEXTLAB_UNUSABLE_KEEP_BYTES", 1024 * 1024)
# The largest session file one browser upload takes (the command line has no limit).
CONTEXTLAB_MAX_UPLOAD_BYTES = env_int("CONTEXTLAB_MAX_UPLOAD_BYTES", 1024 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
FILE_UPLOAD_HANDLERS = [
    "contextlab.library.uploads.SizeLimitedUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]
# Connections that fill search vectors at once after a large import (PostgreSQL's text parser is
# the limit there: one connection keeps one core busy).
CONTEXTLAB_INDEX_WORKERS = env_int("CONTEXTLAB_INDEX_WORKERS", min(4, os.cpu_count() or 1))

# The largest body one push to /api/v1/sessions/<id>/lines may carry (a client pushes a larger
# file in parts), and how many days a new share link lasts unless its owner picks otherwise.
# Seconds one web request may take, per kind (contextlab.budgets): PostgreSQL's
# statement_timeout and the deadline long loops check. Each stays under gunicorn's --timeout
# (README: 300; the load test: 120), so a request past it gets a 503, never a killed worker.
CONTEXTLAB_REQUEST_BUDGETS = {
    "page": env_int("CONTEXTLAB_BUDGET_PAGE_SECONDS", 20),
    "api": env_int("CONTEXTLAB_BUDGET_API_SECONDS", 30),
    "export": env_int("CONTEXTLAB_BUDGET_EXPORT_SECONDS", 100),
    "upload": env_int("CONTEXTLAB_BUDGET_UPLOAD_SECONDS", 240),
}
CONTEXTLAB_API_MAX_PUSH_BYTES = env_int("CONTEXTLAB_API_MAX_PUSH_BYTES", 64 * 1024 * 1024)
CONTEXTLAB_SHARE_DAYS = env_int("CONTEXTLAB_SHARE_DAYS", 7)
# A push of at most this many bytes has its entries' search text indexed before it is answered
# (Pi appends a line or two at a time: searchable at once); a larger one (a first push of a long
# session) hands the indexing and the tree index to the worker's after_import, like an upload.
CONTEXTLAB_API_INDEX_INLINE_BYTES = env_int("CONTEXTLAB_API_INDEX_INLINE_BYTES", 1024 * 1024)

# Where Pi's resources live on this server (agent dir: AGENTS.md, skills, SYSTEM.md; Pi root: docs).
# Tilde-expanded as Pi's getAgentDir does, so the dashboard and `manage.py context` agree.
PI_AGENT_DIR = os.path.expanduser(
    os.environ.get("PI_CODING_AGENT_DIR") or str(Path.home() / ".pi" / "agent")
)
PI_PACKAGE_DIR = os.environ.get("PI_PACKAGE_DIR", "")
# The only folders of this server the dashboard reads (a session's cwd, an agent dir, a home):
# symlinks and ".." are resolved before the check. Empty (the default for a team): nothing is
# read from this server's disk; `make run` sets the user's own agent dir.
CONTEXTLAB_SERVER_ROOTS = env_paths("CONTEXTLAB_SERVER_ROOTS")

REDIS_URL = os.environ.get("REDIS_URL", "")
# Without Redis, jobs run in a thread of the web process (embedded mode); with it, on Celery
# workers.
CONTEXTLAB_JOBS_EMBEDDED = not REDIS_URL
# Prepended to every Redis key contextlab writes (Celery's queues and acknowledgements, the
# cache), so that several contextlabs, or test runs, can share one Redis database.
CONTEXTLAB_REDIS_PREFIX = os.environ.get("CONTEXTLAB_REDIS_PREFIX", "")
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
# Worker recycling: a pool child is replaced after this many tasks, or after a task that left it
# above this resident memory (KiB), since Python keeps the peak of the largest session it held.
CELERY_WORKER_MAX_TASKS_PER_CHILD = env_int("CELERY_WORKER_MAX_TASKS_PER_CHILD", 100)
CELERY_WORKER_MAX_MEMORY_PER_CHILD = env_int("CELERY_WORKER_MAX_MEMORY_PER_CHILD", 512 * 1024)
# A job's claim on a worker lasts CONTEXTLAB_JOB_LEASE_SECONDS and is renewed by the running job
# every third of it: a worker that dies (child or main process, SIGKILL included) stops renewing,
# and the sweep below hands the job to another worker within a lease plus a sweep.
CONTEXTLAB_JOB_LEASE_SECONDS = env_int("CONTEXTLAB_JOB_LEASE_SECONDS", 30)
# How often each worker's own timer says "alive" and re-queues jobs whose lease expired, whose
# message was lost, and entries left unindexed.
CONTEXTLAB_JOB_SWEEP_SECONDS = env_float("CONTEXTLAB_JOB_SWEEP_SECONDS", 10.0)
# The job page says "no worker has taken this job" once a queued job waited this long.
CONTEXTLAB_JOB_UNCLAIMED_WARNING_SECONDS = env_float("CONTEXTLAB_JOB_UNCLAIMED_WARNING_SECONDS", 5)
# Redis redelivers a message not acknowledged within a lease (acks_late: a worker whose main
# process died never acknowledges); the claim in the database makes a second delivery harmless.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": CONTEXTLAB_JOB_LEASE_SECONDS,
    "socket_connect_timeout": 2,
    "socket_timeout": 5,
    "global_keyprefix": CONTEXTLAB_REDIS_PREFIX,
}
# A POST that queues a job must not hang when Redis is down: give up after ~1 s (the job is then
# marked "not sent", with Retry).
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.5,
    "interval_max": 0.5,
}


# Summarisation models for compaction and branch-summary jobs. "offline" (the default) needs no
# network and writes a deterministic summary labelled as such; "openai" speaks chat-completions to
# any OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp, LM Studio); "anthropic" speaks
# Anthropic Messages. Each provider has its own model, context window and output cap.
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
# Attempts per job (first run included) before it is marked failed.
CONTEXTLAB_JOB_MAX_ATTEMPTS = env_int("CONTEXTLAB_JOB_MAX_ATTEMPTS", 3)
# How many times a failed or cancelled job may be retried by hand, counting retries of retries.
CONTEXTLAB_JOB_MAX_RETRIES = env_int("CONTEXTLAB_JOB_MAX_RETRIES", 3)
CONTEXTLAB_JOB_RETRY_BASE_SECONDS = env_float("CONTEXTLAB_JOB_RETRY_BASE_SECONDS", 2.0)
# The largest request body a job sends to a model (a compaction of a huge session could build one
# of tens of MB): a bigger one fails the job before anything is sent.
CONTEXTLAB_MAX_REQUEST_BYTES = env_int("CONTEXTLAB_MAX_REQUEST_BYTES", 4 * 1024 * 1024)
# Model calls (jobs that call a model, not the offline summariser) one user may queue per hour;
# 0 means no limit.
CONTEXTLAB_MODEL_CALLS_PER_USER_PER_HOUR = env_int("CONTEXTLAB_MODEL_CALLS_PER_USER_PER_HOUR", 30)

CACHES = (
    {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": CONTEXTLAB_REDIS_PREFIX,
        }
    }
    if REDIS_URL
    else {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
)
# Signed-in sessions are read from that shared cache (written through to the database): one
# query less on every page of a team's server; without Redis, from the database.
if REDIS_URL:
    SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"

if not DEBUG:
    SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", True)
    CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Off by default (the TLS proxy may do both); turn on once the site is HTTPS only.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SECURE_REFERRER_POLICY = "same-origin"

# Content-Security-Policy (django-csp): scripts, styles and everything else from this site
# only, no inline script, no style attribute, no eval; images may be data: URIs (thumbnails).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# Error reports (DEBUG pages, mails) hide settings and environment variables whose names say
# they hold credentials: Django's list plus URLs (DATABASE_URL, REDIS_URL, the broker).
DEFAULT_EXCEPTION_REPORTER_FILTER = "contextlab.debug.SafeReporterFilter"

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
