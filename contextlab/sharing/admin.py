from django.contrib import admin
from django.http import HttpRequest

from contextlab.sharing.models import ShareLink


@admin.register(ShareLink)
class ShareLinkAdmin(admin.ModelAdmin[ShareLink]):
    list_display = ("id", "session", "entry_id", "created_by", "expires_at", "revoked_at")
    raw_id_fields = ("session", "created_by")
    readonly_fields = ("nonce", "use_count", "last_used_at", "created_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
