"""Session files: decoding, problems with line numbers, migration, tree navigation (no Node)."""

from __future__ import annotations

import json

import pytest

from contextlab.pi.session import (
    Migrator,
    Problem,
    SessionTree,
    decode_entry,
    js_trim,
    js_truthy,
    parse_session_bytes,
)


def jl(*objs: object) -> bytes:
    return "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objs).encode()


HEADER = {"type": "session", "version": 3, "id": "sess", "timestamp": "2025-01-01T00:00:00.000Z"}


def entry(id_, parent, ts="2025-01-01T00:00:00.000Z", **extra):
    return {"type": "custom", "id": id_, "parentId": parent, "timestamp": ts, **extra}


# --- decode_entry -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b'{"type":"message",', "invalid JSON: Expecting property name"),
        (b"\xff{}", "invalid UTF-8 at byte 1"),
        (b"[1,2]", "not a JSON object (got array)"),
        (b"123", "not a JSON object (got number)"),
        (b"null", "not a JSON object (got null)"),
        (b'{"id":"a"}', 'missing "type"'),
        (b'{"type":5}', '"type" must be a non-empty string, got number'),
        (b'{"type":"message","id":7}', '"id" must be a string, got number'),
        (b'{"type":"message","id":"a","parentId":1}', '"parentId" must be a string or null'),
        (b'{"type":"x","v":NaN}', "invalid JSON"),
        ('\ufeff{"type":"x"}', "byte order mark"),
    ],
)
def test_it_reports_each_kind_of_bad_line_with_its_number(raw, reason):
    result = decode_entry(raw, 7)
    assert isinstance(result, Problem)
    assert result.line == 7
    assert reason in result.reason


def test_it_keeps_unknown_types_and_fields_in_order():
    result = decode_entry('{"type":"future_thing","zeta":1,"alpha":{"b":2,"a":1}}', 1)
    assert result == {"type": "future_thing", "zeta": 1, "alpha": {"b": 2, "a": 1}}
    assert list(result) == ["type", "zeta", "alpha"]
    assert list(result["alpha"]) == ["b", "a"]


def test_it_reads_huge_integers_as_javascript_doubles():
    result = decode_entry('{"type":"x","n":12345678901234567890}', 1)
    assert isinstance(result["n"], float)


def test_it_trims_like_javascript():
    assert js_trim("\ufeff a \u2028") == "a"
    assert js_trim("\x1c a") == "\x1c a"  # Python's strip() would remove U+001C; JS does not


def test_it_judges_truthiness_like_javascript():
    assert not js_truthy(float("nan"))
    assert not any(js_truthy(v) for v in (0, 0.0, "", None, False))
    assert all(js_truthy(v) for v in ([], {}, "0", -1, True, float("inf")))


# --- whole files --------------------------------------------------------------------------


def test_it_reports_every_bad_line_and_keeps_going():
    data = jl(HEADER, entry("a", None)) + b"{oops\n\n   \n" + jl(entry("b", "a")) + b"[]\n"
    parsed = parse_session_bytes(data)
    assert [e["id"] for e in parsed.entries] == ["a", "b"]
    assert parsed.line_numbers == [2, 6]
    assert [(p.line, p.reason.split(":")[0]) for p in parsed.problems] == [
        (3, "invalid JSON"),
        (7, "not a JSON object (got array)"),
    ]


def test_it_says_when_pi_would_reject_the_file():
    parsed = parse_session_bytes(jl(entry("a", None), entry("b", "a")))
    assert parsed.header is None
    assert [e["id"] for e in parsed.entries] == ["a", "b"]  # ids kept, not re-migrated
    assert parsed.problems[0].line == 1
    assert "Pi would reject" in parsed.problems[0].reason


def test_it_reports_v3_entries_without_id():
    parsed = parse_session_bytes(jl(HEADER, {"type": "message", "parentId": None}))
    assert parsed.entries == []
    assert parsed.problems == [Problem(2, 'entry has no "id" (a v3 entry needs one)')]


def test_it_replaces_invalid_utf8_like_pi_and_says_so():
    data = jl(HEADER) + b'{"type":"custom","id":"a","parentId":null,"t":"\xe9"}\n'
    parsed = parse_session_bytes(data)
    assert parsed.entries[0]["t"] == "\ufffd"
    assert parsed.problems[0].line == 2
    assert "U+FFFD" in parsed.problems[0].reason


def test_it_accepts_crlf_lines():
    data = jl(HEADER, entry("a", None)).replace(b"\n", b"\r\n")
    assert [e["id"] for e in parse_session_bytes(data).entries] == ["a"]


# --- migration ----------------------------------------------------------------------------


V1 = [
    {"type": "session", "id": "legacy", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/x"},
    {"type": "message", "timestamp": "t1", "message": {"role": "user", "content": "a"}},
    {"type": "message", "timestamp": "t2", "message": {"role": "hookMessage", "content": "h"}},
    {"type": "compaction", "timestamp": "t3", "summary": "s", "firstKeptEntryIndex": 2},
    {"type": "compaction", "timestamp": "t4", "summary": "s", "firstKeptEntryIndex": 0},
    {"type": "compaction", "timestamp": "t5", "summary": "s", "firstKeptEntryIndex": "2"},
]


def test_it_migrates_v1_with_stable_ids_and_keys_appended():
    first = parse_session_bytes(jl(*V1))
    second = parse_session_bytes(jl(*V1))
    assert [e["id"] for e in first.entries] == [e["id"] for e in second.entries]
    ids = [e["id"] for e in first.entries]
    assert len(set(ids)) == 5 and all(len(i) == 8 for i in ids)
    assert [e["parentId"] for e in first.entries] == [None, *ids[:-1]]
    assert first.original_version == 1
    assert list(first.header) == ["type", "id", "timestamp", "cwd", "version"]
    assert first.header["version"] == 3
    assert list(first.entries[0]) == ["type", "timestamp", "message", "id", "parentId"]
    # index 2 counts the header as 0: the second message
    assert first.entries[2]["firstKeptEntryId"] == ids[1]
    assert list(first.entries[2]) == [
        "type",
        "timestamp",
        "summary",
        "id",
        "parentId",
        "firstKeptEntryId",
    ]
    # index 0 is the header: no id, index dropped
    assert "firstKeptEntryId" not in first.entries[3]
    assert "firstKeptEntryIndex" not in first.entries[3]
    # a non-numeric index is left alone
    assert first.entries[4]["firstKeptEntryIndex"] == "2"
    assert first.entries[1]["message"]["role"] == "custom"


def test_it_gives_different_files_different_ids():
    other = [dict(V1[0], id="other"), *V1[1:]]
    a = parse_session_bytes(jl(*V1)).entries
    b = parse_session_bytes(jl(*other)).entries
    assert [e["id"] for e in a] != [e["id"] for e in b]


def test_it_resolves_id_collisions_deterministically(monkeypatch):
    import contextlab.pi.session as session

    class Same:
        def __init__(self, data):
            self.data = data

        def hexdigest(self):
            # Every first attempt collides; a re-hash (third ':'-part) gets a fresh value.
            return ("cafef00d" if self.data.count(b":") == 2 else "deadbeef") + "0" * 56

    monkeypatch.setattr(session.hashlib, "sha256", lambda data: Same(data))
    migrator = Migrator({"type": "session", "id": "h"})
    ids = [migrator.feed({"type": "custom"}, n)["id"] for n in (2, 3)]
    assert ids == ["deadbeef", "cafef00d"]


def test_it_counts_lines_pi_keeps_but_we_drop_for_the_first_kept_index():
    data = (
        jl(V1[0], V1[1])
        + b"[1]\n"
        + jl(
            {"type": "message", "timestamp": "t", "message": {"role": "user", "content": "b"}},
            {"type": "compaction", "timestamp": "t3", "summary": "s", "firstKeptEntryIndex": 3},
        )
    )
    parsed = parse_session_bytes(data)
    assert parsed.entries[2]["firstKeptEntryId"] == parsed.entries[1]["id"]


def test_it_migrates_v2_hook_messages_only():
    v2 = [
        {"type": "session", "version": 2, "id": "s"},
        {
            "type": "message",
            "id": "a",
            "parentId": None,
            "message": {"role": "hookMessage", "content": "x"},
        },
    ]
    parsed = parse_session_bytes(jl(*v2))
    assert parsed.original_version == 2
    assert parsed.entries[0]["id"] == "a"
    assert list(parsed.entries[0]["message"]) == ["role", "content"]
    assert parsed.entries[0]["message"]["role"] == "custom"
    assert parsed.header == {"type": "session", "version": 3, "id": "s"}


# --- tree ---------------------------------------------------------------------------------


def test_it_orders_children_by_timestamp_stably_and_finds_roots():
    entries = [
        entry("r", None, "2025-01-01T00:00:05.000Z"),
        entry("c1", "r", "2025-01-01T00:00:09.000Z"),
        entry("c2", "r", "2025-01-01T00:00:07.000Z"),
        entry("c3", "r", "2025-01-01T00:00:07.000Z"),
        entry("orphan", "missing"),
        entry("self", "self"),
        entry("l", "c1", type="label", targetId="c2", label="mark"),
        entry("n", "l", type="session_info", name="  My name \n"),
    ]
    for e in entries[-2:]:
        e["type"] = e.pop("type")
    tree = SessionTree(entries)
    assert tree.children("r") == ["c2", "c3", "c1"]
    assert tree.roots == ["r", "orphan", "self"]
    assert tree.leaf_id == "n"
    assert tree.path_ids("n") == ["r", "c1", "l", "n"]
    assert tree.depth("n") == 3
    assert tree.common_ancestor("c3", "n") == "r"
    assert tree.common_ancestor("c1", "n") == "c1"
    assert tree.labels == {"c2": "mark"}
    assert tree.name == "My name"


def test_it_clears_labels_and_names_like_pi():
    entries = [
        entry("a", None),
        {"type": "label", "id": "l1", "parentId": "a", "targetId": "a", "label": "x"},
        {"type": "label", "id": "l2", "parentId": "l1", "targetId": "a", "label": ""},
        {"type": "session_info", "id": "s1", "parentId": "l2", "name": "n"},
        {"type": "session_info", "id": "s2", "parentId": "s1", "name": "   "},
    ]
    tree = SessionTree(entries)
    assert tree.labels == {}
    assert tree.name is None


def test_it_survives_parent_cycles():
    entries = [entry("a", "b"), entry("b", "a"), entry("c", "b")]
    tree = SessionTree(entries)
    assert tree.path_ids("c") == ["a", "b", "c"]
    assert tree.roots == []
    assert tree.depth("c") == 2


def test_it_handles_deep_trees_quickly():
    entries = [entry("e0", None)] + [entry(f"e{i}", f"e{i - 1}") for i in range(1, 25000)]
    tree = SessionTree(entries)
    assert tree.depth("e24999") == 24999
    assert len(tree.path("e24999")) == 25000
    assert sum(1 for _ in tree.walk()) == 25000
