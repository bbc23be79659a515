from django.contrib import admin

from contextlab.inspector.models import ResourceFile, ResourceProfile


class ResourceFileInline(admin.TabularInline[ResourceFile, ResourceProfile]):
    model = ResourceFile
    extra = 0
    fields = ("original_path", "uploaded_at")
    readonly_fields = ("uploaded_at",)


@admin.register(ResourceProfile)
class ResourceProfileAdmin(admin.ModelAdmin[ResourceProfile]):
    list_display = ("project", "agent_dir", "pi_root", "updated_by", "updated_at")
    search_fields = ("project__cwd",)
    inlines = (ResourceFileInline,)
