from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from contextlab.library.models import (
    Entry,
    ImportProblem,
    Project,
    ProjectMembership,
    Session,
    SessionRevision,
)


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin[Project]):
    list_display = ("cwd", "restricted", "created_at")
    list_filter = ("restricted",)
    search_fields = ("cwd",)


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin[Session]):
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
class SessionRevisionAdmin(admin.ModelAdmin[SessionRevision]):
    list_display = ("session", "number", "status", "bytes_read", "reason", "updated_at")
    raw_id_fields = ("session",)


@admin.register(Entry)
class EntryAdmin(admin.ModelAdmin[Entry]):
    list_display = ("entry_id", "type", "role", "session", "seq", "line_no")
    raw_id_fields = ("session", "revision")
    list_filter = ("type", "origin")


@admin.register(ImportProblem)
class ImportProblemAdmin(admin.ModelAdmin[ImportProblem]):
    list_display = ("path", "line", "reason", "session", "created_at")
    raw_id_fields = ("session", "revision")


class ProjectMembershipForm(forms.ModelForm[ProjectMembership]):
    class Meta:
        model = ProjectMembership
        fields = "__all__"  # noqa: DJ007 - the admin shows every field

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        project, user, role = data.get("project"), data.get("user"), data.get("role")
        if project is not None and user is not None and role:
            # The same rule as the members page: the project is not left without an owner.
            # The membership being changed counts as the one of the user it is given (the
            # admin can change its user too).
            owners = ProjectMembership.objects.owners().filter(project=project)
            owner_ids = list(owners.exclude(pk=self.instance.pk).values_list("user_id", flat=True))
            was = self.instance
            if was.pk is not None and was.project_id == project.pk and was.role == "owner":
                owner_ids.append(user.pk)
            problem = ProjectMembership.owner_problem(owner_ids, user.pk, role)
            if problem:
                raise forms.ValidationError(problem)
        return data


@admin.register(ProjectMembership)
class ProjectMembershipAdmin(admin.ModelAdmin[ProjectMembership]):
    form = ProjectMembershipForm
    list_display = ("project", "user", "role", "created_at")
    list_filter = ("role",)
    raw_id_fields = ("project", "user", "added_by")

    def save_model(
        self, request: HttpRequest, obj: ProjectMembership, form: Any, change: bool
    ) -> None:
        super().save_model(request, obj, form, change)
        # As review's project_restrict: a project with a member stays closed when it loses
        # them all later (here in the admin, or with a deleted account).
        Project.objects.filter(pk=obj.project_id, restricted=False).update(restricted=True)
