import django.db.models.deletion
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps
from django.db import migrations, models, transaction

import contextlab.library.models


def use_lz4(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """Compress the big text columns with lz4 where the server has it (PostgreSQL >= 14 built with
    lz4): pglz compression was a large share of the time of a large import."""
    if schema_editor.connection.vendor != "postgresql":
        return
    for column in ("data", "search_text"):
        try:
            with transaction.atomic():
                schema_editor.execute(
                    f"ALTER TABLE library_entry ALTER COLUMN {column} SET COMPRESSION lz4"
                )
        except Exception:  # an older or lz4-less server keeps pglz; not an error
            return


class Migration(migrations.Migration):
    dependencies = [
        ("library", "0003_entry_search_vector"),
    ]

    operations = [
        migrations.AlterField(
            model_name="entry",
            name="data",
            field=contextlab.library.models.OrderedJSONField(),
        ),
        migrations.AlterField(
            model_name="session",
            name="header",
            field=contextlab.library.models.OrderedJSONField(default=dict),
        ),
        migrations.AlterField(
            model_name="entry",
            name="revision",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="entries",
                to="library.sessionrevision",
            ),
        ),
        migrations.RunPython(use_lz4, migrations.RunPython.noop),
    ]
