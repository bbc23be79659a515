"""Personal API tokens: only a hash of each token is stored; the token itself is shown once."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def active(self) -> ApiTokenQuerySet:
        return self.filter(revoked_at__isnull=True)


class ApiToken(models.Model):
    """A bearer token of one user for `/api/v1/` (`Authorization: Bearer TOKEN`).

    The API acts as that user: the same visibility rules as the pages. `key_hash` is the SHA-256
    of the token: tokens are 256-bit random strings, so a plain hash (no salt, no slow KDF) is as
    good as a password hash here and lets one indexed lookup find the token.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, blank=True)
    key_hash = models.CharField(max_length=64, unique=True)  # the lookup of every API request
    prefix = models.CharField(max_length=16)  # the token's first characters, to recognise it
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ("-created_at", "-id")

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name or 'unnamed'}) of {self.user}"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
