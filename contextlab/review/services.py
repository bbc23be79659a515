"""Writes of the review app: memberships, comments, review labels, audit events.

Keyword-only functions named <entity>_<action>; each one that changes what a team sees records an
audit event in the same transaction, so the log never shows a change that did not happen.
"""

from __future__ import annotations

import re
from typing import IO, Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from contextlab.library.importer import probe_header
from contextlab.library.models import (
    Project,
    ProjectMembership,
    ProjectUnavailable,
    Session,
    project_choice,
)
from contextlab.library.storage.values import clean_text
from contextlab.review.models import AuditEvent, Comment, SessionLabel

COMMENT_MAX = 10_000
LABEL_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,39}$")


class ReviewError(Exception):
    """A refused review action, with a message fit to show the user."""


class ReviewForbidden(ReviewError):
    """A review action this user may not take at all, whatever they send (the views answer 403);
    the other ReviewErrors are about what was sent, and the page shows them."""


def audit_record(
    *,
    actor: Any,
    verb: str,
    project: Project | None = None,
    session: Session | None = None,
    target: str = "",
    data: dict[str, Any] | None = None,
    actor_label: str = "",
) -> AuditEvent:
    """Record that `actor` (a user, or None for a command: then say who in `actor_label`) did
    `verb` ("session.upload", "job.create", ...). The project defaults to the session's."""
    user = actor if actor is not None and getattr(actor, "is_authenticated", False) else None
    return AuditEvent.objects.create(
        actor=user,
        actor_label=actor_label[:150],
        verb=verb,
        # By id: the session's project need not be loaded to record it.
        project_id=project.pk if project is not None else getattr(session, "project_id", None),
        session=session,
        target=target[:300],
        data=data or {},
    )


def audit_imports(
    *,
    results: list[Any],
    actor_label: str,
    statuses: tuple[str, ...] = ("new", "appended", "revised"),
) -> int:
    """One "session.import" event per session a command stored or changed (results of
    import_session_file whose status is in `statuses`), in one INSERT. Returns how many."""
    events = [
        AuditEvent(
            actor_label=actor_label[:150],
            verb="session.import",
            project_id=result.session.project_id,
            session=result.session,
            target=result.session.title[:200],
            data={
                "status": result.status,
                "path": str(result.path)[:500],
                "new_entries": result.new_entries,
            },
        )
        for result in results
        if result.session is not None and result.status in statuses
    ]
    AuditEvent.objects.bulk_create(events)
    return len(events)


def command_actor(command: str) -> str:
    """Who ran a management command, for events without a contextlab user."""
    import getpass

    try:
        return f"{command} (by {getpass.getuser()})"
    except (KeyError, OSError):  # no login name in some containers
        return command


def audit_job(*, actor: Any, verb: str, job: Any, **data: Any) -> AuditEvent:
    """A job event ("job.create", "job.cancel", "job.retry") on the job's session."""
    return audit_record(
        actor=actor,
        verb=verb,
        session=job.session,
        target=f"job #{job.pk} ({job.kind})",
        data={"job": job.pk, "kind": job.kind, "leaf_entry_id": job.leaf_entry_id, **data},
    )


# --- Membership -----------------------------------------------------------------------------


def can_manage_members(user: Any, project: Project) -> bool:
    """Owners manage their project's members; superusers manage any project (and are the only
    ones who can restrict an open project, since nobody owns it)."""
    if not user.is_authenticated:
        return False
    if user.is_superuser:
        return True
    return ProjectMembership.objects.owners().filter(project=project, user=user).exists()


def membership_add(*, project: Project, username: str, role: str, actor: Any) -> ProjectMembership:
    """Add (or change the role of) a member by username."""
    if role not in ProjectMembership.Role.values:
        raise ReviewError(f"Unknown role {role!r}")
    user_model = get_user_model()
    try:
        user = user_model.objects.get(**{user_model.USERNAME_FIELD: username.strip()})
    except user_model.DoesNotExist:
        raise ReviewError(f"No user named {username.strip()!r}") from None
    with transaction.atomic():
        # Locked as in membership_remove: a demotion must not leave the project without owners.
        owners = list(
            ProjectMembership.objects.select_for_update().owners().filter(project=project)
        )
        problem = ProjectMembership.owner_problem([o.user_id for o in owners], user.pk, role)
        if problem:
            raise ReviewError(problem)
        membership, created = ProjectMembership.objects.update_or_create(
            project=project,
            user=user,
            defaults={"role": role},
            create_defaults={"role": role, "added_by": actor if actor.is_authenticated else None},
        )
        project_restrict(project_id=project.pk)
        audit_record(
            actor=actor,
            verb="membership.add" if created else "membership.role",
            project=project,
            target=f"{user.get_username()} as {role}",
            data={"user": user.get_username(), "role": role},
        )
    return membership


def project_restrict(*, project_id: int) -> None:
    """A project with a member is restricted for good: removing its members later (the last
    one deleted in the admin, or with their account) leaves it closed, never open."""
    Project.objects.filter(pk=project_id, restricted=False).update(restricted=True)


def membership_remove(*, membership: ProjectMembership, actor: Any) -> None:
    """Remove a member; the last owner stays, so that someone can still manage the project."""
    project = membership.project
    with transaction.atomic():
        # Lock the project's memberships: two owners removing each other at once must not
        # leave a project whose members nobody can manage.
        owners = list(
            ProjectMembership.objects.select_for_update().owners().filter(project=project)
        )
        if membership.role == ProjectMembership.Role.OWNER and len(owners) <= 1:
            raise ReviewError("A project keeps at least one owner: add another owner first.")
        username = membership.user.get_username()
        membership.delete()
        audit_record(
            actor=actor,
            verb="membership.remove",
            project=project,
            target=username,
            data={"user": username},
        )


def session_writable_by(user: Any, session: Session) -> bool:
    """One writer per session: the account that first pushed or uploaded it, the owners of its
    project, and superusers. Anyone else (a teammate who sees it included) may read it but not
    push to it or upload its file again. A session imported by a command has no such account:
    only its project's owners write to it over HTTP."""
    if user.is_superuser or (
        session.imported_by_id is not None and session.imported_by_id == user.pk
    ):
        return True
    return (
        ProjectMembership.objects.owners()
        .filter(project_id=session.project_id, user_id=user.pk)
        .exists()
    )


UPLOAD_NOT_THE_WRITER = (
    "refused: this session is written only by the account that first uploaded or pushed it and"
    " its project's owners; nothing was stored."
)
UPLOAD_REFUSED = (
    "refused: its session id or working directory (cwd) cannot be used by you;"
    " nothing was stored. Ask the owners of the project it belongs to, if any, to add you."
)


UPLOAD_PROJECT_UNAVAILABLE = (
    "refused: you were removed from your project for this folder (cwd), so a new session from it"
    " has nowhere to go; nothing was stored. Ask that project's owners to add you back."
)


def upload_refusal(
    *, user: Any, session_id: str | None, cwd: str, session_exists: bool
) -> str | None:
    """Why `user` may not upload this file (None when they may).

    A stored session: refused if they cannot see it (the answer names nothing, so it does not
    tell which of the file's ids another team uses: that something is in the way cannot be
    hidden without storing the file) or do not write it (session_writable_by). A new session:
    it goes into a project of its folder that they are a member of, the folder's open project,
    or a new one of their own (library.models.project_for_new_session): never into another
    team's project, so a folder someone else used first is no reason to refuse it.

    `session_exists`: a session with this id is stored (the caller asks once)."""
    if session_exists:
        if user.is_superuser:
            return None
        session = Session.objects.filter(session_id=session_id).visible_to(user).first()
        if session is None:
            return UPLOAD_REFUSED
        if not session_writable_by(user, session):
            return UPLOAD_NOT_THE_WRITER
        return None  # syncing a session the user writes: its project is not changed
    try:
        project_choice(cwd, user)
    except ProjectUnavailable:
        return UPLOAD_PROJECT_UNAVAILABLE
    return None


def upload_check(*, user: Any, fileobj: IO[bytes]) -> tuple[str | None, bool]:
    """Before a web upload: (why it is refused or None, whether it would create a project).

    Reads the header the way the import does (probe_header), then rewinds the file."""
    probe = probe_header(fileobj)
    fileobj.seek(0)
    header = probe.header or {}
    cwd = clean_text(header["cwd"]) if isinstance(header.get("cwd"), str) else ""
    session_exists = (
        probe.session_id is not None
        and Session.objects.filter(session_id=probe.session_id).exists()
    )
    refusal = upload_refusal(
        user=user, session_id=probe.session_id, cwd=cwd, session_exists=session_exists
    )
    creates = (
        refusal is None
        and not session_exists
        and probe.session_id is not None
        and project_choice(cwd, user) is None
    )
    return refusal, creates


def upload_record(*, user: Any, session: Session, status: str, created_project: bool) -> None:
    """After a web upload: audit it. The import already made the uploader the owner of a
    project it created (in its own transaction); this also covers a race it lost.

    Two people uploading into the same new project at once both saw it absent, so both become
    owners: each of them brought a session into it, and neither may lose sight of their own."""
    with transaction.atomic():
        if created_project and user.is_authenticated:
            ProjectMembership.objects.get_or_create(
                project=session.project,
                user=user,
                defaults={"role": ProjectMembership.Role.OWNER, "added_by": user},
            )
            project_restrict(project_id=session.project_id)
        audit_record(
            actor=user,
            verb="session.upload",
            session=session,
            target=session.title[:200],
            data={"status": status, "session_id": session.session_id},
        )


# --- Comments -------------------------------------------------------------------------------


def _comment_body(body: str) -> str:
    body = body.strip()
    if not body:
        raise ReviewError("Write something first.")
    if len(body) > COMMENT_MAX:
        raise ReviewError(f"A comment holds at most {COMMENT_MAX} characters.")
    return body


def comment_create(*, session: Session, entry_id: str, author: Any, body: str) -> Comment:
    body = _comment_body(body)
    with transaction.atomic():
        comment = Comment.objects.create(
            session=session, entry_id=entry_id, author=author, body=body
        )
        audit_record(
            actor=author,
            verb="comment.create",
            session=session,
            target=f"entry {entry_id}",
            data={"comment": comment.pk, "entry_id": entry_id},
        )
    return comment


def comment_update(*, comment: Comment, actor: Any, body: str) -> Comment:
    if comment.author_id != actor.pk:
        raise ReviewForbidden("Only its author can edit a comment.")
    body = _comment_body(body)
    if body == comment.body:
        return comment
    with transaction.atomic():
        comment.body = body
        comment.edited_at = timezone.now()
        comment.save(update_fields=["body", "edited_at"])
        audit_record(
            actor=actor,
            verb="comment.edit",
            session=comment.session,
            target=f"entry {comment.entry_id}",
            data={"comment": comment.pk, "entry_id": comment.entry_id},
        )
    return comment


def comment_delete(*, comment: Comment, actor: Any) -> None:
    if comment.author_id != actor.pk:
        raise ReviewForbidden("Only its author can delete a comment.")
    with transaction.atomic():
        audit_record(
            actor=actor,
            verb="comment.delete",
            session=comment.session,
            target=f"entry {comment.entry_id}",
            data={"comment": comment.pk, "entry_id": comment.entry_id},
        )
        comment.delete()


# --- Review labels --------------------------------------------------------------------------


def normalise_label(name: str) -> str:
    name = name.strip().lower().replace(" ", "-")
    if not LABEL_RE.match(name):
        raise ReviewError(
            "A label is 1 to 40 lowercase letters, digits, '.', '_' or '-' "
            f"(starting with a letter or digit), not {name!r}."
        )
    return name


def session_label_add(*, session: Session, name: str, actor: Any) -> SessionLabel | None:
    """Add a review label; None when the session already had it."""
    name = normalise_label(name)
    try:
        with transaction.atomic():
            label = SessionLabel.objects.create(session=session, name=name, added_by=actor)
            audit_record(actor=actor, verb="label.add", session=session, target=name)
    except IntegrityError:
        return None  # already there (perhaps added by someone else a moment ago)
    return label


def session_label_remove(*, session: Session, name: str, actor: Any) -> bool:
    with transaction.atomic():
        deleted, _ = SessionLabel.objects.filter(session=session, name=name).delete()
        if deleted:
            audit_record(actor=actor, verb="label.remove", session=session, target=name)
    return bool(deleted)
