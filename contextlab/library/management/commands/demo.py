"""`manage.py demo`: import the demo sessions shipped in the repository and create a demo login.

The four demo sessions were written by the real Pi 0.80.2 (recorded against a fake model for the
conformance corpus): branches with summaries and labels, two compactions, tool calls, `!` bash
executions, custom messages and a session name. Running it again changes nothing but the demo
password, which is new on every run and printed (never a fixed, guessable one).
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from contextlab.library.importer import Status, import_session_file
from contextlab.review.services import audit_imports, command_actor

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo" / "sessions"
DEMO_USERNAME = "demo"


class Command(BaseCommand):
    help = "Import the demo sessions and create (or reset) the demo login."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--password", help="use this password instead of a random one")
        parser.add_argument(
            "--force", action="store_true", help="allow it with DEBUG off (not recommended)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.DEBUG and not options["force"]:
            raise CommandError(
                "Refusing to create a demo login with DEBUG off; pass --force if you mean it."
            )
        files = sorted(DEMO_DIR.glob("*.jsonl"))
        if not files:
            raise CommandError(f"No demo sessions in {DEMO_DIR}")
        user_model = get_user_model()
        user, _ = user_model.objects.get_or_create(username=DEMO_USERNAME)
        actor = command_actor("demo")
        for file in files:
            result = import_session_file(
                path=file,
                name=f"demo/{file.name}",
                user=user,
                within=lambda r: audit_imports(results=[r], actor_label=actor),
            )
            if result.status == Status.FAILED:
                raise CommandError(f"The demo session {file} could not be imported")
            self.stdout.write(f"{result.status:<9} demo/{file.name} ({result.entries} entries)")
        password = options["password"] or secrets.token_urlsafe(9)
        user.set_password(password)
        user.is_staff = False
        user.save()
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo login: username {DEMO_USERNAME!r}, password {password!r} "
                "(a new password each time `manage.py demo` runs)"
            )
        )
