"""The inspector hands the engine a condensed path (light stand-ins before the kept range of the
last compaction); the projection must be exactly the one built from the whole file."""

from __future__ import annotations

import random

import pytest

from contextlab.inspector import selectors
from contextlab.inspector.selectors import clear_cache, path_entries, path_prefix, session_index
from contextlab.inspector.services import previous_request
from contextlab.library.importer import import_session_file
from contextlab.pi.context import build_session_context
from contextlab.pi.session import parse_session_file
from tests.inspector.sessions import session_file_named

pytestmark = pytest.mark.django_db


@pytest.fixture(params=["rich", "compaction", "interactive", "tools", "generated"])
def session_file(request, tmp_path, blob_dir):
    clear_cache()
    return session_file_named(request.param, tmp_path)


def test_it_projects_like_the_engine_on_the_whole_file(session_file):
    session = import_session_file(path=session_file).session
    index = session_index(session)
    entries = parse_session_file(session_file).entries
    ids = list(index.items)
    sample = ids if len(ids) <= 80 else random.Random(1).sample(ids, 80)
    for entry_id in sample:
        whole = build_session_context(entries, entry_id)
        condensed = build_session_context(path_entries(session, index, entry_id), entry_id)
        assert condensed.messages == whole.messages, entry_id
        assert condensed.thinking_level == whole.thinking_level, entry_id
        assert condensed.model == whole.model, entry_id


def test_a_path_read_in_parts_projects_like_the_engine_on_the_whole_file(session_file, monkeypatch):
    """Long paths are read a part at a time (FETCH_PART entries per query, each part a range
    scan past 500): with parts of 7 entries, and of 600, every projection is unchanged."""
    session = import_session_file(path=session_file).session
    entries = parse_session_file(session_file).entries
    for part in (7, 600):
        monkeypatch.setattr(selectors, "FETCH_PART", part)
        clear_cache()
        index = session_index(session)
        ids = list(index.items)
        for entry_id in ids if len(ids) <= 40 else random.Random(2).sample(ids, 40):
            whole = build_session_context(entries, entry_id)
            condensed = build_session_context(path_entries(session, index, entry_id), entry_id)
            assert condensed.messages == whole.messages, (part, entry_id)


def test_a_previous_requests_path_cut_from_the_turns_is_the_path_read_for_it(session_file):
    """The diff cuts its previous request's path from the turn's own (same compaction in force):
    the cut, where it is made, is exactly what path_entries reads for that request."""
    session = import_session_file(path=session_file).session
    index = session_index(session)
    cut = 0
    for entry_id in index.items:
        previous = previous_request(index, entry_id)
        if previous is None:
            continue
        prefix = path_prefix(index, previous, entry_id, path_entries(session, index, entry_id))
        if prefix is not None:
            cut += 1
            assert prefix == path_entries(session, index, previous), (entry_id, previous)
    assert cut > 0


def test_every_entry_s_path_is_the_walk_up_its_parents_shortcut_or_not(session_file):
    """A walk that meets the session's own path finishes with that path's prefix."""
    session = import_session_file(path=session_file).session
    index = session_index(session)
    for entry_id in index.items:
        walked, seen, current = [], set(), entry_id
        while current is not None and current not in seen and current in index.items:
            seen.add(current)
            walked.append(current)
            current = index.parent_of.get(current)
        assert index.path(entry_id) == walked[::-1], entry_id
    assert len(index.path_positions or ()) == len(index.path_ids) > 0


def test_it_indexes_every_entry_as_the_tree_reads_it_from_the_file(session_file):
    """Every line of the index is the one the tree code makes of the whole entry."""
    from contextlab.pi.tree_selector import collect_tool_calls, tree_item

    session = import_session_file(path=session_file).session
    index = session_index(session)
    entries = parse_session_file(session_file).entries
    calls: dict = {}
    for entry in entries:
        collect_tool_calls(entry, calls)
    for entry in entries:
        expected = tree_item(entry, calls)
        got = index.items[entry["id"]]
        assert (got.tag, got.text, got.search_text, got.toolcall_only, got.type, got.role) == (
            expected.tag, expected.text, expected.search_text, expected.toolcall_only,
            expected.type, expected.role,
        ), entry["id"]  # fmt: skip
