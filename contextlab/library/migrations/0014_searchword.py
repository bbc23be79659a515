"""Substring search through one table of the library's words instead of a column per entry.

0012 gave every entry `search_words` (its distinct tokens) under a trigram index: every entry
indexed wrote its tokens again and added their trigrams to the index, which made indexing a large
import much slower than before. Now `library_searchword` holds each word of the search vectors
once, under the trigram index; a substring search finds the words holding the piece there and
then the entries by their vectors. Every entry is queued for indexing again so that its vector
gets the identifier parts as library.search now computes them and the table gets its words (the
existing vectors keep working meanwhile). PostgreSQL only; SQLite searches with LIKE on the text.
"""

from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps
from django.db import migrations, models

from contextlab.db import set_column_compression


def vocabulary_index(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    schema_editor.execute(
        "CREATE INDEX library_searchword_trgm ON library_searchword "
        "USING gin (word gin_trgm_ops)"
    )
    schema_editor.execute("DROP INDEX IF EXISTS library_entry_search_words_trgm")
    schema_editor.execute("UPDATE library_entry SET search_indexed = false WHERE search_indexed")


def entry_words_index(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("DROP INDEX IF EXISTS library_searchword_trgm")
    schema_editor.execute(
        "CREATE INDEX library_entry_search_words_trgm ON library_entry "
        "USING gin (search_words gin_trgm_ops)"
    )
    set_column_compression(schema_editor, "library_entry", ["search_words"])
    schema_editor.execute("UPDATE library_entry SET search_indexed = false WHERE search_indexed")


class Migration(migrations.Migration):
    dependencies = [("library", "0013_merge_0012_entry_search_words_0012_project_restricted")]

    operations = [
        # The table by hand: Django would give its text primary key a second index for LIKE
        # 'prefix%' (text_pattern_ops), which substring search never asks and every new word
        # would be written to.
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "CREATE TABLE library_searchword (word text NOT NULL PRIMARY KEY)",
                    "DROP TABLE library_searchword",
                )
            ],
            state_operations=[
                migrations.CreateModel(
                    name="SearchWord",
                    fields=[("word", models.TextField(primary_key=True, serialize=False))],
                    options={"db_table": "library_searchword"},
                )
            ],
        ),
        migrations.RunPython(vocabulary_index, entry_words_index),
        migrations.RemoveField(model_name="entry", name="search_words"),
    ]
