"""Share links: the owner's page (create, list, revoke) and the read-only page a link opens for
anyone, signed in or not. A link opens its session (or its one entry) and nothing else."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from urllib.parse import quote

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from django.views.defaults import page_not_found

from contextlab.http import AuthenticatedHttpRequest
from contextlab.inspector.selectors import SessionIndex, session_index
from contextlab.inspector.services import inspect_entry, message_blocks
from contextlab.library.models import Session
from contextlab.library.selectors import session_for_user_or_404
from contextlab.sharing.models import ShareLink
from contextlab.sharing.services import (
    LinkGone,
    ShareError,
    share_link_create,
    share_link_refused,
    share_link_resolve,
    share_link_revoke,
    share_link_used,
    share_token,
)

TURNS_SHOWN = 500


def _url(request: HttpRequest, link: ShareLink) -> str:
    return request.build_absolute_uri(reverse("sharing:shared", args=[share_token(link)]))


@login_required
def links(request: AuthenticatedHttpRequest) -> HttpResponse:
    """GET: your share links (and a form, pre-filled by ?session=&entry=). POST: a new link."""
    if request.method == "POST":
        try:
            pk = int(request.POST.get("session", ""))
            days = int(request.POST.get("days") or settings.CONTEXTLAB_SHARE_DAYS)
        except ValueError:
            raise Http404("No such session") from None
        shared = session_for_user_or_404(request.user, pk)
        try:
            link = share_link_create(
                session=shared,
                entry_id=request.POST.get("entry", ""),
                days=days,
                created_by=request.user,
            )
        except ShareError as exc:
            messages.error(request, str(exc))
            return redirect(f"{reverse('sharing:links')}?session={shared.pk}")
        messages.success(request, f"Share link created: {_url(request, link)}")
        return redirect("sharing:links")
    session: Session | None = None
    if request.GET.get("session", "").isdigit():
        session = session_for_user_or_404(request.user, int(request.GET["session"]))
    own = list(ShareLink.objects.filter(created_by=request.user).select_related("session")[:200])
    # A link stops when its creator no longer sees its session; its row stays listed (to be
    # revoked), without the session's title.
    seen = set(
        Session.objects.filter(pk__in={link.session_id for link in own})
        .visible_to(request.user)
        .values_list("pk", flat=True)
    )
    context = {
        "links": [
            (link, _url(request, link) if link.is_active and link.session_id in seen else "")
            for link in own
        ],
        "seen": seen,
        "session": session,
        "entry": request.GET.get("entry", "")[:100],
        "nav": "shares",
        "default_days": settings.CONTEXTLAB_SHARE_DAYS,
    }
    return render(request, "sharing/links.html", context)


@login_required
@require_POST
def link_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    link = get_object_or_404(ShareLink, pk=pk, created_by=request.user)
    if share_link_revoke(link=link, actor=request.user):
        messages.success(request, f"Share link #{link.pk} revoked: it no longer opens anything.")
    return redirect("sharing:links")


def _meta(request: HttpRequest) -> dict[str, str]:
    return {
        "ip": request.META.get("REMOTE_ADDR", "")[:64],
        "user_agent": request.META.get("HTTP_USER_AGENT", "")[:200],
    }


def _private(response: HttpResponse) -> HttpResponse:
    """A shared page is for the people it was sent to: not indexed, not cached, no referrer."""
    response["X-Robots-Tag"] = "noindex, nofollow"
    response["Cache-Control"] = "private, no-store"
    response["Referrer-Policy"] = "no-referrer"
    return response


class _Refused(Exception):
    def __init__(self, response: HttpResponse) -> None:
        self.response = response


def _refusal(response: HttpResponse) -> _Refused:
    # Django logs every 4xx answer with its path, and a share URL's path holds its token (a
    # live one, for an entry the link does not open): the refusal is recorded without it.
    response._has_been_logged = True  # type: ignore[attr-defined]  # django.utils.log's mark
    response["X-Robots-Tag"] = "noindex"
    return _Refused(response)


def _open(request: HttpRequest, token: str) -> tuple[ShareLink, SessionIndex]:
    """The working link a URL's token names, and its session's index; _Refused (410 for a
    link that stopped, 404 for anything else, saying nothing more) after recording the refusal."""
    try:
        link = share_link_resolve(token)
    except LinkGone as gone:
        share_link_refused(link=gone.link, reason=gone.why, request_meta=_meta(request))
        raise _refusal(
            render(request, "sharing/gone.html", {"why": gone.why}, status=410)
        ) from None
    if link is None:
        share_link_refused(link=None, reason="no such link", request_meta=_meta(request))
        raise _not_found(request)
    return link, session_index(link.session)


def _not_found(request: HttpRequest) -> _Refused:
    return _refusal(page_not_found(request, Http404("Not found")))


def _not_opened(request: HttpRequest, link: ShareLink, reason: str) -> _Refused:
    share_link_refused(link=link, reason=reason, request_meta=_meta(request))
    return _not_found(request)


def _answering_refusals(
    view: Callable[[HttpRequest, str], HttpResponse],
) -> Callable[[HttpRequest, str], HttpResponse]:
    @wraps(view)
    def wrapper(request: HttpRequest, token: str) -> HttpResponse:
        try:
            return view(request, token)
        except _Refused as refused:
            return refused.response

    return wrapper


@_answering_refusals
def shared(request: HttpRequest, token: str) -> HttpResponse:
    """What a share link opens: the session's context at an entry (a session link: any entry of
    that session, its leaf by default; an entry link: that entry only), read-only."""
    link, index = _open(request, token)
    session = link.session
    wanted = request.GET.get("entry", "")
    if link.entry_id:
        if wanted and wanted != link.entry_id:
            raise _not_opened(request, link, "an entry this link does not open")
        entry_id = link.entry_id
    else:
        entry_id = wanted or index.leaf_id or ""
    if entry_id not in index.items:
        raise _not_opened(request, link, "an entry not in the session")
    share_link_used(link=link, entry_id=entry_id, request_meta=_meta(request))
    # A session link lists the session's user messages in tree order (Pi's /tree "user-only"),
    # each opening what the model received with it; an entry link shows its one entry.
    turns = [] if link.entry_id else [row.item for row in index.view("user-only", "", ()).rows]
    context = {
        "link": link,
        "session": session,
        "turns": turns[:TURNS_SHOWN],
        "turns_hidden": max(0, len(turns) - TURNS_SHOWN),
        "path_ids": set(index.path_ids),
        "inspection": inspect_entry(session, index, entry_id, tab="context"),
        "entry_link": bool(link.entry_id),
        "page_url": request.path,
        # "Show all" of a message cut for the page stays within the link.
        "share_message_prefix": (
            f"{reverse('sharing:message', args=[token])}?from={quote(entry_id, safe='')}&entry="
        ),
    }
    return _private(render(request, "sharing/shared.html", context))


@_answering_refusals
def shared_message(request: HttpRequest, token: str) -> HttpResponse:
    """One message of what a share link opens, in full (the shared page cuts long ones): for a
    session link any entry's message of that session, for an entry link only the messages sent
    with that entry."""
    link, index = _open(request, token)
    session = link.session
    entry_id = request.GET.get("entry", "")
    if entry_id not in index.items:
        raise _not_opened(request, link, "a message not in the session")
    back = link.entry_id or request.GET.get("from", "")
    if back not in index.items:
        back = ""
    if link.entry_id:
        sent = inspect_entry(session, index, link.entry_id, tab="context").messages
        if entry_id not in {m.entry_id for m in sent if m.entry_id}:
            raise _not_opened(request, link, "a message this link does not open")
    blocks = message_blocks(session, index, entry_id, full=True)
    share_link_used(link=link, entry_id=entry_id, request_meta=_meta(request), in_full=True)
    back_url = reverse("sharing:shared", args=[token]) + (
        f"?entry={quote(back, safe='')}" if back else ""
    )
    context = {
        "link": link,
        "session": session,
        "entry_id": entry_id,
        "blocks": blocks,
        "back_url": back_url,
    }
    return _private(render(request, "sharing/message.html", context))
