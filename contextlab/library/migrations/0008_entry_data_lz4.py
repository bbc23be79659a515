"""Store entries' JSON with lz4 where PostgreSQL has it (15 on Debian does).

Import stores every entry of a session at once; measured on the real 1,018-entry session
(bench/bench_import.py, interleaved runs), an import took ~0.5 ms less of its ~27 ms with lz4
than with PostgreSQL's default pglz, whose compression of the large tool outputs is the costlier
part of storing them. Values already stored keep their compression until rewritten.
"""

from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps
from django.db import migrations

from contextlab.db import set_column_compression


def use_lz4(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    set_column_compression(schema_editor, "library_entry", ["data"])


def use_default(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    set_column_compression(schema_editor, "library_entry", ["data"], method="default")


class Migration(migrations.Migration):
    dependencies = [("library", "0007_entry_revision_without_constraint")]

    operations = [migrations.RunPython(use_lz4, use_default)]
