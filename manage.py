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
        execute_from_command_line(sys.argv)
    except (OperationalError, ProgrammingError):
        from contextlab.preflight import database_problem

        # A failing `migrate` is not told to run migrate.
        problem = database_problem(migrations=sys.argv[1:2] != ["migrate"])
        if problem is None:
            raise  # a fault of the command, not of the setup: its traceback helps
        sys.exit(f"{prog}: {problem}")


if __name__ == "__main__":
    main()
