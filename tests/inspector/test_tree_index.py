"""The stored tree index (one `TreeIndex` row per revision): a process that opens a session for
the first time loads it instead of parsing every entry, and must see exactly what the built index
shows; a revision that grew must never be shown from an older state's row."""

from __future__ import annotations

import io
import os

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from contextlab.inspector import selectors
from contextlab.inspector.models import TreeIndex
from contextlab.inspector.selectors import build_index, clear_cache, session_index
from contextlab.jobs import tasks
from contextlab.library.importer import import_session_file
from contextlab.library.models import Entry, Session
from contextlab.library.search import index_pending
from contextlab.pi.tree_selector import FILTER_MODES, finish, pi_line
from tests.inspector.sessions import (
    append_lines,
    generated_session,
    session_file_named,
    write_session,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(params=["rich", "compaction", "tools", "generated"])
def session_file(request, tmp_path, blob_dir):
    clear_cache()
    return session_file_named(request.param, tmp_path)


def _lines(index, mode="default", query="", folded=()):
    view = index.view(mode, query, folded)
    finish(view, view.rows)
    return [pi_line(row) for row in view.rows]


def _facts(index):
    items = [
        (i.id, i.parent_id, i.type, i.role, i.tag, i.text, i.toolcall_only, i.search_text,
         i.tokens, i.css, i.hint, i.hint_title)
        for i in index.items.values()
    ]  # fmt: skip
    return (
        items, index.order, index.parent_of, index.labels, index.leaf_id, index.path_ids,
        index.seq_of, index.first_kept, index.reported, index.name, index.children,
        index.roots, index.display_children, index.file_leaf,
    )  # fmt: skip


def _fresh_process_index(session):
    """What another process gets: nothing cached in memory, the session read again."""
    clear_cache()
    return session_index(Session.objects.get(pk=session.pk))


def test_it_stores_the_index_on_first_open_and_loads_the_same_facts(session_file):
    session = import_session_file(path=session_file).session
    built = build_index(session)
    clear_cache()
    TreeIndex.objects.all().delete()
    first = session_index(session)
    assert TreeIndex.objects.filter(revision=session.current_revision).count() == 1
    loaded = _fresh_process_index(session)
    assert loaded is not first
    assert not loaded.search_loaded
    loaded.ensure_search()
    assert _facts(loaded) == _facts(built)


def test_a_loaded_index_keeps_one_copy_of_the_childrens_lists(session_file):
    session = import_session_file(path=session_file).session
    built = build_index(session)
    session_index(session)
    loaded = _fresh_process_index(session)
    for index in (built, loaded):
        assert index.children == index.display_children
        assert index.children is index.display_children


def test_it_shows_the_same_tree_from_a_loaded_index(session_file):
    session = import_session_file(path=session_file).session
    built = build_index(session)
    session_index(session)
    loaded = _fresh_process_index(session)
    branch = next((p for p, kids in built.children.items() if len(kids) > 1), None)
    cases = [{"mode": m} for m in FILTER_MODES]
    cases += [{"mode": "default", "query": "read"}, {"mode": "all", "query": "assistant the"}]
    if branch:
        cases.append({"mode": "default", "folded": (branch,)})
    for case in cases:
        # Searches first on the loaded index: its search texts are read on demand.
        assert _lines(loaded, **case) == _lines(built, **case), case


def test_it_opens_a_stored_session_without_reading_every_entry(tmp_path, blob_dir):
    session = import_session_file(path=generated_session(tmp_path)).session
    session_index(session)
    clear_cache()
    session = Session.objects.get(pk=session.pk)
    with CaptureQueriesContext(connection) as queries:
        session_index(session)
    sql = " ".join(q["sql"] for q in queries.captured_queries)
    assert "library_entry" not in sql
    assert len(queries.captured_queries) == 1


def test_it_rebuilds_the_stored_index_when_the_revision_grows(tmp_path, blob_dir):
    path = write_session(tmp_path)
    session = import_session_file(path=path).session
    before = session_index(session)
    revision = session.current_revision_id
    leaf = before.leaf_id
    append_lines(
        path,
        [
            {"type": "message", "id": "grown001", "parentId": leaf,
             "timestamp": "2025-11-21T09:00:00.000Z",
             "message": {"role": "user", "content": "appended zebra question",
                         "timestamp": 1763715600000}},
            {"type": "label", "id": "grown002", "parentId": "grown001",
             "timestamp": "2025-11-21T09:00:01.000Z", "targetId": "grown001", "label": "later"},
        ],
    )  # fmt: skip
    grown = import_session_file(path=path).session
    assert grown.current_revision_id == revision  # the same revision grew
    assert grown.entry_count == session.entry_count + 2
    after = _fresh_process_index(grown)
    assert "grown001" in after.items and "grown001" not in before.items
    assert after.leaf_id == "grown002"
    assert after.labels["grown001"] == "later"
    assert _lines(after, "all") == _lines(build_index(grown), "all")
    assert any("user: appended zebra question" in line for line in _lines(after, query="zebra"))
    row = TreeIndex.objects.get(revision_id=revision)
    assert (row.entry_count, row.leaf_entry_id) == (grown.entry_count, "grown002")


def test_it_ignores_a_row_of_an_older_format(tmp_path, blob_dir, monkeypatch):
    session = import_session_file(path=write_session(tmp_path)).session
    session_index(session)
    monkeypatch.setattr(selectors, "INDEX_FORMAT", selectors.INDEX_FORMAT + 1)
    assert selectors.load_index(session) is None
    _fresh_process_index(session)
    assert TreeIndex.objects.get(revision=session.current_revision).format == (
        selectors.INDEX_FORMAT
    )


def test_it_finds_search_texts_when_the_row_moved_on_to_a_newer_state(tmp_path, blob_dir):
    """A process holding an older state's index searches it after another process stored the
    grown revision's row: the texts then come from the entries, as the build makes them."""
    path = write_session(tmp_path)
    session = import_session_file(path=path).session
    session_index(session)
    old = _fresh_process_index(session)
    expected = build_index(session)
    TreeIndex.objects.filter(revision=session.current_revision).update(entry_count=0)
    old.ensure_search()
    assert [i.search_text for i in old.items.values()] == [
        i.search_text for i in expected.items.values()
    ]


def test_it_stores_the_index_when_the_import_command_reads_a_session(tmp_path, blob_dir):
    from django.core.management import call_command

    path = write_session(tmp_path)
    call_command("import_sessions", str(path), "--json", stdout=open(os.devnull, "w"))  # noqa: SIM115
    session = Session.objects.get()
    assert selectors.index_stored(session)
    loaded = _fresh_process_index(session)
    loaded.ensure_search()
    assert _facts(loaded) == _facts(build_index(session))


def test_it_stores_the_index_of_the_grown_session_after_a_job_appends(
    import_corpus, offline_provider, django_capture_on_commit_callbacks
):
    from contextlab.jobs import services as jobs

    session, _ = import_corpus("tools")
    session_index(session)
    job = jobs.job_create(
        session=session, kind="compaction", parameters={"keepRecentTokens": 10}, enqueue=False
    )
    with django_capture_on_commit_callbacks(execute=True):
        job = jobs.job_execute(job_id=job.pk)
    assert job.status == "succeeded"
    grown = Session.objects.get(pk=session.pk)
    assert grown.entry_count == session.entry_count + 1
    assert selectors.index_stored(grown)
    clear_cache()
    with CaptureQueriesContext(connection) as queries:
        index = session_index(grown)
    assert "library_entry" not in " ".join(q["sql"] for q in queries.captured_queries)
    assert index.leaf_id == job.result_entry_ids[0]
    assert _lines(index, "all") == _lines(build_index(grown), "all")


def test_it_reads_a_deep_path_from_its_kept_range_on_and_two_stand_ins(tmp_path, blob_dir):
    """The settings before the kept range come from at most two entries fetched by id: never
    from a scan over everything between them and the kept range."""
    import re

    from contextlab.inspector.selectors import path_entries

    session = import_session_file(path=generated_session(tmp_path)).session
    index = _fresh_process_index(session)
    path = index.path_ids
    compactions = [i for i in path if i in index.first_kept and index.first_kept[i] in path]
    assert compactions
    kept_seq = index.seq_of[index.first_kept[compactions[-1]]]
    with CaptureQueriesContext(connection) as queries:
        entries = path_entries(session, index, index.leaf_id)
    sql = " ".join(q["sql"] for q in queries.captured_queries)
    lower = [int(n) for n in re.findall(r'"seq" >= (\d+)', sql)]
    assert lower and min(lower) >= kept_seq
    assert len(queries.captured_queries) <= 2
    assert entries[-1]["id"] == index.leaf_id


def _upload_rich(client, tmp_path):
    upload = io.BytesIO(write_session(tmp_path).read_bytes())
    upload.name = "rich.jsonl"
    return client.post(reverse("library:upload"), {"files": [upload]}, follow=True)


def test_an_upload_leaves_search_and_the_tree_index_to_the_worker(
    owner_client, tmp_path, blob_dir, django_capture_on_commit_callbacks, monkeypatch
):
    sent: list[int] = []
    monkeypatch.setattr(tasks.after_import, "delay", sent.append)
    with django_capture_on_commit_callbacks(execute=True):
        response = _upload_rich(owner_client, tmp_path)
    assert response.status_code == 200
    session = Session.objects.get()
    # The web request imported the entries and did nothing slow after that.
    assert sent == [session.pk]
    assert not selectors.index_stored(session)
    assert Entry.objects.for_session(session).filter(search_indexed=False).exists()
    tasks.after_import(session.pk)  # what the worker runs
    assert selectors.index_stored(session)
    assert not Entry.objects.for_session(session).filter(search_indexed=False).exists()


def test_an_upload_with_the_worker_unreachable_loses_nothing(
    owner_client, tmp_path, blob_dir, django_capture_on_commit_callbacks, monkeypatch
):
    def unreachable(session_id: int) -> None:
        raise OSError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(tasks.after_import, "delay", unreachable)
    with django_capture_on_commit_callbacks(execute=True):
        response = _upload_rich(owner_client, tmp_path)
    assert response.status_code == 200 and "Connection refused" not in response.content.decode()
    session = Session.objects.get()
    # The sweep's indexing picks the entries up, the first open builds the tree index.
    assert index_pending() > 0
    assert not Entry.objects.for_session(session).filter(search_indexed=False).exists()
    clear_cache()
    assert owner_client.get(reverse("inspector:session", args=[session.pk])).status_code == 200
    assert selectors.index_stored(session)


def test_it_loads_a_damaged_file_as_built_repeated_ids_orphans_and_odd_values(tmp_path, blob_dir):
    """A repeated id (the later line wins, at the first one's place), an orphan (its parent is
    missing: a root), a label on it, and an assistant usage that is not numbers."""
    from tests.inspector.sessions import rich_session_lines

    lines = rich_session_lines()
    first = lines[1]
    later = {**lines[3], "id": first["id"], "parentId": lines[2]["id"]}
    orphan = {
        "type": "message",
        "id": "orphan01",
        "parentId": "missing9",
        "timestamp": "2025-11-20T11:00:00.000Z",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "lost\tline\n"}],
            "usage": {"input": "many"},
            "stopReason": "stop",
            "provider": "p",
            "model": "m",
            "timestamp": 1763636400000,
        },
    }
    label = {
        "type": "label",
        "id": "label001",
        "parentId": "orphan01",
        "timestamp": "2025-11-20T11:00:01.000Z",
        "targetId": "orphan01",
        "label": "odd ✓",
    }
    path = write_session(tmp_path, [*lines, later, orphan, label])  # fmt: skip
    session = import_session_file(path=path).session
    built = build_index(session)
    session_index(session)
    loaded = _fresh_process_index(session)
    for mode in FILTER_MODES:
        assert _lines(loaded, mode) == _lines(built, mode), mode
    loaded.ensure_search()
    assert _facts(loaded) == _facts(built)
    assert loaded.parent_of["orphan01"] is None and loaded.labels["orphan01"] == "odd ✓"
    assert list(loaded.items).index(first["id"]) == 0
    assert "orphan01" not in loaded.reported


def test_it_serves_a_moved_leaf_from_the_stored_index(tmp_path, blob_dir):
    """Continue without a summary moves the leaf and writes nothing: the stored facts still
    hold, only the order (active branch first) and the path are made again for the new leaf."""
    from contextlab.jobs.services import session_continue_without_summary

    session = import_session_file(path=generated_session(tmp_path)).session
    before = session_index(session)
    target = next(i for i in before.order if i not in before.path_set and before.items[i].role)
    session_continue_without_summary(session=session, target_entry_id=target)
    moved = Session.objects.get(pk=session.pk)
    assert moved.leaf_entry_id and moved.leaf_entry_id != before.leaf_id
    clear_cache()
    with CaptureQueriesContext(connection) as queries:
        loaded = session_index(moved)
    assert "library_entry" not in " ".join(q["sql"] for q in queries.captured_queries)
    built = build_index(moved)
    assert loaded.leaf_id == built.leaf_id == moved.leaf_entry_id
    assert loaded.order == built.order and loaded.order != before.order
    for mode in FILTER_MODES:
        assert _lines(loaded, mode) == _lines(built, mode), mode
