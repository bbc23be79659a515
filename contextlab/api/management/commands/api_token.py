"""``manage.py api_token USERNAME [--name N]``: make an API token for a user and print it once."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from contextlab.api.services import api_token_create


class Command(BaseCommand):
    help = "Create an API token for USERNAME and print it (only its hash is stored)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="what the token is for (shown in lists)")

    def handle(self, *args: Any, **options: Any) -> None:
        user_model = get_user_model()
        try:
            user = user_model.objects.get(**{user_model.USERNAME_FIELD: options["username"]})
        except user_model.DoesNotExist:
            raise CommandError(f"No user named {options['username']!r}") from None
        _, token = api_token_create(user=user, name=options["name"])
        self.stdout.write(token)
