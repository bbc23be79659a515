"""Substring search: each entry's distinct words, under a trigram index (pg_trgm).

Words (and so PostgreSQL's text-search parser) miss what sits inside a token: `eadFileUt` in
`binding.readFileUtf8(path`. `search_words` holds each distinct whitespace-separated token of the
entry's search text once, so a trigram index over it stays small (code repeats its tokens) while
`ILIKE '%…%'` finds any piece of a token. Rows indexed before this migration are queued again, so
the indexer gives them their words and identifier parts (their existing vectors keep working
meanwhile). PostgreSQL only; SQLite searches with LIKE on the text itself.
"""

from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps
from django.db import migrations, models

from contextlab.db import set_column_compression

# What the search indexer writes, with lz4 rather than pglz (as `data` in 0008): the text, its
# distinct words and its vector are written once per entry, and pglz's compression of them was
# a good part of what indexing costs.
SEARCH_COLUMNS = ["search_text", "search_words", "search_vector"]


def add_trigram_index(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    # pg_trgm is a trusted extension (PostgreSQL >= 13): the database owner may create it.
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    # Not partial: the planner cannot prove that `search_words ILIKE '%x%'` implies a predicate
    # such as `search_words <> ''`, and an empty value costs the index next to nothing.
    schema_editor.execute(
        "CREATE INDEX library_entry_search_words_trgm ON library_entry "
        "USING gin (search_words gin_trgm_ops)"
    )
    set_column_compression(schema_editor, "library_entry", SEARCH_COLUMNS)
    schema_editor.execute("UPDATE library_entry SET search_indexed = false WHERE search_indexed")


def drop_trigram_index(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("DROP INDEX IF EXISTS library_entry_search_words_trgm")
    set_column_compression(schema_editor, "library_entry", SEARCH_COLUMNS, method="default")


class Migration(migrations.Migration):
    dependencies = [("library", "0011_projectmembership")]

    operations = [
        migrations.AddField(
            model_name="entry",
            name="search_words",
            field=models.TextField(blank=True, db_default=""),
        ),
        migrations.RunPython(add_trigram_index, drop_trigram_index),
    ]
