from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps
from django.db import migrations, models


def restrict_projects_with_members(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    Project = apps.get_model("library", "Project")
    Membership = apps.get_model("library", "ProjectMembership")
    Project.objects.filter(pk__in=Membership.objects.values("project_id")).update(restricted=True)


class Migration(migrations.Migration):
    dependencies = [
        ("library", "0011_projectmembership"),
    ]

    operations = [
        migrations.AddField(
            model_name="project",
            name="restricted",
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(restrict_projects_with_members, migrations.RunPython.noop),
    ]
