"""Store the tree index's text columns with lz4 where PostgreSQL has it (15 on Debian does).

The row is written once per session state, on the import / first-open path, and read by every
process that opens the session first: measured on a 20k-entry session (2.8 MB + 3 MB of JSON),
writing took ~230 ms with PostgreSQL's default pglz and ~115 ms with lz4. SQLite, and servers
built without lz4, keep the default.
"""

from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps
from django.db import migrations

from contextlab.db import set_column_compression


def use_lz4(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    set_column_compression(schema_editor, "inspector_treeindex", ["data", "search"])


def use_default(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    set_column_compression(
        schema_editor, "inspector_treeindex", ["data", "search"], method="default"
    )


class Migration(migrations.Migration):
    dependencies = [("inspector", "0002_tree_index")]

    operations = [migrations.RunPython(use_lz4, use_default)]
