"""Which captured prompt (contextlab's Pi extension) belongs to the request at a leaf."""

from __future__ import annotations

from contextlab.pi.captured import CAPTURE_TYPE, captured_prompt_at, prompt_differences


def _capture(entry_id: str, text: str) -> dict:
    return {
        "type": "custom",
        "customType": CAPTURE_TYPE,
        "id": entry_id,
        "data": {
            "v": 1,
            "systemPrompt": text,
            "tools": [{"type": "function", "function": {"name": "read"}}, {"name": "bash"}],
            "options": {"contextFiles": [{"path": "/w/AGENTS.md", "content": "x"}]},
        },
    }


ENTRIES = {
    "c1": _capture("c1", "first"),
    "c2": _capture("c2", "second"),
    "x": {"type": "custom", "customType": "other", "id": "x", "data": {"systemPrompt": "no"}},
}


def test_it_takes_the_capture_written_with_the_request_at_the_leaf():
    found = captured_prompt_at(["u1"], ["a9", "c1"], ENTRIES)
    assert found is not None
    assert (found.entry_id, found.system_prompt, found.at_request) == ("c1", "first", True)
    assert found.tool_names == ("read", "bash")
    assert [f["path"] for f in found.context_files] == ["/w/AGENTS.md"]


def test_a_capture_as_leaf_is_its_own_request():
    found = captured_prompt_at(["u1", "c1"], [], ENTRIES)
    assert found is not None and found.entry_id == "c1" and found.at_request


def test_without_a_capture_at_the_leaf_the_nearest_one_above_holds_unchanged():
    found = captured_prompt_at(["u1", "c1", "a1", "c2", "a2", "u3", "x"], [], ENTRIES)
    assert found is not None
    assert (found.entry_id, found.at_request) == ("c2", False)


def test_other_custom_entries_and_missing_entries_are_not_captures():
    assert captured_prompt_at(["u1", "x"], ["y"], ENTRIES) is None
    assert captured_prompt_at([], [], ENTRIES) is None


def test_differences_are_a_unified_diff_and_empty_when_identical():
    assert prompt_differences("a\nb", "a\nb") == []
    diff = prompt_differences("a\nb\nc", "a\nB\nc")
    assert diff == ["@@ -1,3 +1,3 @@", " a", "-b", "+B", " c"]
