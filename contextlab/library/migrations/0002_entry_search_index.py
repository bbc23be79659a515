"""Full-text index over Entry.search_text, on PostgreSQL only (SQLite searches with LIKE).

An expression index rather than a stored tsvector column: the same to_tsvector('english', …)
expression is used by contextlab.library.search.EntryVector, so the planner matches it, and the
table does not carry a second copy of every entry's text.
"""

from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps
from django.db import migrations

INDEX = "library_entry_search"


def create_index(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"CREATE INDEX {INDEX} ON library_entry "
            "USING gin (to_tsvector('english'::regconfig, search_text))"
        )


def drop_index(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [("library", "0001_initial")]

    operations = [migrations.RunPython(create_index, drop_index)]
