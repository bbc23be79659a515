"""Bounded pages and memory: one huge message is rendered in part (the rest behind "show all"),
the compact preview never renders whole requests, and the per-process index cache is bounded by
bytes, not by sessions."""

from __future__ import annotations

import io
import uuid

import orjson
import pytest

from contextlab.inspector import selectors
from contextlab.library.importer import import_session_file
from contextlab.library.models import Session
from tests.library.conftest import chain, header, lines, message

pytestmark = pytest.mark.django_db

BIG = 300_000


@pytest.fixture(autouse=True)
def _fresh_index(blob_dir):
    selectors.clear_cache()
    yield
    selectors.clear_cache()


def _import(*objects) -> Session:
    data = lines(*objects)
    result = import_session_file(fileobj=io.BytesIO(data), name=f"{uuid.uuid4()}.jsonl")
    assert result.session is not None
    return result.session


def _big_session() -> Session:
    big = message("big00001", "e0000001", "toolResult", "é" * BIG, toolName="read")
    return _import(header(id=str(uuid.uuid4())), *chain(2), big)


def _tool_results(count: int, chars: int) -> Session:
    """A session of `count` tool results of `chars` characters each, one after the other
    (entries t0000000...), after two messages."""
    objects = [header(id=str(uuid.uuid4())), *chain(2)]
    parent = "e0000001"
    for n in range(count):
        objects.append(message(f"t{n:07d}", parent, "toolResult", "x" * chars, toolName="read"))
        parent = f"t{n:07d}"
    return _import(*objects)


def test_a_huge_message_is_rendered_in_part_with_show_all(owner_client, settings):
    settings.CONTEXTLAB_MESSAGE_RENDER_CHARS = 10_000
    session = _big_session()
    page = owner_client.get(f"/sessions/{session.pk}/?entry=big00001").content.decode()
    assert "é" * 10_000 in page and "é" * 10_001 not in page
    assert f"{BIG - 10_000} more characters not shown" in page
    assert len(page) < 200_000
    full = owner_client.get(f"/sessions/{session.pk}/message/?entry=big00001&all=1")
    assert "é" * BIG in full.content.decode()
    part = owner_client.get(f"/sessions/{session.pk}/message/?entry=big00001").content.decode()
    assert "é" * 10_001 not in part and "all=1" in part


def test_the_compact_preview_renders_no_whole_request(owner_client, settings):
    settings.CONTEXTLAB_MESSAGE_RENDER_CHARS = 5_000
    session = _big_session()
    response = owner_client.get(
        f"/sessions/{session.pk}/compact/?leaf=big00001&keepRecentTokens=10"
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert "é" * 5_001 not in page
    assert len(page) < 100_000


def test_the_index_cache_is_bounded_by_bytes_not_sessions(settings):
    first = _import(header(id=str(uuid.uuid4())), *chain(400))
    second = _import(header(id=str(uuid.uuid4())), *chain(400))
    selectors.session_index(first)
    one = selectors.cache_bytes()
    assert one > 400 * 100
    settings.CONTEXTLAB_INDEX_CACHE_BYTES = int(one * 1.5)
    selectors.session_index(second)  # two would be over the budget: the older one goes
    assert selectors.cache_bytes() <= settings.CONTEXTLAB_INDEX_CACHE_BYTES
    assert list(selectors._cache) == [selectors.index_key(second)]


def test_an_entry_larger_than_the_cache_allows_is_used_but_not_kept(settings):
    session = _big_session()
    index = selectors.session_index(session)
    settings.CONTEXTLAB_INDEX_CACHE_BYTES = 4 * 100_000  # a quarter (100 kB) per index
    found = index.fetch(session, ["big00001", "e0000000"])
    assert set(found) == {"big00001", "e0000000"}
    kept = {entry["id"] for entry in index.entries.values()}
    assert "big00001" not in kept and "e0000000" in kept
    assert index.entry_bytes <= 100_000


def test_the_projections_an_index_keeps_count_against_the_cache_budget(owner_client, settings):
    session = _tool_results(40, 250_000)
    budget = 2_000_000
    settings.CONTEXTLAB_INDEX_CACHE_BYTES = budget
    for n in range(28, 40):  # each leaf's projection holds its whole path: 7 to 10 MB
        response = owner_client.get(f"/sessions/{session.pk}/?entry=t{n:07d}&tab=context")
        assert response.status_code == 200
        index = selectors.session_index(session)
        kept = [value for key, value in index.memo.items() if key[0] == "projection"]
        held = sum(len(orjson.dumps(entry)) for value in kept for entry in value[0])
        assert held <= selectors.cache_bytes() <= budget
    # Small projections are still kept: the tab switch reuses the one just computed.
    settings.CONTEXTLAB_INDEX_CACHE_BYTES = 200_000_000
    owner_client.get(f"/sessions/{session.pk}/?entry=t0000001&tab=context")
    index = selectors.session_index(session)
    assert any(key[:2] == ("projection", "t0000001") for key in index.memo)
    assert selectors.cache_bytes() > 500_000


@pytest.mark.parametrize("tab", ["json", "entry"])
def test_the_json_and_entry_tabs_render_a_huge_message_in_part(owner_client, settings, tab):
    settings.CONTEXTLAB_MESSAGE_RENDER_CHARS = 10_000
    session = _big_session()
    url = f"/sessions/{session.pk}/?entry=big00001&tab={tab}"
    page = owner_client.get(url).content.decode()
    assert "é" * 10_001 not in page  # (the JSON tab starts with the system prompt)
    assert "more characters not shown (CONTEXTLAB_MESSAGE_RENDER_CHARS)" in page
    assert f"tab={tab}&amp;all=1" in page
    assert len(page) < 200_000
    whole = owner_client.get(url + "&all=1").content.decode()
    assert "é" * BIG in whole and "more characters not shown" not in whole
    # A small entry is shown whole, with no notice.
    small = owner_client.get(f"/sessions/{session.pk}/?entry=e0000001&tab={tab}")
    assert "more characters not shown" not in small.content.decode()


def test_the_size_of_a_kept_value_is_its_json_and_a_value_too_deep_for_json_is_walked():
    entry = {"type": "message", "message": {"role": "user", "content": [{"text": "x" * 5000}]}}
    value = ([entry, entry], {"ids": frozenset({"a", "b"})}, ("tuple", 1, None))
    assert selectors.estimated_size(value) >= len(orjson.dumps([entry, entry]))
    deep: list = []
    for _ in range(1000):  # orjson stops at 255 levels
        deep = [deep]
    assert selectors.estimated_size(deep) == selectors.walked_size(deep) > 1000 * 50


def test_what_an_index_keeps_besides_itself_goes_before_other_sessions_indexes(settings):
    """A session whose fetched entries fill the cache must not push every other session's
    index out: the entries are fetched again cheaply, an index is not loaded again cheaply."""
    small = _import(header(id=str(uuid.uuid4())), *chain(50))
    large = _import(header(id=str(uuid.uuid4())), *chain(400))
    small_index = selectors.session_index(small)
    large_index = selectors.session_index(large)
    bases = selectors.cache_bytes()
    settings.CONTEXTLAB_INDEX_CACHE_BYTES = bases + 30_000
    large_index.fetch(large, list(large_index.items))  # ~80 kB of entries: over the budget
    assert list(selectors._cache) == [selectors.index_key(small), selectors.index_key(large)]
    assert selectors.cache_bytes() <= settings.CONTEXTLAB_INDEX_CACHE_BYTES
    assert small_index is selectors.session_index(small)  # still cached, not loaded again


def test_the_json_tab_shows_the_head_of_the_whole_request_and_counts_the_rest(settings):
    """The JSON tab writes a long request only as far as it shows it: what it shows is the
    whole text's head, and the notice counts exactly what the whole text has after it."""
    from contextlab.inspector.services import inspect_entry

    objects = [header(id=str(uuid.uuid4())), *chain(30)]
    objects.append(message("big00001", "e0000029", "toolResult", "é" * BIG, toolName="read"))
    session = _import(*objects)
    index = selectors.session_index(session)
    for limit in (2_000, 10_000):
        settings.CONTEXTLAB_MESSAGE_RENDER_CHARS = limit
        for entry_id in ("e0000003", "e0000029", "big00001"):
            whole = inspect_entry(session, index, entry_id, tab="json", full=True).copy_json
            shown = inspect_entry(session, index, entry_id, tab="json")
            assert shown.copy_json == whole[:limit]
            assert shown.copy_json_hidden == max(0, len(whole) - limit)


def test_a_projection_too_large_to_keep_is_not_kept_behind_its_message_views(
    owner_client, settings
):
    """The message views hold the request's messages: a long context of middling messages,
    whose views alone look small (the few shown in full), must not stay in the memo through
    them once its projection is too large to be kept."""
    objects = [header(id=str(uuid.uuid4())), *chain(2)]
    parent = "e0000001"
    for n in range(200):  # 4 MB of context; the last 25 messages, shown in full, 0.5 MB
        objects.append(message(f"t{n:07d}", parent, "toolResult", "x" * 20_000, toolName="read"))
        parent = f"t{n:07d}"
    session = _import(*objects)
    settings.CONTEXTLAB_INDEX_CACHE_BYTES = 2_000_000

    response = owner_client.get(f"/sessions/{session.pk}/?entry=t0000199&tab=context")

    assert response.status_code == 200
    index = selectors.session_index(session)
    views = [value for key, value in index.memo.items() if key[0] == "views"]
    held = sum(len(orjson.dumps(view.message)) for value in views for view in value[0])
    assert held <= 2_000_000


def test_a_turns_page_counts_its_messages_once_not_once_per_row(owner_client, monkeypatch):
    """Every message row asks where rows start open (``open_from``), which needs the count of
    the context's messages: counted again for each row, a deep turn's page walked its views
    rows x messages times (a million steps at 1,000 messages)."""
    from contextlab.inspector.blocks import MessageView

    asked = 0
    omitted = MessageView.omitted

    def counted(view: MessageView) -> bool:
        nonlocal asked
        asked += 1
        return omitted.fget(view)

    session = _import(header(id=str(uuid.uuid4())), *chain(600))
    monkeypatch.setattr(MessageView, "omitted", property(counted))

    page = owner_client.get(f"/sessions/{session.pk}/?entry=e0000599")

    assert page.status_code == 200
    assert b'data-testid="message-count">600<' in page.content
    assert asked < 5 * 600, asked


def test_a_path_fetched_past_the_budget_takes_its_room_from_what_the_cache_keeps(
    settings, monkeypatch
):
    """The entries a deep turn is fetching count against CONTEXTLAB_INDEX_CACHE_BYTES: the
    other sessions' fetched entries, then their indexes, then the session's own projections and
    tree views go, so the turn is not built on top of a full cache; the request gets every
    entry."""
    other = _import(header(id=str(uuid.uuid4())), *chain(200))
    deep = _tool_results(40, 5_000)
    other_index = selectors.session_index(other)
    other_index.fetch(other, list(other_index.items))
    deep_index = selectors.session_index(deep)
    deep_index.remember(("projection", "kept"), "x" * 10, size=10_000)
    deep_index.view("default", "", ())
    # Room for the deep session's index and half its entries: the rest must be made.
    settings.CONTEXTLAB_INDEX_CACHE_BYTES = deep_index.base_bytes + 100_000
    # What the other session keeps, seen as each entry of the deep path is decoded.
    others_kept: list[tuple[int, bool]] = []
    loads = selectors.loads_entry

    def decode(raw):
        cached = selectors.index_key(other) in selectors._cache
        others_kept.append((len(other_index.entries), cached))
        return loads(raw)

    monkeypatch.setattr(selectors, "loads_entry", decode)
    monkeypatch.setattr(selectors, "FETCH_PART", 5)
    found = deep_index.fetch(deep, list(deep_index.items))  # 200 kB: past its quarter
    assert len(found) == len(deep_index.items)
    # Made while the path was being fetched, not once it was all in memory.
    assert others_kept[0][0] > 0 and others_kept[0][1]  # all there when the fetch began
    assert others_kept[-1] == (0, False)
    assert deep_index is selectors.session_index(deep)
    assert other_index.entries == {} and other_index.entry_bytes == 0
    assert deep_index.memo == {} and deep_index.views == {}
    assert list(selectors._cache) == [selectors.index_key(deep)]  # the other one goes too


def test_a_path_within_the_budget_leaves_what_the_cache_keeps(settings):
    other = _import(header(id=str(uuid.uuid4())), *chain(200))
    deep = _import(header(id=str(uuid.uuid4())), *chain(40))
    other_index = selectors.session_index(other)
    other_index.fetch(other, list(other_index.items))
    kept = dict(other_index.entries)
    deep_index = selectors.session_index(deep)
    deep_index.fetch(deep, list(deep_index.items))
    assert other_index.entries == kept
