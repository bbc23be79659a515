from django.contrib import admin

from contextlab.sharing.models import ShareLink


@admin.register(ShareLink)
class ShareLinkAdmin(admin.ModelAdmin):
    list_display = ("id", "session", "entry_id", "created_by", "expires_at", "revoked_at")
    raw_id_fields = ("session", "created_by")
    readonly_fields = ("nonce", "use_count", "last_used_at", "created_at")

    def has_add_permission(self, request):  # type: ignore[no-untyped-def]
        return False
