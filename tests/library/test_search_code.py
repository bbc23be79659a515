"""Search that finds code: identifier parts, substrings (pg_trgm), scopes, where a hit is."""

from __future__ import annotations

import pytest
from django.contrib.postgres.search import SearchQuery
from django.db import DataError, connection
from django.urls import reverse

from contextlab.library.importer import import_session_file
from contextlab.library.models import Entry, SearchWord, Session
from contextlab.library.search import (
    _counted_from_the_index,
    identifier_parts,
    index_revision,
    snippet_html,
    split_query,
    substring_match,
)
from contextlab.library.selectors import search_entries
from tests.library.conftest import chain, header, message, tool_result

pytestmark = pytest.mark.django_db

CODE = "const data = binding.readFileUtf8(path); obj.method(); read_file_utf8(x) HTMLParser"


@pytest.fixture
def session(write_session) -> Session:
    summary = {
        "type": "compaction",
        "id": "c0000001",
        "parentId": "t0000001",
        "timestamp": "2026-01-02T10:00:03.000Z",
        "summary": "The user works on the parseHeaderLine helper.",
        "firstKeptEntryId": "t0000001",
        "tokensBefore": 1000,
    }
    after = message("u0000001", "c0000001", "user", "now fix the sortEntries function")
    side = message("b0000001", "e0000002", "user", "a branch asking about megapelicanfoo")
    path = write_session(
        header(), *chain(4), tool_result("t0000001", "e0000003", CODE), summary, after, side
    )
    return Session.objects.get(session_id=import_session_file(path=path).session_id)


def _ids(query: str, **scope) -> list[str]:
    return sorted(h.entry_id for h in search_entries(query, **scope))


def test_identifiers_are_split_into_their_parts() -> None:
    # The humps of camelCase identifiers (the pieces between `.`, `(` and so on PostgreSQL
    # finds in the vector: they are not repeated here).
    text = "x = binding.readFileUtf8(path); new HTMLParser(readFileUtf8)"
    assert identifier_parts(text) == ("HTML Parser read File Utf8", "HTMLParser readFileUtf8")
    # Plain words, snake_case and dotted lower-case names need nothing more than the parser.
    assert identifier_parts("plain words plain read_file_utf8 obj.method") == ("", "")
    assert split_query("readFileUtf8") == "read File Utf8"
    assert split_query('"a phrase" -notThis snake_case') == '"a phrase" -notThis snake case'
    assert split_query("pelicans") is None


@pytest.mark.parametrize(
    "query",
    [
        "readFileUtf8",
        "readfileutf8",
        "binding.readFileUtf8",
        "binding",
        "utf8",
        "method",
        "obj.method",
        "read_file_utf8",
        "HTMLParser",
        "parser",
        "readFile",
    ],
)
def test_it_finds_code_by_identifiers_and_their_parts(session, query) -> None:
    assert "t0000001" in _ids(query)


@pytest.mark.parametrize("query", ["eadFileUt", "ding.readF", "TMLPars"])
def test_it_finds_pieces_of_tokens_by_substring(session, query) -> None:
    assert _ids(query) == ["t0000001"]


def test_substring_search_uses_the_trigram_index(session) -> None:
    # A library's worth of words; a handful of entries, which the planner would rather scan
    # (on a large table it would not).
    SearchWord.objects.bulk_create(SearchWord(word=f"filler{n:06d}word") for n in range(20_000))
    with connection.cursor() as cursor:
        # As index_revision leaves it: the words merged into the index proper.
        cursor.execute("SELECT gin_clean_pending_list('library_searchword_trgm')")
        cursor.execute("ANALYZE library_searchword")
        cursor.execute("SET enable_seqscan TO off")
        cursor.execute("SET enable_indexscan TO off")
        try:
            plan = Entry.objects.filter(substring_match(["eadfileut"])).explain()
        finally:
            cursor.execute("RESET enable_seqscan")
            cursor.execute("RESET enable_indexscan")
    # The library's words under the trigram index, then the entries under the vectors' index.
    assert "Bitmap Index Scan on library_searchword_trgm" in plan, plan
    assert "Bitmap Index Scan on library_entry_search_vector" in plan


def _seqscan() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('enable_seqscan')")
        return cursor.fetchone()[0]


def test_the_hits_of_words_are_counted_from_the_index_not_by_reading_vectors(session) -> None:
    words = SearchQuery("pelicans", config="english", search_type="websearch")
    with _counted_from_the_index("pelicans", None):
        assert _seqscan() == "off"
        plan = Entry.objects.filter(search_vector=words).values("id")[:1001].explain()
    assert "Seq Scan on library_entry" not in plan, plan
    assert "library_entry_search_vector" in plan, plan
    # Put back for the rest of the transaction (here the test's own).
    assert _seqscan() == "on"


@pytest.mark.parametrize("query", ['"context window"', "retry_timeout", "-pelicans foo-bar"])
def test_a_phrase_is_counted_as_the_planner_chooses(session, query) -> None:
    # Each hit of a phrase is read for its positions either way; a scan stops at 1,001.
    with _counted_from_the_index(query, split_query(query)):
        assert _seqscan() == "on"


def test_the_words_of_indexed_entries_are_stored_once_for_substring_search(session) -> None:
    words = set(SearchWord.objects.values_list("word", flat=True))
    # Pieces of dotted tokens and camelCase identifiers as written (lower case), the text's
    # words as the vector holds them (stemmed), none shorter than a trigram, no dotted token.
    assert {"binding", "readfileutf8", "htmlparser", "method", "parseheaderline"} <= words
    assert "pelican" in words and "megapelicanfoo" in words
    assert not [w for w in words if len(w) < 3 or "." in w or "(" in w]
    count = len(words)
    Entry.objects.filter(session=session).update(search_indexed=False)
    index_revision(session.current_revision_id)
    assert SearchWord.objects.count() == count  # indexing again adds no row


def test_substring_search_takes_over_when_words_find_nothing(session, owner_client) -> None:
    # "megapelicanfoo" holds "pelican" only inside a word: words find e0000000.. first.
    assert "b0000001" not in _ids("pelican")
    assert "b0000001" in _ids("pelican", substring=True)
    assert _ids("elicanfo") == ["b0000001"]
    html = owner_client.get(reverse("library:search"), {"q": "elicanfo"}).content.decode()
    assert "No word matches" in html and "mega<mark>pelicanfo</mark>o" not in html
    assert "mega<mark>elicanfo</mark>" not in html and "<mark>elicanfo</mark>" in html
    forced = owner_client.get(
        reverse("library:search"), {"q": "pelican", "match": "substring"}
    ).content.decode()
    assert 'data-entry-id="b0000001"' in forced and "Searched inside words" in forced


def test_many_hits_are_listed_newest_first_without_ranking(session, monkeypatch):
    from contextlab.library import search

    monkeypatch.setattr(search, "RANK_LIMIT", 2)
    hits = list(search_entries("pelicans"))
    assert len(hits) > 2 and not hasattr(hits[0], "rank")
    # The most recently stored first (read backwards from the primary key, no sort of all hits).
    assert [h.pk for h in hits] == sorted((h.pk for h in hits), reverse=True)


def test_it_searches_within_one_session_and_within_an_open_context(
    session, owner_client, write_session
) -> None:
    import_session_file(path=write_session(header(id="s-other"), *chain(2), name="other.jsonl"))
    assert len({h.session_id for h in search_entries("pelicans")}) == 2
    assert {h.session_id for h in search_entries("pelicans", session=session)} == {session.pk}
    url = reverse("library:search")
    # The context of u0000001 starts at the compaction: its summary and the kept tool result.
    html = owner_client.get(
        url,
        {
            "q": "readFileUtf8 or parseHeaderLine or pelicans",
            "session": session.pk,
            "entry": "u0000001",
        },
    ).content.decode()
    assert 'data-entry-id="t0000001"' in html and 'data-entry-id="c0000001"' in html
    assert 'data-entry-id="e0000000"' not in html  # summarised away: not in this context
    assert 'data-entry-id="b0000001"' not in html  # another branch
    whole = owner_client.get(
        url,
        {
            "q": "pelicans or megapelicanfoo",
            "session": session.pk,
            "entry": "u0000001",
            "within": "session",
        },
    ).content.decode()
    assert 'data-entry-id="e0000000"' in whole and 'data-entry-id="b0000001"' in whole
    assert (
        owner_client.get(url, {"q": "x", "session": session.pk, "entry": "nope"}).status_code == 404
    )


def test_hits_say_where_they_are(session, owner_client) -> None:
    html = owner_client.get(
        reverse("library:search"), {"q": "readFileUtf8 or parseHeaderLine or sortEntries"}
    ).content.decode()
    assert html.count('class="badge hit-place"') == 3
    for place in ("tool result", "compaction summary", "user message"):
        assert f'<span class="badge hit-place">{place}</span>' in html
    # The identifier is marked in the snippet although the text parser saw one token.
    assert "binding.<mark>readFileUtf8</mark>(path)" in html


def test_an_outsider_cannot_search_a_restricted_session(session, client, outsider, owner) -> None:
    session.project.memberships.create(user=owner, role="owner")
    client.force_login(outsider)
    response = client.get(reverse("library:search"), {"q": "pelicans", "session": session.pk})
    assert response.status_code == 404
    assert Entry.objects.filter(session=session).exists()


def test_a_substring_hit_after_the_first_page_of_rows_is_found(write_session) -> None:
    tail = message("z0000001", "e0000011", "user", "the very last one: xyzzyQuux")
    path = write_session(header(id="many"), *chain(12), tail, name="many.jsonl")
    import_session_file(path=path)
    assert [h.entry_id for h in search_entries("yzzyQu", limit=3)] == ["z0000001"]


def test_the_whole_identifier_ranks_first_and_a_hit_on_its_parts_shows_them_marked(
    write_session,
) -> None:
    from contextlab.library.search import snippet_html

    parts_only = tool_result("t0000002", "e0000003", 'const c = fs.readFileSync(c, "utf8"); ' * 3)
    whole = tool_result("t0000003", "t0000002", "return binding.readFileUtf8(path)")
    path = write_session(header(), *chain(4), parts_only, whole)
    import_session_file(path=path)
    hits = list(search_entries("readFileUtf8"))
    assert [h.entry_id for h in hits][:2] == ["t0000003", "t0000002"]
    snippets = {h.entry_id: str(snippet_html(h)) for h in hits}
    assert "<mark>readFileUtf8</mark>" in snippets["t0000003"]
    # Found by its parts only: the parts are marked, never a snippet with nothing marked.
    assert "<mark>" in snippets["t0000002"]
    assert "<mark>read</mark>" in snippets["t0000002"].replace(
        "<mark>Read</mark>", "<mark>read</mark>"
    )
    assert "<mark>utf8</mark>" in snippets["t0000002"].lower()


@pytest.mark.parametrize(
    ("query", "shown"),
    [
        # As typed, far into a long text: the words around it, marked.
        ("Zanzibar", "the <mark>Zanzibar</mark> quay"),
        # In lower case only.
        ("ZANZIBAR", "<mark>zanzibar</mark> harbour"),
        # A part of a compound word, where the whole is nowhere.
        ("loadZanzibarCargo", "<mark>load</mark><mark>Cargo</mark>For<mark>Zanzibar</mark>"),
        # Found by its stem alone: the text's first lines.
        ("moorings", "filler words open the file"),
    ],
)
def test_a_snippet_is_cut_where_the_word_stands_in_a_long_text(write_session, query, shown) -> None:
    filler = " ".join(f"w{n}" for n in range(12_000))  # ~80 KB before and after
    text = (
        f"filler words open the file {filler} the Zanzibar quay zanzibar harbour"
        f" loadCargoForZanzibar(x) moored {filler}"
    )
    import_session_file(
        path=write_session(header(), *chain(1), tool_result("t1", "e0000000", text))
    )
    hits = [h for h in search_entries(query) if h.entry_id == "t1"]
    html = str(snippet_html(hits[0]))
    assert shown in html, html
    assert len(html) < 1000


def test_a_count_cut_short_inside_a_transaction_raises_its_own_error(session) -> None:
    # (A cancelled statement, say.) The caller's transaction is rolled back with the setting:
    # nothing more is asked of the aborted transaction, which would answer with an error of its
    # own instead of this one.
    with (
        pytest.raises(DataError),
        _counted_from_the_index("pelicans", None),
        connection.cursor() as cursor,
    ):
        cursor.execute("SELECT 1 / 0")
