#!/usr/bin/env python
"""Django's command-line utility for contextlab.

What a command needs and lacks (a setting, a database it can reach, migrations applied) ends
it with one line on stderr and exit status 1, not a traceback: contextlab/preflight.py.
"""

import os
import sys

# Commands that read a session file and print: they queue nothing, so they skip loading Celery
# (contextlab/__init__.py says why). Every other command loads the Celery app first, as the web
# process does, so that whatever it queues goes to contextlab's broker.
FILE_COMMANDS = {"context", "compact", "branch-summary"}

# Commands that need the settings and nothing of the app registry (no model, URL, template or
# signal): they run without django.setup(), whose imports (every app's models, the admin,
# psycopg) were most of `manage.py context`'s time as a whole process. The app that holds each.
LIGHT_COMMANDS = {"context": "contextlab.inspector"}


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextlab.settings")
    if sys.argv[1:2] and sys.argv[1] not in FILE_COMMANDS:
        import contextlab.celery  # noqa: F401

    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line
    from django.db.utils import OperationalError, ProgrammingError

    prog = os.path.basename(sys.argv[0]) or "manage.py"
    try:
        # Loads the settings: a missing or malformed value is one line.
        settings._setup()
    except ImproperlyConfigured as exc:
        sys.exit(f"{prog}: {exc}")
    try:
        light = LIGHT_COMMANDS.get(sys.argv[1]) if sys.argv[1:2] else None
        if light is None:
            execute_from_command_line(sys.argv)
        else:
            _run_light(light, sys.argv)
    except (OperationalError, ProgrammingError):
        from contextlab.preflight import database_problem

        # A failing `migrate` is not told to run migrate.
        problem = database_problem(migrations=sys.argv[1:2] != ["migrate"])
        if problem is None:
            raise  # a fault of the command, not of the setup: its traceback helps
        sys.exit(f"{prog}: {problem}")


def _run_light(app: str, argv: list[str]) -> None:
    """What execute_from_command_line does for one command, less django.setup(): the project's
    logging settings applied (not Django's defaults, whose handlers concern requests: mailing
    the admins a server error imports the views and templates), then the command class loaded
    from its app and run."""
    import logging

    from django.conf import settings
    from django.core.management import load_command_class
    from django.utils.module_loading import import_string

    logging.captureWarnings(True)
    if settings.LOGGING_CONFIG:
        import_string(settings.LOGGING_CONFIG)(settings.LOGGING)
    load_command_class(app, argv[1]).run_from_argv(argv)


if __name__ == "__main__":
    main()
