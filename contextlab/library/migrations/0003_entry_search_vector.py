"""Search vectors stored per entry and filled after import (see Entry.search_vector).

Replaces 0002's expression index: computing to_tsvector inside the import's INSERTs made PG's text
parser (~6 MB/s) the speed limit of every import. PostgreSQL only; SQLite searches with LIKE.
"""

import django.contrib.postgres.search
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps
from django.db import migrations


def swap_indexes(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("DROP INDEX IF EXISTS library_entry_search")
    schema_editor.execute(
        "CREATE INDEX library_entry_search_vector ON library_entry USING gin (search_vector)"
    )
    # The indexer looks for rows still to index; this keeps that lookup off a full-table scan.
    schema_editor.execute(
        "CREATE INDEX library_entry_unindexed ON library_entry (revision_id) "
        "WHERE search_vector IS NULL"
    )


def unswap_indexes(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("DROP INDEX IF EXISTS library_entry_unindexed")
    schema_editor.execute("DROP INDEX IF EXISTS library_entry_search_vector")
    schema_editor.execute(
        "CREATE INDEX library_entry_search ON library_entry "
        "USING gin (to_tsvector('english'::regconfig, search_text))"
    )


class Migration(migrations.Migration):
    dependencies = [("library", "0002_entry_search_index")]

    operations = [
        migrations.AddField(
            model_name="entry",
            name="search_vector",
            field=django.contrib.postgres.search.SearchVectorField(blank=True, null=True),
        ),
        migrations.RunPython(swap_indexes, unswap_indexes),
    ]
