"""gunicorn's settings for contextlab, read from the working directory by
`gunicorn contextlab.wsgi` (flags on the command line override them; README, "Running it for a
team").

Preloading: see `preload_app` below.

Worker recycling: a Python process does not give memory back to the system, so a worker that once
rendered a very large session keeps that peak for as long as it lives. Each worker is replaced
after GUNICORN_MAX_REQUESTS requests, give or take a random GUNICORN_MAX_REQUESTS_JITTER, so that
the workers do not all restart at the same moment.
"""

import os


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    try:
        return int(raw) if raw else default
    except ValueError:
        raise SystemExit(f"{name} must be an integer, got {raw!r}") from None


max_requests = _int("GUNICORN_MAX_REQUESTS", 1000)
max_requests_jitter = _int("GUNICORN_MAX_REQUESTS_JITTER", 100)

# The application is loaded once, in the master, and every worker forks from it (contextlab/wsgi.py
# imports every view and compiles every template there): a recycled worker's replacement serves at
# once instead of spending seconds of CPU importing. A new version of the code needs a restart
# (a HUP reloads workers from the master's copy). GUNICORN_PRELOAD=0 turns it off.
preload_app = os.environ.get("GUNICORN_PRELOAD", "1") != "0"
