from django.contrib import admin

from contextlab.library.models import (
    Entry,
    ImportProblem,
    Project,
    ProjectMembership,
    Session,
    SessionRevision,
)


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ("cwd", "created_at")
    search_fields = ("cwd",)


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = (
        "session_id",
        "name",
        "project",
        "entry_count",
        "problem_count",
        "last_activity",
    )
    list_select_related = ("project",)
    search_fields = ("session_id", "name", "source_path")
    raw_id_fields = ("project", "current_revision", "imported_by")


@admin.register(SessionRevision)
class SessionRevisionAdmin(admin.ModelAdmin):
    list_display = ("session", "number", "status", "bytes_read", "reason", "updated_at")
    raw_id_fields = ("session",)


@admin.register(Entry)
class EntryAdmin(admin.ModelAdmin):
    list_display = ("entry_id", "type", "role", "session", "seq", "line_no")
    raw_id_fields = ("session", "revision")
    list_filter = ("type", "origin")


@admin.register(ImportProblem)
class ImportProblemAdmin(admin.ModelAdmin):
    list_display = ("path", "line", "reason", "session", "created_at")
    raw_id_fields = ("session", "revision")


@admin.register(ProjectMembership)
class ProjectMembershipAdmin(admin.ModelAdmin):
    list_display = ("project", "user", "role", "created_at")
    list_filter = ("role",)
    raw_id_fields = ("project", "user", "added_by")
