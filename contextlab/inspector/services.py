"""View-models of the turn inspector and the context growth chart, built from the engine.

Every figure shown comes from `contextlab.pi` (the request in its dialect, conversions, token
estimates, the system prompt, truncation notices); this module only gathers the inputs from the
database and arranges the results for templates. Steps of `inspect_entry`:

1. the path root -> entry, condensed to what the projection reads (`selectors.path_entries`);
2-3. the engine's request at that leaf in the turn's dialect (`contextlab.pi.turn.build_turn`;
   the project's resource profile may choose the dialect): each message of its context with its
   entry (Pi 1.x: with the context edit that changed it), and what the provider receives;
4. per-message estimates in the dialect, a running total, Pi's own context estimate, the window
   and reserve, the output cap sent, the usage the provider reported for the reply;
5. the system prompt: Pi 1.x's as the session persisted it (sections, tools, where each was
   last set); Pi 0.x's rebuilt by the engine from the project's resources (or plainly "unknown");
6. the diff against the previous request on the same path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from contextlab import jsonsafe
from contextlab.budgets import BudgetExceeded, check_deadline
from contextlab.inspector.blocks import Block, MessageView, dumps, sent_blocks
from contextlab.inspector.diffs import request_diff
from contextlab.inspector.messages import FULL_TAIL, MessageViews, message_totals, message_views
from contextlab.inspector.models import DIALECT_CHOICES, ResourceFile, ResourceProfile
from contextlab.inspector.releases import ReleaseView
from contextlab.inspector.rendering import tokens_text
from contextlab.inspector.selectors import (
    SessionIndex,
    build_index,
    entries_by_id,
    estimated_size,
    gc_paused,
    index_stored,
    path_entries,
    path_prefix,
    store_index,
)
from contextlab.inspector.turns import TurnInputs, changed_after, request_json, server_inputs
from contextlab.library.models import Project, Session
from contextlab.pi import held as pi_held
from contextlab.pi import request as pi_request
from contextlab.pi import tokens as pi_tokens
from contextlab.pi.captured import (
    CapturedPrompt,
    captured_prompt_at,
    prompt_differences,
    with_captured,
)
from contextlab.pi.dialects.detect import DialectChoice
from contextlab.pi.entries import message_of_entry
from contextlab.pi.prompt import SystemPrompt
from contextlab.pi.resources import PromptResources
from contextlab.pi.tree_selector import TreeItem
from contextlab.pi.turn import build_turn
from contextlab.review.services import audit_record

__all__ = ["FULL_TAIL", "Inspection", "inspect_entry", "message_blocks"]

# Pi's default compaction.reserveTokens is assumed: settings live on the machine Pi ran on and
# are not in the session file.
DEFAULT_RESERVE_TOKENS = pi_tokens.DEFAULT_RESERVE_TOKENS


@dataclass
class Inspection:
    session: Session
    entry_id: str
    entry: dict[str, Any] | None
    item: TreeItem
    messages: Sequence[MessageView]
    sent: list[dict[str, Any]]
    thinking_level: str
    model: dict[str, Any] | None
    model_info: dict[str, Any]
    estimate_total: int
    pi_estimate: dict[str, Any]
    context_window: int | None
    reserve_tokens: int
    compaction: dict[str, Any] | None
    replaced_count: int
    invariant_ok: bool
    invariant_text: str
    reply: dict[str, Any] | None
    # For an assistant message: the entry whose context produced it (its parent on the path).
    answered: str | None
    prompt: SystemPrompt | None
    prompt_unknown: list[str]
    prompt_notes: list[str]
    resources: PromptResources | None
    profile: ResourceProfile | None
    prompt_date: str
    diff: dict[str, Any] | None
    copy_json: str
    entry_json: str
    synthetic_results: int
    # Characters of copy_json / entry_json not rendered (CONTEXTLAB_MESSAGE_RENDER_CHARS).
    copy_json_hidden: int = 0
    entry_json_hidden: int = 0
    # The prompt the contextlab Pi extension captured for this request (prompt tab only), and
    # its differences from the reconstruction above.
    captured: CapturedPrompt | None = None
    captured_diff: list[str] = field(default_factory=list)
    # The messages shown in full: the leading ones and the last FULL_TAIL; the middle ones are
    # one line each with their body loaded on demand (a deep entry can have thousands).
    head: Sequence[MessageView] = field(default_factory=list)
    middle: Sequence[MessageView] = field(default_factory=list)
    tail: Sequence[MessageView] = field(default_factory=list)
    # The engine's request (its dialect, tools, output cap), and how the page names its dialect.
    request: pi_request.PiRequest | None = None
    dialect: dict[str, Any] = field(default_factory=dict)
    # Pi 1.x: the tool declarations sent, each with its JSON schema and the entry that declared it.
    tools: list[dict[str, Any]] = field(default_factory=list)
    # The message count, where the views were not built (tabs other than Messages show the
    # totals only): ``messages`` is then empty.
    counted: int | None = None

    @property
    def images_dropped(self) -> bool:
        """pi-ai's transformMessages replaces images for a model without image input."""
        return "image" not in self.model_info.get("input", ["image"])

    @property
    def open_from(self) -> int:
        """Messages after this position start unfolded (the end of the request matters most)."""
        return self.message_count - 6

    @property
    def release(self) -> ReleaseView | None:
        """Which Pi release wrote this turn: the candidates, the one used and why."""
        choice = self.request.choice if self.request is not None else None
        if choice is None or choice.release is None:
            return None
        return ReleaseView.of(choice.release)

    @cached_property
    def message_count(self) -> int:
        """The messages of the context (a message a context edit omitted is not one). Kept: every
        row of the page asks for it (``open_from``), and counting is a walk of every message."""
        if self.counted is not None:
            return self.counted
        if isinstance(self.messages, MessageViews):
            return self.messages.sent_count  # without making a view of each
        return sum(1 for view in self.messages if not view.omitted)

    @property
    def prompt_in_session(self) -> bool:
        """Pi 1.x: the prompt is the session's system messages, counted among the messages."""
        return (
            self.request is not None and pi_request.steps_of(self.request.dialect).prompt_in_session
        )

    @property
    def prompt_tokens(self) -> int:
        """The tokens of the prompt sent (the captured one, when there is a capture)."""
        sent = self.request.prompt if self.request is not None else self.prompt
        return sent.tokens if sent else 0

    @property
    def layer_token_sum(self) -> int:
        return sum(layer.tokens for layer in self.prompt.layers) if self.prompt else 0

    @property
    def total_with_prompt(self) -> int:
        if self.prompt_in_session:
            return self.estimate_total
        return self.estimate_total + self.prompt_tokens

    @property
    def threshold(self) -> int | None:
        return self.context_window - self.reserve_tokens if self.context_window else None

    @property
    def max_tokens_text(self) -> str:
        """The output cap the request carried (``max_completion_tokens``); for an Anthropic
        model, the ``max_tokens`` pi-ai's body always holds (from the model's limits)."""
        request = self.request
        if request is not None and request.max_tokens is not None:
            return str(request.max_tokens)
        sent = _anthropic_output_cap(request)
        if sent is not None:
            return f"{sent} (max_tokens, from the model's limits)"
        if request is None or request.max_tokens_unknown:
            return "unknown: the model's limits are unknown"
        return "not sent"

    # Labels the inspector shows, worded here rather than in `if` chains of the template.

    @property
    def model_label(self) -> str:
        model = self.model
        return f"{model.get('provider')}/{model.get('modelId')}" if model else "unknown"

    @property
    def pi_estimate_title(self) -> str:
        if self.prompt_in_session:
            return (
                "Pi 1.x's estimateProjectedContextTokens: last valid usage + estimates of the"
                " messages after it, unless a context edit or compaction came later (then the"
                " replayed prompt and every message)"
            )
        return (
            "Pi's estimateContextTokens: last valid assistant usage + estimates of the messages"
            " after it"
        )

    @property
    def reply_stopped(self) -> str:
        """How the reply to this request ended when it did not answer ("" when it did)."""
        stop = (self.reply or {}).get("stop_reason")
        return {"aborted": "aborted", "error": "an error"}.get(str(stop), "")

    @property
    def reply_reported(self) -> bool:
        """A reply that answered, with the input+cache tokens the provider reported for it."""
        return (
            not self.reply_stopped
            and self.reply is not None
            and self.reply.get("prompt_tokens") is not None
        )

    @property
    def window_text(self) -> str:
        if not self.context_window:
            return "context window unknown for this model"
        return (
            f"window {tokens_text(self.context_window)} · reserve"
            f" {tokens_text(self.reserve_tokens)} · compacts above {tokens_text(self.threshold)}"
        )

    @property
    def window_css(self) -> str:
        return "window" if self.context_window else "muted"

    @property
    def invariant_css(self) -> str:
        return "invariant-ok" if self.invariant_ok else "muted"

    @property
    def invariant_label(self) -> str:
        """Whether Pi would send a request ending with this entry (Pi's own rule)."""
        if self.invariant_ok:
            return f"✓ last message is a user message or a tool result: {self.invariant_text}"
        return (
            f"Pi sends no request that ends like this ({self.invariant_text}): the next user"
            " message would come first."
        )

    @property
    def answered_elsewhere(self) -> str | None:
        """For an entry Pi sends no request at: the request whose reply it is."""
        return None if self.invariant_ok else self.answered

    @property
    def diff_sent_counts(self) -> str:
        """The diff's message counts as sent to the model, when they differ from the context's
        (a context edit or a synthetic tool result): " (5 → 7 as sent to the model)"."""
        d = self.diff or {}
        if (d.get("before_count"), d.get("after_count")) == (
            d.get("before_messages"),
            d.get("after_messages"),
        ):
            return ""
        return f" ({d.get('before_count')} → {d.get('after_count')} as sent to the model)"

    @property
    def diff_prompt_dates(self) -> str:
        """A changed prompt that differs only by its date line: " (date A → B)"."""
        d = self.diff or {}
        dates = d.get("prompt_dates") or ("", "")
        prompt = d.get("prompt") or {}
        by_section = prompt.get("by_section") if isinstance(prompt, dict) else None
        if not d.get("prompt_changed") or by_section or dates[0] == dates[1]:
            return ""
        return f" (date {dates[0]} → {dates[1]})"


def _anthropic_output_cap(request: pi_request.PiRequest | None) -> int | None:
    """The ``max_tokens`` of the anthropic-messages body the request went out as (pi-ai sends
    one on every call there, even where the turn set none); None for other apis."""
    if request is None:
        return None
    try:
        return request.anthropic_max_tokens()
    except (KeyError, TypeError, ValueError):
        return None


# --- resources, the dialect and the system prompt ---------------------------------------------


def resource_profile(project: Project) -> ResourceProfile | None:
    return ResourceProfile.objects.filter(project=project).prefetch_related("files").first()


def session_inputs(session: Session) -> TurnInputs:
    """This server's inputs for the session's turns (``turns.server_inputs``)."""
    return server_inputs(session, resource_profile(session.project))


@dataclass
class _Prompted:
    """A leaf's request with its prompt, and what the page says about the prompt."""

    request: pi_request.PiRequest
    resources: PromptResources | None = None
    unknown: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Pi 0.x: the prompt rebuilt from the resources (the request's own is the captured one
    # when there is a capture); None otherwise.
    rebuilt: SystemPrompt | None = None


def _with_prompt(
    inputs: TurnInputs, request: pi_request.PiRequest, captured: CapturedPrompt | None = None
) -> _Prompted:
    """The request with its system prompt: Pi 1.x's is the session's own (already built, no
    server file read); Pi 0.x's is rebuilt by the engine from this server's resources, read
    afresh (the request itself is kept per leaf), then replaced by the captured one when the
    session holds a capture for this request (what Pi sent)."""
    if pi_request.steps_of(request.dialect).prompt_in_session:
        return _Prompted(request)
    found = inputs.prompt(request.dialect)
    prompted = pi_request.with_prompt(request, found.source)
    notes = found.notes
    if prompted.prompt is not None:
        notes = [*prompted.prompt.notes, *notes]
    unknown = found.unknown
    if captured is None and found.resources is not None:
        unknown = [*unknown, *changed_after(inputs, found.resources, request.request_time_ms)]
    return _Prompted(
        with_captured(prompted, captured), found.resources, unknown, notes, prompted.prompt
    )


def _dialect_view(choice: DialectChoice | None, profile: ResourceProfile | None) -> dict[str, Any]:
    """How the page names a turn's dialect and why (detected from the file, chosen, assumed)."""
    chosen = profile.dialect if profile is not None else ""
    name = choice.dialect if choice else "0.80"
    variant = choice.variant if choice else None
    if chosen:
        source = f"chosen in the project's resource profile (Pi {chosen})"
    elif choice is not None and choice.detected:
        source = "detected from the session file"
    else:
        source = "assumed"
    out: dict[str, Any] = {
        "name": name,
        "label": f"Pi {name}" + (f" (pi-ai {variant})" if variant else ""),
        "source": source,
        "reason": choice.reason if choice else "",
        "profile": chosen or "detect",
        "undetectable": "",
    }
    if name in ("0.73", "0.80"):
        rule = (
            f"the project's resource profile chooses Pi {chosen}"
            if chosen
            else "the project's resource profile says detect: 0.80 assumed (choose 0.73 there"
            " if Pi 0.73 wrote this session)"
        )
        out["undetectable"] = (
            "Pi 0.73 and 0.80 write the same session files: which of them sent this turn cannot"
            f" be told from the file. It is read as Pi {name}: {rule}."
        )
    return out


@transaction.atomic
def save_resource_profile(*, project: Project, form: Any, user: Any) -> ResourceProfile:
    profile: ResourceProfile = form.save(commit=False)
    profile.project = project
    profile.tools = form.cleaned_data["tools_text"]
    trust = form.cleaned_data.get("trust")
    profile.project_trusted = None if not trust else trust == "yes"
    profile.updated_by = user if getattr(user, "is_authenticated", False) else None
    profile.save()
    uploads = form.cleaned_data.get("uploads", [])
    for path, content in uploads:
        ResourceFile.objects.update_or_create(
            profile=profile, original_path=path, defaults={"content": content}
        )
    audit_record(
        actor=user,
        verb="profile.update",
        project=project,
        target=project.cwd[:200],
        data={
            "changed": sorted(form.changed_data),
            "agent_dir": profile.agent_dir,
            "pi_root": profile.pi_root,
            "home": profile.home,
            "tools": profile.tools,
            "project_trusted": profile.project_trusted,
            "dialect": profile.dialect,
            "uploaded": [path for path, _ in uploads],
        },
    )
    return profile


# --- the stored tree index ------------------------------------------------------------------


def tree_index_refresh(*, session_id: int) -> None:
    """Store the tree index of a session's current state now, where entries were just written
    (an import, a job's appended entry), so that the first open of the session, in any process,
    loads it instead of parsing every entry (~400 ms for 20k entries). Once per state: a state
    already stored is left alone."""
    session = Session.objects.filter(pk=session_id).first()
    if session is None or index_stored(session):
        return
    try:
        index = build_index(session)
    except BudgetExceeded:
        return  # a web request's import past its budget: the first open builds it
    store_index(session, index)


def store_tree_indexes(results: list[Any]) -> None:
    """tree_index_refresh for every session an import stored or changed (ImportResults), so
    its first open, in any process, starts from a stored index."""
    for result in results:
        if result.session is not None and result.status not in ("unchanged", "failed"):
            tree_index_refresh(session_id=result.session.pk)


# --- the request at a leaf ------------------------------------------------------------------


def model_info(model: dict[str, Any] | None, found: dict[str, Any]) -> dict[str, Any]:
    """The context's model ({provider, modelId}) and the pi-ai model it resolved to."""
    limits = pi_request.ModelLimits.of(found)
    return {
        "provider": (model or {}).get("provider"),
        "id": (model or {}).get("modelId"),
        "found": found,
        "assumed": limits.assumed,
        "context_window": limits.context_window,
        "max_tokens": limits.max_tokens,
        "input": list(found.get("input") or []),
    }


# The path's entries, the engine's request and the model's facts.
_Projection = tuple[list[dict[str, Any]], pi_request.PiRequest, dict[str, Any]]


def _projection(
    session: Session,
    index: SessionIndex,
    entry_id: str,
    inputs: TurnInputs,
    path: list[dict[str, Any]] | None = None,
) -> _Projection:
    """Path, the engine's request at this leaf (without a Pi 0.x prompt: its resources are read
    per view) and its model, kept on the index.

    A session revision's entries never change, so neither does a leaf's request (for a given
    models.json and dialect): switching tabs or coming back to an entry reuses it. The index is
    replaced when the session grows, which drops these with it.
    """
    key = ("projection", entry_id, *inputs.key)
    cached: _Projection | None = index.memo.get(key)
    if cached is not None:
        return cached
    entries = path if path is not None else path_entries(session, index, entry_id)
    check_deadline("Building this request")
    # Keyed by id (a condensed path's stand-ins may have none: the key None).
    by_id: dict[Any, dict[str, Any]] = {e.get("id"): e for e in entries}
    request = build_turn(
        entries,
        entry_id,
        by_id=by_id,
        header=session.header,
        chosen=inputs.chosen,
        chosen_by=inputs.chosen_by,
        model_lookup=inputs.model_lookup(),
        limits=inputs.limits,
        # A captured prompt narrows the candidate releases (their prompts built from this
        # server's resources, as the view builds the turn's own).
        captured=captured_prompt_for(session, index, entry_id),
        captured_sources=lambda dialect: inputs.prompt(dialect).source,
    )
    value = (entries, request, model_info(request.context.model, request.model))
    index.remember(key, value, size=_projection_bytes(index, entries))
    return value


def _projection_bytes(index: SessionIndex, entries: list[dict[str, Any]]) -> int:
    """What a projection holds: its entries' JSON bytes, twice (the request's messages are built
    from them, sharing their long texts, adding their own containers). Counting is free;
    walking tens of MB is not."""
    return 2 * index.held_bytes(entries)


# What one message view holds besides its message and blocks (its fields, its small dicts).
_VIEW_BYTES = 512


def dialect_choice_groups() -> list[tuple[str, list[tuple[str, str]]]]:
    """The profile's choices for the select: detect, a dialect, or one release X.Y.Z."""
    dialects = [(v, label) for v, label in DIALECT_CHOICES if v.count(".") < 2]
    releases = [(v, label) for v, label in DIALECT_CHOICES if v.count(".") == 2]
    return [
        ("Detect", dialects[:1]),
        ("A generation", dialects[1:]),
        ("One release (as --pi-version)", releases),
    ]


def dialect_options_html(profile: ResourceProfile | None) -> SafeString:
    """The profile form's version `<option>`s with the profile's choice selected."""
    return _dialect_options_html(profile.dialect if profile else "")


@lru_cache(maxsize=64)
def _dialect_options_html(selected: str | None) -> SafeString:
    groups = dialect_choice_groups()
    return mark_safe(
        "".join(
            f'<optgroup label="{escape(group)}">'
            + "".join(
                f'<option value="{escape(value)}"{" selected" if value == selected else ""}>'
                f"{escape(label)}</option>"
                for value, label in choices
            )
            + "</optgroup>"
            for group, choices in groups
        )
    )


def _views(
    index: SessionIndex,
    entry_id: str,
    projection: _Projection,
    chosen: str | None,
) -> tuple[MessageViews, int, int, int]:
    """The request's message views (kept with the projection: they depend on the leaf and the
    dialect only)."""
    entries, request, _ = projection
    key = ("views", entry_id, chosen)
    cached: tuple[MessageViews, int, int, int] | None = index.memo.get(key)
    if cached is not None:
        return cached
    value = message_views(request, entry_id)
    views, _, head_count, tail_start = value
    # The views hold the request's messages: kept, they keep the whole projection alive, so they
    # count as much as it does (whether or not the projection itself was kept: one too large
    # for the memo must not stay behind its views), plus a small object each and the blocks of
    # the messages shown in full. Serialising every view to size them re-serialised the whole
    # projection (4% of a loaded server's time).
    shown = [(v.blocks, (v.edit or {}).get("blocks")) for v in views[:head_count]]
    shown += [(v.blocks, (v.edit or {}).get("blocks")) for v in views[tail_start:]]
    size = _projection_bytes(index, entries) + _VIEW_BYTES * len(views) + estimated_size(shown)
    index.remember(key, value, size=size)
    return value


def inspect_entry(
    session: Session,
    index: SessionIndex,
    entry_id: str,
    *,
    tab: str = "context",
    full: bool = False,
) -> Inspection:
    """The inspection of `entry_id`. Unless `full`, its JSON texts (the JSON and entry tabs)
    are cut to CONTEXTLAB_MESSAGE_RENDER_CHARS characters, as message blocks are: a 3 MB tool
    result must not make a 6 MB page (its JSON escaped once more as HTML)."""
    # A deep entry's projection allocates some 100k objects (thousands of messages and views)
    # next to a 20k-entry index: with the cyclic GC running, its collections re-scan that index
    # over and over (measured: a third of a first inspection). Nothing made here forms cycles.
    limit = None if full else settings.CONTEXTLAB_MESSAGE_RENDER_CHARS
    with gc_paused():
        inspection = _inspect_entry(session, index, entry_id, tab=tab, limit=limit)
    if limit is not None:
        inspection.entry_json, inspection.entry_json_hidden = _cut(inspection.entry_json, limit)
    return inspection


def _cut(text: str, limit: int) -> tuple[str, int]:
    """The first `limit` characters of `text` and how many were left out."""
    if len(text) <= limit:
        return text, 0
    return text[:limit], len(text) - limit


def middle_messages(session: Session, index: SessionIndex, entry_id: str) -> MessageViews:
    """The collapsed middle of a leaf's projection ("show more" pages): the projection and its
    views only (both kept on the index), not a whole inspection with its prompt."""
    inputs = session_inputs(session)
    projection = _projection(session, index, entry_id, inputs)
    views, _, head_count, tail_start = _views(index, entry_id, projection, inputs.chosen)
    return views[head_count:tail_start]


def _compaction(
    index: SessionIndex, entries: list[dict[str, Any]], path_ids: list[str]
) -> tuple[dict[str, Any] | None, int]:
    """The compaction in force and how many path entries it replaced (from the index: the
    entries handed to the engine are condensed before the kept range)."""
    span = pi_held.held_span(path_ids, index.type_of, index.first_kept.get)
    if span.compaction is None:
        return None, 0
    compaction_id = path_ids[span.compaction]
    compaction_entry = next((e for e in entries if e.get("id") == compaction_id), {})
    kept = index.first_kept.get(compaction_id)
    return {
        "id": compaction_id,
        "tokens_before": compaction_entry.get("tokensBefore"),
        "first_kept": kept,
        "kept_on_path": kept in path_ids[: span.compaction],
    }, len(pi_held.replaced(path_ids, span, index.type_of))


def _tool_views(request: pi_request.PiRequest) -> list[dict[str, Any]]:
    """Pi 1.x: the tool declarations the request carried, with their schemas and origins."""
    if not pi_request.steps_of(request.dialect).prompt_in_session:
        return []
    return [
        {
            "name": tool.get("name"),
            "description": tool.get("description"),
            "schema": dumps(tool.get("parameters")),
            "origin": request.tool_origins.get(tool.get("name")),
        }
        for tool in request.tools
    ]


def _inspect_entry(
    session: Session, index: SessionIndex, entry_id: str, *, tab: str, limit: int | None
) -> Inspection:
    # Over 80 lines on purpose: one straight pass that fills the Inspection's fields in the
    # order of the module docstring's steps; cut into pieces it would hand a dozen locals along.
    profile = resource_profile(session.project)
    inputs = server_inputs(session, profile)
    projection = _projection(session, index, entry_id, inputs)
    entries, kept_request, info = projection
    check_deadline("Building this request")
    counted: int | None = None
    views: Sequence[MessageView]
    if tab == "context" or index.memo.get(("views", entry_id, inputs.chosen)) is not None:
        views, running, head_count, tail_start = _views(index, entry_id, projection, inputs.chosen)
    else:
        # The other tabs show the totals only: a deep turn's thousands of views (and the blocks
        # of its head and tail) are not built for them, unless already kept.
        views, head_count, tail_start = [], 0, 0
        running, counted = message_totals(kept_request)
    captured = captured_prompt_for(session, index, entry_id)
    prompted = _with_prompt(inputs, kept_request, captured)
    request = prompted.request
    model = request.context.model
    sent = request.sent
    path_ids = index.path(entry_id)
    compaction, replaced = _compaction(index, entries, path_ids)

    last_role = sent[-1].get("role") if sent else None
    invariant_text = (
        f"the last message sent has role {last_role}"
        if sent
        else "nothing would be sent (the context is empty)"
    )
    reply = _reply(session, index, entry_id)
    # What the model saw for an assistant message is the request at its parent: Pi never sends
    # a request ending with an assistant message (the next user message comes first).
    item = index.items[entry_id]
    answered = (
        path_ids[-2]
        if last_role == "assistant" and pi_held.is_reply(item.type, item.role) and len(path_ids) > 1
        else None
    )
    # The prompt tab shows the rebuilt prompt by layer beside the captured one; what the
    # request carries (the JSON tab, the export, estimates) is the captured one when there is.
    prompt = prompted.rebuilt if prompted.rebuilt is not None else request.prompt
    sent_prompt = request.prompt
    captured_diff = (
        prompt_differences(prompt.text if prompt else "", captured.system_prompt)
        if captured and tab == "prompt"
        else []
    )
    selected = entries_by_id(session, index, [entry_id]).get(entry_id)
    diff = _diff(session, index, inputs, request, entries) if tab == "diff" else None
    copy = {
        "session": session.session_id,
        "leaf": entry_id,
        "model": model,
        "thinkingLevel": request.thinking_level,
        "systemPrompt": sent_prompt.text if sent_prompt else None,
        "messages": sent,
        "tools": [
            {
                "name": t.get("name"),
                "description": t.get("description"),
                "parameters": t.get("parameters"),
            }
            for t in request.tools
        ],
        "maxTokens": request.max_tokens,
        "dialect": request.choice.dialect if request.choice else None,
    }
    # The JSON tab's text as far as it is shown (`limit` characters): a deep turn's request is
    # tens of MB of JSON, written only as far as the page shows it and otherwise measured.
    copy_json, copy_json_hidden = "", 0
    if tab == "json":
        if limit is None:
            copy_json = dumps(copy)
        else:
            copy_json, copy_json_hidden = jsonsafe.pretty_head(copy, "messages", limit)
    return Inspection(
        session=session,
        entry_id=entry_id,
        entry=selected,
        item=item,
        messages=views,
        sent=sent,
        thinking_level=str(request.thinking_level),
        model=model if isinstance(model, dict) else None,
        model_info=info,
        estimate_total=running,
        pi_estimate={"tokens": request.context_estimate()},
        context_window=info.get("context_window"),
        reserve_tokens=DEFAULT_RESERVE_TOKENS,
        compaction=compaction,
        replaced_count=replaced,
        invariant_ok=request.sendable,
        invariant_text=invariant_text,
        reply=reply,
        answered=answered,
        prompt=prompt,
        prompt_unknown=prompted.unknown,
        prompt_notes=prompted.notes,
        resources=prompted.resources,
        profile=profile,
        prompt_date=request.prompt_date or "",
        diff=diff,
        copy_json=copy_json,
        copy_json_hidden=copy_json_hidden,
        entry_json=dumps(selected) if selected is not None else "",
        synthetic_results=request.synthetic_results,
        captured=captured,
        captured_diff=captured_diff,
        head=views[:head_count],
        middle=views[head_count:tail_start],
        tail=views[tail_start:],
        request=request,
        dialect=_dialect_view(request.choice, profile),
        tools=_tool_views(request),
        counted=counted,
    )


def captured_prompt_for(
    session: Session, index: SessionIndex, entry_id: str
) -> CapturedPrompt | None:
    """The prompt the contextlab Pi extension recorded for the request at this entry, if any
    (the candidates are the custom entries on the path and among the entry's children)."""
    path = index.path(entry_id)
    children = index.display_children.get(entry_id, [])
    candidates = [i for i in (*path, *children) if index.items[i].type == "custom"]
    if not candidates:
        return None
    return captured_prompt_at(path, children, entries_by_id(session, index, candidates))


def message_blocks(
    session: Session,
    index: SessionIndex,
    entry_id: str,
    *,
    full: bool = False,
    leaf: str | None = None,
) -> list[Block]:
    """The blocks of the message one entry contributes (for a collapsed row opened later);
    with ``leaf``, as that leaf's request holds it (a Pi 1.x context edit may have changed it)."""
    if leaf is not None and leaf in index.items:
        inputs = session_inputs(session)
        projection = _projection(session, index, leaf, inputs)
        views, _, _, _ = _views(index, leaf, projection, inputs.chosen)
        for at, owner_id in views.entry_ids():
            if owner_id == entry_id:
                view = views[at]
                held = view.edit["original"] if view.edit and view.omitted else view.message
                return sent_blocks(held, full=full)
    entry = entries_by_id(session, index, [entry_id]).get(entry_id)
    message = message_of_entry(entry, "estimate") if entry else None
    return sent_blocks(message, full=full) if message else []


def _reply(session: Session, index: SessionIndex, entry_id: str) -> dict[str, Any] | None:
    """The assistant message that answered this exact request, if the session has one: its
    usage is what the provider counted for the context shown here."""
    replies = [
        i
        for i in index.children.get(entry_id, ())
        if pi_held.is_reply(index.items[i].type, index.items[i].role)
    ]
    if not replies:
        return None
    on_path = [i for i in replies if i in index.path_set]
    reply_id = (on_path or replies)[0]
    entry = entries_by_id(session, index, [reply_id]).get(reply_id)
    message = entry.get("message") if entry else None
    if not isinstance(message, dict):
        return None
    usage = message.get("usage") if isinstance(message.get("usage"), dict) else None
    prompt_tokens = None
    if usage:
        prompt_tokens = sum(int(usage.get(k) or 0) for k in ("input", "cacheRead", "cacheWrite"))
    return {
        "id": reply_id,
        "usage": usage,
        "prompt_tokens": prompt_tokens,
        "context_tokens": pi_tokens.calculate_context_tokens(usage) if usage else None,
        "stop_reason": message.get("stopReason"),
        "model": f"{message.get('provider')}/{message.get('model')}",
    }


def previous_request(index: SessionIndex, entry_id: str) -> str | None:
    """The previous point on this entry's path where Pi called the model."""
    found = pi_held.previous_request(index.path(entry_id), index.type_of, index.role_of)
    return str(found) if found is not None else None


@dataclass
class TurnRequest:
    """The request at a leaf as every entry point shows it (this server's inputs, the captured
    prompt), with its model and what is unknown about its prompt here."""

    request: pi_request.PiRequest
    model_info: dict[str, Any]
    prompt_unknown: list[str]
    chosen: str | None


def turn_request(
    session: Session,
    index: SessionIndex,
    entry_id: str,
    path: list[dict[str, Any]] | None = None,
    inputs: TurnInputs | None = None,
) -> TurnRequest:
    """The engine's request at ``entry_id`` with its system prompt: what the page, the request
    export, compare and the API's ``context`` all show (``path``: ``path_entries(entry_id)``,
    ``inputs``: this server's inputs for the session, if the caller has them)."""
    if inputs is None:
        inputs = session_inputs(session)
    _, request, info = _projection(session, index, entry_id, inputs, path)
    check_deadline("Building this request")
    captured = captured_prompt_for(session, index, entry_id)
    prompted = _with_prompt(inputs, request, captured)
    return TurnRequest(prompted.request, info, prompted.unknown, inputs.chosen)


def turn_context(session: Session, index: SessionIndex, entry_id: str) -> dict[str, Any]:
    """The ``context`` command's object for the request at ``entry_id`` of a stored session,
    built exactly as the page builds it (``turn_request``): what the API's ``context``
    answers."""
    built = turn_request(session, index, entry_id)
    return request_json(built.request, leaf_id=entry_id, with_dialect=built.chosen is not None)


def _diff(
    session: Session,
    index: SessionIndex,
    inputs: TurnInputs,
    request: pi_request.PiRequest,
    path: list[dict[str, Any]],
) -> dict[str, Any] | None:
    """What changed since the previous request on this path (`path`: this request's
    `path_entries`). Messages are compared as Pi holds them (before convertToLlm), so each
    one's tokens are the Messages tab's estimate (a summary counts the same in both tabs, not
    with the wrapper text it is sent in)."""
    leaf = str(request.leaf_id)
    previous = previous_request(index, leaf)
    if previous is None:
        return {"previous": None}
    # Its own projection: the current path's early entries are light stand-ins (a compaction hid
    # them), while the previous request may still have sent them. Under the same compaction its
    # path is a prefix of this one's, not read again.
    before_path = path_prefix(index, previous, leaf, path)
    before = turn_request(session, index, previous, path=before_path, inputs=inputs).request
    return {
        "previous": previous,
        "previous_item": index.items[previous],
        **request_diff(before, request),
    }


def is_heavy_turn(index: SessionIndex, entry_id: str) -> bool:
    """Whether the request at ``entry_id`` is heavy to build: its path holds at least
    CONTEXTLAB_HEAVY_TURN_TOKENS estimated tokens (the entries a projection reads and walks;
    the load test's ordinary sessions hold at most 0.3 million, its large one's deep turns tens
    of millions)."""
    items = index.items
    return (
        sum(items[i].tokens for i in index.path(entry_id)) >= settings.CONTEXTLAB_HEAVY_TURN_TOKENS
    )


def replaced_items(index: SessionIndex, entry_id: str) -> list[TreeItem]:
    """Path entries before the kept range of the compaction in force (greyed: not sent)."""
    ids = index.path(entry_id)
    span = pi_held.held_span(ids, index.type_of, index.first_kept.get)
    return [index.items[i] for i in pi_held.replaced(ids, span, index.type_of)]
