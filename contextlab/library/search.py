"""Full-text search over entry text: PostgreSQL tsvector where available, LIKE on SQLite.

Highlighting uses private-use code points as markers so the stored text can be HTML-escaped first
and the markers turned into <mark> afterwards: ts_headline itself does not escape its input.
"""

from __future__ import annotations

import queue
import re
import threading
from html import escape

from django.conf import settings
from django.contrib.postgres.search import (
    SearchHeadline,
    SearchQuery,
    SearchRank,
)
from django.db import connection, transaction
from django.db.models import F, QuerySet, Value
from django.utils.safestring import SafeString, mark_safe

from contextlab.library.models import Entry

START, STOP = "\ue000", "\ue001"
CONFIG = "english"
# tsvector holds at most 1 MB; entries are capped well below so one huge tool result cannot fail
# an import, and the cap keeps indexing cost bounded on multi-GB sessions.
MAX_SEARCH_CHARS = 100_000
SNIPPET_RADIUS = 90


INDEX_BATCH = 100

UPDATE_SQL = """
UPDATE library_entry AS e
SET search_text = v.text,
    search_vector = to_tsvector(%s::regconfig, v.text),
    search_indexed = true
FROM (SELECT unnest(%s::bigint[]) AS id, unnest(%s::text[]) AS text) AS v
WHERE e.id = v.id
"""


def index_revision(revision_id: int | None, *, batch: int = INDEX_BATCH) -> int:
    """Give the revision's not-yet-indexed entries their search text (and, on PostgreSQL, their
    tsvector); returns how many were indexed.

    Batched, each batch committed on its own when not inside a transaction, so a watcher that
    keeps appending to the same session never waits long on these rows. On PostgreSQL, outside
    a transaction and with more than one batch to do, CONTEXTLAB_INDEX_WORKERS connections store
    batches at once: PostgreSQL's text parser, not Python, is what a large import waits for.
    """
    if revision_id is None:
        return 0
    postgres = uses_postgres()
    workers: _Workers | None = None
    total = 0
    last_seq = -1
    try:
        while True:
            # Keyset order: batches in flight on other connections are not seen again.
            rows = list(
                Entry.objects.filter(
                    revision_id=revision_id, search_indexed=False, seq__gt=last_seq
                )
                .order_by("seq")
                .values_list("id", "seq", "data")[:batch]
            )
            if not rows:
                break
            last_seq = rows[-1][1]
            ids = [row[0] for row in rows]
            texts = [_storable(entry_search_text(row[2])) for row in rows]
            total += len(rows)
            if workers is None and len(rows) == batch and _parallel_ok(postgres):
                workers = _Workers(settings.CONTEXTLAB_INDEX_WORKERS)
            if workers is not None:
                workers.submit(ids, texts)
            else:
                _store(postgres, ids, texts)
    finally:
        if workers is not None:
            workers.finish()
    return total


def _parallel_ok(postgres: bool) -> bool:
    # Other connections cannot see rows of a transaction still open here (a caller's atomic
    # block, a test's): then everything goes through this one.
    return postgres and settings.CONTEXTLAB_INDEX_WORKERS > 1 and not connection.in_atomic_block


def _store(postgres: bool, ids: list[int], texts: list[str]) -> None:
    if postgres:
        with transaction.atomic(), connection.cursor() as cursor:
            # Vectors can always be recomputed: no need to wait for the WAL flush.
            # psycopg's own cursor: with DEBUG on, Django's would keep every batch of texts in
            # connection.queries (hundreds of MB over a large session).
            raw = cursor.cursor
            raw.execute("SET LOCAL synchronous_commit TO OFF")
            raw.execute(UPDATE_SQL, [CONFIG, ids, texts])
    else:
        Entry.objects.bulk_update(
            [
                Entry(id=i, search_text=t, search_indexed=True)
                for i, t in zip(ids, texts, strict=True)
            ],
            ["search_text", "search_indexed"],
        )


class _Workers:
    """Threads that store batches of vectors, each on its own connection (Django's connections
    are per thread), closed when the work is done. At most one batch per thread waits."""

    def __init__(self, count: int) -> None:
        self._queue: queue.Queue[tuple[list[int], list[str]] | None] = queue.Queue(count)
        self._errors: list[BaseException] = []
        self._threads = [
            threading.Thread(target=self._run, name=f"contextlab-index-{n}", daemon=True)
            for n in range(count)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, ids: list[int], texts: list[str]) -> None:
        if self._errors:
            raise self._errors[0]
        self._queue.put((ids, texts))

    def _run(self) -> None:
        try:
            while (item := self._queue.get()) is not None:
                if not self._errors:
                    try:
                        _store(True, *item)
                    except BaseException as exc:  # raised again in the submitting thread
                        self._errors.append(exc)
        finally:
            connection.close()

    def finish(self) -> None:
        for _ in self._threads:
            self._queue.put(None)
        for thread in self._threads:
            thread.join()
        if self._errors:
            raise self._errors[0]


def index_pending(*, limit: int | None = None) -> int:
    """Index every revision that has entries waiting (e.g. entries appended by jobs)."""
    revisions = (
        Entry.objects.filter(search_indexed=False).values_list("revision_id", flat=True).distinct()
    )
    total = 0
    for revision_id in revisions[:limit] if limit else revisions:
        total += index_revision(revision_id)
    return total


def _storable(text: str) -> str:
    # PostgreSQL text holds neither NUL nor lone surrogates; the search copy may lose them.
    text = text.replace("\x00", " ")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def uses_postgres() -> bool:
    return connection.vendor == "postgresql"


def apply_search(qs: QuerySet, query: str) -> QuerySet:
    if uses_postgres():
        tsquery = SearchQuery(query, config=CONFIG, search_type="websearch")
        return (
            qs.filter(search_vector=tsquery)
            .annotate(
                rank=SearchRank(F("search_vector"), tsquery),
                headline=SearchHeadline(
                    "search_text",
                    tsquery,
                    config=CONFIG,
                    start_sel=START,
                    stop_sel=STOP,
                    max_fragments=2,
                    max_words=24,
                    min_words=8,
                    fragment_delimiter=" … ",
                ),
                search_query=Value(query),
            )
            .order_by("-rank", "-session__last_activity", "session_id", "seq")
        )
    terms = query_terms(query)
    if not terms:
        return qs.none()
    for term in terms:
        qs = qs.filter(search_text__icontains=term)
    return qs.annotate(search_query=Value(query)).order_by(
        "-session__last_activity", "session_id", "seq"
    )


def query_terms(query: str) -> list[str]:
    """Words of a websearch-style query, without its operators (for the fallback)."""
    words = re.findall(r"[^\s\"]+", query)
    return [w for w in words if w.lower() not in {"or", "and"} and not w.startswith("-")]


def snippet_html(entry) -> SafeString:  # type: ignore[no-untyped-def]
    headline = getattr(entry, "headline", None)
    if headline is None:
        terms = query_terms(getattr(entry, "search_query", ""))
        headline = _python_headline(entry.search_text, terms)
    html = escape(headline).replace(START, "<mark>").replace(STOP, "</mark>")
    return mark_safe(html)  # escaped above; only our markers become tags


def _python_headline(text: str, terms: list[str]) -> str:
    if not terms:
        return text[: 2 * SNIPPET_RADIUS]
    pattern = re.compile("|".join(re.escape(t) for t in terms), re.IGNORECASE)
    match = pattern.search(text)
    if match is None:
        return text[: 2 * SNIPPET_RADIUS]
    start = max(0, match.start() - SNIPPET_RADIUS)
    end = min(len(text), match.end() + SNIPPET_RADIUS)
    window = text[start:end]
    marked = pattern.sub(lambda m: f"{START}{m.group(0)}{STOP}", window)
    return ("… " if start else "") + marked + (" …" if end < len(text) else "")


def entry_search_text(entry: dict) -> str:
    """The words of an entry worth finding: message text, thinking, tool calls and tool results,
    bash commands and output, summaries, custom messages, names and labels."""
    parts: list[str] = []
    budget = [MAX_SEARCH_CHARS]

    def add(text: object) -> None:
        if isinstance(text, str) and text and budget[0] > 0:
            parts.append(text[: budget[0]])
            budget[0] -= len(text) + 1

    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if isinstance(message, dict):
            _message_text(message, add)
    elif kind in ("compaction", "branch_summary"):
        add(entry.get("summary"))
    elif kind == "custom_message":
        _content_text(entry.get("content"), add)
    elif kind == "session_info":
        add(entry.get("name"))
    elif kind == "label":
        add(entry.get("label"))
    elif kind == "model_change":
        add(f"{entry.get('provider')} {entry.get('modelId')}")
    elif kind not in ("thinking_level_change",):
        # custom, context_edit (Pi 1.x) and unknown types: every string they carry.
        _all_strings({k: v for k, v in entry.items() if k not in _ENVELOPE}, add)
    return "\n".join(parts)


_ENVELOPE = frozenset({"type", "id", "parentId", "timestamp"})


def _message_text(message: dict, add) -> None:  # type: ignore[no-untyped-def]
    role = message.get("role")
    if role == "bashExecution":
        add(message.get("command"))
        add(message.get("output"))
        return
    _content_text(message.get("content"), add)
    if role == "assistant":
        add(message.get("errorMessage"))


def _content_text(content: object, add) -> None:  # type: ignore[no-untyped-def]
    if isinstance(content, str):
        add(content)
        return
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            add(block.get("text"))
        elif kind == "thinking":
            add(block.get("thinking"))
        elif kind == "toolCall":
            add(block.get("name"))
            arguments = block.get("arguments")
            if isinstance(arguments, dict):
                _all_strings(arguments, add)


def _all_strings(value: object, add, depth: int = 0) -> None:  # type: ignore[no-untyped-def]
    if depth > 20:
        return
    if isinstance(value, str):
        add(value)
    elif isinstance(value, dict):
        for item in value.values():
            _all_strings(item, add, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _all_strings(item, add, depth + 1)
