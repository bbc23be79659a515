from django.contrib import admin

from contextlab.jobs.models import Job


@admin.register(Job)
class JobAdmin(admin.ModelAdmin[Job]):
    list_display = ("id", "kind", "session", "status", "attempts", "created_at", "finished_at")
    list_filter = ("kind", "status")
    search_fields = ("session__session_id", "leaf_entry_id", "target_entry_id", "error")
    raw_id_fields = ("session", "requested_by", "retry_of")
    readonly_fields = ("requests", "responses", "preview", "usage", "result_entry_ids")
