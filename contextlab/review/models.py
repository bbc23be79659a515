"""Team review: what reviewers say about entries, how they triage sessions, and who triggered
what. Who may see a project (`ProjectMembership`, the visibility rule) is the library's model:
review manages memberships (contextlab.review.services) but the library's queries apply them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models

from contextlab.library.models import Project, ProjectMembership, Session

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

# ProjectMembership is the library's model now; still importable from here for older callers.
__all__ = ["AuditEvent", "Comment", "ProjectMembership", "SessionLabel"]


class CommentQuerySet(models.QuerySet["Comment"]):
    def visible_to(self, user: User | AnonymousUser | None) -> CommentQuerySet:
        """The comments on sessions this user may see (`Session.objects.visible_to`'s rule)."""
        return self.filter(session__in=Session.objects.visible_to(user))


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

    objects = CommentQuerySet.as_manager()

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
