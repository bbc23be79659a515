# ProjectMembership moved to the library (library/migrations/0011): the table stays, only
# Django's model state leaves this app.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("review", "0001_initial"),
        ("library", "0011_projectmembership"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="ProjectMembership")],
            database_operations=[],
        ),
    ]
