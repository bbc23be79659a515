"""Read models for the session page: the tree index of a session and the entries of one path.

A 20k-entry session must open in well under 300 ms, so the tree is computed once per session
state (revision, entry count, leaf) into a `SessionIndex` of light per-entry records: stored in
the database (`TreeIndex`, one row per revision, written where entries are written: import,
upload, a job's append; else on first open) and kept in a small per-process cache. A process
meeting a session for the first time reads that one row rather than every entry's JSON. Requests
afterwards touch the database only for the entries they show in full (the selected entry's path
from its last compaction on).
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import QuerySet, TextField
from django.db.models.functions import Cast

from contextlab.budgets import check_deadline
from contextlab.db import json_texts
from contextlab.inspector.models import TreeIndex
from contextlab.library.models import Entry, Session
from contextlab.library.storage.values import loads_entry
from contextlab.pi.held import condensed_path, held_span, settings_read_before
from contextlab.pi.session import SessionTree
from contextlab.pi.tree_hints import add_context_hints
from contextlab.pi.tree_selector import (
    TreeItem,
    TreeView,
    build_view,
    collect_tool_calls,
    flatten,
    tree_item,
)

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class SessionIndex:
    key: tuple[Any, ...]
    items: dict[str, TreeItem]
    order: list[str]  # Pi's /tree order (flattenTree), active branch first
    parent_of: dict[str, str | None]
    labels: dict[str, str]
    leaf_id: str | None
    path_ids: list[str]  # root -> leaf
    seq_of: dict[str, int]
    # Assistant entry id -> the prompt tokens its provider reported (input + cache), for the
    # growth chart; absent when there is no usage or the reply failed.
    reported: dict[str, int] = field(default_factory=dict)
    # Compaction id -> firstKeptEntryId (to fetch a path from its last compaction on).
    first_kept: dict[str, str] = field(default_factory=dict)
    name: str | None = None
    children: dict[str, list[str]] = field(default_factory=dict)
    paths: OrderedDict[str, list[str]] = field(default_factory=OrderedDict)
    entries: OrderedDict[int, dict[str, Any]] = field(default_factory=OrderedDict)
    entry_sizes: dict[int, int] = field(default_factory=dict)  # JSON bytes of each cached entry
    # JSON bytes of every entry fetched so far, kept or not (an int per entry): what sizes a
    # projection for the memo without walking or serialising the tens of MB it may hold.
    json_bytes: dict[str, int] = field(default_factory=dict)
    entry_bytes: int = 0
    base_bytes: int = 0  # estimated size of the index itself (set when cached)
    # Results computed from this index's immutable entries (projections of a leaf), few, and
    # bounded by bytes (half of CONTEXTLAB_INDEX_CACHE_BYTES per index): a projection holds the
    # whole path's entries and the request built from them.
    memo: OrderedDict[tuple[Any, ...], Any] = field(default_factory=OrderedDict)
    memo_sizes: dict[tuple[Any, ...], int] = field(default_factory=dict)
    memo_bytes: int = 0

    def remember(self, key: tuple[Any, ...], value: Any, size: int | None = None) -> None:
        """Keep `value` for `key`; one larger than the memo's budget is not kept (used by the
        request that computed it, computed again by the next). `size`: its bytes when the
        caller knows them (else estimated)."""
        if size is None:
            size = estimated_size(value)
        budget = settings.CONTEXTLAB_INDEX_CACHE_BYTES // 2
        with _cache_lock:
            self.memo_bytes -= self.memo_sizes.pop(key, 0)
            self.memo.pop(key, None)
            if size > budget:
                return
            self.memo[key] = value
            self.memo_sizes[key] = size
            self.memo_bytes += size
            while self.memo and (len(self.memo) > 12 or self.memo_bytes > budget):
                old, _ = self.memo.popitem(last=False)
                self.memo_bytes -= self.memo_sizes.pop(old, 0)
            _trim_cache()

    def drop_extras(self) -> int:
        """Forget what this index keeps besides itself (fetched entries, projections, tree
        views): all of it is computed again on demand. Returns the bytes freed (call with
        _cache_lock held)."""
        freed = self.entry_bytes + self.memo_bytes + self.view_bytes
        freed += _SIZED_ENTRY_BYTES * len(self.json_bytes)
        self.json_bytes.clear()  # refilled by the fetches that need it again
        self.entries.clear()
        self.entry_sizes.clear()
        self.entry_bytes = 0
        self.drop_memo()
        self.drop_views()
        return freed

    def drop_memo(self) -> int:
        """Forget this index's projections; the bytes freed (call with _cache_lock held)."""
        freed = self.memo_bytes
        self.memo.clear()
        self.memo_sizes.clear()
        self.memo_bytes = 0
        return freed

    def drop_views(self) -> int:
        """Forget this index's tree views; the bytes freed (call with _cache_lock held)."""
        freed = self.view_bytes
        self.views.clear()
        self.view_bytes = 0
        return freed

    @property
    def cost(self) -> int:
        """Estimated bytes this index holds: itself, its entries, its memo and its views."""
        sized = _SIZED_ENTRY_BYTES * (len(self.json_bytes) + len(self.path_positions or ()))
        return self.base_bytes + self.entry_bytes + self.memo_bytes + self.view_bytes + sized

    path_set: frozenset[str] = frozenset()
    path_positions: dict[str, int] | None = None  # see _path_positions (made on first use)
    # Whether any entry is a Pi 1.x system message (the dialect of a path depends on it).
    holds_system: bool = False
    # Every entry's type and message role, for the engine's rules over light facts.
    entry_types: dict[str, str] = field(default_factory=dict)
    entry_roles: dict[str, str] = field(default_factory=dict)
    # getTree()'s roots and children (display order) and the last entry in file order: with
    # them a stored index serves any leaf (the order is flattened again for another one).
    roots: list[str] = field(default_factory=list)
    display_children: dict[str, list[str]] = field(default_factory=dict)
    file_leaf: str | None = None
    # A stored index is loaded without the search texts (two fifths of it, needed only once a
    # search is typed): `ensure_search` fills them in on first use.
    search_loaded: bool = True
    # Tree views by (mode, query, folds): selecting entries re-renders the same view.
    views: OrderedDict[tuple[str, str, tuple[str, ...]], TreeView] = field(
        default_factory=OrderedDict
    )
    view_bytes: int = 0  # a quarter of CONTEXTLAB_INDEX_CACHE_BYTES per index at most

    def view(self, mode: str, query: str, folded: tuple[str, ...]) -> TreeView:
        key = (mode, query, folded)
        with _cache_lock:
            cached = self.views.get(key)
            if cached is not None:
                self.views.move_to_end(key)
                return cached
        if query.split():
            self.ensure_search()
        with gc_paused():
            view = build_view(
                self.order,
                self.items,
                self.labels,
                self.leaf_id,
                set(self.path_ids),
                mode=mode,
                query=query,
                folded=folded,
            )
        budget = settings.CONTEXTLAB_INDEX_CACHE_BYTES // 4
        with _cache_lock:
            if key not in self.views and view_size(view) <= budget:
                self.views[key] = view
                self.view_bytes += view_size(view)
            while self.views and (len(self.views) > 6 or self.view_bytes > budget):
                _, old = self.views.popitem(last=False)
                self.view_bytes -= view_size(old)
            _trim_cache()
        return view

    def fetch(self, session: Session, ids: list[str]) -> dict[str, dict[str, Any]]:
        """Whole entries by id, from a small per-index cache or one query for the rest.

        Entries of a session revision never change, and neighbouring requests share most of
        their path, so clicking along a deep path fetches only what is new.
        """
        found: dict[str, dict[str, Any]] = {}
        missing: list[int] = []
        with _cache_lock:
            for entry_id in ids:
                seq = self.seq_of.get(entry_id)
                if seq is None:
                    continue
                entry = self.entries.get(seq)
                if entry is None:
                    missing.append(seq)
                else:
                    self.entries.move_to_end(seq)
                    found[entry_id] = entry
        if not missing:
            return found
        wanted = set(missing)
        fetched: list[tuple[int, dict[str, Any], int]] = []
        budget = settings.CONTEXTLAB_INDEX_CACHE_BYTES // 4
        fetched_bytes = 0
        for part in _fetch_parts(sorted(missing)):
            # A deep path is tens of MB read part by part: a request whose client left (a held
            # key's row passed by) stops here rather than after reading and decoding all of it.
            check_deadline(BUILDING)
            if fetched_bytes > budget:
                # A deep path: what it has fetched so far counts against the cache's budget.
                _make_room(self, fetched_bytes)
            rows = Entry.objects.for_session(session)
            # A long run is one ordered range scan (other branches' lines are dropped below)
            # rather than an IN list of thousands of values.
            if len(part) > 500:
                rows = rows.filter(seq__gte=part[0], seq__lte=part[-1])
            else:
                rows = rows.filter(seq__in=part)
            texts = json_texts(rows, "seq", "data")
            for seq, raw in texts:
                if seq in wanted:
                    entry = loads_entry(raw)
                    fetched.append((seq, entry, len(raw)))
                    fetched_bytes += len(raw)
                    found[entry["id"]] = entry
                    self.json_bytes[entry["id"]] = len(raw)
            del texts, rows  # this part's texts go before the next part's come
        # Entries are kept by count and by bytes (a quarter of CONTEXTLAB_INDEX_CACHE_BYTES per
        # index): one 200 MB tool result is used for this request and not kept.
        with _cache_lock:
            for seq, entry, size in fetched:
                if size > budget or seq in self.entries:
                    continue
                self.entries[seq] = entry
                self.entry_sizes[seq] = size
                self.entry_bytes += size
            while self.entries and (
                len(self.entries) > ENTRY_CACHE_SIZE or self.entry_bytes > budget
            ):
                old, _ = self.entries.popitem(last=False)
                self.entry_bytes -= self.entry_sizes.pop(old, 0)
            _trim_cache()
        return found

    def held_bytes(self, entries: list[dict[str, Any]]) -> int:
        """JSON bytes of fetched entries (a condensed path's stand-ins count as small)."""
        sizes = self.json_bytes
        return sum([sizes.get(entry.get("id", ""), 200) for entry in entries])

    def ensure_search(self) -> None:
        """Fill in the search texts of a loaded index: from its stored row, or (when the row was
        replaced meanwhile by a newer state of the revision) from the revision's entries, whose
        rows never change; an entry's search text depends on that entry alone."""
        if self.search_loaded:
            return
        _, revision_id, entry_count, _ = self.key
        stored = (
            TreeIndex.objects.filter(
                revision_id=revision_id, entry_count=entry_count, format=INDEX_FORMAT
            )
            .values_list("search", flat=True)
            .first()
        )
        if stored is not None:
            texts = orjson.loads(stored)
        else:
            wanted = {seq: entry_id for entry_id, seq in self.seq_of.items()}
            found: dict[str, str] = {}
            rows = Entry.objects.filter(revision_id=revision_id).order_by("seq")
            for seq, raw in json_texts(rows, "seq", "data"):
                if seq in wanted:
                    found[wanted[seq]] = tree_item(loads_entry(raw), {}).search_text
            texts = [found.get(entry_id, "") for entry_id in self.items]
        with _cache_lock:
            if not self.search_loaded:
                for item, text in zip(self.items.values(), texts, strict=True):
                    item.search_text = text
                self.search_loaded = True
                self.base_bytes = _estimated_bytes(self)

    @property
    def type_of(self) -> Callable[[str], str]:
        """id -> the entry's type (a C-level lookup: the engine's path rules call it per entry
        of a 20k-entry path)."""
        return self.entry_types.__getitem__

    @property
    def role_of(self) -> Callable[[str], str]:
        """id -> a message entry's role ("" for other entries)."""
        return self.entry_roles.__getitem__

    def path(self, entry_id: str) -> list[str]:
        """Root-first ids from a root to `entry_id` (stops at a repeat: damaged files).

        Cached for the last few entries: one inspector request walks the same path several
        times, and a deep path of a large session is tens of thousands of steps.
        """
        cached = self.paths.get(entry_id)
        if cached is not None:
            return cached
        out = self._walk(entry_id)
        with _cache_lock:
            self.paths[entry_id] = out
            while len(self.paths) > 16:
                self.paths.popitem(last=False)
        return out

    def _walk(self, entry_id: str) -> list[str]:
        """Up the parents until a root, or until the session's own path (root -> leaf), whose
        prefix then completes the walk: a deep entry of a 50k-entry path costs a slice, not
        50k steps (most entries one inspects lie on that path or branch off it)."""
        on_path = self._path_positions()
        out: list[str] = []
        seen: set[str] = set()
        current: str | None = entry_id
        while current is not None and current not in seen and current in self.items:
            at = on_path.get(current)
            if at is not None:
                out.reverse()
                return self.path_ids[: at + 1] + out
            seen.add(current)
            out.append(current)
            current = self.parent_of.get(current)
        out.reverse()
        return out

    def _path_positions(self) -> dict[str, int]:
        """Each id of `path_ids` -> its position, when `path_ids` is exactly the walk up from the
        leaf (each entry's parent is the one before it, the first's walk ends there); else empty
        (a damaged file: every walk goes the whole way)."""
        if self.path_positions is None:
            ids = self.path_ids
            if not ids:
                return {}  # not known yet (the index is being built): nothing kept
            parent = self.parent_of.get
            first = parent(ids[0]) if ids else None
            sound = (
                (first is None or first not in self.items)
                and len(set(ids)) == len(ids)
                and all(i in self.items for i in ids)
                and all(parent(ids[n]) == ids[n - 1] for n in range(1, len(ids)))
            )
            self.path_positions = {entry_id: n for n, entry_id in enumerate(ids)} if sound else {}
        return self.path_positions


_cache: OrderedDict[tuple[Any, ...], SessionIndex] = OrderedDict()
_cache_lock = threading.Lock()
# Indexes kept at most: the byte budget is the real bound (a library of many ordinary sessions
# keeps each open one; visitors go from session to session).
_CACHE_SIZE = 64
# Whole entries kept per session index (a few MB for typical entries).
ENTRY_CACHE_SIZE = 4000


def index_key(session: Session) -> tuple[Any, ...]:
    return (session.pk, session.current_revision_id, session.entry_count, session.leaf_entry_id)


def session_index(session: Session) -> SessionIndex:
    """The tree index of the session's current state: from this process's cache, else from the
    stored `TreeIndex` row of the revision, else built from the entries (and stored).

    Why a database row, measured on a 20k-entry session (19.6 MB, 2 cores): building from the
    entries costs ~400 ms (fetching and parsing every entry's JSON ~150-250 ms, the per-entry
    tree facts ~150 ms); loading the stored facts costs a fraction of that. The row is durable,
    shared by every process and worker, needs no Redis (which is optional here) and goes away
    with its revision; a cache backend could evict it or, without Redis, stays per process.
    """
    key = index_key(session)
    with _cache_lock:
        cached = _cache.get(key)
        if cached is not None:
            _cache.move_to_end(key)
            return cached
    index = load_index(session, key)
    if index is None:
        index = build_index(session, key)
        store_index(session, index)
    index.base_bytes = _estimated_bytes(index)
    with _cache_lock:
        _cache[key] = index
        _trim_cache()
    return index


# Entries one query of `SessionIndex.fetch` reads at most: a deep path of a large session is
# tens of MB of JSON text, which is read a part at a time (each part's text, in the driver and
# as Python strings, is gone before the next part's arrives) rather than held whole beside what
# it decodes to.
FETCH_PART = 1000


def _fetch_parts(seqs: list[int]) -> Iterator[list[int]]:
    """`seqs` (sorted) in runs of at most FETCH_PART."""
    for start in range(0, len(seqs), FETCH_PART):
        yield seqs[start : start + FETCH_PART]


def _make_room(current: SessionIndex, needed: int) -> None:
    """Room in the cache's budget for `needed` bytes of entries one request is fetching for
    `current` (a deep path: 100 MB of JSON on the load test's large session, most of the
    budget). The request holds them whatever the cache does, so what the cache keeps goes
    until the two fit in CONTEXTLAB_INDEX_CACHE_BYTES together, in `_trim_cache`'s order: the
    other indexes' extras (oldest first), the other indexes, then `current`'s projections and
    tree views (not its entries: this request holds them anyway).

    Measured under the load test's adversaries (2 users holding `j` on the large session, 4
    workers): a worker holding a full cache began its deep turns at 350-385 MB resident and
    peaked at up to 464 MB when only the extras made room."""
    budget = settings.CONTEXTLAB_INDEX_CACHE_BYTES
    with _cache_lock:
        total = sum(i.cost for i in _cache.values())
        others = [key for key, index in _cache.items() if index is not current]
        for key in others:
            if total + needed <= budget:
                return
            total -= _cache[key].drop_extras()
        for key in others:
            if total + needed <= budget:
                return
            total -= _cache.pop(key).cost
        if total + needed > budget:
            total -= current.drop_memo()
        if total + needed > budget:
            current.drop_views()


def _trim_cache() -> None:
    """Bring the cache within its budget (call with _cache_lock held). Bounded by bytes
    (CONTEXTLAB_INDEX_CACHE_BYTES), not by sessions: eight 500 MB sessions' indexes would hold
    gigabytes. First what the older indexes keep besides themselves goes (their fetched entries,
    projections and tree views, oldest index first), then whole indexes, least recently used
    first: loading an index again costs more than fetching its entries, and one large session's
    extras must not push every other session out (the newest index's extras go last, and it
    always stays itself)."""
    budget = settings.CONTEXTLAB_INDEX_CACHE_BYTES
    total = sum(i.cost for i in _cache.values())
    if total > budget:
        for index in list(_cache.values()):  # the newest last
            if total <= budget:
                break
            total -= index.drop_extras()
    while len(_cache) > 1 and (len(_cache) > _CACHE_SIZE or total > budget):
        _, old = _cache.popitem(last=False)
        total -= old.cost


# Per visible row of a tree view: the Row, its prefix and gutters, its slot in index_of (the
# TreeItem it shows is the index's own, counted there). Rough, like _ROW_BYTES.
_VIEW_ROW_BYTES = 400
# A json_bytes slot: the dict's entry and the int (the id string is the index's own).
_SIZED_ENTRY_BYTES = 100


def view_size(view: TreeView) -> int:
    return _VIEW_ROW_BYTES * len(view.rows)


# Strings at least this long are counted once however many containers hold them (a request's
# messages share their texts with the path's entries); shorter ones are counted each time.
_SHARED_STRING = 256


def estimated_size(value: Any) -> int:
    """Rough bytes held by `value`: the length of its JSON (orjson, in C: a projection of a
    500 MB session's deep entry is sized in milliseconds, where walking its half-million objects
    took longer than building it). JSON counts a text shared by the path's entries and the
    request twice, and a small container's overhead not at all; the two roughly cancel for
    entry-shaped data and the estimate never falls below the entries' own JSON bytes. Values
    orjson cannot take (nesting over its 255 levels) are walked (`walked_size`)."""
    if type(value) is TreeView:
        return view_size(value)
    try:
        return len(orjson.dumps(value, default=_json_default, option=orjson.OPT_NON_STR_KEYS))
    except orjson.JSONEncodeError:
        return walked_size(value)


def _json_default(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return list(value)
    if type(value) is TreeView:
        return "x" * view_size(value)
    return None  # other objects count for nothing here, as in walked_size


def walked_size(value: Any) -> int:
    """Rough bytes held by `value` (sys.getsizeof of every object reached), for values built of
    dicts, lists, tuples, sets, strings, numbers and dataclasses; a tree view by its rows. Each
    container and long string counts once; other objects count for themselves only."""
    seen: set[int] = set()
    total = 0
    stack = [value]
    while stack:
        current = stack.pop()
        kind = type(current)
        if kind is str and len(current) < _SHARED_STRING:
            total += sys.getsizeof(current)
            continue
        if id(current) in seen:
            continue
        seen.add(id(current))
        total += sys.getsizeof(current)
        if kind is dict:
            stack.extend(current.keys())
            stack.extend(current.values())
        elif kind in (list, tuple, set, frozenset):
            stack.extend(current)
        elif kind is TreeView:
            total += view_size(current)
        elif dataclasses.is_dataclass(current) and not isinstance(current, type):
            stack.extend(getattr(current, f.name) for f in dataclasses.fields(current))
    return total


# Per tree row besides its texts: the TreeItem, its slots in the id-keyed dicts and lists (a
# rough estimate of CPython's object overheads, not a measurement).
_ROW_BYTES = 700


def _estimated_bytes(index: SessionIndex) -> int:
    text = sum(len(item.search_text or "") + len(item.text or "") for item in index.items.values())
    return _ROW_BYTES * len(index.items) + text


def cache_bytes() -> int:
    """What this process's index cache holds (estimated), for tests and benchmarks."""
    with _cache_lock:
        return sum(i.cost for i in _cache.values())


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()


def _reported(entry: dict[str, Any]) -> int | None:
    """What the provider counted for the request an assistant message answers (growth chart)."""
    message = entry.get("message")
    if entry.get("type") != "message" or not isinstance(message, dict):
        return None
    if message.get("role") != "assistant":
        return None
    usage, stop = message.get("usage"), message.get("stopReason")
    if not isinstance(usage, dict) or stop in ("error", "aborted"):
        return None
    try:
        return sum(int(usage.get(k) or 0) for k in ("input", "cacheRead", "cacheWrite")) or None
    except (TypeError, ValueError):
        return None  # not numbers: nothing reported (the tree must still open)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while building large, long-lived structures.

    A 20k-entry index (or tree view) allocates a few hundred thousand objects that all stay
    alive; the collector would scan them again and again meanwhile (it more than doubles the
    build time). Nothing built here forms cycles to collect.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# Building an index checks the request's deadline (contextlab.budgets) every this many entries:
# past it the request answers a plain 503 instead of running on (outside a request: no limit).
DEADLINE_EVERY = 1024
OPENING = "Opening this session"
BUILDING = "Building this request"  # what a turn past its budget was doing


def build_index(session: Session, key: tuple[Any, ...] | None = None) -> SessionIndex:
    with gc_paused():
        return _build_index(session, key)


def _index_rows(session: Session) -> list[tuple[int, int, dict[str, Any]]]:
    """(seq, tokens, entry) in file order, whole.

    Reading only the fields the tree needs in SQL was tried: `data` is `json` (not jsonb, to keep
    key order), so PostgreSQL parses every document for it and the whole query came out slower
    than fetching the text and parsing it with orjson here (with the GC paused).
    """
    rows = (
        Entry.objects.for_session(session)
        .annotate(raw=Cast("data", TextField()))
        .values_list("seq", "tokens", "raw")
    )
    found = []
    for n, (seq, tokens, raw) in enumerate(rows.iterator(chunk_size=2000)):
        if not n % DEADLINE_EVERY:
            check_deadline(OPENING)
        found.append((seq, tokens, loads_entry(raw)))
    return found


def _build_index(session: Session, key: tuple[Any, ...] | None) -> SessionIndex:
    rows = _index_rows(session)
    entries = [row[2] for row in rows]
    seqs = [row[0] for row in rows]
    tokens = [row[1] for row in rows]
    tree = SessionTree(entries)
    tool_calls: dict[str, tuple[str, object]] = {}
    for entry in entries:
        collect_tool_calls(entry, tool_calls)
    items: dict[str, TreeItem] = {}
    seq_of: dict[str, int] = {}
    reported: dict[str, int] = {}
    first_kept: dict[str, str] = {}
    for n, (entry, seq, entry_tokens) in enumerate(zip(entries, seqs, tokens, strict=True)):
        if not n % DEADLINE_EVERY:
            check_deadline(OPENING)
        # A repeated id resolves as Pi's Map does: the later line wins.
        entry_id = entry["id"]
        items[entry_id] = tree_item(entry, tool_calls, entry_tokens)
        items[entry_id].parent_id = tree.parent(entry_id)
        seq_of[entry_id] = seq
        reported.pop(entry_id, None)
        tokens_reported = _reported(entry)
        if tokens_reported:
            reported[entry_id] = tokens_reported
        if entry.get("type") == "compaction" and isinstance(entry.get("firstKeptEntryId"), str):
            first_kept[entry_id] = entry["firstKeptEntryId"]
    add_context_hints(entries, tree, items)
    leaf_id = session.leaf_entry_id or tree.leaf_id
    if leaf_id not in items:
        leaf_id = tree.leaf_id
    order = [i for i in flatten(tree.roots, tree.children, leaf_id) if i in items]
    labels = {k: str(v) for k, v in tree.labels.items() if k in items}
    index = SessionIndex(
        key=key or index_key(session),
        items=items,
        order=order,
        parent_of={i: items[i].parent_id for i in items},
        labels=labels,
        leaf_id=leaf_id,
        path_ids=[],
        seq_of=seq_of,
        reported=reported,
        first_kept=first_kept,
        name=tree.name,
        roots=list(tree.roots),
        display_children={i: kids for i in items if (kids := tree.children(i))},
        file_leaf=tree.leaf_id,
    )
    _finish_index(index)
    return index


# Bump when anything stored changes meaning (tree_item, _reported, SessionTree rules): rows of an
# older format are then rebuilt on first use.
INDEX_FORMAT = 5


def _index_bytes(index: SessionIndex) -> bytes:
    """The index's facts as columns (one list per field, in `items` order). Entries refer to
    each other by position (parent, order) and share their (type, role, tag, css) from a small
    table: loading then makes ints and a few strings instead of 100k string objects."""
    items = list(index.items.values())
    position = {item.id: n for n, item in enumerate(items)}
    kinds: dict[tuple[str, str, str, str], int] = {}
    kind_of = [kinds.setdefault((i.type, i.role, i.tag, i.css), len(kinds)) for i in items]
    return orjson.dumps(
        {
            "id": [i.id for i in items],
            "parent": [-1 if i.parent_id is None else position[i.parent_id] for i in items],
            "kinds": list(kinds),
            "kind": kind_of,
            "text": [i.text for i in items],
            "toolcall_only": [n for n, i in enumerate(items) if i.toolcall_only],
            "hints": [[n, i.hint, i.hint_title] for n, i in enumerate(items) if i.hint],
            "tokens": [i.tokens for i in items],
            "seq": [index.seq_of[i.id] for i in items],
            "reported": index.reported,
            "first_kept": index.first_kept,
            "labels": index.labels,
            "name": index.name,
            "leaf": index.leaf_id,
            "order": [position[i] for i in index.order],
            "file_leaf": index.file_leaf,
            "roots": [position[i] for i in index.roots],
            "children": [
                [position[p], [position[i] for i in kids]]
                for p, kids in index.display_children.items()
            ],
        }
    )


def _index_from_bytes(data: bytes | str, key: tuple[Any, ...], leaf: str) -> SessionIndex:
    """The index from its stored facts, without the search texts (see `ensure_search`), for
    the session leaf `leaf` (blank: the last entry in file order)."""
    facts = orjson.loads(data)
    ids: list[str] = facts["id"]
    parents: list[str | None] = [None if p < 0 else ids[p] for p in facts["parent"]]
    kinds = facts["kinds"]
    items: dict[str, TreeItem] = {}
    for entry_id, parent, kind, text, tokens in zip(
        ids, parents, facts["kind"], facts["text"], facts["tokens"], strict=True
    ):
        entry_type, role, tag, css = kinds[kind]
        items[entry_id] = TreeItem(
            entry_id, parent, entry_type, role, tag, text, False, "", tokens, css
        )
    for position in facts["toolcall_only"]:
        items[ids[position]].toolcall_only = True
    for position, hint, hint_title in facts["hints"]:
        items[ids[position]].hint, items[ids[position]].hint_title = hint, hint_title
    roots = [ids[p] for p in facts["roots"]]
    children = {ids[p]: [ids[i] for i in kids] for p, kids in facts["children"]}
    # As _build_index picks it: the session's leaf if it is an entry, else the file's last.
    file_leaf = facts["file_leaf"]
    leaf_id = leaf if leaf and leaf in items else file_leaf
    if leaf_id == facts["leaf"]:
        order = [ids[p] for p in facts["order"]]
    else:  # the leaf moved without new entries (continue without a summary)
        order = [i for i in flatten(roots, lambda i: children.get(i, ()), leaf_id) if i in items]
    index = SessionIndex(
        key=key,
        items=items,
        order=order,
        parent_of=dict(zip(ids, parents, strict=True)),
        labels=facts["labels"],
        leaf_id=leaf_id,
        path_ids=[],
        seq_of=dict(zip(ids, facts["seq"], strict=True)),
        reported=facts["reported"],
        first_kept=facts["first_kept"],
        name=facts["name"],
        search_loaded=False,
        roots=roots,
        display_children=children,
        file_leaf=file_leaf,
    )
    _finish_index(index)
    return index


def _finish_index(index: SessionIndex) -> None:
    """What follows from the stored facts alone (cheap): the active path and the children."""
    index.path_ids = index.path(index.leaf_id) if index.leaf_id else []
    index.path_set = frozenset(index.path_ids)
    index.entry_types = {entry_id: item.type for entry_id, item in index.items.items()}
    index.entry_roles = {entry_id: item.role for entry_id, item in index.items.items()}
    index.holds_system = "system" in index.entry_roles.values()
    for entry_id, parent in index.parent_of.items():
        if parent is not None:
            index.children.setdefault(parent, []).append(entry_id)
    if index.children == index.display_children:
        # The same lists (as they are in every session seen so far: both in file order): one
        # copy, a seventh of a loaded index's memory. Neither is changed after this.
        index.children = index.display_children


def _stored(session: Session) -> QuerySet[TreeIndex]:
    # Any leaf: the stored order is flattened again when the leaf moved.
    return TreeIndex.objects.filter(
        revision_id=session.current_revision_id,
        entry_count=session.entry_count,
        format=INDEX_FORMAT,
    )


def index_stored(session: Session) -> bool:
    """Whether the index of the session's current state is stored (and of this code's format)."""
    return session.current_revision_id is not None and _stored(session).exists()


def load_index(session: Session, key: tuple[Any, ...] | None = None) -> SessionIndex | None:
    """The stored index of the session's current state, or None (none stored, or stale)."""
    if session.current_revision_id is None:
        return None
    data = _stored(session).values_list("data", flat=True).first()
    if data is None:
        return None
    with gc_paused():
        return _index_from_bytes(data, key or index_key(session), session.leaf_entry_id)


def store_index(session: Session, index: SessionIndex) -> None:
    """Keep the index for other processes and later requests (replacing an older state's).

    Two processes may build the same state at once; both rows are right, the last one stays.
    """
    if session.current_revision_id is None:
        return
    try:
        data = _index_bytes(index).decode()
        search = orjson.dumps([i.search_text for i in index.items.values()]).decode()
    except orjson.JSONEncodeError:
        return  # a value orjson cannot write (an integer beyond 64 bits): rebuilt each time
    try:
        # A savepoint: a failure here (the revision deleted meanwhile) must not break the
        # caller's transaction; the index is only a copy, the page works without it.
        with transaction.atomic():
            TreeIndex.objects.update_or_create(
                revision_id=session.current_revision_id,
                defaults={
                    "entry_count": session.entry_count,
                    "leaf_entry_id": session.leaf_entry_id,
                    "format": INDEX_FORMAT,
                    "data": data,
                    "search": search,
                },
            )
    except DatabaseError:
        logger.warning("tree index of session %s not stored", session.pk, exc_info=True)


def path_entries(session: Session, index: SessionIndex, entry_id: str) -> list[dict[str, Any]]:
    """The path root -> `entry_id`, condensed to what the projection reads.

    The engine's rule (``contextlab.pi.held``): the request holds the entries from the last
    compaction's kept range on; before it the projection reads settings only (the last value of
    each wins) and whether Pi 1.x wrote the path. So only the kept range is fetched, and the
    entries before it become at most three light stand-ins: a deep entry of a 20k-entry session
    costs one query and a short walk instead of the whole path. The projection is unchanged
    (tested against the engine on whole files).
    """
    ids = index.path(entry_id)
    start, reads = _held_start(index, ids)
    # Two queries: the stand-ins lie far before the kept range, and one range scan over both
    # would read every entry in between.
    full = index.fetch(session, ids[start:])
    if reads:
        full.update(index.fetch(session, [ids[p] for p in reads]))
    return condensed_path(ids, start, reads, full.__getitem__)


def _held_start(index: SessionIndex, ids: list[str]) -> tuple[int, list[int]]:
    """Where the kept range of the path `ids` starts, and the positions before it whose
    settings the projection reads (the stand-ins of `condensed_path`)."""
    start = held_span(ids, index.type_of, index.first_kept.get).start
    reads = settings_read_before(
        ids, start, index.type_of, index.role_of, first_system=index.holds_system
    ).positions()
    return start, list(reads)


def path_prefix(
    index: SessionIndex, entry_id: str, longer_id: str, longer: list[dict[str, Any]]
) -> list[dict[str, Any]] | None:
    """`path_entries(entry_id)` cut from `longer`, `path_entries(longer_id)`, when `entry_id` is
    on `longer_id`'s path with the same compaction in force and so the same stand-ins (a turn's
    previous request, for the diff): the kept range of a deep turn of a large session is tens of
    MB that need not be read twice. None when it cannot be cut so (then read it)."""
    ids, short = index.path(longer_id), index.path(entry_id)
    if len(short) > len(ids) or ids[len(short) - 1] != entry_id:
        return None  # not an ancestor (paths share their prefix up to a common entry)
    start, reads = _held_start(index, ids)
    if (start, reads) != _held_start(index, short) or start >= len(short):
        return None
    if start == 0:
        return longer[: len(short)]
    return longer[: len(reads) + len(short) - start]


def entries_by_id(
    session: Session, index: SessionIndex, ids: list[str]
) -> dict[str, dict[str, Any]]:
    return index.fetch(session, ids)


def context_entry_ids(session: Session, entry_id: str) -> list[str] | None:
    """The entries whose text the model received with `entry_id` as the leaf (the engine's
    held span: the compaction in force, its kept range and what follows, or the whole path);
    None for an entry the session does not have."""
    index = session_index(session)
    if entry_id not in index.items:
        return None
    ids = index.path(entry_id)
    return [str(i) for i in held_span(ids, index.type_of, index.first_kept.get).held(ids)]
