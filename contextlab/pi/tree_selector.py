"""Pi's /tree view (``dist/modes/interactive/components/tree-selector.js`` of 0.80.2 and 1.6.0),
as rows a web page can render.

Plain Python, no Django: the inputs are light per-entry records (`TreeItem`), already ordered
the way Pi's `getTree()` orders children (helper module `contextlab.pi.session`). This module
owns only what the selector adds on top of `getTree()`:

1. `flattenTree`: depth-first order, with the child whose subtree holds the current leaf
   moved first at every level (and the root holding it first among roots).
2. `applyFilter`: assistant messages without text are hidden (unless error/aborted, or the
   leaf); the filter modes default / no-tools / user-only / labeled-only / all; the search
   (every whitespace-separated token must be a substring of the entry's searchable text);
   descendants of folded nodes are dropped.
   Pi 1.x entries follow 1.6.0's selector: `usage` entries (cache-warming bookkeeping) are never
   listed, not even as the leaf; `context_edit` entries are settings rows (hidden in the
   default and no-tools modes), shown as ``[context omit|replace: <targetId>]``; persisted system
   messages are ``[system]`` rows. 0.80.2 sessions hold none of these, so one rule set serves
   both versions.
3. `recalculateVisualStructure`: indentation, connectors and gutters from the *visible*
   parent of each row, which is what the terminal prints as `├─`, `└─` and `│`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from contextlab.pi.jsutil import (
    array_join_item,
    js_len,
    js_slice,
    js_string,
    js_trim,
    js_truthy,
    json_stringify,
    number_to_string,
)

FILTER_MODES = ("default", "no-tools", "user-only", "labeled-only", "all")
SETTINGS_TYPES = frozenset(
    {"label", "context_edit", "custom", "model_change", "thinking_level_change", "session_info"}
)
# Entry types the selector never lists (Pi 1.6.0: usage entries written by cache warming).
NEVER_LISTED_TYPES = frozenset({"usage"})


def _stringify(value: object) -> str:
    """JSON.stringify for a tree label; a value nested deeper than Python's recursion allows
    (Pi takes thousands of levels) is labelled as such instead of failing the whole tree."""
    try:
        return json_stringify(value)
    except RecursionError:
        return "[nested too deeply to show]"


@dataclass(slots=True)
class TreeItem:
    """What the tree needs to know about one entry (computed once per session revision)."""

    id: str
    parent_id: str | None
    type: str
    role: str = ""
    # The prefix Pi colours (e.g. "user: ", "[branch summary]: ") and the rest of the line.
    tag: str = ""
    text: str = ""
    # Assistant message with no text that is not an error/aborted reply: hidden unless leaf.
    toolcall_only: bool = False
    # getSearchableText() without the label (labels can change without re-indexing).
    search_text: str = ""
    tokens: int = 0
    css: str = ""  # colour class of the line, as Pi colours it
    # A short note after the line and its longer title (see `tree_hints`): what a Pi 1.x
    # context edit does or had done to the entry, which sections a system message changed.
    hint: str = ""
    hint_title: str = ""


@dataclass(slots=True)
class Row:
    item: TreeItem
    index: int = 0
    indent: int = 0
    show_connector: bool = False
    is_last: bool = False
    gutters: tuple[tuple[int, bool], ...] = ()
    is_virtual_root_child: bool = False
    visible_parent: str | None = None
    visible_children: int = 0
    foldable: bool = False
    folded: bool = False
    on_path: bool = False
    is_leaf: bool = False
    label: str | None = None
    prefix: str = ""
    # Position of the fold marker (⊞/⊟) inside `prefix`, or -1 when the connector has none.
    marker_at: int = -1
    # Index of the last row of this row's visible subtree (for folding in the browser).

    @property
    def prefix_head(self) -> str:
        return self.prefix[: self.marker_at] if self.marker_at >= 0 else self.prefix

    @property
    def prefix_marker(self) -> str:
        return self.prefix[self.marker_at] if self.marker_at >= 0 else ""

    @property
    def prefix_tail(self) -> str:
        return self.prefix[self.marker_at + 1 :] if self.marker_at >= 0 else ""


@dataclass(slots=True)
class TreeView:
    rows: list[Row]
    multiple_roots: bool
    mode: str
    query: str
    folded: frozenset[str]
    index_of: dict[str, int] = field(default_factory=dict)

    def nearest_visible(self, entry_id: str | None, parent_of: Callable[[str], str | None]) -> int:
        """findNearestVisibleIndex: the entry itself, else its closest visible ancestor."""
        if not self.rows:
            return -1
        current = entry_id
        seen: set[str] = set()
        while current is not None and current not in seen:
            seen.add(current)
            if current in self.index_of:
                return self.index_of[current]
            current = parent_of(current)
        return len(self.rows) - 1


def flatten(
    roots: Sequence[str],
    children: Callable[[str], Sequence[str]],
    leaf_id: str | None,
) -> list[str]:
    """Pi's flattenTree order: pre-order, the branch containing the leaf first at each level."""
    # Post-order "contains the leaf" marks, iteratively (sessions can be 100k entries deep).
    pre: list[str] = []
    stack = list(roots)
    while stack:
        node = stack.pop()
        pre.append(node)
        stack.extend(reversed(children(node)))
    contains: dict[str, bool] = {}
    for node in reversed(pre):
        has = leaf_id is not None and node == leaf_id
        if not has:
            for child in children(node):
                if contains.get(child):
                    has = True
                    break
        contains[node] = has

    def ordered(nodes: Iterable[str]) -> list[str]:
        nodes = list(nodes)
        return [n for n in nodes if contains.get(n)] + [n for n in nodes if not contains.get(n)]

    result: list[str] = []
    stack = list(reversed(ordered(roots)))
    while stack:
        node = stack.pop()
        result.append(node)
        stack.extend(reversed(ordered(children(node))))
    return result


def passes(item: TreeItem, mode: str, label: str | None, tokens: list[str], is_leaf: bool) -> bool:
    if item.type in NEVER_LISTED_TYPES:
        return False
    if item.toolcall_only and not is_leaf:
        return False
    is_settings = item.type in SETTINGS_TYPES
    if mode == "user-only":
        ok = item.type == "message" and item.role == "user"
    elif mode == "no-tools":
        ok = not is_settings and not (item.type == "message" and item.role == "toolResult")
    elif mode == "labeled-only":
        ok = label is not None
    elif mode == "all":
        ok = True
    else:
        ok = not is_settings
    if not ok:
        return False
    if tokens:
        text = ((label + " ") if label else "") + item.search_text
        text = text.lower()
        return all(token in text for token in tokens)
    return True


# Long on purpose: applyFilter and recalculateVisualStructure of the selector share their
# state (visible rows, their visible parents); split, each would take a dozen arguments.
def build_view(
    order: Sequence[str],
    items: dict[str, TreeItem],
    labels: dict[str, str],
    leaf_id: str | None,
    path_ids: set[str],
    mode: str = "default",
    query: str = "",
    folded: Iterable[str] = (),
) -> TreeView:
    """applyFilter + recalculateVisualStructure over the flattened order."""
    if mode not in FILTER_MODES:
        mode = "default"
    tokens = [t for t in query.lower().split() if t]
    folded_set = frozenset(folded)

    visible: list[TreeItem] = [
        items[i] for i in order if passes(items[i], mode, labels.get(i), tokens, i == leaf_id)
    ]
    if folded_set:
        skip: set[str] = set()
        for entry_id in order:
            parent = items[entry_id].parent_id
            if parent is not None and (parent in folded_set or parent in skip):
                skip.add(entry_id)
        visible = [item for item in visible if item.id not in skip]

    visible_ids = {item.id for item in visible}

    def visible_ancestor(entry_id: str) -> str | None:
        current = items[entry_id].parent_id
        hops = 0
        while current is not None and hops <= len(items):
            if current in visible_ids:
                return current
            parent_item = items.get(current)
            if parent_item is None:
                return None
            current = parent_item.parent_id
            hops += 1
        return None

    visible_parent: dict[str, str | None] = {}
    visible_children: dict[str | None, list[str]] = {None: []}
    for item in visible:
        parent = item.parent_id
        # Most rows hang under a visible parent: skip the walk for them.
        ancestor = parent if parent is None or parent in visible_ids else visible_ancestor(item.id)
        visible_parent[item.id] = ancestor
        visible_children.setdefault(ancestor, []).append(item.id)
    root_ids = visible_children[None]
    multiple_roots = len(root_ids) > 1

    stack: list[tuple[str, int, bool, bool, bool, tuple[tuple[int, bool], ...], bool]] = []
    for i in range(len(root_ids) - 1, -1, -1):
        stack.append(
            (
                root_ids[i],
                1 if multiple_roots else 0,
                multiple_roots,
                multiple_roots,
                i == len(root_ids) - 1,
                (),
                multiple_roots,
            )
        )
    ordered_rows: list[Row] = []
    while stack:
        (node_id, indent, just_branched, show_connector, is_last, gutters, virtual_child) = (
            stack.pop()
        )
        kids = visible_children.get(node_id, ())
        # Positional (the order of Row's fields): 15k rows, keyword parsing showed in profiles.
        row = Row(
            items[node_id],  # item
            0,  # index
            indent,
            show_connector,
            is_last,
            gutters,
            virtual_child,  # is_virtual_root_child
            visible_parent[node_id],
            len(kids),  # visible_children
            False,  # foldable
            node_id in folded_set,  # folded
            node_id in path_ids,  # on_path
            node_id == leaf_id,  # is_leaf
            labels.get(node_id),  # label
        )
        ordered_rows.append(row)
        multiple_children = len(kids) > 1
        # Branch points, and the first generation after one, shift right; chains stay flat.
        branching = multiple_children or (just_branched and indent > 0)
        child_indent = indent + 1 if branching else indent
        connector_displayed = show_connector and not virtual_child
        display_indent = max(0, indent - 1) if multiple_roots else indent
        connector_position = max(0, display_indent - 1)
        child_gutters = (
            (*gutters, (connector_position, not is_last)) if connector_displayed else gutters
        )
        for i in range(len(kids) - 1, -1, -1):
            stack.append(
                (
                    kids[i],
                    child_indent,
                    multiple_children,
                    multiple_children,
                    i == len(kids) - 1,
                    child_gutters,
                    False,
                )
            )

    # Rows come out of the stack walk in the same order as `visible` (both are pre-order over
    # the same visible forest), which is the order Pi lists them in.
    index_of: dict[str, int] = {}
    for index, row in enumerate(ordered_rows):
        row.index = index
        index_of[row.item.id] = index
    for row in ordered_rows:
        parent = row.visible_parent
        if row.visible_children:
            row.foldable = parent is None or len(visible_children.get(parent, [])) > 1
    return TreeView(
        rows=ordered_rows,
        multiple_roots=multiple_roots,
        mode=mode,
        query=query,
        folded=folded_set,
        index_of=index_of,
    )


def _prefix(row: Row, multiple_roots: bool) -> str:
    """The characters Pi prints before the entry text: gutters, connector, fold marker.

    Pi builds it character by character (three per level); per level is the same string.
    """
    display_indent = max(0, row.indent - 1) if multiple_roots else row.indent
    has_connector = row.show_connector and not row.is_virtual_root_child
    connector_position = display_indent - 1 if has_connector else -1
    gutters = dict(row.gutters)
    parts: list[str] = []
    for level in range(display_indent):
        show = gutters.get(level)
        if show is not None:
            parts.append("│  " if show else "   ")
        elif level == connector_position:
            marker = "⊞" if row.folded else "⊟" if row.foldable else "─"
            parts.append(("└" if row.is_last else "├") + marker + " ")
        else:
            parts.append("   ")
    return "".join(parts)


def finish(view: TreeView, rows: Iterable[Row]) -> None:
    """Compute the printed prefix of the rows about to be rendered (not of all 20k rows)."""
    for row in rows:
        if row.prefix or row.indent == 0:
            continue
        row.prefix = _prefix(row, view.multiple_roots)
        if row.show_connector and not row.is_virtual_root_child and (row.foldable or row.folded):
            display_indent = max(0, row.indent - 1) if view.multiple_roots else row.indent
            row.marker_at = (display_indent - 1) * 3 + 1


def select_rows(
    view: TreeView, focus: Sequence[int], window: int = 12, budget: int = 1500
) -> list[tuple[int, int]]:
    """Which row ranges to send now; the gaps between them are loaded lazily.

    A 20k-entry session must open quickly, so the first response carries the rows around the
    selected entry and the leaf (`window` each side), every branch point, segment start,
    compaction, branch summary and labelled entry (with a row of context), the first rows,
    and no more than about `budget` rows in all. Returns sorted, disjoint [start, end] ranges.
    """
    n = len(view.rows)
    if n <= budget:
        return [(0, n - 1)] if n else []
    wanted: list[tuple[int, int]] = [(0, min(n - 1, window))]
    for index in focus:
        if 0 <= index < n:
            wanted.append((max(0, index - window), min(n - 1, index + window)))
    structural: list[int] = []
    for row in view.rows:
        if (
            row.visible_children > 1
            or row.item.type in ("compaction", "branch_summary")
            or row.label is not None
            or (row.show_connector and not row.is_virtual_root_child)
        ):
            structural.append(row.index)
    remaining = budget - sum(b - a + 1 for a, b in wanted)
    context = 1 if remaining > 3 * len(structural) else 0
    for index in structural[: max(0, remaining // (2 * context + 1))]:
        wanted.append((max(0, index - context), min(n - 1, index + context)))
    wanted.sort()
    merged: list[tuple[int, int]] = []
    for start, end in wanted:
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


# --- One line per entry, as getEntryDisplayText() / getSearchableText() write it -------------

_MAX_CONTENT = 200


def _normalize(text: str) -> str:
    return js_trim(text.replace("\n", " ").replace("\t", " "))


def _cut(text: str) -> str:
    # The first 200 UTF-16 units lie within the first 200 code points: slice those only, so a
    # 50 KB tool output is not re-encoded for a 200-character line.
    return js_slice(text[:_MAX_CONTENT], 0, _MAX_CONTENT)


def _extract_content(content: object) -> str:
    """Pi's extractContent: text blocks concatenated, cut at 200 UTF-16 units."""
    if isinstance(content, str):
        return _cut(content)
    if isinstance(content, list):
        result = ""
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                result += str(block.get("text") or "")
                if len(result) >= _MAX_CONTENT or js_len(result) >= _MAX_CONTENT:
                    return _cut(result)
        return result
    return ""


# A character String.prototype.trim() would keep (Pi's hasTextContent trims).
_NOT_JS_SPACE = re.compile(
    "[^\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
)


def _has_text(content: object) -> bool:
    if isinstance(content, str):
        return _NOT_JS_SPACE.search(content) is not None
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                text = block.get("text")
                if isinstance(text, str) and _NOT_JS_SPACE.search(text) is not None:
                    return True
    return False


def _arg(args: dict[str, object], *names: str, default: str = "") -> str:
    for name in names:
        value = args.get(name)
        if value:
            return value if isinstance(value, str) else _stringify(value)
    return default


# A JavaScript numeric string Number() reads as a finite number (decimal or 0x/0o/0b integer).
_JS_NUMERIC = re.compile(
    r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+"
)


def _line_number(value: object) -> float | None:
    """parseLineNumber of Pi 1.6.0: a finite number, or a numeric string read as one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = js_trim(value)
        if not text or not _JS_NUMERIC.fullmatch(text):
            return None
        number = float(int(text, 0)) if text[:2].lower() in ("0x", "0o", "0b") else float(text)
        return number if math.isfinite(number) else None
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


def _read_line_range(offset: object, limit: object) -> str:
    """formatReadLineRange of Pi 1.6.0 (JSON null is an omitted argument). For whole-number
    arguments it prints what 0.80.2's inline version printed."""
    if offset is None and limit is None:
        return ""
    start = 1.0 if offset is None else _line_number(offset)
    if start is None:
        return ""
    if limit is None:
        return f":{number_to_string(start)}"
    count = _line_number(limit)
    if count is None:
        return ""
    end = start + count - 1
    tail = f"-{number_to_string(end)}" if end else ""
    return f":{number_to_string(start)}{tail}"


def format_tool_call(name: str, args: object) -> str:
    """Pi's formatToolCall (without shortening $HOME: the session's home is not this server's)."""
    if not isinstance(args, dict):
        args = {}
    if name == "read":
        display = _arg(args, "path", "file_path")
        return f"[read: {display}{_read_line_range(args.get('offset'), args.get('limit'))}]"
    if name in ("write", "edit"):
        return f"[{name}: {_arg(args, 'path', 'file_path')}]"
    if name == "bash":
        raw = _arg(args, "command")
        cmd = js_slice(raw.replace("\n", " ").replace("\t", " ").strip(), 0, 50)
        return f"[bash: {cmd}{'...' if js_len(raw) > 50 else ''}]"
    if name == "grep":
        return f"[grep: /{_arg(args, 'pattern')}/ in {_arg(args, 'path', default='.')}]"
    if name == "find":
        return f"[find: {_arg(args, 'pattern')} in {_arg(args, 'path', default='.')}]"
    if name == "ls":
        return f"[ls: {_arg(args, 'path', default='.')}]"
    text = _stringify(args)  # JSON.stringify at any depth
    return f"[{name}: {js_slice(text, 0, 40)}{'...' if js_len(text) > 40 else ''}]"


def collect_tool_calls(entry: dict[str, object], into: dict[str, tuple[str, object]]) -> None:
    message = entry.get("message")
    if entry.get("type") != "message" or not isinstance(message, dict):
        return
    if message.get("role") != "assistant" or not isinstance(message.get("content"), list):
        return
    for block in message["content"]:
        if isinstance(block, dict) and block.get("type") == "toolCall":
            into[str(block.get("id"))] = (str(block.get("name")), block.get("arguments"))


# Long on purpose: one branch per entry type, in the order of Pi's getEntryDisplayText, so that
# the two read side by side.
def tree_item(
    entry: dict[str, object],
    tool_calls: dict[str, tuple[str, object]],
    tokens: int = 0,
) -> TreeItem:
    """The display line, the search text and the hide flag of one entry."""
    entry_type = str(entry.get("type"))
    parent = entry.get("parentId")
    item = TreeItem(
        id=str(entry.get("id")),
        parent_id=parent if isinstance(parent, str) else None,
        type=entry_type,
        tokens=tokens,
    )
    search: list[str] = []
    if entry_type == "message":
        message = entry.get("message") if isinstance(entry.get("message"), dict) else {}
        assert isinstance(message, dict)
        role = str(message.get("role"))
        item.role = role
        content = message.get("content")
        extracted = _extract_content(content)
        search.append(role)
        if js_truthy(content):
            search.append(extracted)
        if role == "user":
            item.tag, item.text = "user: ", _normalize(extracted)
        elif role == "assistant":
            text = _normalize(extracted)
            stop = message.get("stopReason")
            item.tag = "assistant: "
            if text:
                item.text = text
            elif stop == "aborted":
                item.text = "(aborted)"
            elif message.get("errorMessage"):
                item.text = js_slice(_normalize(str(message["errorMessage"])), 0, 80)
            else:
                item.text = "(no content)"
            error_or_aborted = bool(stop) and stop not in ("stop", "toolUse")
            item.toolcall_only = not _has_text(content) and not error_or_aborted
        elif role == "toolResult":
            call_id = message.get("toolCallId")
            call = tool_calls.get(str(call_id)) if call_id else None
            if call:
                item.text = format_tool_call(call[0], call[1])
            else:
                item.text = f"[{message.get('toolName') or 'tool'}]"
        elif role == "bashExecution":
            command = str(message.get("command") or "")
            item.text = f"[bash]: {_normalize(command)}"
            if command:
                search.append(command)
        else:
            item.text = f"[{role}]"
    elif entry_type == "custom_message":
        content = entry.get("content")
        if isinstance(content, str):
            text = content
        elif isinstance(content, list):
            texts = [c for c in content if isinstance(c, dict) and c.get("type") == "text"]
            text = "".join(str(c.get("text") or "") for c in texts)
        else:
            text = ""
        item.tag, item.text = f"[{entry.get('customType')}]: ", _normalize(text)
        searchable = content if isinstance(content, str) else _extract_content(content)
        search.extend([str(entry.get("customType")), searchable])
    elif entry_type == "compaction":
        before = entry.get("tokensBefore")
        thousands = round(before / 1000) if isinstance(before, int | float) else "NaN"
        item.text = f"[compaction: {thousands}k tokens]"
        search.append("compaction")
    elif entry_type == "branch_summary":
        item.tag, item.text = "[branch summary]: ", _normalize(str(entry.get("summary") or ""))
        search.extend(["branch summary", str(entry.get("summary") or "")])
    elif entry_type == "model_change":
        item.text = f"[model: {entry.get('modelId')}]"
        search.extend(["model", str(entry.get("modelId"))])
    elif entry_type == "thinking_level_change":
        item.text = f"[thinking: {entry.get('thinkingLevel')}]"
        search.extend(["thinking", str(entry.get("thinkingLevel"))])
    elif entry_type == "custom":
        item.text = f"[custom: {entry.get('customType')}]"
        search.extend(["custom", str(entry.get("customType"))])
    elif entry_type == "context_edit":
        # `replacement === null`: an absent replacement is a "replace", as in Pi.
        kind = "omit" if "replacement" in entry and entry["replacement"] is None else "replace"
        target = entry.get("targetId")
        item.text = f"[context {kind}: {js_string(target, 'targetId' in entry)}]"
        search.extend(["context edit", kind, array_join_item(target)])
    elif entry_type == "label":
        label = entry.get("label")
        item.text = f"[label: {label if label is not None else '(cleared)'}]"
        search.extend(["label", str(label or "")])
    elif entry_type == "session_info":
        name = entry.get("name")
        item.text = f"[title: {name}]" if name else "[title: empty]"
        search.append("title")
        if name:
            search.append(str(name))
    item.search_text = " ".join(search)
    item.css = _css(item)
    return item


def _css(item: TreeItem) -> str:
    if item.type == "message":
        if item.role == "user":
            return "role-user"
        if item.role == "assistant":
            return "role-assistant"
        if item.role == "toolResult":
            return "role-tool"
        return "role-dim"
    if item.type == "custom_message":
        return "role-custom"
    if item.type in ("compaction", "branch_summary"):
        return ""
    return "role-dim"


def pi_line(row: Row) -> str:
    """The row as Pi's terminal prints it (without the cursor column): for comparing with Pi."""
    has_connector = row.show_connector and not row.is_virtual_root_child
    fold = "⊞ " if row.folded and not has_connector else ""
    path = "• " if row.on_path else ""
    label = f"[{row.label}] " if row.label is not None else ""
    return f"{row.prefix}{fold}{path}{label}{row.item.tag}{row.item.text}"
