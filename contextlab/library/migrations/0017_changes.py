"""A row per committed change to what the pages show (PostgreSQL only): what `contextlab.pages`
validates the pages it keeps against.

Every INSERT, UPDATE or DELETE statement on a watched table adds a row to `contextlab_changes`
(a trigger, so bulk writes, raw SQL and the admin count as much as a model's save). The row is
written in the writer's transaction: it becomes visible with the change itself, never before,
and an insert waits for no lock (a counter row updated by every writer would queue concurrent
imports behind one another). A TRUNCATE adds a row of random weight: the sum then never returns
to a value a kept page was computed under. `contextlab.pages.changes_mark` reads the sum and the
highest id; it folds the rows into one when they pile up.

The entries' own tables are not watched: entries are written with their session's row (its
entry count, leaf and last change), which is.
"""

from django.db import migrations

TABLE = "contextlab_changes"
WATCHED = [
    "auth_user",
    "inspector_resourcefile",
    "inspector_resourceprofile",
    "jobs_job",
    "library_importproblem",
    "library_project",
    "library_session",
    "library_sessionrevision",
    "review_comment",
    "review_projectmembership",
    "review_sessionlabel",
    "sharing_sharelink",
]

CREATE = f"""
CREATE TABLE {TABLE} (id bigserial PRIMARY KEY, weight bigint NOT NULL);
CREATE FUNCTION contextlab_note_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {TABLE} (weight) VALUES (
        CASE WHEN TG_OP = 'TRUNCATE' THEN 1 + floor(random() * 1e12)::bigint ELSE 1 END
    );
    RETURN NULL;
END $$;
""" + "".join(
    f"""
CREATE TRIGGER contextlab_changed AFTER INSERT OR UPDATE OR DELETE ON {table}
    FOR EACH STATEMENT EXECUTE FUNCTION contextlab_note_change();
CREATE TRIGGER contextlab_truncated AFTER TRUNCATE ON {table}
    FOR EACH STATEMENT EXECUTE FUNCTION contextlab_note_change();
"""
    for table in WATCHED
)

DROP = "".join(
    f"DROP TRIGGER IF EXISTS contextlab_changed ON {table};"
    f"DROP TRIGGER IF EXISTS contextlab_truncated ON {table};"
    for table in WATCHED
) + (f"DROP FUNCTION IF EXISTS contextlab_note_change(); DROP TABLE IF EXISTS {TABLE};")


def create(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [
        ("library", "0016_entry_search_lz4"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("inspector", "0005_profile_release"),
        ("jobs", "0003_job_session_leaf"),
        ("review", "0002_projectmembership_to_library"),
        ("sharing", "0001_initial"),
    ]

    operations = [migrations.RunPython(create, drop)]
