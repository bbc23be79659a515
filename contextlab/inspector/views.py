"""The session page (tree + turn inspector), lazily loaded tree rows, the context growth chart.

One page template, `inspector/session.html`, with inline partials: htmx requests get only the
part they target (`#tree`, `#inspector`), plain requests the whole page, so every link works
without JavaScript and every permalink (session + entry + tab + tree state) reloads the same view.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from urllib.parse import urlencode

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
)
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import content_disposition_header, url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

from contextlab.inspector import services
from contextlab.inspector.blocks import MessageView
from contextlab.inspector.chart import context_growth
from contextlab.inspector.forms import ResourceProfileForm
from contextlab.inspector.models import ResourceProfile
from contextlab.inspector.rendering import chart_rows_html, message_rows_html, tree_rows_html
from contextlab.inspector.requests import compare_requests as requests_compare
from contextlab.inspector.requests import provider_request
from contextlab.inspector.selectors import SessionIndex, session_index
from contextlab.library.models import Session
from contextlab.library.selectors import (
    project_for_user_or_404,
    session_for_user_or_404,
    session_problems,
    sessions_for_user,
)
from contextlab.pi.held import request_points
from contextlab.pi.tree_selector import (
    FILTER_MODES,
    TreeView,
    build_view,
    finish,
    select_rows,
)
from contextlab.review.selectors import comment_counts, review_panel, session_labels
from contextlab.review.services import can_manage_members

TABS = ("context", "prompt", "diff", "json", "entry")

# Rows sent per lazy request; a larger gap comes back as rows plus another placeholder.
ROWS_PER_REQUEST = 400
# The chart holds every request; its table (the no-JavaScript view of it) only the first ones.
CHART_TABLE_LIMIT = 1000


@dataclass(frozen=True)
class TreeState:
    """What the URL says about the tree and the selection."""

    mode: str = "default"
    query: str = ""
    folded: tuple[str, ...] = ()
    entry: str | None = None
    tab: str = "context"

    @classmethod
    def from_request(cls, request: HttpRequest) -> TreeState:
        mode = request.GET.get("mode", "default")
        tab = request.GET.get("tab", "context")
        folded = tuple(f for f in request.GET.get("fold", "").split(",") if f)[:200]
        return cls(
            mode=mode if mode in FILTER_MODES else "default",
            query=request.GET.get("q", "").strip()[:200],
            folded=folded,
            entry=request.GET.get("entry") or None,
            tab=tab if tab in TABS else "context",
        )

    def query_string(self, **changes: object) -> str:
        """The URL query for this state with `changes` applied (defaults left out)."""
        values = {
            "mode": self.mode,
            "q": self.query,
            "fold": ",".join(self.folded),
            "tab": self.tab,
            "entry": self.entry or "",
        }
        values.update({k: v for k, v in changes.items()})
        defaults = {"mode": "default", "tab": "context"}
        pairs = [(k, v) for k, v in values.items() if v and defaults.get(k) != v and k != "entry"]
        if values["entry"]:
            pairs.append(("entry", values["entry"]))
        return urlencode(pairs)

    def toggled(self, entry_id: str) -> tuple[str, ...]:
        if entry_id in self.folded:
            return tuple(f for f in self.folded if f != entry_id)
        return (*self.folded, entry_id)


def _tree_view(index: SessionIndex, state: TreeState, selected: str | None) -> TreeView:
    """The tree under the URL's mode, search and folds, showing the selected entry if only the
    "assistant message with tool calls only" rule hides it (Pi shows such an entry when it is
    the leaf; the inspector links to replies, which are often such messages). An entry that a
    fold, the search or the mode hides is not shown: the selection moves to its nearest visible
    ancestor, as in Pi's /tree."""
    view = index.view(state.mode, state.query, state.folded)
    if selected is None or selected in view.index_of or index.leaf_id == selected:
        return view
    item = index.items.get(selected)
    if item is None or not item.toolcall_only or _folded_away(index, state, selected):
        return view
    key = ("view-showing", selected, state.mode, state.query, state.folded)
    kept = index.memo.get(key)
    if isinstance(kept, TreeView):
        return kept
    items = dict(index.items)
    items[selected] = replace(item, toolcall_only=False)
    kept = build_view(
        index.order,
        items,
        index.labels,
        index.leaf_id,
        set(index.path_ids),
        mode=state.mode,
        query=state.query,
        folded=state.folded,
    )
    index.remember(key, kept)
    return kept


def _tree_ids(index: SessionIndex) -> frozenset[str]:
    """Entries in Pi's tree. An entry of a parentId cycle is stored but in no tree: the
    inspector can show it, no row can be selected for it."""
    ids = index.memo.get(("tree-ids",))
    if not isinstance(ids, frozenset):
        ids = frozenset(index.order)
        index.remember(("tree-ids",), ids)
    return ids


def _folded_away(index: SessionIndex, state: TreeState, entry_id: str) -> bool:
    if not state.folded:
        return False
    folded = set(state.folded)
    parent = index.parent_of.get(entry_id)
    hops = 0
    while parent is not None and hops <= len(index.items):
        if parent in folded:
            return True
        parent = index.parent_of.get(parent)
        hops += 1
    return False


def _tree_context(
    session: Session, index: SessionIndex, state: TreeState, selected: str | None
) -> dict[str, object]:
    view = _tree_view(index, state, selected)
    selected_index = -1
    if selected is not None and selected in _tree_ids(index):
        selected_index = view.nearest_visible(selected, index.parent_of.get)
    selected_id = view.rows[selected_index].item.id if selected_index >= 0 else None
    leaf_index = view.index_of.get(index.leaf_id or "", -1)
    ranges = select_rows(view, [selected_index, leaf_index])
    links: dict[str, object] = {
        "page_url": reverse("inspector:session", args=[session.pk]),
        "qs_prefix": _with_amp(state.query_string(entry="")),
        "fold_links": _fold_links(view, state, selected_id),
        "selected_id": selected_id,
        "comment_counts": comment_counts(session),  # one query, whatever the tree's size
    }
    return {
        **links,
        "links": links,
        "view": view,
        "segments": _segments(view, ranges, 0, len(view.rows) - 1, links),
        "rows_url": reverse("inspector:tree_rows", args=[session.pk]),
        "mode_links": [
            (m, state.query_string(mode=m, fold="", entry=selected_id or "")) for m in FILTER_MODES
        ],
        "tree_state": state.query_string(entry="", tab="context"),
    }


def _segments(
    view: TreeView,
    ranges: list[tuple[int, int]],
    start: int,
    end: int,
    links: dict[str, object],
) -> list[dict[str, object]]:
    """Rows to render and the gaps between them (placeholders that load lazily)."""
    out: list[dict[str, object]] = []
    cursor = start
    for first, last in ranges:
        first, last = max(first, start), min(last, end)
        if first > last:
            continue
        if first > cursor:
            out.append(_gap(view, cursor, first - 1))
        rows = view.rows[first : last + 1]
        finish(view, rows)
        out.append({"html": tree_rows_html(rows, **links)})  # type: ignore[arg-type]
        cursor = last + 1
    if cursor <= end:
        out.append(_gap(view, cursor, end))
    return out


def _gap(view: TreeView, first: int, last: int) -> dict[str, object]:
    finish(view, [view.rows[first]])
    return {
        "gap": True,
        "start": first,
        "end": last,
        "count": last - first + 1,
        "first_id": view.rows[first].item.id,
        "last_id": view.rows[last].item.id,
        "prefix": view.rows[first].prefix,
    }


def _with_amp(query: str) -> str:
    return f"{query}&" if query else ""


def _fold_links(view: TreeView, state: TreeState, selected: str | None) -> dict[str, str]:
    # The link keeps the selection: a fold that hides it moves it to the folded entry.
    return {
        row.item.id: state.query_string(
            fold=",".join(state.toggled(row.item.id)), entry=selected or ""
        )
        for row in view.rows
        if row.foldable or row.folded
    }


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
    return '"' + hashlib.sha1(json.dumps(version, sort_keys=True).encode()).hexdigest()[:20] + '"'


@login_required
def live(request: HttpRequest, pk: int) -> HttpResponse:
    """The session's live version, for the page's poll: 304 when nothing changed since the
    version the page holds (If-None-Match), else the version as JSON. No page is rendered here;
    the page fetches only the part that changed."""
    session = session_for_user_or_404(request.user, pk)
    version = live_version(session)
    etag = _etag(version)
    held = [tag.strip() for tag in request.headers.get("If-None-Match", "").split(",")]
    if etag in held:
        response: HttpResponse = HttpResponseNotModified()
    else:
        response = JsonResponse(version)
    response["ETag"] = etag
    response["Cache-Control"] = "no-cache, private"
    return response


# What an htmx request may ask for: one pane, both panes (a change of tree state, where the
# server decides which entry stays selected), or the live parts (head facts and tree).
PARTIALS = ("inspector", "tree", "panes", "live")


@login_required
@vary_on_headers("HX-Request", "HX-Target")  # one URL, a whole page or one of its parts
def session_detail(request: HttpRequest, pk: int) -> HttpResponse:
    session = session_for_user_or_404(request.user, pk)
    index = session_index(session)
    state = TreeState.from_request(request)
    if state.entry is not None and state.entry not in index.items:
        raise Http404("No such entry in this session")
    requested = state.entry or index.leaf_id
    target = request.htmx.target if request.htmx else None
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
    if target != "inspector":
        context.update(_tree_context(session, index, state, requested))
        shown = context["selected_id"]
        if isinstance(shown, str) and shown != requested:
            # The tree cannot show the requested entry (folded away, filtered out): the
            # selection is its nearest visible ancestor, in the tree, the inspector and the URL.
            if target is None and state.entry:
                return redirect(f"{page_url}?{state.query_string(entry=shown)}")
            selected = shown
        if target in (None, "live"):  # the other partials keep the version the page holds
            context["live_version"] = _etag(live_version(session))
    context["tabs"] = [(t, state.query_string(tab=t, entry=selected or "")) for t in TABS]
    if target not in ("tree", "live"):
        context["inspection"] = (
            services.inspect_entry(
                session, index, selected, tab=state.tab, full=request.GET.get("all") == "1"
            )
            if selected
            else None
        )
        context.update(review_panel(session, selected))
        context["can_edit_profile"] = can_manage_members(request.user, session.project)
    inspection = context.get("inspection")
    if isinstance(inspection, services.Inspection) and inspection.middle:
        context["middle_html"] = _middle_html(session, inspection.entry_id, inspection.middle, 0)
    if target == "inspector":
        return render(request, "inspector/session.html#inspector", context)
    if target == "tree":
        return render(request, "inspector/session.html#tree", context)
    if target in ("panes", "live"):
        parts = ["facts", "tree"] + (["inspector"] if target == "panes" else [])
        html = "".join(
            render_to_string(f"inspector/session.html#{part}", context, request) for part in parts
        )
        return HttpResponse(html)
    context["problems"] = list(session_problems(session)[:200])
    context["review_labels"] = session_labels(session)
    return render(request, "inspector/session.html", context)


@login_required
def tree_rows(request: HttpRequest, pk: int) -> HttpResponse:
    """A run of tree rows that the first response left out (htmx replaces its placeholder)."""
    session = session_for_user_or_404(request.user, pk)
    index = session_index(session)
    state = TreeState.from_request(request)
    context = _tree_context(session, index, state, state.entry)
    view = context["view"]
    assert isinstance(view, TreeView)
    try:
        start = max(0, int(request.GET.get("start", "0")))
        end = min(len(view.rows) - 1, int(request.GET.get("end", "0")))
    except ValueError:
        raise Http404("Bad row range") from None
    last = min(end, start + ROWS_PER_REQUEST - 1)
    context["segments"] = _segments(view, [(start, last)], start, end, context["links"])  # type: ignore[arg-type]
    context["session"] = session
    context["state"] = state
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
def not_sent(request: HttpRequest, pk: int) -> HttpResponse:
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


def _middle_html(session: Session, entry_id: str, middle: list[MessageView], start: int) -> str:
    """A page of the collapsed middle of a long projection, then a link for the next one."""
    page_url = reverse("inspector:session", args=[session.pk])
    rows = middle[start : start + MIDDLE_PAGE]
    html = message_rows_html(
        rows,
        page_url=page_url,
        body_url=reverse("inspector:message", args=[session.pk]),
        leaf=entry_id,
    )
    rest = len(middle) - start - len(rows)
    if rest > 0:
        more = reverse("inspector:messages", args=[session.pk])
        query = urlencode({"entry": entry_id, "start": start + len(rows)})
        fallback = f"{page_url}?{urlencode({'entry': entry_id, 'tab': 'json'})}"
        html += format_html(
            '<li class="notsent-group"><a href="{}" hx-get="{}?{}" hx-target="closest li" '
            'hx-swap="outerHTML" hx-push-url="false">⋯ {} more messages (show the next {})</a>'
            "</li>",
            fallback,
            more,
            query,
            rest,
            min(rest, MIDDLE_PAGE),
        )
    return html


@login_required
def messages_page(request: HttpRequest, pk: int) -> HttpResponse:
    """The next page of collapsed messages of one projection (htmx "show more")."""
    session, index, entry_id = _session_entry(request, pk)
    try:
        start = max(0, int(request.GET.get("start", "0")))
    except ValueError:
        raise Http404("Bad start") from None
    middle = services.middle_messages(session, index, entry_id)
    return HttpResponse(_middle_html(session, entry_id, middle, start))


@login_required
def message(request: HttpRequest, pk: int) -> HttpResponse:
    """The body of one message of a projection (collapsed rows load it when opened)."""
    session, index, entry_id = _session_entry(request, pk)
    full = request.GET.get("all") == "1"
    leaf = request.GET.get("leaf") or None
    blocks = services.message_blocks(session, index, entry_id, full=full, leaf=leaf)
    context = {"blocks": blocks, "session": session, "entry_id": entry_id}
    return render(request, "inspector/_blocks.html", context)


@login_required
def chart(request: HttpRequest, pk: int) -> HttpResponse:
    session = session_for_user_or_404(request.user, pk)
    index = session_index(session)
    growth = context_growth(session, index)
    return render(
        request,
        "inspector/chart.html",
        {
            "session": session,
            "growth": growth,
            "nav": "library",
            "table_limit": CHART_TABLE_LIMIT,
            "table_rows": chart_rows_html(
                growth.get("points") or [],
                page_url=growth.get("pageUrl", ""),
                limit=CHART_TABLE_LIMIT,
            ),
        },
    )


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
        errors = "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items())
        messages.error(request, f"Resource profile not saved: {errors}")
    return redirect(back)


# --- Compare two requests; one request as the provider received it ------------------------------

# Entries offered for picking on the compare page: the points where Pi called the model.
COMPARE_CHOICES = 500


def _request_points(index: SessionIndex) -> list[tuple[str, str]]:
    """(entry id, label) of every entry with an assistant reply below it, on every branch."""
    out: list[tuple[str, str]] = []

    def parent_of(entry_id: str) -> str | None:
        parent = index.items[entry_id].parent_id
        return parent if parent in index.items else None

    for leaf, _ in request_points(index.order, index.type_of, index.role_of, parent_of):
        parent = index.items[leaf]
        out.append((parent.id, f"{parent.tag}{parent.text}"[:90]))
        if len(out) >= COMPARE_CHOICES:
            break
    return out


@login_required
def compare(request: HttpRequest, pk: int) -> HttpResponse:
    """Two requests side by side (any two entries, on any branches): model, system prompt and
    the messages as sent, with what differs marked. Without `b`, the previous request on the
    path of `a`."""
    session = session_for_user_or_404(request.user, pk)
    index = session_index(session)
    a = request.GET.get("a", "") or (index.leaf_id or "")
    b = request.GET.get("b", "")
    if a not in index.items:
        raise Http404("No such entry in this session")
    if not b:
        b = services.previous_request(index, a) or a
    if b not in index.items:
        raise Http404("No such entry in this session")
    comparison = requests_compare(session, index, a, b)
    return render(
        request,
        "inspector/compare.html",
        {
            "session": session,
            "nav": "library",
            "a": a,
            "b": b,
            "c": comparison,
            "choices": _request_points(index),
        },
    )


@login_required
def request_export(request: HttpRequest, pk: int) -> HttpResponse:
    """The request of `entry` as the JSON body the provider received (`format=json`, tools
    included) or as a curl command (`format=curl`); `download=1` as an attachment."""
    session, index, entry_id = _session_entry(request, pk)
    built = provider_request(session, index, entry_id)
    kind = request.GET.get("format", "json")
    if kind == "curl":
        response = HttpResponse(built.curl, content_type="text/plain; charset=utf-8")
        name = f"request-{entry_id}.sh"
    else:
        response = HttpResponse(built.body_text, content_type="application/json")
        name = f"request-{entry_id}.json"
    if built.note:
        # What could make this differ from Pi's own request (ASCII: it is a header).
        response["X-Contextlab-Note"] = built.note.encode("ascii", "replace").decode()
    if request.GET.get("download"):
        # Django's helper quotes the name, so an id cannot add parameters to the header.
        response["Content-Disposition"] = content_disposition_header(True, name)
    return response


@login_required
def session_by_pi_id(request: HttpRequest, session_id: str) -> HttpResponse:
    """``/sessions/<Pi session id>/``: the session page (its numeric URL, the query kept), for
    the sessions the user may see; any other id is 404, as on the numeric URL."""
    session = get_object_or_404(sessions_for_user(request.user), session_id=session_id)
    url = reverse("inspector:session", args=[session.pk])
    query = request.META.get("QUERY_STRING", "")
    return redirect(f"{url}?{query}" if query else url)
