"""View-models of the turn inspector and the context growth chart, built from the engine.

Every figure shown comes from `contextlab.pi` (projection, conversions, token estimates, the
system prompt, truncation notices); this module only gathers the inputs from the database and
arranges the results for templates. Steps of `inspect_entry`:

1. the path root -> entry (only the part the projection sends is fetched in full);
2-3. the engine's request at that leaf (`contextlab.pi.request.build_request`): each projected
   message paired with its entry, and what the provider receives for the leaf's model;
4. per-message estimates, a running total, Pi's usage-based estimate, the window and reserve,
   the usage the provider reported for the reply to this request;
5. the system prompt rebuilt by layer from the project's resources (or plainly "unknown");
6. the diff against the previous request on the same path.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from contextlab import jsonsafe
from contextlab.inspector.blocks import Block, MessageView, dumps, sent_blocks
from contextlab.inspector.models import ResourceFile, ResourceProfile
from contextlab.inspector.roots import RootedFileSystem, inside_server_roots
from contextlab.inspector.selectors import (
    SessionIndex,
    build_index,
    entries_by_id,
    gc_paused,
    index_stored,
    path_entries,
    store_index,
)
from contextlab.library.models import Project, Session
from contextlab.pi import context as pi_context
from contextlab.pi import models as pi_models
from contextlab.pi import request as pi_request
from contextlab.pi import tokens as pi_tokens
from contextlab.pi.captured import CapturedPrompt, captured_prompt_at, prompt_differences
from contextlab.pi.entries import EMITTING_TYPES, message_of_entry
from contextlab.pi.prompt import SystemPrompt
from contextlab.pi.resources import PromptResources, ResourceError, discover_resources
from contextlab.pi.tree_selector import TreeItem
from contextlab.review.services import audit_record

# Pi's default compaction.reserveTokens is assumed: settings live on the machine Pi ran on and
# are not in the session file.
DEFAULT_RESERVE_TOKENS = pi_tokens.DEFAULT_RESERVE_TOKENS
FULL_TAIL = 25


# --- small helpers ---------------------------------------------------------------------------


@dataclass
class Inspection:
    session: Session
    entry_id: str
    entry: dict[str, Any] | None
    item: TreeItem
    messages: list[MessageView]
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
    # The messages shown in full: a leading summary and the last FULL_TAIL; the middle ones
    # are one line each with their body loaded on demand (a deep entry can have thousands).
    # The prompt the contextlab Pi extension captured for this request (prompt tab only), and
    # its differences from the reconstruction above.
    captured: CapturedPrompt | None = None
    captured_diff: list[str] = field(default_factory=list)
    head: list[MessageView] = field(default_factory=list)
    middle: list[MessageView] = field(default_factory=list)
    tail: list[MessageView] = field(default_factory=list)

    @property
    def images_dropped(self) -> bool:
        """pi-ai's transformMessages replaces images for a model without image input."""
        return "image" not in self.model_info.get("input", ["image"])

    @property
    def open_from(self) -> int:
        """Messages after this position start unfolded (the end of the request matters most)."""
        return len(self.messages) - 6

    @property
    def prompt_tokens(self) -> int:
        return self.prompt.tokens if self.prompt else 0

    @property
    def layer_token_sum(self) -> int:
        return sum(layer.tokens for layer in self.prompt.layers) if self.prompt else 0

    @property
    def total_with_prompt(self) -> int:
        return self.estimate_total + self.prompt_tokens

    @property
    def threshold(self) -> int | None:
        return self.context_window - self.reserve_tokens if self.context_window else None


_ROLE_CSS = {
    "compactionSummary": "compaction-summary",
    "branchSummary": "branch-summary",
    "custom": "custom",
}
_ROLE_TITLE = {
    "compactionSummary": "compaction summary",
    "branchSummary": "branch summary",
    "toolResult": "tool result",
    "bashExecution": "bash (!cmd)",
}


# --- resources and the system prompt ---------------------------------------------------------


def resource_profile(project: Project) -> ResourceProfile | None:
    return ResourceProfile.objects.filter(project=project).prefetch_related("files").first()


def _prompt_date(entries: list[dict[str, Any]]) -> str:
    """The date Pi put in the prompt: it is built when the session is (re)opened, not per turn,
    and never stored; the latest user message's day (in TIME_ZONE) is the closest we know."""
    for entry in reversed(entries):
        message = entry.get("message")
        if isinstance(message, dict) and message.get("role") == "user":
            stamp = entry.get("timestamp")
            break
    else:
        stamp = entries[0].get("timestamp") if entries else None
    try:
        when = dt.datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        when = timezone.now()
    if timezone.is_naive(when):
        when = timezone.make_aware(when, dt.UTC)
    return timezone.localtime(when).date().isoformat()


def system_prompt_for(
    session: Session,
    profile: ResourceProfile | None,
    date: str,
    path: list[dict[str, Any]] | None = None,
) -> tuple[SystemPrompt | None, PromptResources | None, list[str], list[str]]:
    """Rebuild the prompt (the dialect's prompt step for a request at the end of ``path``), or
    say plainly why parts of it cannot be known on this server."""
    cwd = str(session.header.get("cwd") or session.project.cwd)
    unknown: list[str] = []
    fs: Any = None
    uploads = list(profile.files.all()) if profile else []
    # Only folders under CONTEXTLAB_SERVER_ROOTS are read; the answer is the same whether a
    # folder outside them exists or not, so it tells nobody which server paths exist.
    ran_here = inside_server_roots(cwd) and Path(cwd).is_dir()
    if uploads:
        fs = {f.original_path: f.content for f in uploads}
        agent_dir = (profile.agent_dir if profile else "") or settings.PI_AGENT_DIR
    elif profile and profile.agent_dir:
        agent_dir = profile.agent_dir
    elif ran_here:
        agent_dir = settings.PI_AGENT_DIR
    else:
        agent_dir = settings.PI_AGENT_DIR
        unknown.append(
            f"This session ran in {cwd}, which is not under a folder this server reads"
            " (CONTEXTLAB_SERVER_ROOTS): its AGENTS.md / CLAUDE.md files, skills, SYSTEM.md and"
            " APPEND_SYSTEM.md are unknown here. The prompt below has only what needs no files."
            " Give the project's resource profile to complete it."
        )
    pi_root = (profile.pi_root if profile else "") or settings.PI_PACKAGE_DIR or None
    home = (profile.home if profile else "") or None
    tools = list(profile.tools) if profile and profile.tools else None
    trusted = profile.project_trusted if profile else None
    try:
        resources = discover_resources(
            cwd=cwd,
            agent_dir=agent_dir,
            home=home,
            project_trusted=trusted,
            fs=fs if fs is not None else (RootedFileSystem() if ran_here or profile else {}),
        )
    except ResourceError as exc:
        return None, None, [*unknown, str(exc)], []
    source = pi_request.PromptSource(cwd=cwd, resources=resources, tools=tools, pi_root=pi_root)
    prompt = pi_request.build_prompt(source, date=date, path=path or [])
    notes = list(prompt.notes)
    if resources.trust_reason:
        notes.append(f"Project trust: {resources.trust_reason}.")
    unknown.extend(resources.unknown)
    if tools is None:
        notes.append(
            "Tools: Pi's default set assumed (the session file does not record --tools);"
            " set the tool set in the resource profile if Pi ran with others."
        )
    if pi_root is None:
        unknown.append(
            "The Pi package root on this server is not set: the documentation paths in the"
            " prompt are placeholders."
        )
    return prompt, resources, unknown, notes


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
    store_index(session, build_index(session))


def store_tree_indexes(results: list[Any]) -> None:
    """tree_index_refresh for every session an import stored or changed (ImportResults), so
    its first open, in any process, starts from a stored index."""
    for result in results:
        if result.session is not None and result.status not in ("unchanged", "failed"):
            tree_index_refresh(session_id=result.session.pk)


# --- the projection --------------------------------------------------------------------------


def _model_lookup(agent_dir: str | None) -> pi_request.ModelLookup:
    """pi-ai's model for {provider, modelId}: the project's models.json when the resource
    profile gives an agent dir (read only under the server roots), else pi-ai's catalog (else
    the engine assumes one, flagged)."""
    readable = agent_dir if inside_server_roots(agent_dir and f"{agent_dir}/models.json") else None
    return lambda provider, model_id: pi_models.find_model(provider, model_id, readable)


def _model_info(model: dict[str, Any] | None, found: dict[str, Any]) -> dict[str, Any]:
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


def _projection(
    session: Session, index: SessionIndex, entry_id: str, agent_dir: str | None
) -> tuple[list[dict[str, Any]], pi_request.PiRequest, dict[str, Any]]:
    """Path, the engine's request at this leaf and its model, kept on the index.

    A session revision's entries never change, so neither does a leaf's projection (for a given
    models.json): switching tabs or coming back to an entry reuses it. The index is replaced
    when the session grows, which drops these with it.
    """
    key = ("projection", entry_id, agent_dir)
    cached = index.memo.get(key)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    entries = path_entries(session, index, entry_id)
    request = _request(session, entries, entry_id, agent_dir)
    value = (entries, request, _model_info(request.context.model, request.model))
    index.remember(key, value)
    return value


def _request(
    session: Session, entries: list[dict[str, Any]], entry_id: str, agent_dir: str | None
) -> pi_request.PiRequest:
    return pi_request.build_request(
        entries, entry_id, header=session.header, model_lookup=_model_lookup(agent_dir)
    )


def _message_views(
    index: SessionIndex, entry_id: str, messages: list[dict[str, Any]], owners: list[Any]
) -> tuple[list[MessageView], int, int, int]:
    """Per-message views with running totals and reported usage (kept with the projection)."""
    key = ("views", entry_id)
    cached = index.memo.get(key)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    views: list[MessageView] = []
    running = 0
    for position, message in enumerate(messages):
        tokens = pi_tokens.estimate_tokens(message)
        running += tokens
        owner = owners[position] if owners else None
        role = str(message.get("role"))
        usage = message.get("usage") if role == "assistant" else None
        view = MessageView(
            position=position + 1,
            role=role,
            entry_id=owner.get("id") if owner else None,
            entry_type=str(owner.get("type")) if owner else "",
            tokens=tokens,
            running=running,
            blocks=[],
            sent_as=pi_context.sent_role(message) or role,
            usage=usage if isinstance(usage, dict) else None,
            css=_ROLE_CSS.get(role, ""),
            title=_ROLE_TITLE.get(role, role),
            message=message,
        )
        if view.usage:
            view.usage_tokens = pi_tokens.calculate_context_tokens(view.usage)
        dropped = pi_context.dropped_by(message)
        if dropped == "transformMessages":
            view.dropped = (
                f"stopReason {message.get('stopReason')}: pi-ai's transformMessages skips it"
            )
        elif dropped == "convertToLlm" and role == "bashExecution":
            view.dropped = "!!cmd (excludeFromContext): convertToLlm drops it"
        if role == "custom":
            view.extra["customType"] = message.get("customType")
            view.extra["display"] = message.get("display")
        if role == "toolResult":
            view.extra["toolName"] = message.get("toolName")
            view.extra["isError"] = message.get("isError")
        if role == "compactionSummary":
            view.extra["tokensBefore"] = message.get("tokensBefore")
        if view.entry_id == entry_id:
            view.css += " is-leaf"
        views.append(view)
    head_count = 1 if messages and messages[0].get("role") == "compactionSummary" else 0
    tail_start = max(head_count, len(views) - FULL_TAIL)
    for position in [*range(head_count), *range(tail_start, len(views))]:
        views[position].blocks = sent_blocks(messages[position])

    value = (views, running, head_count, tail_start)
    index.remember(key, value)
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
    with gc_paused():
        inspection = _inspect_entry(session, index, entry_id, tab=tab)
    if not full:
        limit = settings.CONTEXTLAB_MESSAGE_RENDER_CHARS
        inspection.copy_json, inspection.copy_json_hidden = _cut(inspection.copy_json, limit)
        inspection.entry_json, inspection.entry_json_hidden = _cut(inspection.entry_json, limit)
    return inspection


def _cut(text: str, limit: int) -> tuple[str, int]:
    """The first `limit` characters of `text` and how many were left out."""
    if len(text) <= limit:
        return text, 0
    return text[:limit], len(text) - limit


def middle_messages(session: Session, index: SessionIndex, entry_id: str) -> list[MessageView]:
    """The collapsed middle of a leaf's projection ("show more" pages): the projection and its
    views only (both kept on the index), not a whole inspection with its prompt."""
    profile = resource_profile(session.project)
    agent_dir = (profile.agent_dir or None) if profile else None
    _, request, _ = _projection(session, index, entry_id, agent_dir)
    views, _, head_count, tail_start = _message_views(
        index, entry_id, request.agent_messages, request.owners
    )
    return views[head_count:tail_start]


def _inspect_entry(session: Session, index: SessionIndex, entry_id: str, *, tab: str) -> Inspection:
    # Over 80 lines on purpose: one straight pass that fills the Inspection's fields in the
    # order of the module docstring's steps; cut into pieces it would hand a dozen locals along.
    profile = resource_profile(session.project)
    agent_dir = (profile.agent_dir or None) if profile else None
    entries, request, info = _projection(session, index, entry_id, agent_dir)
    messages = request.agent_messages
    model = request.context.model
    sent = request.sent

    views, running, head_count, tail_start = _message_views(
        index, entry_id, messages, request.owners
    )

    estimate = pi_tokens.estimate_context_tokens(messages)
    pi_estimate = {
        "tokens": _attr(estimate, "tokens"),
        "usage_tokens": _attr(estimate, "usage_tokens", "usageTokens"),
        "trailing_tokens": _attr(estimate, "trailing_tokens", "trailingTokens"),
        "last_usage_index": _attr(estimate, "last_usage_index", "lastUsageIndex"),
    }

    # The compaction in force and how much of the path it replaced (from the index: the
    # entries handed to the engine are condensed before the kept range).
    compaction = None
    replaced = 0
    path_ids = index.path(entry_id)
    for position in range(len(path_ids) - 1, -1, -1):
        if path_ids[position] in index.first_kept or index.items[path_ids[position]].type == (
            "compaction"
        ):
            compaction_entry = next((e for e in entries if e.get("id") == path_ids[position]), {})
            kept = index.first_kept.get(path_ids[position])
            replaced = len(replaced_items(index, entry_id))
            compaction = {
                "id": path_ids[position],
                "tokens_before": compaction_entry.get("tokensBefore"),
                "first_kept": kept,
                "kept_on_path": kept in path_ids[:position],
            }
            break

    # Pi's invariant: the request ends with a user message or a tool result.
    last_role = sent[-1].get("role") if sent else None
    invariant_ok = last_role in ("user", "toolResult")
    invariant_text = (
        f"the last message sent has role {last_role}"
        if sent
        else "nothing would be sent (the context is empty)"
    )
    synthetic = request.synthetic_results

    reply = _reply(session, index, entry_id)
    # What the model saw for an assistant message is the request at its parent: Pi never sends
    # a request ending with an assistant message (the next user message comes first).
    answered = (
        path_ids[-2]
        if last_role == "assistant"
        and index.items[entry_id].role == "assistant"
        and len(path_ids) > 1
        else None
    )

    date = _prompt_date(entries)
    prompt, resources, unknown, notes = system_prompt_for(session, profile, date, entries)

    captured = captured_prompt_for(session, index, entry_id) if tab == "prompt" else None
    captured_diff = (
        prompt_differences(prompt.text if prompt else "", captured.system_prompt)
        if captured
        else []
    )

    selected = entries_by_id(session, index, [entry_id]).get(entry_id)
    diff = _diff(session, index, entries, messages, sent, agent_dir) if tab == "diff" else None
    copy = {
        "session": session.session_id,
        "leaf": entry_id,
        "model": model,
        "thinkingLevel": request.thinking_level,
        "systemPrompt": prompt.text if prompt else None,
        "messages": sent,
    }
    return Inspection(
        session=session,
        entry_id=entry_id,
        entry=selected,
        item=index.items[entry_id],
        messages=views,
        sent=sent,
        thinking_level=str(request.thinking_level),
        model=model if isinstance(model, dict) else None,
        model_info=info,
        estimate_total=running,
        pi_estimate=pi_estimate,
        context_window=info.get("context_window"),
        reserve_tokens=DEFAULT_RESERVE_TOKENS,
        compaction=compaction,
        replaced_count=replaced,
        invariant_ok=invariant_ok,
        invariant_text=invariant_text,
        reply=reply,
        answered=answered,
        prompt=prompt,
        prompt_unknown=unknown,
        prompt_notes=notes,
        resources=resources,
        profile=profile,
        prompt_date=date,
        diff=diff,
        copy_json=dumps(copy) if tab == "json" else "",
        entry_json=dumps(selected) if selected is not None else "",
        synthetic_results=synthetic,
        captured=captured,
        captured_diff=captured_diff,
        head=views[:head_count],
        middle=views[head_count:tail_start],
        tail=views[tail_start:],
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
    session: Session, index: SessionIndex, entry_id: str, *, full: bool = False
) -> list[Block]:
    """The blocks of the message one entry contributes (for a collapsed row opened later)."""
    entry = entries_by_id(session, index, [entry_id]).get(entry_id)
    message = message_of_entry(entry, "estimate") if entry else None
    return sent_blocks(message, full=full) if message else []


def _attr(obj: Any, *names: str) -> Any:
    for name in names:
        if isinstance(obj, dict) and name in obj:
            return obj[name]
        if hasattr(obj, name):
            return getattr(obj, name)
    return None


def _first_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list) and content and isinstance(content[0], dict):
        return str(content[0].get("text") or "")
    return content if isinstance(content, str) else ""


def _reply(session: Session, index: SessionIndex, entry_id: str) -> dict[str, Any] | None:
    """The assistant message that answered this exact request, if the session has one: its
    usage is what the provider counted for the context shown here."""
    replies = [i for i in index.children.get(entry_id, ()) if index.items[i].role == "assistant"]
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


def _previous_request(index: SessionIndex, path: list[str]) -> str | None:
    """The previous point on this path where Pi called the model: an entry whose next entry on
    the path is an assistant message (the request Pi sent with that entry as leaf)."""
    for position in range(len(path) - 2, 0, -1):
        if index.items[path[position]].role == "assistant":
            return path[position - 1]
    return None


def _key(message: dict[str, Any]) -> bytes:
    return jsonsafe.sorted_bytes(message)


def _diff(
    session: Session,
    index: SessionIndex,
    entries: list[dict[str, Any]],
    messages: list[dict[str, Any]],
    sent: list[dict[str, Any]],
    agent_dir: str | None,
) -> dict[str, Any] | None:
    """What changed since the previous request on this path. Messages are compared as Pi
    holds them (before convertToLlm), so each one's tokens are the Messages tab's estimate (a
    summary counts the same in both tabs, not with the wrapper text it is sent in)."""
    path = [str(e.get("id")) for e in entries]
    previous = _previous_request(index, path)
    if previous is None:
        return {"previous": None}
    # Fetched again: the current path's early entries are light stand-ins (a compaction hid
    # them), while the previous request may still have sent them.
    prev_entries = path_entries(session, index, previous)
    prev_request = _request(session, prev_entries, previous, agent_dir)
    prev_messages = prev_request.agent_messages
    prev_sent = prev_request.sent
    sent_before = [_key(m) for m in prev_sent]
    sent_after = [_key(m) for m in sent]
    common = 0
    while (
        common < min(len(sent_before), len(sent_after))
        and sent_before[common] == sent_after[common]
    ):
        common += 1
    before = [_key(m) for m in prev_messages]
    after = [_key(m) for m in messages]
    after_set, before_set = set(after), set(before)
    removed = [prev_messages[i] for i in range(len(before)) if before[i] not in after_set]
    added = [messages[i] for i in range(len(after)) if after[i] not in before_set]
    return {
        "previous": previous,
        "previous_item": index.items[previous],
        "common_prefix": common,
        "added": [_summary_line(m) for m in added],
        "removed": [_summary_line(m) for m in removed],
        "before_count": len(prev_sent),
        "after_count": len(sent),
        "prompt_changed": _prompt_date(prev_entries) != _prompt_date(entries),
        "prompt_dates": (_prompt_date(prev_entries), _prompt_date(entries)),
    }


def _summary_line(message: dict[str, Any]) -> dict[str, Any]:
    role = str(message.get("role"))
    text = _first_text(message) or str(message.get("summary") or "")
    if not text and isinstance(message.get("content"), list):
        kinds = [str(b.get("type")) for b in message["content"] if isinstance(b, dict)]
        text = ", ".join(kinds)
    return {
        "role": role,
        "text": text[:240],
        "tokens": pi_tokens.estimate_tokens(message),
    }


def replaced_items(index: SessionIndex, entry_id: str) -> list[TreeItem]:
    """Path entries before the kept range of the compaction in force (greyed: not sent)."""
    ids = index.path(entry_id)
    for position in range(len(ids) - 1, -1, -1):
        kept = index.first_kept.get(ids[position])
        if kept is not None:
            kept_at = ids.index(kept) if kept in ids[:position] else position
            return [index.items[i] for i in ids[:kept_at] if index.items[i].type in EMITTING_TYPES]
    return []


# --- the context growth chart ----------------------------------------------------------------


def context_growth(session: Session, index: SessionIndex) -> dict[str, Any]:
    """Context size of every request along the active path: Pi's estimate of what was sent
    and what the provider reported for it (input + cache tokens of the reply), compactions
    marked with their tokens before -> after.

    One pass over the path with per-entry estimates (the stored estimateTokens of each entry)
    and the replies' usage from the index, so a 20k-entry path costs no projection per request
    and one query (the compaction summaries).
    """
    path = index.path_ids
    points: list[dict[str, Any]] = []
    if not path:
        return {"points": points, "contextWindow": None, "reserveTokens": DEFAULT_RESERVE_TOKENS}
    summaries = entries_by_id(session, index, [i for i in path if i in index.first_kept])
    page = reverse("inspector:session", args=[session.pk])
    steps = [
        pi_request.PathEntry(
            entry_id,
            index.items[entry_id].type,
            index.items[entry_id].role,
            index.items[entry_id].tokens,
            index.first_kept.get(entry_id),
        )
        for entry_id in path
    ]
    for estimate in pi_request.request_estimates(steps):
        compaction = None
        if estimate.compaction is not None:
            compaction_id, after = estimate.compaction
            before = summaries.get(compaction_id, {}).get("tokensBefore") or 0
            compaction = {"id": compaction_id, "before": before, "after": after}
        points.append(
            {
                "leaf": estimate.leaf,
                "reply": estimate.reply,
                "estimate": estimate.tokens,
                "reported": index.reported.get(estimate.reply),
                "compaction": compaction,
            }
        )
    # The model of the path's last request: the engine's rule, on the one entry that sets it.
    model = None
    for entry_id in reversed(path):
        item = index.items[entry_id]
        if item.type == "model_change" or (item.type == "message" and item.role == "assistant"):
            state: list[Any] = ["off", None, None]
            pi_context.settings_step(entries_by_id(session, index, [entry_id])[entry_id], state)
            model = state[1]
            break
    info = _model_info(model, pi_context.model_for_transform(model))
    return {
        "points": points,
        "contextWindow": info.get("context_window"),
        "reserveTokens": DEFAULT_RESERVE_TOKENS,
        "model": f"{info.get('provider')}/{info.get('id')}" if info else None,
        # A point opens `{pageUrl}?entry=<leaf>&tab=context`.
        "pageUrl": page,
    }
