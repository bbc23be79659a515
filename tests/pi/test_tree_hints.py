"""Tree hints from the engine alone (no database): each system message is compared with the
system state on its own path, a compaction's ``systemMessage`` restarts that state, and an
edit whose target is not in the session says so."""

from __future__ import annotations

from contextlab.pi.session import SessionTree
from contextlab.pi.tree_hints import add_context_hints
from contextlab.pi.tree_selector import tree_item


def _system(entry_id, parent, sections, **extra):
    message = {"role": "system", "content": "", "sections": sections, **extra}
    return {"type": "message", "id": entry_id, "parentId": parent, "message": message}


def _user(entry_id, parent):
    message = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    return {"type": "message", "id": entry_id, "parentId": parent, "message": message}


def _hints(entries):
    tree = SessionTree(entries)
    items = {e["id"]: tree_item(e, {}) for e in entries}
    add_context_hints(entries, tree, items)
    return {i.id: i.hint for i in items.values() if i.hint}


def test_it_compares_each_system_message_with_the_state_on_its_own_branch():
    entries = [
        _system("s1", None, {"a": "A", "b": "B"}, toolsAdded=[{"name": "read"}]),
        _user("u1", "s1"),
        _system("s2", "u1", {"a": "A2", "c": "C"}),  # one branch
        _system("s3", "u1", {"b": None}, toolsRemoved=[{"name": "read"}]),  # its sibling
        _system("s4", "s2", {"a": "A2"}),  # the same value again: nothing changed
    ]
    assert _hints(entries) == {
        "s1": "first prompt",
        "s2": "a changed · c added",
        "s3": "b removed · declared tools −read",
        "s4": "no change",
    }


def test_it_restarts_the_system_state_at_a_compaction_that_carries_one():
    compaction = {
        "type": "compaction",
        "id": "c1",
        "parentId": "u1",
        "summary": "s",
        "firstKeptEntryId": "u1",
        "tokensBefore": 10,
        "systemMessage": {"role": "system", "content": "", "sections": {"z": "Z"}},
    }
    entries = [
        _system("s1", None, {"a": "A"}),
        _user("u1", "s1"),
        compaction,
        _system("s2", "c1", {"a": "A", "z": "Z2"}),
    ]
    assert _hints(entries)["s2"] == "z changed · a added"


def test_it_says_when_a_context_edit_targets_no_entry():
    edit = {"type": "context_edit", "id": "e1", "parentId": "u1", "targetId": "gone"}
    assert _hints([_user("u1", None), edit]) == {"e1": "✂ no such entry"}


def test_it_compares_on_the_path_when_the_file_writes_a_child_before_its_parent():
    entries = [
        _system("s2", "u1", {"a": "A2"}),
        _system("s1", None, {"a": "A"}),
        _user("u1", "s1"),
    ]
    assert _hints(entries) == {"s1": "first prompt", "s2": "a changed"}
