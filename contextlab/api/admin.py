from django.contrib import admin
from django.http import HttpRequest

from contextlab.api.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin[ApiToken]):
    list_display = ("prefix", "name", "user", "created_at", "last_used_at", "revoked_at")
    raw_id_fields = ("user",)
    # A token is made by its owner (page or command), never typed in here: only a hash exists.
    readonly_fields = ("key_hash", "prefix", "created_at", "last_used_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
