"""gunicorn's settings for contextlab, read from the working directory by
`gunicorn contextlab.wsgi` (flags on the command line override them; README, "Running it for a
team").

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
