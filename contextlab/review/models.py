"""Team review: who may see a project, what reviewers say about entries, how they triage
sessions, and who triggered what.

Visibility rule (applied by `Session.objects.visible_to` and `Project.objects.visible_to`):
1. Superusers see everything.
2. A project without members is *open*: every signed-in user sees it. Sessions imported without a
   user (the `import_sessions` command, `--watch`, `demo`) land in such projects, which suits a
   single team sharing one machine.
3. A project with at least one member is *restricted*: only its members see it, and everyone else
   gets 404 on every URL that names it or one of its sessions.
A web upload that creates a project makes the uploader its owner (so it starts restricted); an
owner adds teammates by username on the project's members page.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from contextlab.library.models import Project, Session


class MembershipQuerySet(models.QuerySet["ProjectMembership"]):
    def owners(self) -> MembershipQuerySet:
        return self.filter(role=ProjectMembership.Role.OWNER)


class ProjectMembership(models.Model):
    class Role(models.TextChoices):
        MEMBER = "member"  # sees the project's sessions, comments, labels them
        OWNER = "owner"  # a member who also manages the members

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="project_memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    added_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = MembershipQuerySet.as_manager()

    class Meta:
        ordering = ("project", "user__username")
        constraints = (
            # Also the index behind visible_to's EXISTS (project = ? [AND user = ?]).
            models.UniqueConstraint(fields=["project", "user"], name="review_membership_once"),
        )

    def __str__(self) -> str:
        return f"{self.user} {self.role} of {self.project}"


class Comment(models.Model):
    """A reviewer's note on one entry of a session (by Pi entry id, so it survives new revisions
    of the file as long as the entry keeps its id)."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="comments")
    entry_id = models.CharField(max_length=100)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="comments"
    )
    body = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    edited_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("created_at", "id")
        indexes = (
            # The inspector lists one entry's comments; the tree counts them per entry.
            models.Index(fields=["session", "entry_id"], name="review_comment_entry"),
        )

    def __str__(self) -> str:
        return f"{self.author} on {self.entry_id}: {self.body[:40]}"


class SessionLabel(models.Model):
    """A contextlab-side triage label on a session ("needs-review", "bug"). Never written to the
    session file: Pi's own `label` entries are part of the file and are a different thing."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="review_labels")
    name = models.CharField(max_length=40)
    added_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("name",)
        constraints = (
            models.UniqueConstraint(fields=["session", "name"], name="review_label_once"),
        )
        indexes = (
            # The library filters sessions by label name.
            models.Index(fields=["name"], name="review_label_name"),
        )

    def __str__(self) -> str:
        return self.name


class AuditEvent(models.Model):
    """Who triggered what. Rows outlive what they describe: the foreign keys are SET_NULL and
    `target` keeps a readable description of the object at the time."""

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # A command run without a user records who ran it here (e.g. "import_sessions").
    actor_label = models.CharField(max_length=150, blank=True)
    verb = models.CharField(max_length=64)
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    session = models.ForeignKey(
        Session, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    target = models.CharField(max_length=300, blank=True)
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ("-created_at", "-id")
        indexes = (
            # The per-project and per-session audit pages, newest first.
            models.Index(fields=["project", "-created_at"], name="review_audit_project"),
            models.Index(fields=["session", "-created_at"], name="review_audit_session"),
        )

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor_name} {self.verb} {self.target}"

    @property
    def actor_name(self) -> str:
        if self.actor_id is not None and self.actor is not None:
            return self.actor.get_username()
        return self.actor_label or "system"
