#!/usr/bin/env python
"""Django's command-line utility for contextlab."""

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

    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
