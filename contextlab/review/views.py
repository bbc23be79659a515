"""Review pages: project members, comments on entries, review labels, the audit log.

Function views; every object comes through a `<thing>_for_user_or_404` helper that 404s when the
user may not see it (never 403: do not confirm that it exists). Forms are plain POST forms that
work without JavaScript; with htmx they swap their partial in place.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from contextlab.http import HtmxHttpRequest
from contextlab.library.models import Entry, Project, ProjectMembership, Session
from contextlab.library.selectors import project_for_user_or_404, session_for_user_or_404
from contextlab.review import selectors, services
from contextlab.review.forms import CommentForm, LabelForm, MembershipForm
from contextlab.review.models import AuditEvent, Comment

AUDIT_LIMIT = 200


def _comment_for_user_or_404(request: HtmxHttpRequest, pk: int) -> Comment:
    return get_object_or_404(
        Comment.objects.select_related("session", "session__project").visible_to(request.user),
        pk=pk,
    )


# --- Members --------------------------------------------------------------------------------


@login_required
def members(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    project = project_for_user_or_404(request.user, pk)
    can_manage = services.can_manage_members(request.user, project)
    if request.method == "POST":
        if not can_manage:
            raise PermissionDenied("Only the project's owners manage its members.")
        form = MembershipForm(request.POST)
        try:
            if not form.is_valid():
                raise services.ReviewError(f"Unknown role {request.POST.get('role', '')!r}")
            services.membership_add(
                project=project,
                username=form.cleaned_data["username"],
                role=form.cleaned_data["role"],
                actor=request.user,
            )
        except services.ReviewError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"{form.cleaned_data['username']} added.")
        return redirect("review:members", pk=project.pk)
    context = {
        "nav": "library",
        "project": project,
        "memberships": list(
            ProjectMembership.objects.filter(project=project).select_related("user", "added_by")
        ),
        "can_manage": can_manage,
        "roles": ProjectMembership.Role.choices,
    }
    return render(request, "review/members.html", context)


@login_required
@require_POST
def member_remove(request: HtmxHttpRequest, pk: int, membership_pk: int) -> HttpResponse:
    project = project_for_user_or_404(request.user, pk)
    membership = get_object_or_404(
        ProjectMembership.objects.select_related("user", "project"),
        project=project,
        pk=membership_pk,
    )
    if not services.can_manage_members(request.user, project):
        raise PermissionDenied("Only the project's owners manage its members.")
    try:
        services.membership_remove(membership=membership, actor=request.user)
    except services.ReviewError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{membership.user.get_username()} removed.")
    if not Project.objects.visible_to(request.user).filter(pk=project.pk).exists():
        return redirect("library:index")  # removed themselves from a restricted project
    return redirect("review:members", pk=project.pk)


# --- Audit log ------------------------------------------------------------------------------


def _audit_page(
    request: HtmxHttpRequest, found: QuerySet[AuditEvent], **context: Any
) -> HttpResponse:
    events = list(found.select_related("actor", "project", "session")[:AUDIT_LIMIT])
    return render(
        request,
        "review/audit.html",
        {"nav": "audit", "events": events, "limit": AUDIT_LIMIT, **context},
    )


@login_required
def project_audit(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    project = project_for_user_or_404(request.user, pk)
    return _audit_page(request, AuditEvent.objects.filter(project=project), project=project)


@login_required
def session_audit(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    session = session_for_user_or_404(request.user, pk)
    return _audit_page(
        request,
        AuditEvent.objects.filter(session=session),
        session=session,
        project=session.project,
    )


@login_required
def audit(request: HtmxHttpRequest) -> HttpResponse:
    """Everything, for superusers: events of every project, and those tied to none."""
    if not request.user.is_superuser:
        raise PermissionDenied("The global audit log is for superusers.")
    return _audit_page(request, AuditEvent.objects.all())


# --- Comments -------------------------------------------------------------------------------


def _comments_response(
    request: HtmxHttpRequest, session: Session, entry_id: str, error: str = "", body: str = ""
) -> HttpResponse:
    """htmx: the comments partial in place (the refused text kept in the form). Without
    JavaScript: back to the entry's page, where the partial is part of the inspector."""
    if request.htmx:
        context = {"session": session, "comment_error": error, "body": body}
        context.update(selectors.review_panel(session, entry_id))
        # The entry's row in the session page's tree (its stable hook, `data-entry-id`).
        quoted = entry_id.replace("\\", "\\\\").replace('"', '\\"')
        context["comment_row"] = f'#tree li[data-entry-id="{quoted}"] > a.trow'
        return render(request, "review/_comments_changed.html", context)
    if error:
        messages.error(request, error)
    url = reverse("inspector:session", args=[session.pk])
    return redirect(f"{url}?{urlencode({'entry': entry_id})}#comments")


@login_required
@require_POST
def comment_create(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    session = session_for_user_or_404(request.user, pk)
    form = CommentForm(request.POST)
    form.is_valid()  # optional text fields: always valid
    entry_id, body = form.cleaned_data["entry"], form.cleaned_data["body"]
    if not Entry.objects.for_session(session).filter(entry_id=entry_id).exists():
        raise Http404("No such entry in this session")
    try:
        services.comment_create(session=session, entry_id=entry_id, author=request.user, body=body)
    except services.ReviewError as exc:
        return _comments_response(request, session, entry_id, str(exc), body)
    return _comments_response(request, session, entry_id)


@login_required
@require_POST
def comment_edit(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    comment = _comment_for_user_or_404(request, pk)
    try:
        form = CommentForm(request.POST)
        form.is_valid()
        services.comment_update(comment=comment, actor=request.user, body=form.cleaned_data["body"])
    except services.ReviewForbidden as exc:
        raise PermissionDenied(str(exc)) from exc
    except services.ReviewError as exc:
        return _comments_response(request, comment.session, comment.entry_id, str(exc))
    return _comments_response(request, comment.session, comment.entry_id)


@login_required
@require_POST
def comment_delete(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    comment = _comment_for_user_or_404(request, pk)
    session, entry_id = comment.session, comment.entry_id
    try:
        services.comment_delete(comment=comment, actor=request.user)
    except services.ReviewForbidden as exc:
        raise PermissionDenied(str(exc)) from exc
    return _comments_response(request, session, entry_id)


# --- Review labels --------------------------------------------------------------------------


def _labels_response(request: HtmxHttpRequest, session: Session, error: str = "") -> HttpResponse:
    if request.htmx:
        context = {
            "session": session,
            "review_labels": selectors.session_labels(session),
            "label_error": error,
        }
        return render(request, "review/_labels.html", context)
    if error:
        messages.error(request, error)
    return redirect("inspector:session", pk=session.pk)


@login_required
@require_POST
def label_add(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    session = session_for_user_or_404(request.user, pk)
    form = LabelForm(request.POST)
    form.is_valid()
    try:
        services.session_label_add(
            session=session, name=form.cleaned_data["name"], actor=request.user
        )
    except services.ReviewError as exc:
        return _labels_response(request, session, str(exc))
    return _labels_response(request, session)


@login_required
@require_POST
def label_remove(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    session = session_for_user_or_404(request.user, pk)
    form = LabelForm(request.POST)
    form.is_valid()
    services.session_label_remove(
        session=session, name=form.cleaned_data["name"], actor=request.user
    )
    return _labels_response(request, session)
