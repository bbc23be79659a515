"""Full-text search over entry text: PostgreSQL tsvector where available, LIKE on SQLite.

Highlighting uses private-use code points as markers so the stored text can be HTML-escaped first
and the markers turned into <mark> afterwards: ts_headline itself does not escape its input.
"""

from __future__ import annotations

import operator
import queue
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import reduce
from html import escape
from typing import TYPE_CHECKING, Any

import psycopg
from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.search import (
    SearchHeadline,
    SearchQuery,
    SearchRank,
    SearchVectorField,
)
from django.db import connection, transaction
from django.db.models import Case, F, Func, Lookup, Q, QuerySet, TextField, Value, When
from django.db.models.expressions import RawSQL
from django.utils.safestring import SafeString, mark_safe

if TYPE_CHECKING:
    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.db.models.sql.compiler import SQLCompiler

from contextlab.db import json_texts
from contextlab.library.models import Entry, Project, ProjectMembership, Session, SessionRevision
from contextlab.library.storage.values import loads_entry

START, STOP = "\ue000", "\ue001"
CONFIG = "english"
# tsvector holds at most 1 MB; entries are capped well below so one huge tool result cannot fail
# an import, and the cap keeps indexing cost bounded on multi-GB sessions.
MAX_SEARCH_CHARS = 100_000
SNIPPET_RADIUS = 90


INDEX_BATCH = 100
# Words of the substring table: shorter ones could hold no search term (a term needs a trigram),
# longer ones are data (base64, hashes) rather than words, and a btree key has a size limit.
MIN_WORD, MAX_WORD = 3, 200

# What a batch of entries gets, in one statement (PostgreSQL's text parser is what indexing
# waits for: the text is parsed once, the parts only once more, and nothing is parsed per word):
# - `search_vector`: the text's words, then the parts of its identifiers. PostgreSQL's parser
#   keeps `binding.readFileUtf8` and `src/foo_bar.py` as single (host, file) tokens; those
#   lexemes, found in the vector itself, are cut at their `.`, `/`, `:` and `@` here. The humps
#   of camelCase identifiers (`readFileUtf8` -> read File Utf8) need the text's letter case,
#   which the vector has lost: they come from Python (identifier_parts), with the identifiers.
# - `library_searchword`: the words of the vector and those parts, once for the whole library,
#   for substring search; each batch adds only the words not there yet.
UPDATE_SQL = f"""
WITH u AS (
    UPDATE library_entry AS e
    SET search_text = x.text,
        search_vector = x.vec || to_tsvector(%(config)s::regconfig, c.pieces || ' ' || x.humps),
        search_indexed = true
    FROM (
        -- OFFSET 0: parsed once per entry, not once per use of `vec` below.
        SELECT y.*, to_tsvector(%(config)s::regconfig, y.text) AS vec
        FROM unnest(%(ids)b::bigint[], %(texts)b::text[], %(humps)b::text[], %(camel)b::text[])
            AS y(id, text, humps, camel)
        OFFSET 0
    ) AS x,
    LATERAL (
        SELECT coalesce(string_agg(translate(l, '.:/@', '    '), ' '), '') AS pieces
        FROM unnest(tsvector_to_array(x.vec)) AS l
        WHERE l ~ '[.:/@]'
    ) AS c
    WHERE e.id = x.id
    RETURNING e.search_vector, c.pieces || ' ' || lower(x.camel) AS surface
)
INSERT INTO library_searchword (word)
SELECT w FROM (
    SELECT l AS w FROM u, unnest(tsvector_to_array(u.search_vector)) AS l
    UNION
    SELECT unnest(string_to_array(u.surface, ' ')) FROM u
) AS words
WHERE length(w) BETWEEN {MIN_WORD} AND {MAX_WORD} AND w !~ '[-.:/@\\\\'' ]'
    AND NOT EXISTS (SELECT FROM library_searchword AS known WHERE known.word = w)
ORDER BY w
ON CONFLICT DO NOTHING
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
            rows = _unindexed(revision_id, last_seq, batch)
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
    if postgres and total:
        # New words wait in the trigram index's pending list, which every substring search
        # would read through: merged now, while this indexer's work is fresh in memory.
        with connection.cursor() as cursor:
            cursor.execute("SELECT gin_clean_pending_list('library_searchword_trgm')")
    if postgres and total >= ANALYZE_AFTER and not connection.in_atomic_block:
        # Fresh statistics for the planner: right after a large import it still believes the
        # revision holds a few rows, and filters all of them by their vectors (1.4 s over a
        # 1 GB session) instead of asking the full-text and trigram indexes. The small tables
        # every search joins too: autovacuum never analyzes a table of a few rows (its
        # threshold is 50 changed), and without statistics the planner takes "the current
        # revision" to select 1 entry in 80, so it sorts every hit of a common phrase instead
        # of reading the newest entries backwards until it has a page (265 ms -> 8 ms for
        # `"context window"` over 1 GB).
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {', '.join(_analyzed_tables())}")
    return total


ANALYZE_AFTER = 5000


def _unindexed(revision_id: int, after_seq: int, batch: int) -> list[tuple[int, int, Any]]:
    """(id, seq, data) of the next `batch` entries of the revision without search text: the
    stored JSON decoded by orjson (three times json's speed; the entries' JSON is most of what
    the indexing process itself spends), by json or the engine's parse where orjson refuses a
    value (an integer past 64 bits, 1,024 levels of nesting)."""
    entries = Entry.objects.filter(revision_id=revision_id, search_indexed=False, seq__gt=after_seq)
    rows = json_texts(entries.order_by("seq")[:batch], ("id", "seq"), "data")
    return [(pk, seq, loads_entry(raw)) for pk, seq, raw in rows]


# What every search reads besides the entries: a library's handful of revisions, sessions,
# projects and memberships.
def _analyzed_tables() -> list[str]:
    models = (Entry, SessionRevision, Session, Project, ProjectMembership)
    return [connection.ops.quote_name(model._meta.db_table) for model in models]


def _parallel_ok(postgres: bool) -> bool:
    # Other connections cannot see rows of a transaction still open here (a caller's atomic
    # block, a test's): then everything goes through this one.
    return postgres and settings.CONTEXTLAB_INDEX_WORKERS > 1 and not connection.in_atomic_block


def _store(postgres: bool, ids: list[int], texts: list[str]) -> None:
    if postgres:
        parts = [identifier_parts(text) for text in texts]
        params = {
            "config": CONFIG,
            "ids": ids,
            "texts": texts,
            "humps": [humps for humps, _ in parts],
            "camel": [camel for _, camel in parts],
        }
        with transaction.atomic():
            connection.ensure_connection()
            # psycopg's own cursor, not Django's: with DEBUG on, Django's would keep every batch
            # of texts in connection.queries (hundreds of MB over a large session). And one
            # that binds on the server: the texts go as parameters, where Django's client-side
            # binding would quote megabytes of text into the statement in Python, and
            # PostgreSQL would scan them back out of it.
            with psycopg.Cursor(connection.connection) as raw:
                # Vectors can always be recomputed: no need to wait for the WAL flush.
                raw.execute("SET LOCAL synchronous_commit TO OFF")
                raw.execute(UPDATE_SQL, params)
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

# PostgreSQL's parser keeps `binding.readFileUtf8(path` as one host-like token and
# `readFileUtf8` as one word, so no part of either could be found. The vector gets the pieces of
# such tokens (UPDATE_SQL finds them among its lexemes) and the humps of camelCase identifiers,
# and queries are split the same way (split_query).
_SEPARATORS = re.compile(r"[^0-9A-Za-z\u00c0-\uffff]+")
_HUMPS = re.compile(r"[A-Z]+(?![a-z])[0-9]*|[A-Z]?[a-z\u00df-\u00ff]+[0-9]*|[0-9]+")
_COMPOUND = re.compile(r"[^0-9A-Za-z\s]|[a-z][A-Z]|[A-Z]{2}[a-z]")
# The text's shape: each ASCII letter as `a` or `A`, digits as `0`, any other ASCII character as
# a space (str.translate does this at memory speed; a regular expression looking for humps in
# the text took longer than PostgreSQL's whole parse of it).
_SHAPE = str.maketrans(
    {
        **{chr(c): " " for c in range(128)},
        **{chr(c): "a" for c in range(ord("a"), ord("z") + 1)},
        **{chr(c): "A" for c in range(ord("A"), ord("Z") + 1)},
        **{chr(c): "0" for c in range(ord("0"), ord("9") + 1)},
    }
)


def camel_identifiers(text: str) -> set[str]:
    """The camelCase identifiers of `text` (`readFileUtf8`, `HTMLParser`), each once: runs of
    letters and digits with a hump (a lower-case letter before a capital, or two capitals before
    a lower-case letter)."""
    shape = text.translate(_SHAPE)
    found: set[str] = set()
    for hump in ("aA", "AAa"):
        at = shape.find(hump)
        while at >= 0:
            start = shape.rfind(" ", 0, at) + 1
            end = shape.find(" ", at)
            if end < 0:
                end = len(shape)
            found.add(text[start:end])
            at = shape.find(hump, end)
    return found


def identifier_parts(text: str) -> tuple[str, str]:
    """(the humps of the camelCase identifiers of `text`, those identifiers), each as words, each
    word once: `read File Utf8`, `readFileUtf8`. The humps go into the vector (the identifier is
    there already: the parser keeps it as a word, or as a piece of a dotted token); the
    identifiers, as written, into the words of substring search. The pieces between separators
    (`binding`, `path` of `binding.readFileUtf8(path`) are not here: PostgreSQL finds those in
    the vector (UPDATE_SQL)."""
    identifiers = " ".join(sorted(camel_identifiers(text)))
    return " ".join(dict.fromkeys(_HUMPS.findall(identifiers))), identifiers


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


def compound_parts(query: str) -> list[str]:
    """The humps of the query's compound words (`readFileUtf8`: read, File, Utf8), for marking
    what a hit on those parts holds when it lacks the whole identifier; pieces of one or two
    letters are left out (they would mark half the snippet)."""
    split = split_query(query)
    if split is None:
        return []
    plain = set(query_terms(query))
    return list(dict.fromkeys(h for h in split.split() if len(h) >= 3 and h not in plain))


def whole_identifiers(query: str) -> list[str]:
    """The query's compound words as typed (`readFileUtf8`, `binding.readFileUtf8`): an entry
    holding one whole ranks above one that only holds its parts somewhere."""
    return [
        word
        for quoted, word in re.findall(r'("[^"]*"?)|(\S+)', query)
        if word and not word.startswith("-") and _COMPOUND.search(word) is not None
    ]


def substring_terms(query: str) -> list[str]:
    """The query's words for substring search, cut at separators as words are (`ding.readF`:
    ding, readf) and in lower case: each must occur inside a word of the entry. Pieces shorter
    than a trigram are left out (the index could not narrow them down); none when a word has no
    longer piece."""
    terms: list[str] = []
    for word in query_terms(query):
        pieces = [p.lower() for p in _SEPARATORS.split(word.strip('"')) if len(p) >= MIN_WORD]
        if not pieces:
            return []
        terms.extend(pieces)
    return list(dict.fromkeys(terms))[:8]


# How many words of the library holding one piece a substring search asks for: a piece that
# common (`ing`) matches more entries than anyone reads, and the query stays quick.
WORDS_PER_PIECE = 1000


@SearchVectorField.register_lookup
class HoldsPiece(Lookup):
    """`search_vector__holds_piece="readf"`: the vector holds a word of the library that contains
    the piece, or its stem (a stemmed word has lost its ending: `migrat`). The words come from
    library_searchword under its trigram index; the entries from the vectors' GIN index."""

    lookup_name = "holds_piece"
    prepare_rhs = False

    def as_sql(
        self, compiler: SQLCompiler, connection: BaseDatabaseWrapper
    ) -> tuple[str, tuple[Any, ...]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        words = (
            "SELECT word FROM library_searchword WHERE word LIKE %s OR word LIKE"
            " '%%' || coalesce((ts_lexize('english_stem', %s))[1], %s) || '%%'"
            f" LIMIT {WORDS_PER_PIECE}"
        )
        sql = (
            f"{lhs} @@ (SELECT to_tsquery(%s::regconfig, string_agg(quote_literal(w.word), '|'))"
            f" FROM ({words}) AS w)"
        )
        piece = str(self.rhs)
        return sql, (*lhs_params, CONFIG, f"%{piece}%", piece, piece)


def substring_match(terms: list[str]) -> Q:
    """Every term inside some word of the entry (terms from substring_terms)."""
    return Q(*[Q(search_vector__holds_piece=t) for t in terms])


# Past this many hits, ranking (ts_rank reads every hit's vector) costs more than it helps: the
# hits are listed newest first instead. Snippets are cut from a window of this many characters
# around the first literal match: ts_headline parses all the text it is given (~50 ms for 100 KB).
RANK_LIMIT = 1000
SNIPPET_WINDOW = 600


# Long on purpose: the query is planned in one place (words, phrases, exclusions, the substring
# fallback, scopes and the ordering past 1,000 hits), each branch reading what the others chose.
def apply_search(
    qs: QuerySet[Entry], query: str, *, substring: bool = False, limit: int = 100
) -> QuerySet[Entry]:
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
        with _counted_from_the_index(query, split):
            found = len(hits.order_by().values_list("id", flat=True)[: RANK_LIMIT + 1])
    if found == 0:
        terms = substring_terms(query)
        if not terms:
            return qs.none()
        hits = qs.filter(substring_match(terms))
    ranked = 0 < found <= RANK_LIMIT
    # A compound word (`readFileUtf8`) also matches an entry that holds only its parts, apart
    # (`readFileSync(c, "utf8")`): the entries holding it whole come first.
    wholes = whole_identifiers(query) if ranked else []
    whole = (
        Case(
            When(
                reduce(operator.or_, (Q(search_text__contains=w) for w in wholes)),
                then=Value(1),
            ),
            default=Value(0),
        )
        if wholes
        else Value(0)
    )
    if ranked:
        hits = hits.annotate(rank=SearchRank(F("search_vector"), tsquery), whole=whole)
        order: tuple[str, ...] = ("-whole", "-rank", "-session__last_activity", "session_id", "seq")
    else:
        # Too many to rank: the most recently stored first, which PostgreSQL reads backwards
        # from the primary key until it has `limit` hits, instead of sorting every hit.
        order = ("-id",)
    # The best `limit` ids first, and only for them the snippet (PostgreSQL would otherwise cut
    # and parse a window of every hit before sorting them).
    best = hits.order_by(*order).values("id")[:limit]
    hits = qs.filter(id__in=best)
    if ranked:
        hits = hits.annotate(rank=SearchRank(F("search_vector"), tsquery), whole=whole)
    first = (query_terms(query) or [""])[0].strip('"')
    headline = SearchHeadline(
        RawSQL("cut", ()),
        tsquery,
        config=CONFIG,
        start_sel=START,
        stop_sel=STOP,
        max_fragments=2,
        max_words=24,
        min_words=8,
        fragment_delimiter=" … ",
    )
    # Without the word as typed, the snippet is cut where its first part stands.
    part = (compound_parts(query) or [""])[0].lower()
    hits = hits.annotate(
        snippet=Snippet(headline, first=first, part=part),
        search_query=Value(query),
        search_mode=Value("words" if found else "substring"),
    )
    return hits.order_by(*order)


@contextmanager
def _counted_from_the_index(query: str, split: str | None) -> Iterator[None]:
    """The hit count of a query of words asks the vectors' GIN index, never a scan of the table.

    PostgreSQL's cost model ignores TOAST: for a word in a third of the entries it expects a
    scan to find 1,001 hits after a few thousand cheap rows, but each row it reads means
    decompressing a vector of up to 1 MB (100 ms over the generated 1 GB, against 4-16 ms from
    the index, where the hits of plain words need no vector read). A phrase (`"context
    window"`, and a word the parser cuts, `retry_timeout`) is left to the planner: each of its
    hits has to be read for the positions either way, and the scan stops at 1,001.
    """
    inside = connection.in_atomic_block
    # No savepoint: an error here ends the caller's transaction as it would without this.
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        # For this transaction only: the count's own, ended by its commit, or the caller's,
        # where it is put back after the count.
        cursor.execute(
            "SELECT set_config('enable_seqscan',"
            " CASE WHEN strpos(q::text, '<') > 0 THEN 'on' ELSE 'off' END, true)"
            " FROM (SELECT websearch_to_tsquery(%s::regconfig, %s)"
            " || websearch_to_tsquery(%s::regconfig, %s) AS q) AS x",
            [CONFIG, query, CONFIG, split or query],
        )
        yield
        # (After an error the caller's transaction is rolled back, and the setting with it.)
        if inside:
            cursor.execute("SET LOCAL enable_seqscan TO DEFAULT")


def query_terms(query: str) -> list[str]:
    """Words of a websearch-style query, without its operators (for the fallback)."""
    words = re.findall(r"[^\s\"]+", query)
    return [w for w in words if w.lower() not in {"or", "and"} and not w.startswith("-")]


class Snippet(Func):
    """[the window of the entry's text around the first word of the query, ts_headline of it].

    Each use of a column of up to 100 KB reads it from TOAST again (PostgreSQL keeps no read
    value between the functions of an expression): where the word stands, as typed or in lower
    case, then the window, then the headline of the window took up to ten reads of every hit's
    text. Here it is read once, into the subquery's `t`, and the headline is made of `cut`.
    A hit whose text holds the word nowhere (a stemmed match) shows its first lines.
    """

    output_field = ArrayField(TextField())

    def __init__(self, headline: SearchHeadline, *, first: str, part: str) -> None:
        super().__init__(F("search_text"), headline)
        self.first, self.part = first, part

    def as_sql(  # type: ignore[override]
        self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra: Any
    ) -> tuple[str, tuple[Any, ...]]:
        text, headline = self.get_source_expressions()
        text_sql, text_params = compiler.compile(text)
        headline_sql, headline_params = compiler.compile(headline)
        if self.first:
            # As typed, then in lower case: lower() of a 100 KB text (~8 ms) would cost more
            # than the search.
            where = "coalesce(nullif(strpos(t, %s), 0), nullif(strpos(t, %s), 0), strpos(t, %s))"
            where_params: tuple[Any, ...] = (
                self.first,
                self.first.lower(),
                self.part or self.first.lower(),
            )
        else:
            where, where_params = "0", ()
        # OFFSET 0 keeps each level a subquery of its own (PostgreSQL would otherwise fold the
        # levels into one expression, and read the column once per use again); `|| ''` makes
        # `t` a value in memory rather than a pointer into TOAST.
        sql = (
            f"(SELECT ARRAY[cut, {headline_sql}] FROM ("
            f"SELECT CASE WHEN p > 0 THEN substr(t, greatest(p - {SNIPPET_WINDOW // 3}, 1),"
            f" {SNIPPET_WINDOW}) ELSE left(t, {SNIPPET_WINDOW * 2}) END AS cut FROM ("
            f"SELECT t, {where} AS p FROM (SELECT {text_sql} || '' AS t OFFSET 0) AS x OFFSET 0"
            ") AS y OFFSET 0) AS z)"
        )
        return sql, (*headline_params, *where_params, *text_params)


def snippet_html(entry: Entry) -> SafeString:
    # From the query (Snippet), or set apart as `snippet_window` and `headline`.
    window, headline = getattr(entry, "snippet", None) or (
        getattr(entry, "snippet_window", None),
        getattr(entry, "headline", None),
    )
    query = getattr(entry, "search_query", "")
    # The parts of a compound word too: a hit on `read … utf8` shows them marked.
    terms = query_terms(query) + compound_parts(query)
    if headline is None or START not in headline:
        # SQLite, or a hit on identifier parts or a substring that ts_headline cannot mark.
        headline = _python_headline(entry.search_text if window is None else window, terms)
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


def entry_search_text(entry: dict[str, Any]) -> str:
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


def _message_text(message: dict[str, Any], add: Callable[[object], None]) -> None:
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


def _content_text(content: object, add: Callable[[object], None]) -> None:
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


def _all_strings(value: object, add: Callable[[object], None], depth: int = 0) -> None:
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
