"""What a command needs from the machine, said in one line instead of a traceback.

Used by manage.py (a database that cannot be reached, migrations not applied), by the Celery
worker at start (a broker it can reach) and by `make run` / `make worker` before they start
anything (`python -m contextlab preflight port 8000`, `... preflight broker`, through
contextlab/__main__.py). Each check returns None when all is well, else the sentence to print.
"""

from __future__ import annotations

import socket
import sys
from urllib.parse import urlsplit


def _where(url: str) -> str:
    """host:port/path of a connection URL, without its credentials."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def port_problem(port: int, host: str = "127.0.0.1") -> str | None:
    """Whether a server could listen on host:port now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # What runserver does too: a port left in TIME_WAIT by a stopped server is free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            return (
                f"port {port} on {host} is taken ({exc.strerror}): stop what listens there "
                f"or choose another port, e.g. PORT={port + 1} make run"
            )
    return None


def broker_problem(*, reach: bool = True) -> str | None:
    """Whether a worker would get work: a Redis broker (REDIS_URL) that answers (`reach`: ask
    it; a deployed worker started before its Redis waits for it instead)."""
    from django.conf import settings

    url = settings.CELERY_BROKER_URL
    if not settings.REDIS_URL or url.startswith("memory://"):
        return (
            "REDIS_URL is not set: a worker needs the Redis the web server queues jobs on "
            "(e.g. REDIS_URL=redis://127.0.0.1:6379/0 make worker); without REDIS_URL the "
            "web server runs jobs itself and no worker is needed"
        )
    if not reach:
        return None
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2).ping()
    except redis.RedisError as exc:
        reason = _first_line(exc)
        return f"no Redis answers at {_where(url)} ({reason}): start Redis or fix REDIS_URL"
    return None


def database_problem(*, migrations: bool = True) -> str | None:
    """Whether the default database can be reached and (`migrations`) has every migration
    applied: asked after a command failed on a database error, to say which of the two it was."""
    from django.db import connections
    from django.db.migrations.executor import MigrationExecutor
    from django.db.utils import DatabaseError

    connection = connections["default"]
    connections.close_all()  # a failed query may have left the connection unusable
    settings = connection.settings_dict
    if connection.vendor == "sqlite":
        where = str(settings["NAME"])
    else:
        where = f"{settings.get('HOST') or 'localhost'}:{settings.get('PORT') or 5432}"
        where += f"/{settings['NAME']}"
    try:
        connection.ensure_connection()
    except DatabaseError as exc:
        return (
            f"the database at {where} cannot be reached ({_first_line(exc)}): "
            "start PostgreSQL or fix DATABASE_URL"
        )
    if not migrations:
        return None
    try:
        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError as exc:
        return f"the database at {where} cannot be read ({_first_line(exc)})"
    if plan:
        return (
            f"the database at {where} lacks {len(plan)} migration(s): "
            "run .venv/bin/python manage.py migrate"
        )
    return None


def main(argv: list[str]) -> int:
    """`python -m contextlab preflight port N` or `... preflight broker`: exit 1 with the
    problem on stderr, 0 when there is none."""
    if len(argv) == 2 and argv[0] == "port":
        problem = port_problem(int(argv[1]))
    elif argv == ["broker"]:
        import os

        import django

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextlab.settings")
        django.setup()
        problem = broker_problem()
    else:
        print("usage: python -m contextlab preflight port N | broker", file=sys.stderr)
        return 2
    if problem:
        print(problem, file=sys.stderr)
        return 1
    return 0
