"""Keep rows without a search vector out of the full-text index.

Entries are stored with no vector and get one from the search indexer once the import has
committed; a full GIN index took an entry for every NULL too, on the import's critical path
(interleaved runs: ~0.7 ms of a 27 ms import of the real session). `search_vector @@ query` is a
strict operator clause, which PostgreSQL knows implies `search_vector IS NOT NULL`, so searches
use the partial index as they used the full one (tests/library/test_selectors.py checks the plan).
"""

from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps
from django.db import migrations

FULL = "CREATE INDEX library_entry_search_vector ON library_entry USING gin (search_vector)"


def make_partial(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("DROP INDEX IF EXISTS library_entry_search_vector")
    schema_editor.execute(FULL + " WHERE search_vector IS NOT NULL")


def make_full(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("DROP INDEX IF EXISTS library_entry_search_vector")
    schema_editor.execute(FULL)


class Migration(migrations.Migration):
    dependencies = [("library", "0008_entry_data_lz4")]

    operations = [migrations.RunPython(make_partial, make_full)]
