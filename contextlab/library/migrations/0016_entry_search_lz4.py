"""Store entries' search text and search vector with lz4 where PostgreSQL has it (as their JSON
since 0008).

Search indexing writes both for every entry: measured on a generated 60 MB session (indexing
alone, the PostgreSQL backend's CPU time, alternating runs), pglz's compression of them cost
~1 s of ~9 s. Values already stored keep their compression until rewritten.
"""

from django.db import migrations

from contextlab.db import set_column_compression

COLUMNS = ["search_text", "search_vector"]


def use_lz4(apps, schema_editor):  # type: ignore[no-untyped-def]
    set_column_compression(schema_editor, "library_entry", COLUMNS)


def use_default(apps, schema_editor):  # type: ignore[no-untyped-def]
    set_column_compression(schema_editor, "library_entry", COLUMNS, method="default")


class Migration(migrations.Migration):
    dependencies = [("library", "0015_project_created_by")]

    operations = [migrations.RunPython(use_lz4, use_default)]
