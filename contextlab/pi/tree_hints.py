"""Hints on tree rows for what Pi 1.x writes into a session besides the conversation: a
``context_edit`` entry names what it does to its target, the message it targets names the edits
that replace or omit it, and a system message (the persisted prompt, a patch) names the sections
and tools it changed compared with the system state before it on its path."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from contextlab.pi.dialects import pi_1_x
from contextlab.pi.providers.transcript import content_text
from contextlab.pi.session import SessionTree
from contextlab.pi.tree_selector import TreeItem


def _section_name(name: Any) -> str:
    return str(name) if name else "content"


def system_hint(sections: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> str:
    """ "tools, skills changed · addendum added · declared tools +grep −edit" (or "no change")."""
    parts: list[str] = []
    for change in ("changed", "added", "removed"):
        names = [_section_name(s["name"]) for s in sections if s["change"] == change]
        if names:
            parts.append(f"{', '.join(names)} {change}")
    signs = {"added": "+", "removed": "−", "changed": "~"}
    if tools:
        declared = " ".join(f"{signs[t['change']]}{t['name']}" for t in tools)
        parts.append(f"declared tools {declared}")
    return " · ".join(parts) or "no change"


def _edit_kind(entry: Mapping[str, Any]) -> str:
    # `replacement === null` omits; an absent replacement replaces, as in Pi (tree_item).
    return "omit" if "replacement" in entry and entry["replacement"] is None else "replace"


def _role(entry: Mapping[str, Any]) -> Any:
    message = entry.get("message")
    return message.get("role") if isinstance(message, dict) else None


def add_context_hints(
    entries: Iterable[dict[str, Any]], tree: SessionTree, items: dict[str, TreeItem]
) -> None:
    """Set ``hint`` and ``hint_title`` on the items of context edits, of the messages they
    target, and of system messages (``items``: ``tree_item`` of every entry, in file order).
    One pass over the entries; nothing more for a 0.x session."""
    edits: list[dict[str, Any]] = []
    system: dict[str, dict[str, Any]] = {}  # system messages and compactions, by id
    for entry in entries:
        kind = entry.get("type")
        if kind == "context_edit":
            edits.append(entry)
        elif kind == "compaction" or (kind == "message" and _role(entry) == "system"):
            system[str(entry.get("id"))] = entry  # a repeated id: the later line wins
    _edit_hints(edits, items)
    if any(pi_1_x.is_system_message_entry(e) for e in system.values()):
        _system_hints(system, tree, items)


def _edit_hints(edits: list[dict[str, Any]], items: dict[str, TreeItem]) -> None:
    on_target: dict[str, list[tuple[str, str]]] = {}
    for entry in edits:
        item = items.get(str(entry.get("id")))
        if item is None:
            continue
        kind = _edit_kind(entry)
        target_id = entry.get("targetId")
        target = items.get(target_id) if isinstance(target_id, str) else None
        if target is None:
            item.hint = "✂ no such entry"
            item.hint_title = f"context edit: its target {target_id!r} is not in this session"
            continue
        what = f"{target.tag}{target.text}".strip() or target.type
        item.hint = f"✂ {'omits' if kind == 'omit' else 'replaces'} {target.role or target.type}"
        if kind == "omit":
            item.hint_title = f"context edit: leaves {target.id} ({what}) out of the context"
        else:
            replacement = entry.get("replacement")
            content = replacement.get("content") if isinstance(replacement, dict) else None
            text = " ".join(content_text(content if content is not None else "").split())
            item.hint_title = (
                f"context edit: replaces the content of {target.id} ({what}) with: {text[:120]}"
            )
        on_target.setdefault(target.id, []).append((kind, item.id))
    for target_id, applied in on_target.items():
        target = items[target_id]
        replaced = [e for k, e in applied if k == "replace"]
        omitted = [e for k, e in applied if k == "omit"]
        counts = []
        if replaced:
            counts.append("replaced" if len(replaced) == 1 else f"replaced {len(replaced)}×")
        if omitted:
            counts.append("omitted" if len(omitted) == 1 else f"omitted {len(omitted)}×")
        target.hint = "✂ " + " · ".join(counts)
        titles = [f"replaced by context edit {e}" for e in replaced]
        titles += [f"omitted by context edit {e}" for e in omitted]
        target.hint_title = "; ".join(titles) + " (on the paths through the edit)"


_UNSEEN: Any = object()


def _system_hints(
    system: dict[str, dict[str, Any]], tree: SessionTree, items: dict[str, TreeItem]
) -> None:
    """Each entry starts from its parent's system state: a system message patches it, a
    compaction's ``systemMessage`` (the whole state) restarts it. In file order, where Pi writes
    a parent before its children; depth first from the roots when a file does not."""
    states: dict[str, Any] = {}
    for entry_id, item in items.items():
        parent = item.parent_id  # as the index sets it: tree.parent (else the walk below)
        state = None if parent is None else states.get(parent, _UNSEEN)
        if state is _UNSEEN:
            break
        entry = system.get(entry_id)
        states[entry_id] = state if entry is None else _step(entry, state, item)
    else:
        return
    stack: list[tuple[str, Any]] = [(r, None) for r in reversed(tree.roots)]
    while stack:
        entry_id, state = stack.pop()
        entry = system.get(entry_id)
        if entry is not None:
            state = _step(entry, state, items.get(entry_id))
        for child in reversed(tree.children(entry_id)):
            stack.append((child, state))


def _step(entry: dict[str, Any], state: Any, item: TreeItem | None) -> Any:
    kind = entry.get("type")
    if kind == "compaction" and isinstance(entry.get("systemMessage"), dict):
        return pi_1_x.prompt_patch_changes(None, entry["systemMessage"])[0]
    message = entry.get("message")
    if kind != "message" or not isinstance(message, dict) or message.get("role") != "system":
        return state
    frame, sections, tools = pi_1_x.prompt_patch_changes(state, message)
    if item is not None:
        if state is None:
            item.hint = "first prompt"
            names = ", ".join(_section_name(s["name"]) for s in sections) or "none"
            declared = ", ".join(str(t["name"]) for t in tools) or "none"
            item.hint_title = (
                f"the first system prompt on this path: sections {names}; tools {declared}"
            )
        else:
            item.hint = system_hint(sections, tools)
            item.hint_title = "compared with the system prompt before it on this path"
    return frame
