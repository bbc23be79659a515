"""The session page (tree + turn inspector), lazily loaded tree rows, the context growth chart.

One page template, `inspector/session.html`, with inline partials: htmx requests get only the
part they target (`#tree`, `#inspector`), plain requests the whole page, so every link works
without JavaScript and every permalink (session + entry + tab + tree state) reloads the same view.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Max
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotModified,
    JsonResponse,
    QueryDict,
    StreamingHttpResponse,
)
from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.http import (
    content_disposition_header,
    parse_etags,
    url_has_allowed_host_and_scheme,
)
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import condition, require_POST
from django.views.decorators.vary import vary_on_headers

from contextlab import budgets, heavy
from contextlab.http import HtmxHttpRequest
from contextlab.inspector import computed, services
from contextlab.inspector.blocks import MessageView
from contextlab.inspector.chart import context_growth
from contextlab.inspector.forms import ResourceProfileForm
from contextlab.inspector.models import ResourceProfile
from contextlab.inspector.rendering import (
    chart_rows_html,
    message_blocks_html,
    middle_messages_html,
)
from contextlab.inspector.requests import Abandoned, Comparison, provider_request
from contextlab.inspector.requests import compare_requests as requests_compare
from contextlab.inspector.selectors import SessionIndex, session_index
from contextlab.inspector.tree_pane import TABS, TreeState, tree_context, tree_pane
from contextlab.jobs.models import Job
from contextlab.library.models import ProjectMembership, Session
from contextlab.library.selectors import (
    project_for_user_or_404,
    session_for_user_or_404,
    session_problems,
    sessions_for_user,
)
from contextlab.pages import kept_page
from contextlab.pi.held import request_points
from contextlab.review.selectors import review_panel, session_labels
from contextlab.review.services import can_manage_members

# Rows sent per lazy request; a larger gap comes back as rows plus another placeholder.
ROWS_PER_REQUEST = 400
# The chart holds every request; its table (the no-JavaScript view of it) only the first ones.
CHART_TABLE_LIMIT = 1000
# What an htmx request may ask the session page for (`HX-Target`): the inspector, or the tree
# (a change of mode, search or folds) with the inspector out of band, since the server decides
# which entry stays selected. Anything else, and Back restoring history, gets the whole page.
PARTIALS = ("inspector", "tree")


def live_version(session: Session) -> dict[str, str]:
    """What a session page follows, cheaply (the session row is already loaded; one aggregate
    over its jobs): the stored session (lines appended by `--watch`, a job's compaction or
    branch summary, a re-import) and the state of its jobs."""
    jobs = session.jobs.aggregate(count=Count("id"), changed=Max("updated_at"))
    changed = jobs["changed"].timestamp() if jobs["changed"] else 0
    return {
        "session": (
            f"{session.current_revision_id}.{session.entry_count}.{session.leaf_entry_id}"
            f".{session.updated_at.timestamp() if session.updated_at else 0}"
        ),
        "jobs": f"{jobs['count']}.{changed}",
    }


def _etag(version: dict[str, str]) -> str:
    """One tag for both parts, readable back part by part (`_changed_parts`): the poll fetches
    only the parts that changed."""
    digests = [hashlib.sha1(version[part].encode()).hexdigest()[:12] for part in LIVE_PARTS]
    return '"' + ".".join(digests) + '"'


LIVE_PARTS = ("session", "jobs")


def _changed_parts(held: str, etag: str) -> set[str]:
    before = held.strip().strip('"').split(".")
    now = etag.strip('"').split(".")
    if len(before) != len(now):
        return set(LIVE_PARTS)
    return {part for part, old, new in zip(LIVE_PARTS, before, now, strict=True) if old != new}


def _live_context(session: Session, etag: str) -> dict[str, object]:
    return {
        "session": session,
        "live_headers": json.dumps({"If-None-Match": etag}),
    }


@login_required
def live(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """The session page's poll (htmx, every few seconds, `If-None-Match` the tag it holds): 304
    while nothing changed; else the poll element with the new tag, and out of band the parts
    that changed: the head's figures and the tree (for the tree state and selection of the
    page's URL, `HX-Current-URL`), or the job history. Without htmx: the version as JSON."""
    session = session_for_user_or_404(request.user, pk)
    version = live_version(session)
    etag = _etag(version)
    held = request.headers.get("If-None-Match", "")
    if etag in [tag.strip() for tag in held.split(",")]:
        response: HttpResponse = HttpResponseNotModified()
    elif request.htmx:
        response = HttpResponse(_live_parts(request, session, _changed_parts(held, etag), etag))
    else:
        response = JsonResponse(version)
    response["ETag"] = etag
    response["Cache-Control"] = "no-cache, private"
    return response


def _live_parts(request: HtmxHttpRequest, session: Session, changed: set[str], etag: str) -> str:
    context = {**_live_context(session, etag), "oob": True}
    html = [render_to_string("inspector/session.html#live", context, request)]
    current = request.htmx.current_url or "" if request.htmx else ""
    state = TreeState.from_query(QueryDict(urlsplit(current).query))
    if "session" in changed:
        index = session_index(session)
        selected = state.entry if state.entry in index.items else index.leaf_id
        pane = tree_pane(session, index, state, selected)
        context.update(tree_context(pane, session, index))
        context.update({"index": index, "state": state})
        for part in ("facts", "tree"):
            html.append(render_to_string(f"inspector/session.html#{part}", context, request))
    if "jobs" in changed:
        html.append(render_to_string("inspector/session.html#jobs", context, request))
        if state.entry or session.leaf_entry_id:
            context["compact_blocked"] = _compact_blocked(session)
            context["entry_id"] = state.entry or session.leaf_entry_id
            html.append(render_to_string("inspector/_compact_control.html", context, request))
    return "".join(html)


def _compact_blocked(session: Session) -> str:
    """Why "Compact here…" is refused now ("" if it is not): another job of the session is
    queued or running. The page says so before the form is opened, not after it is sent."""
    active = Job.objects.active().filter(session=session).first()
    if active is None:
        return ""
    return (
        f"{active.get_kind_display()} job #{active.pk} is {active.status} for this session:"
        " wait for it to finish or cancel it first."
    )


@dataclass(frozen=True)
class Tab:
    """One of the inspector's tabs: its link's query and state, and the partial of its body."""

    name: str
    label: str
    query: str
    selected: str  # aria-selected: "true" or "false"
    template: str


def _tabs(state: TreeState, selected: str | None) -> list[Tab]:
    return [
        Tab(
            name=tab,
            label=TAB_LABELS[tab],
            query=state.query_string(tab=tab, entry=selected or ""),
            selected="true" if tab == state.tab else "false",
            template=TAB_TEMPLATES[tab],
        )
        for tab in TABS
    ]


TAB_LABELS = {
    "context": "Messages",
    "prompt": "System prompt",
    "diff": "Diff vs previous request",
    "json": "Copy as JSON",
    "entry": "Raw entry",
}
TAB_TEMPLATES = {
    "context": "inspector/_tab_context.html",
    "prompt": "inspector/_prompt.html",
    "diff": "inspector/_tab_diff.html",
    "json": "inspector/_tab_json.html",
    "entry": "inspector/_tab_entry.html",
}


def _turn_inputs(request: HttpRequest, session: Session, selected: str | None) -> dict[str, Any]:
    """What the turn inspector shows besides the turn itself: this user's and the moment's
    (their rights on the project, whether a job blocks compacting, the entry's comments)."""
    return {
        "can_edit_profile": can_manage_members(request.user, session.project),
        # Who edits the profile when this user cannot: the owners, or (an open project has
        # none) an administrator. Asked only by the page that says so (the template calls it).
        "profile_owned": ProjectMembership.objects.owners().filter(project=session.project).exists,
        "compact_blocked": _compact_blocked(session),
        **review_panel(session, selected),
    }


def _inspector_context(
    request: HttpRequest,
    session: Session,
    index: SessionIndex,
    state: TreeState,
    selected: str | None,
    inputs: dict[str, Any] | None = None,
) -> dict[str, object]:
    inspection = (
        services.inspect_entry(
            session, index, selected, tab=state.tab, full=request.GET.get("all") == "1"
        )
        if selected
        else None
    )
    context: dict[str, object] = {
        "inspection": inspection,
        "tabs": _tabs(state, selected),
        "tab_template": TAB_TEMPLATES[state.tab],
        **(inputs if inputs is not None else _turn_inputs(request, session, selected)),
    }
    # Only the Messages tab shows the collapsed middle (a hundred rows rendered for another tab
    # were a third of its time).
    if inspection is not None and inspection.middle and state.tab == "context":
        context["middle_html"] = _middle_html(session, inspection.entry_id, inspection.middle, 0)
    return context


@login_required
@vary_on_headers("HX-Request", "HX-Target")  # one URL, a whole page or one of its parts
@kept_page("session")  # each part apart (the htmx headers are in the key)
def session_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    session = session_for_user_or_404(request.user, pk)
    index = session_index(session)
    state = TreeState.from_query(request.GET)
    if state.entry is not None and state.entry not in index.items:
        raise Http404("No such entry in this session")
    requested = state.entry or index.leaf_id
    target = (
        request.htmx.target if request.htmx and not request.htmx.history_restore_request else None
    )
    if target not in PARTIALS:
        target = None
    page_url = reverse("inspector:session", args=[session.pk])

    context: dict[str, object] = {
        "session": session,
        "index": index,
        "state": state,
        "nav": "library",
        "page_url": page_url,
    }
    selected = requested
    if target == "inspector":
        return _inspector_part(request, session, index, state, selected, context)
    pane = tree_pane(session, index, state, requested)
    context.update(tree_context(pane, session, index))
    if pane.selected_id is not None and pane.selected_id != requested:
        # The tree cannot show the requested entry (folded away, filtered out): the
        # selection is its nearest visible ancestor, in the tree, the inspector and the URL
        # (htmx follows the redirect and puts the URL it lands on in the history).
        if state.entry:
            return redirect(f"{page_url}?{state.query_string(entry=pane.selected_id)}")
        selected = pane.selected_id
    if target == "tree":
        tree = render_to_string("inspector/session.html#tree", context, request)
        inspector, _ = _kept_inspector(request, session, index, state, selected, context, oob=True)
        return HttpResponse(tree + inspector())
    inspector, _ = _kept_inspector(request, session, index, state, selected, context)
    context["inspector_html"] = mark_safe(inspector())
    context.update(_live_context(session, _etag(live_version(session))))
    context["problems"] = list(session_problems(session)[:200])
    context["review_labels"] = session_labels(session)
    return render(request, "inspector/session.html", context)


def _inspector_part(
    request: HttpRequest,
    session: Session,
    index: SessionIndex,
    state: TreeState,
    selected: str | None,
    context: dict[str, object],
) -> HttpResponse:
    """The turn inspector alone (``#inspector``, what a click in the tree asks for), kept (see
    ``_kept_inspector``), with an ETag over the same key, so a repeat is a 304 before anything
    is computed."""
    html, etag = _kept_inspector(request, session, index, state, selected, context)
    if etag in parse_etags(request.headers.get("If-None-Match", "")):
        response: HttpResponse = HttpResponseNotModified()
    else:
        response = HttpResponse(html())
    response["ETag"] = etag
    return _revalidated(response)


def _kept_inspector(
    request: HttpRequest,
    session: Session,
    index: SessionIndex,
    state: TreeState,
    selected: str | None,
    context: dict[str, object],
    *,
    oob: bool = False,
) -> tuple[Callable[[], str], str]:
    """(the ``#inspector`` element's HTML, when asked for; its ETag). The HTML is kept for every
    web process per (revision, entry, URL, inputs, and everything of this user's own it shows:
    their comments' controls, the forms' CSRF tokens, what they may edit): the part alone, the
    whole page and a tree swap (``oob``, out of band) all reuse it, so the turn of a large
    session is computed once, not on every page load. A new revision, a comment added, edited or
    deleted, a job started or a profile saved is a new key. The turn inside it is computed once
    for every user (``_shared_parts``), this user's parts around it."""
    inputs = _turn_inputs(request, session, selected)
    comments = [
        (c.pk, c.author_id, c.author.get_username() if c.author else "", c.body, c.edited_at)
        for c in inputs["comments"]
    ]
    signed_in = getattr(request, "session", None)
    mine = (request.user.pk, signed_in.session_key if signed_in else "")
    owned = None
    if state.tab == "prompt" and not inputs["can_edit_profile"]:
        # The prompt tab tells this user who edits the profile: the project's owners, if it
        # has any. Asked once, for the key and the page.
        owned = inputs["profile_owned"] = inputs["profile_owned"]()
    parts = (
        request.get_full_path(),
        selected,
        mine,
        comments,
        inputs["compact_blocked"],
        inputs["can_edit_profile"],
        owned,
        oob,
    )
    key = computed.computed_key("turn", session, hashlib.sha1(repr(parts).encode()).hexdigest())
    etag = '"' + hashlib.sha1(key.encode()).hexdigest()[:24] + '"'

    def html() -> str:
        def build() -> str:
            part = {
                **context,
                **_inspector_context(request, session, index, state, selected, inputs),
            }
            part["oob"] = oob
            return render_to_string("inspector/session.html#inspector", part, request)

        def from_shared(entry_id: str) -> str:
            # The turn itself comes kept for every user (or is built once for all of them);
            # only this user's parts are rendered here.
            part = {
                **context,
                **inputs,
                **_profile_form(session, state),
                "inspection": _Selected(entry_id),
                "shared": _shared_parts(request, session, index, state, entry_id, context),
                "oob": oob,
            }
            return render_to_string("inspector/session.html#inspector", part, request)

        if selected is not None:
            kept, _ = computed.kept(key, lambda: from_shared(selected))
        else:
            # No turn selected: the page's inspector is light (the turn's own parts are built,
            # at a lower CPU priority when heavy, in _shared_parts).
            kept, _ = computed.kept(key, build)
        get_token(request)  # the CSRF cookie the kept forms' tokens belong to stays set
        return kept

    return html, etag


def _profile_form(session: Session, state: TreeState) -> dict[str, object]:
    """Under the prompt tab, what its resource profile form shows (the project's profile, the
    versions to choose from): rendered per user around the prompt that is shared, as the form
    holds this user's rights and CSRF token."""
    if state.tab != "prompt":
        return {}
    profile = services.resource_profile(session.project)
    return {
        "profile_form": True,
        "profile": profile,
        "dialect_options_html": services.dialect_options_html(profile),
    }


@dataclass(frozen=True, slots=True)
class _Selected:
    """What the inspector's own parts read of the inspection: the selected entry."""

    entry_id: str


def _shared_parts(
    request: HttpRequest,
    session: Session,
    index: SessionIndex,
    state: TreeState,
    selected: str,
    context: dict[str, object],
) -> dict[str, SafeString]:
    """The inspector's parts that are the same for every user asking for this URL (its entry, its
    tab, the tree's state): the crumbs (``head``), the tabs with the turn's summary (``nav``) and
    the tab's body (``body``), as ``inspector/_inspection.html`` renders them. Kept for every web
    process per (revision, URL, inputs): a teammate opening a turn someone opened renders only
    their own parts (their comments, the entry's actions), not the turn. Rendered without the
    request and without this user's inputs, so nothing of theirs can be in them."""
    key = computed.computed_key("turn-shared", session, request.get_full_path(), selected)

    def build() -> dict[str, str]:
        part = {**context, **_inspector_context(request, session, index, state, selected, {})}
        part["i"] = part["inspection"]
        return {
            name: render_to_string(f"inspector/_inspection.html#{name}", part)
            for name in ("head", "nav", "body")
        }

    def heavy_or_not() -> dict[str, str]:
        # A large session's deep turn is built at a lower CPU priority (contextlab.heavy).
        return heavy.run_if(services.is_heavy_turn(index, selected), build)

    parts, _ = computed.kept(key, heavy_or_not)
    return {name: mark_safe(text) for name, text in parts.items()}


@login_required
def tree_rows(request: HttpRequest, pk: int) -> HttpResponse:
    """A run of tree rows that the first response left out (htmx replaces its placeholder)."""
    session = session_for_user_or_404(request.user, pk)
    index = session_index(session)
    state = TreeState.from_query(request.GET)
    pane = tree_pane(session, index, state, state.entry)
    try:
        start = max(0, int(request.GET.get("start", "0")))
        end = min(len(pane.view.rows) - 1, int(request.GET.get("end", "0")))
    except ValueError:
        raise Http404("Bad row range") from None
    last = min(end, start + ROWS_PER_REQUEST - 1)
    context = {
        "page_url": pane.links.page_url,
        "qs_prefix": pane.links.qs_prefix,
        "selected_id": pane.selected_id,
        "rows_url": reverse("inspector:tree_rows", args=[session.pk]),
        "segments": pane.segments([(start, last)], start, end),
        "session": session,
        "state": state,
    }
    return render(request, "inspector/session.html#tree-segments", context)


def _session_entry(request: HttpRequest, pk: int) -> tuple[Session, SessionIndex, str]:
    """The session (visible to the user), its tree index and the `entry` the request names."""
    session = session_for_user_or_404(request.user, pk)
    index = session_index(session)
    entry_id = request.GET.get("entry", "")
    if entry_id not in index.items:
        raise Http404("No such entry in this session")
    return session, index, entry_id


@login_required
def not_sent(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """The path entries a compaction replaced (listed on demand: there can be thousands)."""
    session, index, entry_id = _session_entry(request, pk)
    context = {
        "session": session,
        "entry_id": entry_id,
        "replaced": services.replaced_items(index, entry_id),
        "page_url": reverse("inspector:session", args=[session.pk]),
    }
    template = "inspector/_not_sent.html" if request.htmx else "inspector/not_sent.html"
    return render(request, template, context)


# Collapsed middle messages sent per request; the rest come with "show more"
# (CONTEXTLAB_ENTRIES_PER_PAGE).
MIDDLE_PAGE = settings.CONTEXTLAB_ENTRIES_PER_PAGE


def _middle_html(session: Session, entry_id: str, middle: Sequence[MessageView], start: int) -> str:
    """A page of the collapsed middle of a long projection, then a link for the next one."""
    rows = middle[start : start + MIDDLE_PAGE]
    rest = len(middle) - start - len(rows)
    return middle_messages_html(
        {
            "rows": rows,
            "page_url": reverse("inspector:session", args=[session.pk]),
            "body_url": reverse("inspector:message", args=[session.pk]),
            "more_url": reverse("inspector:messages", args=[session.pk]),
            "entry_id": entry_id,
            "leaf": entry_id,
            "rest": rest,
            "next_start": start + len(rows),
            "next_count": min(rest, MIDDLE_PAGE),
        },
    )


@login_required
@condition(**computed.conditional("messages", "entry", "start"))
def messages_page(request: HttpRequest, pk: int) -> HttpResponse:
    """The next page of collapsed messages of one projection (htmx "show more"); kept for every
    web process per (revision, entry, start, inputs), a repeat is a 304."""
    session = computed.session_for(request, pk)
    entry_id = request.GET.get("entry", "")
    try:
        start = max(0, int(request.GET.get("start", "0")))
    except ValueError:
        raise Http404("Bad start") from None

    def build() -> str:
        index = session_index(session)
        if entry_id not in index.items:
            raise Http404("No such entry in this session")
        middle = heavy.run_if(
            services.is_heavy_turn(index, entry_id),
            lambda: services.middle_messages(session, index, entry_id),
        )
        return str(_middle_html(session, entry_id, middle, start))

    html, _ = computed.kept(computed.computed_key("messages", session, entry_id, start), build)
    return _revalidated(HttpResponse(html))


@login_required
@condition(**computed.conditional("message", "entry", "leaf", "all"))
def message(request: HttpRequest, pk: int) -> HttpResponse:
    """The body of one message of a projection (collapsed rows load it when opened); kept for
    every web process per (revision, entry, leaf, inputs), a repeat is a 304."""
    session = computed.session_for(request, pk)
    entry_id = request.GET.get("entry", "")
    full = request.GET.get("all") == "1"
    leaf = request.GET.get("leaf") or None

    def build() -> str:
        index = session_index(session)
        if entry_id not in index.items:
            raise Http404("No such entry in this session")
        blocks = heavy.run_if(
            leaf is not None and leaf in index.items and services.is_heavy_turn(index, leaf),
            lambda: services.message_blocks(session, index, entry_id, full=full, leaf=leaf),
        )
        return str(message_blocks_html(blocks, entry_id, session=session))

    key = computed.computed_key("message", session, entry_id, leaf, full)
    html, _ = computed.kept(key, build)
    return _revalidated(HttpResponse(html))


def _revalidated[R: HttpResponse | StreamingHttpResponse](response: R) -> R:
    """Kept by the browser, but asked again every time (the ETag makes that a 304)."""
    response["Cache-Control"] = "private, no-cache"
    return response


@login_required
@condition(**computed.conditional("chart"))
@kept_page("chart")
def chart(request: HttpRequest, pk: int) -> HttpResponse:
    """The context growth chart; its figures kept for every web process per (revision,
    inputs), a repeat is a 304."""
    session = computed.session_for(request, pk)
    growth, _ = computed.kept(
        computed.computed_key("chart", session),
        lambda: context_growth(session, session_index(session)),
    )
    # Its table's thousand rows too: rendering them was most of a kept chart's page.
    table_rows, _ = computed.kept(
        computed.computed_key("chart-rows", session, CHART_TABLE_LIMIT),
        lambda: chart_rows_html(
            growth.get("points") or [],
            page_url=growth.get("pageUrl", ""),
            limit=CHART_TABLE_LIMIT,
        ),
    )
    response = render(
        request,
        "inspector/chart.html",
        {
            "session": session,
            "growth": growth,
            "nav": "library",
            "table_limit": CHART_TABLE_LIMIT,
            # Every compaction with its request's number: the chart labels those that fit.
            "compactions": [
                {"n": n, "leaf": point["leaf"], **point["compaction"]}
                for n, point in enumerate(growth.get("points") or [])
                if point.get("compaction")
            ],
            "table_rows": table_rows,
        },
    )
    return _revalidated(response)


@login_required
@require_POST
def profile_update(request: HttpRequest, pk: int) -> HttpResponse:
    """Save the resource profile of a project (what Pi read on the machine it ran on). Its
    paths make this server read files, so only the project's owners (and superusers) edit it;
    every save is audited."""
    project = project_for_user_or_404(request.user, pk)
    if not can_manage_members(request.user, project):
        raise PermissionDenied("Only the project's owners edit its resource profile.")
    profile = ResourceProfile.objects.filter(project=project).first()
    form = ResourceProfileForm(request.POST, request.FILES, instance=profile)
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        back = reverse("library:index")  # only ever back to a page of this site
    if form.is_valid():
        services.save_resource_profile(project=project, form=form, user=request.user)
        messages.success(request, f"Resource profile of {project.cwd} saved.")
    else:
        errors = "; ".join(f"{k}: {' '.join(str(e) for e in v)}" for k, v in form.errors.items())
        messages.error(request, f"Resource profile not saved: {errors}")
    return redirect(back)


# --- Compare two requests; one request as the provider received it ------------------------------

# Entries offered for picking on the compare page: the points where Pi called the model. The
# page lists the first ones; typing in a picker asks for the matches among all of them.
COMPARE_CHOICES = 500
PICKER_MATCHES = 50


def _request_points(index: SessionIndex) -> list[tuple[str, str]]:
    """(entry id, label) of every entry with an assistant reply below it, on every branch
    (kept on the index: the pickers ask for them at every keystroke)."""
    kept = index.memo.get(("compare-points",))
    if isinstance(kept, list):
        return kept
    out: list[tuple[str, str]] = []

    def parent_of(entry_id: str) -> str | None:
        parent = index.items[entry_id].parent_id
        return parent if parent in index.items else None

    for leaf, _ in request_points(index.order, index.type_of, index.role_of, parent_of):
        parent = index.items[leaf]
        out.append((parent.id, f"{parent.tag}{parent.text}"[:90]))
    index.remember(("compare-points",), out)
    return out


@login_required
def compare_entries(request: HttpRequest, pk: int) -> HttpResponse:
    """The compare form's picker: the request points whose label or id holds the text typed
    (`q`, or the picker's own field `a` / `b`), as the options of its datalist (htmx swaps it)."""
    session = session_for_user_or_404(request.user, pk)
    index = session_index(session)
    typed = (request.GET.get("q") or request.GET.get("a") or request.GET.get("b") or "").strip()
    needle = typed.lower()[:200]
    points = _request_points(index)
    if needle:
        points = [(i, label) for i, label in points if needle in i or needle in label.lower()]
    return render(
        request,
        "inspector/compare.html#compare-choices",
        {"choices": points[:PICKER_MATCHES], "session": session},
    )


@login_required
@condition(**computed.conditional("compare", "a", "b"))  # a repeat is a 304, nothing computed
def compare(request: HttpRequest, pk: int) -> HttpResponse:
    """Two requests side by side (any two entries, on any branches): model, system prompt and
    the messages as sent, with what differs marked. Without `b`, the previous request on the
    path of `a`. The comparison is computed once per (revision, pair, inputs) and kept for
    every web process (`computed`); a client that left stops it."""
    session = computed.session_for(request, pk)
    index = session_index(session)
    a = request.GET.get("a", "") or (index.leaf_id or "")
    b = request.GET.get("b", "")
    if a not in index.items:
        raise Http404("No such entry in this session")
    if not b:
        b = services.previous_request(index, a) or a
    if b not in index.items:
        raise Http404("No such entry in this session")

    def build() -> Comparison:
        return requests_compare(
            session, index, a, b, abandoned=lambda: computed.client_gone(request)
        )

    def heavy_or_not() -> Comparison:
        # A large session's deep turns are compared at a lower CPU priority (contextlab.heavy).
        heavy_pair = services.is_heavy_turn(index, a) or services.is_heavy_turn(index, b)
        return heavy.run_if(heavy_pair, build)

    try:
        comparison, _ = computed.kept(
            computed.computed_key("compare-pair", session, a, b), heavy_or_not
        )
    except Abandoned:
        return budgets.client_closed()
    response = render(
        request,
        "inspector/compare.html",
        {
            "session": session,
            "nav": "library",
            "a": a,
            "b": b,
            "c": comparison,
            "choices": _request_points(index)[:COMPARE_CHOICES],
        },
    )
    return _revalidated(response)


# A request export up to this many characters is written whole and kept for every web process
# (a repeat, from any process, costs a cache read); a longer one is streamed as it is written,
# a message at a time, never held whole (a 250 MB session's leaf).
WHOLE_ANSWER_CHARS = computed.MAX_BYTES
# The streamed answer's pieces are gathered into writes of about this many bytes.
STREAM_WRITE_BYTES = 256 * 1024


@login_required
@condition(**computed.conditional("request", "entry", "format", "download"))
def request_export(request: HttpRequest, pk: int) -> HttpResponse | StreamingHttpResponse:
    """The request of `entry` as the JSON body the provider received (`format=json`, tools
    included) or as a curl command (`format=curl`); `download=1` as an attachment. Kept for
    every web process per (revision, entry, format, inputs) when small (a repeat is a 304);
    streamed when large."""
    session = computed.session_for(request, pk)
    entry_id = request.GET.get("entry", "")
    kind = "curl" if request.GET.get("format", "json") == "curl" else "json"
    key = computed.computed_key("request", session, entry_id, kind)
    response: HttpResponse | StreamingHttpResponse
    content_type = "text/plain; charset=utf-8" if kind == "curl" else "application/json"
    hit = computed.found(key)
    if hit is not None:
        text, note = hit[0]
        response = HttpResponse(text, content_type=content_type)
    else:
        index = session_index(session)
        if entry_id not in index.items:
            raise Http404("No such entry in this session")
        built = heavy.run_if(
            services.is_heavy_turn(index, entry_id),
            lambda: provider_request(session, index, entry_id),
        )
        note = built.note
        pieces = iter(built.curl_pieces() if kind == "curl" else built.body_pieces)
        head: list[str] = []
        size = 0
        for piece in pieces:
            head.append(piece)
            size += len(piece)
            if size > WHOLE_ANSWER_CHARS:
                response = StreamingHttpResponse(_writes(head, pieces), content_type=content_type)
                break
        else:
            text = "".join(head)
            computed.keep(key, (text, note))
            response = HttpResponse(text, content_type=content_type)
    name = f"request-{entry_id}.sh" if kind == "curl" else f"request-{entry_id}.json"
    if note:
        # What could make this differ from Pi's own request (ASCII: it is a header).
        response["X-Contextlab-Note"] = note.encode("ascii", "replace").decode()
    if request.GET.get("download"):
        # Django's helper quotes the name, so an id cannot add parameters to the header.
        response["Content-Disposition"] = content_disposition_header(True, name)
    return _revalidated(response)


def _writes(head: list[str], rest: Iterator[str]) -> Iterator[bytes]:
    """The pieces ``head`` (at most ``WHOLE_ANSWER_CHARS`` and a piece) then ``rest`` as
    UTF-8, gathered into writes of about ``STREAM_WRITE_BYTES``."""
    buffer: list[bytes] = []
    size = 0
    for text in chain(head, rest):
        piece = text.encode()
        buffer.append(piece)
        size += len(piece)
        if size >= STREAM_WRITE_BYTES:
            yield b"".join(buffer)
            buffer, size = [], 0
    if buffer:
        yield b"".join(buffer)


@login_required
def session_by_pi_id(request: HttpRequest, session_id: str) -> HttpResponse:
    """``/sessions/<Pi session id>/``: the session page (its numeric URL, the query kept), for
    the sessions the user may see; any other id is 404, as on the numeric URL."""
    session = get_object_or_404(sessions_for_user(request.user), session_id=session_id)
    url = reverse("inspector:session", args=[session.pk])
    query = request.META.get("QUERY_STRING", "")
    return redirect(f"{url}?{query}" if query else url)
