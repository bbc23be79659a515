"""Share links: a signed, expiring, revocable read-only link to a session or to one entry's
inspector view, for people without an account."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from contextlab.library.models import Session


class ShareLink(models.Model):
    """One link. Its URL carries a token signed with SECRET_KEY that names this row and its
    `nonce`; the row decides whether the link still works (expiry, revocation), so a link is
    revoked by changing the row, and a forged or altered token never reaches the database."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="share_links")
    entry_id = models.CharField(max_length=100, blank=True)  # "" = the whole session
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="share_links"
    )
    nonce = models.CharField(max_length=32)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    use_count = models.PositiveIntegerField(default=0)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at", "-id")
        indexes = (
            # The owner's list of their links, newest first.
            models.Index(fields=["created_by", "-created_at"], name="sharing_link_owner"),
        )

    def __str__(self) -> str:
        what = f"entry {self.entry_id}" if self.entry_id else "session"
        return f"share link #{self.pk} ({what} of {self.session_id})"

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None

    @property
    def is_expired(self) -> bool:
        return self.expires_at <= timezone.now()

    @property
    def is_active(self) -> bool:
        return not self.is_revoked and not self.is_expired
