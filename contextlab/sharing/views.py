"""Share links: the owner's page (create, list, revoke) and the read-only page a link opens for
anyone, signed in or not. A link opens its session (or its one entry) and nothing else."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from contextlab.inspector.selectors import session_index
from contextlab.inspector.services import inspect_entry
from contextlab.library.selectors import session_for_user_or_404
from contextlab.sharing.models import ShareLink
from contextlab.sharing.services import (
    LinkGone,
    ShareError,
    share_link_create,
    share_link_resolve,
    share_link_revoke,
    share_link_used,
    share_token,
)


def _url(request: HttpRequest, link: ShareLink) -> str:
    return request.build_absolute_uri(reverse("sharing:shared", args=[share_token(link)]))


@login_required
def links(request: HttpRequest) -> HttpResponse:
    """GET: your share links (and a form, pre-filled by ?session=&entry=). POST: a new link."""
    if request.method == "POST":
        try:
            pk = int(request.POST.get("session", ""))
            days = int(request.POST.get("days", "7"))
        except ValueError:
            raise Http404("No such session") from None
        session = session_for_user_or_404(request.user, pk)
        try:
            link = share_link_create(
                session=session,
                entry_id=request.POST.get("entry", ""),
                days=days,
                created_by=request.user,
            )
        except ShareError as exc:
            messages.error(request, str(exc))
            return redirect(f"{reverse('sharing:links')}?session={session.pk}")
        messages.success(request, f"Share link created: {_url(request, link)}")
        return redirect("sharing:links")
    session = None
    if request.GET.get("session", "").isdigit():
        session = session_for_user_or_404(request.user, int(request.GET["session"]))
    own = ShareLink.objects.filter(created_by=request.user).select_related("session")
    context = {
        "links": [(link, _url(request, link) if link.is_active else "") for link in own[:200]],
        "session": session,
        "entry": request.GET.get("entry", "")[:100],
    }
    return render(request, "sharing/links.html", context)


@login_required
@require_POST
def link_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    link = get_object_or_404(ShareLink, pk=pk, created_by=request.user)
    if share_link_revoke(link=link, actor=request.user):
        messages.success(request, f"Share link #{link.pk} revoked: it no longer opens anything.")
    return redirect("sharing:links")


def shared(request: HttpRequest, token: str) -> HttpResponse:
    """What a share link opens: the session's context at an entry (a session link: any entry of
    that session, its leaf by default; an entry link: that entry only), read-only."""
    try:
        link = share_link_resolve(token)
    except LinkGone as gone:
        response = render(request, "sharing/gone.html", {"why": str(gone)}, status=410)
        response["X-Robots-Tag"] = "noindex"
        return response
    if link is None:
        raise Http404("No such link")
    session = link.session
    index = session_index(session)
    wanted = request.GET.get("entry", "")
    if link.entry_id:
        if wanted and wanted != link.entry_id:
            raise Http404("This link opens one entry only")
        entry_id = link.entry_id
    else:
        entry_id = wanted or index.leaf_id or ""
    if entry_id not in index.items:
        raise Http404("No such entry in this session")
    share_link_used(
        link=link,
        entry_id=entry_id,
        request_meta={
            "ip": request.META.get("REMOTE_ADDR", "")[:64],
            "user_agent": request.META.get("HTTP_USER_AGENT", "")[:200],
        },
    )
    context = {
        "link": link,
        "session": session,
        "inspection": inspect_entry(session, index, entry_id, tab="context"),
        "entry_link": bool(link.entry_id),
        "page_url": request.path,
    }
    response = render(request, "sharing/shared.html", context)
    # A shared page is for the people it was sent to: not indexed, not cached, no referrer.
    response["X-Robots-Tag"] = "noindex, nofollow"
    response["Cache-Control"] = "private, no-store"
    response["Referrer-Policy"] = "no-referrer"
    return response
