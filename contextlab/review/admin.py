from django.contrib import admin

from contextlab.review.models import AuditEvent, Comment, SessionLabel


@admin.register(Comment)
class CommentAdmin(admin.ModelAdmin[Comment]):
    list_display = ("session", "entry_id", "author", "created_at")
    raw_id_fields = ("session", "author")


@admin.register(SessionLabel)
class SessionLabelAdmin(admin.ModelAdmin[SessionLabel]):
    list_display = ("name", "session", "added_by", "created_at")
    list_filter = ("name",)
    raw_id_fields = ("session", "added_by")


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin[AuditEvent]):
    list_display = ("created_at", "actor", "actor_label", "verb", "target")
    list_filter = ("verb",)
    raw_id_fields = ("actor", "project", "session")
