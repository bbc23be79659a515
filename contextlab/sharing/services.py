"""Share links: create, resolve (every use audited), revoke."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from django.core import signing
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from contextlab.library.models import Entry, Session
from contextlab.review.services import audit_record
from contextlab.sharing.models import ShareLink

SALT = "contextlab.sharing.link"
MAX_DAYS = 90


class ShareError(Exception):
    """A refused share action, with a message fit to show the user."""


class LinkGone(Exception):
    """A genuine link that no longer works (expired or revoked)."""


def share_token(link: ShareLink) -> str:
    """The URL token of a link: its id and nonce, signed with SECRET_KEY."""
    return signing.dumps({"id": link.pk, "n": link.nonce}, salt=SALT)


def share_link_create(
    *, session: Session, entry_id: str = "", days: int, created_by: Any
) -> ShareLink:
    """A link to `session` (or to one entry of it) that works for `days` days. The caller has
    checked that `created_by` sees the session."""
    if not 1 <= days <= MAX_DAYS:
        raise ShareError(f"A link lasts 1 to {MAX_DAYS} days.")
    entry_id = entry_id.strip()
    if entry_id and not Entry.objects.for_session(session).filter(entry_id=entry_id).exists():
        raise ShareError(f"No entry {entry_id!r} in this session.")
    with transaction.atomic():
        link = ShareLink.objects.create(
            session=session,
            entry_id=entry_id,
            created_by=created_by,
            nonce=secrets.token_urlsafe(16),
            expires_at=timezone.now() + timedelta(days=days),
        )
        audit_record(
            actor=created_by,
            verb="share.create",
            session=session,
            target=f"share link #{link.pk}" + (f" to entry {entry_id}" if entry_id else ""),
            data={"link": link.pk, "entry_id": entry_id, "expires_at": link.expires_at.isoformat()},
        )
    return link


def share_link_revoke(*, link: ShareLink, actor: Any) -> bool:
    """Stop a link at once; False if it was already revoked."""
    with transaction.atomic():
        changed = ShareLink.objects.filter(pk=link.pk, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        if changed:
            audit_record(
                actor=actor,
                verb="share.revoke",
                session=link.session,
                target=f"share link #{link.pk}",
                data={"link": link.pk},
            )
    link.refresh_from_db()
    return bool(changed)


def share_link_resolve(token: str) -> ShareLink | None:
    """The link a token names (None for a token that is not ours, forged or altered);
    LinkGone when it expired or was revoked."""
    try:
        value = signing.loads(token, salt=SALT)
    except signing.BadSignature:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("id"), int):
        return None
    link = (
        ShareLink.objects.select_related("session", "session__project")
        .filter(pk=value["id"], nonce=str(value.get("n")))
        .first()
    )
    if link is None:
        return None
    if not link.is_active:
        raise LinkGone("revoked" if link.is_revoked else "expired")
    return link


def share_link_used(*, link: ShareLink, entry_id: str, request_meta: dict[str, str]) -> None:
    """Count and audit one use of a link (who opened it is not known: the audit keeps the
    link, the entry shown and the client's address and browser)."""
    now = timezone.now()
    with transaction.atomic():
        ShareLink.objects.filter(pk=link.pk).update(use_count=F("use_count") + 1, last_used_at=now)
        audit_record(
            actor=None,
            actor_label=f"share link #{link.pk}",
            verb="share.view",
            session=link.session,
            target=f"entry {entry_id}" if entry_id else "session",
            data={"link": link.pk, "entry_id": entry_id, **request_meta},
        )
