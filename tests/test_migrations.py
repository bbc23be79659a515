"""The models and the migrations agree: a change to a model comes with its migration, and the
migrations of branches merged in parallel have one leaf per app."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def test_every_model_change_has_its_migration_and_each_app_one_leaf():
    out = io.StringIO()
    # --check exits non-zero (SystemExit) when a migration is missing; conflicting leaves raise.
    call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    assert "No changes detected" in out.getvalue()
