"""Full-text search over entry text: PostgreSQL tsvector where available, LIKE on SQLite.

Highlighting uses private-use code points as markers so the stored text can be HTML-escaped first
and the markers turned into <mark> afterwards: ts_headline itself does not escape its input.
"""

from __future__ import annotations

import queue
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from html import escape

from django.conf import settings
from django.contrib.postgres.search import (
    SearchHeadline,
    SearchQuery,
    SearchRank,
)
from django.db import connection, transaction
from django.db.models import Case, F, Lookup, Q, QuerySet, TextField, Value, When
from django.db.models.functions import Coalesce, Greatest, Left, NullIf, StrIndex, Substr
from django.utils.safestring import SafeString, mark_safe

from contextlab.library.models import Entry

START, STOP = "\ue000", "\ue001"
CONFIG = "english"
# tsvector holds at most 1 MB; entries are capped well below so one huge tool result cannot fail
# an import, and the cap keeps indexing cost bounded on multi-GB sessions.
MAX_SEARCH_CHARS = 100_000
SNIPPET_RADIUS = 90


INDEX_BATCH = 100

# The vector is the text's words followed by the parts of its identifiers (identifier_parts):
# one parse of both, since PostgreSQL's parser is what indexing waits for.
UPDATE_SQL = """
UPDATE library_entry AS e
SET search_text = v.text,
    search_vector = to_tsvector(%s::regconfig, v.text || E'\\n' || v.parts),
    search_words = v.words,
    search_indexed = true
FROM (
    SELECT unnest(%s::bigint[]) AS id, unnest(%s::text[]) AS text,
           unnest(%s::text[]) AS parts, unnest(%s::text[]) AS words
) AS v
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
    with _indexing_lock(postgres, revision_id) as mine:
        # Another process is indexing this revision (an import, a worker's sweep): it will
        # finish; two would compute and write every row twice.
        return _index_rows(postgres, revision_id, batch) if mine else 0


# Namespace of the advisory locks taken while a revision is indexed (any fixed 32-bit number).
_LOCK_NAMESPACE = 0x5E4C


@contextmanager
def _indexing_lock(postgres: bool, revision_id: int) -> Iterator[bool]:
    """A PostgreSQL session-level advisory lock per revision, released at the end or when the
    process dies (its connection closes): a dead indexer never blocks the next one."""
    if not postgres:
        yield True
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [_LOCK_NAMESPACE, revision_id])
        acquired = bool(cursor.fetchone()[0])
    try:
        yield acquired
    finally:
        if acquired:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [_LOCK_NAMESPACE, revision_id])


def _index_rows(postgres: bool, revision_id: int, batch: int) -> int:
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
    if postgres and total >= ANALYZE_AFTER and not connection.in_atomic_block:
        # Fresh statistics for the planner: right after a large import it still believes the
        # revision holds a few rows, and filters all of them by their vectors (1.4 s over a
        # 1 GB session) instead of asking the full-text and trigram indexes.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE library_entry")
    return total


ANALYZE_AFTER = 5000


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
            parts, words = [], []
            for text in texts:
                tokens = distinct_tokens(text)
                parts.append(identifier_parts(tokens))
                words.append(" ".join(tokens))
            raw.execute(UPDATE_SQL, [CONFIG, ids, texts, parts, words])
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


# ------------------------------------------------------------------------------------------------
# Code in words: identifiers split into their parts
# ------------------------------------------------------------------------------------------------

# PostgreSQL's parser keeps `binding.readFileUtf8` as one host-like token and `read_file_utf8` as
# one word, so no part of either could be found. Each distinct token of an entry is split on
# everything but letters and digits and on camelCase humps; the parts go into the vector after the
# text (once per distinct token: code repeats its identifiers, and the parser's time is what an
# import waits for), and queries are split the same way (split_query).
_SEPARATORS = re.compile(r"[^0-9A-Za-z\u00c0-\uffff]+")
_HUMPS = re.compile(r"[A-Z]+(?![a-z])[0-9]*|[A-Z]?[a-z\u00df-\u00ff]+[0-9]*|[0-9]+")
_COMPOUND = re.compile(r"[^0-9A-Za-z\s]|[a-z][A-Z]|[A-Z]{2}[a-z]")


def distinct_tokens(text: str) -> list[str]:
    """The whitespace-separated tokens of `text`, each once, in order of first appearance."""
    return list(dict.fromkeys(text.split()))


def split_identifier(token: str) -> list[str]:
    """`binding.readFileUtf8(path` -> binding, readFileUtf8, read, File, Utf8, path: each piece
    between separators, and the humps of a camelCase piece after it."""
    out: list[str] = []
    for piece in _SEPARATORS.split(token):
        if not piece:
            continue
        out.append(piece)
        humps = _HUMPS.findall(piece)
        if len(humps) > 1:
            out.extend(humps)
    return out


def identifier_parts(tokens: list[str]) -> str:
    """The distinct parts of `tokens` as words: the pieces between separators, and the humps of
    camelCase pieces. Distinct: the query requires parts, not their order, and every repeat
    would cost the parser time."""
    # One regex pass over the joined tokens (C speed), then work per distinct piece only.
    pieces = dict.fromkeys(_SEPARATORS.split(" ".join(tokens)))
    pieces.pop("", None)
    humps: dict[str, None] = {}
    for piece in pieces:
        if not piece.islower() and not piece.isdigit():
            found = _HUMPS.findall(piece)
            if len(found) > 1:
                humps.update(dict.fromkeys(found))
    return " ".join([*pieces, *humps])


def split_query(query: str) -> str | None:
    """The query with each compound word replaced by its parts (all required), or None when it
    has none. Quoted phrases and negated words are left as they are."""
    out: list[str] = []
    changed = False
    for quoted, word in re.findall(r'("[^"]*"?)|(\S+)', query):
        if quoted or word.startswith("-") or _COMPOUND.search(word) is None:
            out.append(quoted or word)
            continue
        # Every piece's humps (a piece is implied by its humps: requiring them is enough).
        humps = [h for p in _SEPARATORS.split(word) if p for h in (_HUMPS.findall(p) or [p])]
        out.append(" ".join(humps) or word)
        changed = True
    return " ".join(out) if changed else None


def substring_terms(query: str) -> list[str]:
    """The query's words for substring search: each must occur inside a token of the entry.
    None when one of them is shorter than a trigram (the index could not narrow it down)."""
    terms = [t for t in query_terms(query) if t.strip('"')]
    terms = [t.strip('"') for t in terms for t in t.split()]
    if not terms or any(len(t) < 3 for t in terms):
        return []
    return terms[:8]


@TextField.register_lookup
class ILike(Lookup):
    """`field__ilike=pattern`: PostgreSQL's ILIKE, which a pg_trgm index serves (Django's
    icontains compiles to UPPER(...) LIKE UPPER(...), which it does not)."""

    lookup_name = "ilike"

    def as_sql(self, compiler, connection):  # type: ignore[no-untyped-def]
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"{lhs} ILIKE {rhs}", [*lhs_params, *rhs_params]


def substring_match(terms: list[str]) -> Q:
    """Every term inside some token of the entry (`search_words ILIKE '%term%'`)."""
    return Q(*[Q(search_words__ilike=_like_pattern(t)) for t in terms])


def _like_pattern(term: str) -> str:
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


# Past this many hits, ranking (ts_rank reads every hit's vector) costs more than it helps: the
# hits are listed newest first instead. Snippets are cut from a window of this many characters
# around the first literal match: ts_headline parses all the text it is given (~50 ms for 100 KB).
RANK_LIMIT = 1000
SNIPPET_WINDOW = 600


def apply_search(
    qs: QuerySet, query: str, *, substring: bool = False, limit: int = 100
) -> QuerySet:
    """Entries matching `query`: its words (websearch syntax), or the same with identifiers split
    into their parts (`readFileUtf8` finds `binding.readFileUtf8(path`); when words find nothing,
    or with `substring`, every word of it inside a token (under the trigram index).

    On PostgreSQL one cheap query first counts the word hits (up to RANK_LIMIT + 1, from the GIN
    index) to choose between word and substring search and between ranked and newest first.
    At most `limit` hits (on PostgreSQL).
    """
    if not uses_postgres():
        terms = query_terms(query)
        if not terms:
            return qs.none()
        for term in terms:
            qs = qs.filter(search_text__icontains=term)
        return qs.annotate(search_query=Value(query)).order_by(
            "-session__last_activity", "session_id", "seq"
        )
    tsquery = SearchQuery(query, config=CONFIG, search_type="websearch")
    split = split_query(query)
    if split is not None:
        tsquery = tsquery | SearchQuery(split, config=CONFIG, search_type="websearch")
    found = 0
    if not substring:
        hits = qs.filter(search_vector=tsquery)
        found = len(hits.order_by().values_list("id", flat=True)[: RANK_LIMIT + 1])
    if found == 0:
        terms = substring_terms(query)
        if not terms:
            return qs.none()
        hits = qs.filter(substring_match(terms))
    ranked = 0 < found <= RANK_LIMIT
    if ranked:
        hits = hits.annotate(rank=SearchRank(F("search_vector"), tsquery))
        order = ("-rank", "-session__last_activity", "session_id", "seq")
    else:
        # Too many to rank: the most recently stored first, which PostgreSQL reads backwards
        # from the primary key until it has `limit` hits, instead of sorting every hit.
        order = ("-id",)
    # The best `limit` ids first, and only for them the snippet (PostgreSQL would otherwise cut
    # and parse a window of every hit before sorting them).
    best = hits.order_by(*order).values("id")[:limit]
    hits = qs.filter(id__in=best)
    if ranked:
        hits = hits.annotate(rank=SearchRank(F("search_vector"), tsquery))
    first = (query_terms(query) or [""])[0].strip('"')
    # Where the first word of the query stands literally (0: nowhere, e.g. a stemmed match).
    # As typed, then in lower case: lower() of a 100 KB text (~8 ms) would cost more than the
    # search; a hit found otherwise shows its first lines.
    position = (
        Coalesce(
            NullIf(StrIndex("search_text", Value(first)), Value(0)),
            StrIndex("search_text", Value(first.lower())),
        )
        if first
        else Value(0)
    )
    hits = hits.alias(_position=position).annotate(
        snippet_window=Case(
            When(
                _position__gt=0,
                then=Substr(
                    "search_text",
                    Greatest(F("_position") - SNIPPET_WINDOW // 3, Value(1)),
                    Value(SNIPPET_WINDOW),
                ),
            ),
            default=Left("search_text", SNIPPET_WINDOW * 2),
        )
    )
    hits = hits.annotate(
        headline=SearchHeadline(
            "snippet_window",
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
        search_mode=Value("words" if found else "substring"),
    )
    return hits.order_by(*order)


def query_terms(query: str) -> list[str]:
    """Words of a websearch-style query, without its operators (for the fallback)."""
    words = re.findall(r"[^\s\"]+", query)
    return [w for w in words if w.lower() not in {"or", "and"} and not w.startswith("-")]


def snippet_html(entry) -> SafeString:  # type: ignore[no-untyped-def]
    headline = getattr(entry, "headline", None)
    terms = query_terms(getattr(entry, "search_query", ""))
    if headline is None or START not in headline:
        # SQLite, or a hit on identifier parts or a substring that ts_headline cannot mark.
        text = getattr(entry, "snippet_window", None)
        headline = _python_headline(entry.search_text if text is None else text, terms)
    else:
        # ts_headline marks whole tokens of its parser: `readFileUtf8` inside
        # `binding.readFileUtf8(` is none. The query's words are marked where they stand too.
        headline = _mark_terms(headline, terms)
    html = escape(headline).replace(START, "<mark>").replace(STOP, "</mark>")
    return mark_safe(html)  # escaped above; only our markers become tags


def _mark_terms(headline: str, terms: list[str]) -> str:
    terms = [t.strip('"') for t in terms if len(t.strip('"')) >= 3]
    if not terms:
        return headline
    pattern = re.compile("|".join(re.escape(t) for t in terms), re.IGNORECASE)
    # Only outside the marks already there (odd pieces of this split are marked text).
    pieces = re.split(f"({START}.*?{STOP})", headline)
    return "".join(
        piece if n % 2 else pattern.sub(lambda m: f"{START}{m.group(0)}{STOP}", piece)
        for n, piece in enumerate(pieces)
    )


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
    bash commands and output, summaries, custom messages, names and labels; for Pi 1.x, the
    sections and tools of system messages and the text a context edit puts in."""
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
    elif kind == "context_edit":
        # Pi 1.x: the replacement's text (an omission carries none).
        replacement = entry.get("replacement")
        if isinstance(replacement, dict):
            _content_text(replacement.get("content"), add)
    elif kind not in ("thinking_level_change",):
        # custom, usage (Pi 1.x) and unknown types: every string they carry.
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
    elif role == "system":
        # Pi 1.x's persisted prompt: its sections, and the tools it declares.
        sections = message.get("sections")
        if isinstance(sections, dict):
            for text in sections.values():
                add(text)
        tools = message.get("toolsAdded")
        for tool in tools if isinstance(tools, list) else ():
            if isinstance(tool, dict):
                add(tool.get("name"))
                add(tool.get("description"))


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
