"""Share links: create, resolve (every use audited, every refused use recorded), revoke."""

from __future__ import annotations

import logging
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

log = logging.getLogger("contextlab.sharing")


class ShareError(Exception):
    """A refused share action, with a message fit to show the user."""


class LinkGone(Exception):
    """A genuine link that no longer works: expired, revoked, or withdrawn (its creator no
    longer sees the session: removed from the project, or their account deactivated)."""

    def __init__(self, why: str, link: ShareLink) -> None:
        super().__init__(why)
        self.why = why
        self.link = link


def creator_sees_session(link: ShareLink) -> bool:
    """A link shares what its creator may see, for as long as they may see it."""
    creator = link.created_by
    if not creator.is_active:
        return False
    return Session.objects.filter(pk=link.session_id).visible_to(creator).exists()


def share_token(link: ShareLink) -> str:
    """The URL token of a link: its id and nonce, signed with SECRET_KEY. The same for the life
    of the link (no timestamp inside: the row says until when it works)."""
    return signing.Signer(salt=SALT).sign_object({"id": link.pk, "n": link.nonce})


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
    LinkGone when it expired, was revoked, or its creator no longer sees the session."""
    try:
        value = signing.Signer(salt=SALT).unsign_object(token)
    except signing.BadSignature:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("id"), int):
        return None
    link = (
        ShareLink.objects.select_related("session", "session__project", "created_by")
        .filter(pk=value["id"], nonce=str(value.get("n")))
        .first()
    )
    if link is None:
        return None
    if not link.is_active:
        raise LinkGone("revoked" if link.is_revoked else "expired", link)
    if not creator_sees_session(link):
        raise LinkGone("withdrawn", link)
    return link


def share_link_refused(
    *, link: ShareLink | None, reason: str, request_meta: dict[str, str]
) -> None:
    """Record a use of a share URL that opened nothing. A refused use of a genuine link (expired,
    revoked, withdrawn, an entry it does not open) goes into its session's audit log, as its uses
    do; a token that names no link (forged, altered, mistyped) has no session to file it under and
    is only logged, with the client's address and never the token."""
    if link is None:
        log.warning("share link refused (%s) from %s", reason, request_meta.get("ip", "?"))
        return
    log.info("share link #%s refused (%s) from %s", link.pk, reason, request_meta.get("ip", "?"))
    audit_record(
        actor=None,
        actor_label=f"share link #{link.pk}",
        verb="share.refused",
        session=link.session,
        target=f"share link #{link.pk}",
        data={"link": link.pk, "reason": reason, **request_meta},
    )


def share_link_used(
    *, link: ShareLink, entry_id: str, request_meta: dict[str, str], in_full: bool = False
) -> None:
    """Count and audit one use of a link (who opened it is not known: the audit keeps the
    link, the entry shown — `in_full`: that entry's message, shown whole — and the client's
    address and browser)."""
    now = timezone.now()
    target = f"entry {entry_id}" if entry_id else "session"
    data: dict[str, Any] = {"link": link.pk, "entry_id": entry_id, **request_meta}
    if in_full:
        target = f"message of entry {entry_id} in full"
        data["in_full"] = True
    with transaction.atomic():
        ShareLink.objects.filter(pk=link.pk).update(use_count=F("use_count") + 1, last_used_at=now)
        audit_record(
            actor=None,
            actor_label=f"share link #{link.pk}",
            verb="share.view",
            session=link.session,
            target=target,
            data=data,
        )
