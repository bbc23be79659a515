"""import_session_file: idempotence, appends, revisions, torn lines, bad input, Pi versions."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tempfile
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextlab.library.importer import Status, import_session_file
from contextlab.library.models import Entry, ImportProblem, Session, SessionRevision
from contextlab.library.selectors import engine_entries
from contextlab.pi.jsutil import json_stringify
from contextlab.pi.session import parse_session_file
from tests.library.conftest import HEADER_ID, chain, header, lines, message

pytestmark = pytest.mark.django_db


def reasons(result) -> list[str]:
    return [p.reason for p in result.problems]


def test_it_imports_the_real_session_exactly(real_session_path: Path, tmp_path: Path) -> None:
    result = import_session_file(path=real_session_path)
    assert result.status == Status.NEW
    parsed = parse_session_file(real_session_path)
    assert result.entries == len(parsed.entries) == result.new_entries
    session = Session.objects.get(session_id=result.session_id)
    stored = engine_entries(session)
    assert stored == parsed.entries
    # Key order survives storage: every stored entry re-serialises to its original line.
    original = [ln for ln in real_session_path.read_bytes().split(b"\n")[1:] if ln]
    assert [json_stringify(e).encode() for e in stored] == original
    assert session.project.cwd == parsed.header["cwd"]
    assert session.leaf_entry_id == parsed.entries[-1]["id"]
    assert session.message_count == sum(1 for e in parsed.entries if e["type"] == "message")
    assert session.models_used == ["openai/gpt-5.1-codex", "anthropic/claude-sonnet-4-5"]
    assert session.current_revision.blob_file.read_bytes() == real_session_path.read_bytes()
    # Each row's timestamp column is the instant of the entry's timestamp.
    from contextlab.library.storage.values import entry_datetime

    stamps = dict(Entry.objects.filter(session=session).values_list("entry_id", "timestamp"))
    assert [stamps[e["id"]] for e in parsed.entries] == [
        entry_datetime(e.get("timestamp")) for e in parsed.entries
    ]


def test_it_changes_nothing_when_the_same_file_is_imported_twice(write_session) -> None:
    path = write_session(header(), *chain(6))
    first = import_session_file(path=path)
    counts = (Entry.objects.count(), SessionRevision.objects.count(), ImportProblem.objects.count())
    second = import_session_file(path=path)
    assert (first.status, second.status) == (Status.NEW, Status.UNCHANGED)
    assert second.new_entries == 0 and second.entries == 6
    assert (
        Entry.objects.count(),
        SessionRevision.objects.count(),
        ImportProblem.objects.count(),
    ) == counts


def test_it_reads_only_the_appended_bytes_when_the_file_grew(write_session) -> None:
    path = write_session(header(), *chain(4))
    import_session_file(path=path)
    old_size = path.stat().st_size
    with path.open("ab") as f:
        f.write(lines(*chain(2, start=4, parent="e0000003")))
    offsets: list[int] = []
    result = import_session_file(path=path, progress=offsets.append)
    assert result.status == Status.APPENDED
    assert (result.new_entries, result.entries) == (2, 6)
    assert offsets and min(offsets) > old_size  # nothing before the old end was read again
    session = Session.objects.get()
    assert SessionRevision.objects.count() == 1
    assert [e.seq for e in Entry.objects.for_session(session)] == list(range(6))
    assert [e.depth for e in Entry.objects.for_session(session)] == list(range(6))
    assert session.leaf_entry_id == "e0000005"
    assert session.current_revision.blob_file.read_bytes() == path.read_bytes()


def test_it_counts_a_new_branch_when_an_appended_entry_forks(write_session) -> None:
    path = write_session(header(), *chain(4))
    import_session_file(path=path)
    assert Session.objects.get().branch_count == 1
    with path.open("ab") as f:
        f.write(lines(message("f0000001", "e0000001", "user", "another way")))
    import_session_file(path=path)
    assert Session.objects.get().branch_count == 2


def test_it_keeps_the_old_revision_when_the_file_shrank(write_session) -> None:
    path = write_session(header(), *chain(6))
    import_session_file(path=path)
    old_revision = SessionRevision.objects.get()
    old_blob = old_revision.blob_file.read_bytes()
    path.write_bytes(lines(header(), *chain(3)))
    result = import_session_file(path=path)
    assert result.status == Status.REVISED
    assert result.entries == 3
    old_revision.refresh_from_db()
    assert old_revision.status == SessionRevision.Status.SUPERSEDED
    assert "shrank" in old_revision.session.current_revision.reason
    assert Entry.objects.filter(revision=old_revision).count() == 6
    assert old_revision.blob_file.read_bytes() == old_blob
    assert Session.objects.get().current_revision.number == 2


def test_it_makes_a_new_revision_when_the_file_was_replaced(write_session) -> None:
    path = write_session(header(), *chain(6))
    import_session_file(path=path)
    replaced = [
        message(f"r{i:07d}", None if i == 0 else f"r{i - 1:07d}", "user", "other") for i in range(8)
    ]
    path.write_bytes(lines(header(), *replaced))
    result = import_session_file(path=path)
    assert result.status == Status.REVISED
    session = Session.objects.get()
    assert [e["id"] for e in engine_entries(session)] == [e["id"] for e in replaced]
    assert SessionRevision.objects.filter(session=session).count() == 2


def test_it_makes_a_new_revision_when_pi_rewrote_a_legacy_file(write_session) -> None:
    v1_header = {k: v for k, v in header().items() if k != "version"}
    v1_entries = [{k: v for k, v in e.items() if k not in ("id", "parentId")} for e in chain(4)]
    path = write_session(v1_header, *v1_entries)
    first = import_session_file(path=path)
    assert Session.objects.get().file_version == 1
    # What Pi does when it opens a v1 file: migrate and rewrite the whole file as v3.
    parsed = parse_session_file(path)
    path.write_bytes(lines(parsed.header, *parsed.entries))
    second = import_session_file(path=path)
    assert (first.status, second.status) == (Status.NEW, Status.REVISED)
    assert "rewritten" in Session.objects.get().current_revision.reason
    assert Session.objects.get().file_version == 3


def test_it_completes_a_torn_last_line_later(write_session) -> None:
    entries = chain(3)
    full = lines(header(), *entries)
    cut = len(full) - 25
    path = write_session(raw=full[:cut])
    first = import_session_file(path=path)
    assert (first.status, first.entries) == (Status.NEW, 2)
    assert any("torn last line" in r for r in reasons(first))
    assert first.problems[-1].line == 4
    revision = Session.objects.get().current_revision
    assert revision.blob_sha256 == hashlib.sha256(full[: revision.bytes_read]).hexdigest()
    assert revision.blob_file.read_bytes() == full[: revision.bytes_read]
    with path.open("ab") as f:
        f.write(full[cut:])
    second = import_session_file(path=path)
    assert (second.status, second.new_entries, second.entries) == (Status.APPENDED, 1, 3)
    assert second.problems == []
    assert Session.objects.get().current_revision.blob_file.read_bytes() == full


def test_it_reports_invalid_json_and_keeps_the_rest(write_session) -> None:
    path = write_session(
        header(), *chain(2), b'{"type":"message","id":"x"', *chain(1, start=2, parent="e0000001")
    )
    result = import_session_file(path=path)
    assert result.entries == 3
    assert [(p.line, p.reason.split(":")[0]) for p in result.problems] == [(4, "invalid JSON")]
    stored = ImportProblem.objects.get()
    assert (stored.path, stored.line) == (str(path), 4)
    assert Session.objects.get().problem_count == 1


def test_it_reads_non_utf8_bytes_as_pi_does_and_says_so(write_session) -> None:
    bad = (
        json_stringify(message("e0000000", None, "user", "caf\u00e9"))
        .encode()
        .replace(b"\xc3\xa9", b"\xe9")
    )
    path = write_session(header(), bad)
    result = import_session_file(path=path)
    assert result.entries == 1
    assert "invalid UTF-8" in reasons(result)[0] and result.problems[0].line == 2
    text = engine_entries(Session.objects.get())[0]["message"]["content"][0]["text"]
    assert text == "caf\ufffd"


def test_it_fails_an_empty_file_and_records_why(write_session) -> None:
    path = write_session(raw=b"")
    result = import_session_file(path=path)
    assert result.status == Status.FAILED and result.session_id is None
    assert "empty file" in reasons(result)[0]
    assert ImportProblem.objects.get(session=None).path == str(path)
    assert Session.objects.count() == 0


def test_it_creates_no_session_for_a_file_without_header(write_session) -> None:
    path = write_session(*chain(3))
    result = import_session_file(path=path)
    assert (result.status, result.session_id, result.entries) == (Status.FAILED, None, 0)
    assert result.problems[0].line == 1
    assert "not a session header (Pi would reject the whole file)" in result.problems[0].reason
    assert "no session was created" in reasons(result)[-1]
    assert Session.objects.count() == 0
    assert ImportProblem.objects.filter(session=None, path=str(path)).count() == 2
    # Importing it again does not pile up its problems.
    import_session_file(path=path)
    assert ImportProblem.objects.filter(session=None, path=str(path)).count() == 2


def test_it_creates_no_session_for_a_json_array(write_session) -> None:
    path = write_session(raw=b"[1,2,3]\n")
    result = import_session_file(path=path)
    assert (result.status, result.session_id) == (Status.FAILED, None)
    assert "Pi would reject the whole file" in reasons(result)[0]
    assert Session.objects.count() == 0


def test_it_reports_a_malformed_header_and_creates_no_session(write_session) -> None:
    path = write_session({"type": "session", "version": 3, "id": 42, "cwd": "/x"}, *chain(2))
    result = import_session_file(path=path)
    assert (result.status, result.entries) == (Status.FAILED, 0)
    assert [p.line for p in result.problems] == [1, 1, 0]
    assert "Pi would reject the whole file" in reasons(result)[0]
    assert '"id" must be a string, got number' in reasons(result)[1]
    assert Session.objects.count() == 0


def test_it_gives_one_error_for_a_binary_file(write_session) -> None:
    png = bytes.fromhex("89504e470d0a1a0a0000000d49484452") + bytes(range(256)) * 40
    path = write_session(raw=png)
    result = import_session_file(path=path)
    assert result.status == Status.FAILED and Session.objects.count() == 0
    assert reasons(result) == [
        "not a text file (binary data, e.g. an image): no session was created"
    ]


def test_it_still_reads_a_session_with_one_bad_utf8_line(write_session) -> None:
    path = write_session(header(), *chain(2))
    with open(path, "ab") as f:
        f.write(b'{"type":"label","id":"l1","parentId":"e0000002","label":"caf\xe9"}\n')
    result = import_session_file(path=path)
    assert result.status == Status.NEW and result.entries == 3


def test_it_keeps_unknown_entry_types_whole(write_session) -> None:
    odd = {
        "type": "telemetry",
        "id": "t0000001",
        "parentId": "e0000001",
        "timestamp": "2026-01-02T10:00:02.000Z",
        "payload": {"k": [1, 2.5, None]},
    }
    path = write_session(header(), *chain(2), odd)
    result = import_session_file(path=path)
    assert "unknown entry type 'telemetry'" in reasons(result)[0]
    assert engine_entries(Session.objects.get())[-1] == odd


def test_it_keeps_both_lines_of_a_duplicate_id(write_session) -> None:
    entries = chain(3)
    dup = message("e0000001", "e0000002", "user", "same id again")
    path = write_session(header(), *entries, dup)
    result = import_session_file(path=path)
    assert result.entries == 4
    assert result.problems[0].line == 5
    assert "duplicate entry id 'e0000001' (first on line 3" in result.problems[0].reason


def test_it_reports_a_parent_that_does_not_exist(write_session) -> None:
    orphan = message("o0000001", "missing1", "user", "lost")
    path = write_session(header(), *chain(2), orphan)
    result = import_session_file(path=path)
    assert "parent 'missing1' of entry 'o0000001' does not exist" in reasons(result)[0]
    assert Entry.objects.get(entry_id="o0000001").depth == 0


def test_it_reports_a_parent_id_cycle(write_session) -> None:
    a = message("aaaaaaaa", "bbbbbbbb", "user", "a")
    b = message("bbbbbbbb", "aaaaaaaa", "assistant", "b")
    path = write_session(header(), *chain(1), a, b)
    result = import_session_file(path=path)
    assert result.entries == 3
    cycle = [r for r in reasons(result) if "cycle" in r]
    assert cycle == [
        "parentId cycle: aaaaaaaa -> bbbbbbbb -> aaaaaaaa (Pi would loop forever on it)"
    ]


def test_it_imports_a_line_of_100_mb_when_the_line_limit_allows_it(write_session, settings) -> None:
    settings.CONTEXTLAB_MAX_LINE_BYTES = 256 * 1024 * 1024
    big = message("big00001", "e0000001", "toolResult", "x" * (100 * 1024 * 1024))
    path = write_session(header(), *chain(2), big, *chain(1, start=3, parent="big00001"))
    result = import_session_file(path=path)
    assert result.entries == 4 and result.problems == []
    row = Entry.objects.get(entry_id="big00001")
    assert len(row.data["message"]["content"][0]["text"]) == 100 * 1024 * 1024
    assert row.search_indexed and len(row.search_text) == 100_000  # capped for tsvector
    assert Entry.objects.get(entry_id="e0000003").depth == 3


def test_a_line_over_the_default_limit_is_not_read_and_is_reported(write_session) -> None:
    from django.conf import settings

    assert settings.CONTEXTLAB_MAX_LINE_BYTES == 16 * 1024 * 1024
    big = message("big00001", "e0000001", "toolResult", "x" * (17 * 1024 * 1024))
    path = write_session(header(), *chain(2), big)
    result = import_session_file(path=path)
    assert result.entries == 2
    [reason] = reasons(result)
    assert "CONTEXTLAB_MAX_LINE_BYTES" in reason or str(16 * 1024 * 1024) in reason


def test_it_stores_nul_characters_exactly(write_session) -> None:
    path = write_session(header(), message("e0000000", None, "user", "a\x00b"))
    result = import_session_file(path=path)
    assert result.problems == []
    assert engine_entries(Session.objects.get())[0]["message"]["content"][0]["text"] == "a\x00b"


def test_it_imports_a_legacy_v1_file_like_the_engine_migrates_it(
    real_session_path: Path, write_session
) -> None:
    # A v1 file: no version, no ids (the real session, stripped back to its v1 shape).
    raw = real_session_path.read_bytes().split(b"\n")
    import orjson

    objects = [orjson.loads(x) for x in raw if x]
    v1 = [{k: v for k, v in objects[0].items() if k != "version"}]
    v1 += [{k: v for k, v in o.items() if k not in ("id", "parentId")} for o in objects[1:]]
    path = write_session(*v1)
    result = import_session_file(path=path)
    assert result.status == Status.NEW and result.problems == []
    session = Session.objects.get()
    assert session.file_version == 1 and session.header["version"] == 3
    assert engine_entries(session) == parse_session_file(path).entries


def test_it_migrates_v1_compactions_like_pi(write_session) -> None:
    v1 = [
        {"type": "session", "id": HEADER_ID, "timestamp": "2026-01-02T10:00:00.000Z", "cwd": "/p"},
        *[{k: v for k, v in e.items() if k not in ("id", "parentId")} for e in chain(3)],
        {
            "type": "compaction",
            "timestamp": "2026-01-02T10:00:05.000Z",
            "summary": "s",
            "firstKeptEntryIndex": 2,
            "tokensBefore": 100,
        },
        {
            "type": "message",
            "timestamp": "2026-01-02T10:00:06.000Z",
            "message": {
                "role": "hookMessage",
                "customType": "x",
                "content": "hi",
                "display": True,
                "timestamp": 1,
            },
        },
    ]
    path = write_session(*v1)
    import_session_file(path=path)
    stored = engine_entries(Session.objects.get())
    assert stored == parse_session_file(path).entries
    assert stored[3]["firstKeptEntryId"] == stored[1]["id"]  # index 2 counts the header as 0
    assert stored[4]["message"]["role"] == "custom"


def test_it_keeps_pi_1x_system_messages_and_context_edits_whole(write_session) -> None:
    system = {
        "type": "message",
        "id": "s0000001",
        "parentId": None,
        "timestamp": "2026-01-02T10:00:00.500Z",
        "message": {
            "role": "system",
            "content": [{"type": "text", "text": "<tools>read</tools>"}],
            "sections": {"tools": "read"},
            "timestamp": 1,
        },
    }
    user = message("u0000001", "s0000001", "user", "hello")
    edit = {
        "type": "context_edit",
        "id": "c0000001",
        "parentId": "u0000001",
        "timestamp": "2026-01-02T10:00:02.000Z",
        "targetId": "u0000001",
        "action": "replace",
        "content": [{"type": "text", "text": "[trimmed]"}],
    }
    path = write_session(header(), system, user, edit)
    result = import_session_file(path=path)
    assert result.problems == []
    session = Session.objects.get()
    assert engine_entries(session) == [system, user, edit]
    assert list(Entry.objects.for_session(session).values_list("type", "role")) == [
        ("message", "system"),
        ("message", "user"),
        ("context_edit", ""),
    ]


def test_it_imports_an_upload_like_the_same_file(write_session) -> None:
    data = lines(header(), *chain(4))
    upload = io.BytesIO(data)
    result = import_session_file(fileobj=upload, name="my-session.jsonl")
    assert result.status == Status.NEW and result.path == "my-session.jsonl"
    path = write_session(raw=data)
    assert import_session_file(path=path).status == Status.UNCHANGED
    bigger = io.BytesIO(data + lines(*chain(1, start=4, parent="e0000003")))
    assert import_session_file(fileobj=bigger, name="my-session.jsonl").status == Status.APPENDED


def test_it_fails_a_missing_file_with_a_reason(tmp_path: Path) -> None:
    result = import_session_file(path=tmp_path / "nope.jsonl")
    assert result.status == Status.FAILED
    assert "cannot read the file" in reasons(result)[0]


def test_it_keeps_the_session_figures(write_session) -> None:
    entries = [
        *chain(4),
        {
            "type": "compaction",
            "id": "c0000001",
            "parentId": "e0000003",
            "timestamp": "2026-01-02T11:00:00.000Z",
            "summary": "sum",
            "firstKeptEntryId": "e0000002",
            "tokensBefore": 50,
        },
        {
            "type": "session_info",
            "id": "n0000001",
            "parentId": "c0000001",
            "timestamp": "2026-01-02T11:00:01.000Z",
            "name": "  Pelican work  ",
        },
    ]
    path = write_session(header(), *entries)
    import_session_file(path=path)
    session = Session.objects.get()
    assert session.name == "Pelican work"
    assert session.first_message == "message number 0 about pelicans"
    assert (session.entry_count, session.message_count, session.compaction_count) == (6, 4, 1)
    assert session.usage_tokens == 30 and session.cost_total == pytest.approx(0.02)
    assert session.last_activity.isoformat() == "2026-01-02T11:00:01+00:00"
    assert session.leaf_entry_id == "n0000001"
    assert session.tokens_estimated == sum(
        Entry.objects.filter(session=session).values_list("tokens", flat=True)
    )


def test_it_copies_a_real_file_without_touching_it(real_session_path: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.jsonl"
    shutil.copyfile(real_session_path, copy)
    before = copy.read_bytes()
    import_session_file(path=copy)
    assert copy.read_bytes() == before


@pytest.mark.parametrize(
    ("raw", "takes_fast_path"),
    [
        (b'{"type":"a","a":1,"a":2,"b":3}', True),  # the last duplicate wins in both
        (b'{"type":"a","args":{"b":1,"10":2,"2":3}}', False),  # integer-like keys go first in JS
        ('{"type":"a","args":{"\u00b2":1,"b":2}}'.encode(), True),  # a digit, not an index key
        (b'{"type":"a","args":{"b":[{"x":{"7":0}}]}}', False),  # ... also when nested
        (b' {"type":"a"}\r', True),
        (b'{"type":"a","x":-0,"y":1.0,"z":1e-7}', True),
        (b'{"type":"a","x":12345678901234567890}', False),  # could pass 2**53
        (b'{"type":"a","x":"\\ud800"}', False),  # a lone surrogate
        (b'{"type":"a","x":NaN}', False),
        (b'\xef\xbb\xbf{"type":"a"}', False),  # a BOM
        (b'{"type":"a","id":null}', False),  # an id that is not a string
        (b'{"type":"a","parentId":5}', False),  # a parentId that is not a string
        (b'{"type":""}', False),
        (b"[1]", False),  # not an object
        (b'{"type":"caf\xe9"}', False),  # not UTF-8
    ],
)
def test_it_decodes_fast_only_where_the_engine_agrees(raw: bytes, takes_fast_path: bool) -> None:
    from contextlab.library.importer.decoding import _fast_decode
    from contextlab.pi.session import decode_entry

    fast = _fast_decode(raw)
    assert (fast is not None) is takes_fast_path
    if fast is not None:
        engine = decode_entry(raw.decode("utf-8"), 1)
        # Serialised, so that the key order of nested objects is compared too.
        assert orjson.dumps(fast) == orjson.dumps(engine)


_KEYS = st.one_of(
    st.sampled_from(["a", "type", "10", "2", "0", "01", "-1", "x1", "4294967295", "1e3"]),
    st.text(max_size=4),
)
_NUMBERS = st.one_of(
    st.integers(min_value=-(2**64), max_value=2**64),
    st.sampled_from([2**53, 2**53 + 1, -(2**53) - 1, 9007199254740991]),
    st.floats(allow_nan=False, allow_infinity=False),
)
_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), _NUMBERS, st.text(max_size=8)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=12,
)


@given(
    body=st.dictionaries(_KEYS, _VALUES, max_size=5),
    spaces=st.sampled_from(["", " ", "\t", " \r\n "]),
)
@settings(max_examples=400, derandomize=True, deadline=None)
def test_it_decodes_fast_only_lines_the_engine_reads_the_same(body, spaces) -> None:
    from contextlab.library.importer.decoding import _fast_decode
    from contextlab.pi.session import decode_entry

    value = {"type": "message", "id": "e1", **body}
    text = json.dumps(value, ensure_ascii=False).replace(": ", ":" + spaces)
    raw = text.encode("utf-8", "surrogatepass")
    fast = _fast_decode(raw)
    if not body:
        assert fast is not None  # a plain {"type", "id"} line takes the fast path
    if fast is not None:
        assert orjson.dumps(fast) == orjson.dumps(decode_entry(text, 1))


@pytest.mark.parametrize("spaces", ["", " ", "\t", " \r\n "])
def test_it_decodes_a_plain_line_on_the_fast_path(spaces: str) -> None:
    from contextlab.library.importer.decoding import _fast_decode
    from contextlab.pi.session import decode_entry

    value = {"type": "message", "id": "e1", "parentId": None, "a": 1, "b": [True, None, "x"]}
    text = json.dumps(value, ensure_ascii=False).replace(": ", ":" + spaces)
    fast = _fast_decode(text.encode("utf-8"))
    assert fast is not None
    assert orjson.dumps(fast) == orjson.dumps(decode_entry(text, 1))


def test_it_decodes_every_real_line_like_the_engine(real_session_path: Path) -> None:
    from contextlab.library.importer.decoding import _fast_decode
    from contextlab.pi.session import decode_entry

    for raw in real_session_path.read_bytes().split(b"\n"):
        if raw:
            fast = _fast_decode(raw)
            assert fast is not None and fast == decode_entry(raw.decode("utf-8"), 1)


@given(
    pieces=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=12),
    last_newline=st.booleans(),
    chunk=st.integers(min_value=1, max_value=16),
    limit=st.integers(min_value=4, max_value=64),
)
@settings(max_examples=300, derandomize=True, deadline=None)
def test_it_splits_lines_exactly_whatever_the_chunk_size(
    pieces, last_newline, chunk, limit
) -> None:
    # Lines longer than a chunk are read again in one piece; longer than the limit, not held.
    from django.test import override_settings

    from contextlab.library.importer.blobs import BlobSink
    from contextlab.library.importer.lines import iter_lines

    data = b"\n".join(pieces) + (b"\n" if last_newline and pieces else b"")
    with tempfile.TemporaryDirectory() as tmp, override_settings(CONTEXTLAB_MAX_LINE_BYTES=limit):
        sink = BlobSink(Path(tmp) / "copy.jsonl", 0, new=True)
        got = list(iter_lines(io.BytesIO(data), 0, 1, sink, chunk_bytes=chunk))
        sink.finish(len(data))
        copied = (Path(tmp) / "copy.jsonl").read_bytes()
    expected = data.split(b"\n")
    if data.endswith(b"\n") or not data:
        expected = expected[:-1]
    assert [line.size for line in got] == [len(e) for e in expected]
    assert [line.raw for line in got] == [e if len(e) <= limit else None for e in expected]
    assert [line.line_no for line in got] == list(range(1, len(expected) + 1))
    starts = [sum(len(e) + 1 for e in expected[:i]) for i in range(len(expected))]
    assert [line.start for line in got] == starts
    assert all(line.complete for line in got[:-1])
    assert copied == data


@pytest.mark.parametrize(
    "timestamp",
    [
        "2025-11-21T00:16:51.814Z",
        "1970-01-01T00:00:00.000Z",
        "2024-02-29T23:59:59.999Z",
        "2025-02-29T10:00:00.000Z",  # no such day: NaN in JavaScript
        "2025-13-01T10:00:00.000Z",
        "2025-11-21T24:00:00.000Z",
        "2025-11-21 00:16:51.814Z",
        "2025-11-21T00:16:51,814Z",
        "0001-01-01T00:00:00.000Z",
        "9999-12-31T23:59:59.999Z",
        "+02025-11-21T00:16:51.814Z",
        "2025-11-21T00:16:51.814+01:00",
        "2025-11-21T00:16:51.814",
        "2025-11-21",
        "",
        1763684211814,
        1763684211814.7,
        None,
    ],
)
def test_it_reads_entry_timestamps_like_the_engine(timestamp) -> None:
    # The shortcut for Pi's own toISOString form must give what the general path gives.
    from contextlab.library.storage.values import _ms_to_datetime, entry_datetime
    from contextlab.pi.session import entry_time_ms

    assert entry_datetime(timestamp) == _ms_to_datetime(entry_time_ms(timestamp))


def test_it_reads_every_real_timestamp_like_the_engine(real_session_path: Path) -> None:
    from contextlab.library.storage.values import _ms_to_datetime, entry_datetime
    from contextlab.pi.session import entry_time_ms

    for raw in real_session_path.read_bytes().split(b"\n"):
        if raw:
            stamp = orjson.loads(raw).get("timestamp")
            assert entry_datetime(stamp) == _ms_to_datetime(entry_time_ms(stamp)) is not None


def test_it_skips_a_line_over_the_limit_but_keeps_its_bytes(write_session, settings) -> None:
    settings.CONTEXTLAB_MAX_LINE_BYTES = 4096
    big = message("big00001", "e0000001", "user", "y" * 10_000)
    path = write_session(header(), *chain(2), big, *chain(1, start=3, parent="e0000001"))
    result = import_session_file(path=path)
    assert result.entries == 3
    assert "longer than CONTEXTLAB_MAX_LINE_BYTES" in reasons(result)[0]
    assert result.problems[0].line == 4
    assert Session.objects.get().current_revision.blob_file.read_bytes() == path.read_bytes()


def test_it_carries_entries_contextlab_added_into_a_new_revision(write_session) -> None:
    path = write_session(header(), *chain(6))
    import_session_file(path=path)
    session = Session.objects.get()
    summary = {
        "type": "compaction",
        "id": "cafe0001",
        "parentId": "e0000002",
        "timestamp": "2026-01-02T12:00:00.000Z",
        "summary": "done so far",
        "firstKeptEntryId": "e0000001",
        "tokensBefore": 10,
        "details": {"readFiles": [], "modifiedFiles": []},
        "fromHook": False,
    }
    Entry.objects.create(
        session=session,
        revision=session.current_revision,
        seq=6,
        entry_id="cafe0001",
        parent_id="e0000002",
        type="compaction",
        data=summary,
        depth=3,
        origin=Entry.Origin.CONTEXTLAB,
    )
    path.write_bytes(lines(header(), *chain(4)))  # rewritten, shorter
    import_session_file(path=path)
    session.refresh_from_db()
    stored = engine_entries(session)
    assert [e["id"] for e in stored] == [f"e{i:07d}" for i in range(4)] + ["cafe0001"]
    assert stored[-1] == summary
    assert session.leaf_entry_id == "cafe0001" and session.compaction_count == 1


def test_it_stores_tabs_backslashes_and_copy_markers_exactly(write_session) -> None:
    raw = (
        b'{"type":"message",\t"id":"x0000001","parentId":null,"timestamp":"2026-01-02T10:00:00.000Z",'
        b'"message":{"role":"user","content":"a\\\\N b\\\\ c\\t d\\n e \\\\.","timestamp":1}}'
    )
    path = write_session(header(), raw)
    result = import_session_file(path=path)
    assert result.problems == []
    stored = Entry.objects.get(entry_id="x0000001")
    assert stored.data["message"]["content"] == "a\\N b\\ c\t d\n e \\."
    assert engine_entries(Session.objects.get()) == parse_session_file(path).entries


def test_it_stores_large_entries_sent_in_slices_exactly(write_session, monkeypatch) -> None:
    # Entries over LARGE_JSON_BYTES are escaped and sent a slice at a time: escapes that fall
    # across slice boundaries must come out whole.
    from contextlab.library.storage import copy

    monkeypatch.setattr(copy, "LARGE_JSON_BYTES", 7)
    text = "tab\there, back\\slash \\N and a \\. line\n" * 5
    entries = [
        message("e0000000", None, "user", text),
        message("e0000001", "e0000000", "assistant", "ok"),
    ]
    entries[1]["id"] = "a\\tb\\N"
    path = write_session(header(), *entries)
    result = import_session_file(path=path)
    assert result.problems == []
    assert engine_entries(Session.objects.get()) == parse_session_file(path).entries
    assert Entry.objects.get(entry_id="e0000000").data["message"]["content"][0]["text"] == text


def test_it_stores_ids_and_types_with_tabs_and_backslashes_exactly(write_session) -> None:
    # The row's text columns go through COPY too: its separators inside them must survive (an
    # id holds no control character, see test_hostile_input, but backslashes are kept).
    raw = (
        b'{"type":"odd\\t\\\\N","id":"a\\\\tb\\\\c\\\\.","parentId":null,'
        b'"timestamp":"2026-01-02T10:00:00.000Z"}'
    )
    path = write_session(header(), raw)
    import_session_file(path=path)
    stored = Entry.objects.get()
    assert (stored.entry_id, stored.type) == ("a\\tb\\c\\.", "odd\t\\N")
    assert stored.parent_id is None and stored.line_no == 2
    assert stored.timestamp.isoformat() == "2026-01-02T10:00:00+00:00"


def test_it_stores_pi_token_estimates_per_entry(real_session_path: Path) -> None:
    from contextlab.pi.context import create_branch_summary_message
    from contextlab.pi.tokens import estimate_tokens

    import_session_file(path=real_session_path)
    rows = list(Entry.objects.order_by("seq").values_list("data", "tokens"))
    expected = [estimate_tokens(d["message"]) if d["type"] == "message" else 0 for d, _ in rows]
    assert [t for _, t in rows] == expected
    assert sum(expected) > 100_000
    summary = {"type": "branch_summary", "id": "b1", "parentId": None, "summary": "x" * 41}
    from contextlab.library.storage.figures import entry_tokens

    assert entry_tokens(summary) == estimate_tokens(create_branch_summary_message(summary)) == 11


def test_it_orders_integer_like_keys_as_javascript_does(write_session) -> None:
    call = message("e0000000", None, "assistant", "x")
    call["message"]["content"] = [
        {"type": "toolCall", "id": "c1", "name": "edit", "arguments": {"b": 1, "10": 2, "2": 3}}
    ]
    path = write_session(header(), call)
    import_session_file(path=path)
    stored = engine_entries(Session.objects.get())[0]["message"]["content"][0]["arguments"]
    assert list(stored) == ["2", "10", "b"]  # as JSON.parse builds the object
    assert stored == parse_session_file(path).entries[0]["message"]["content"][0]["arguments"]


def test_it_keeps_the_blob_exact_when_a_torn_line_spans_chunks(write_session) -> None:
    entries = chain(3)
    big = message("big00001", "e0000002", "toolResult", "z" * 3_000_000)
    full = lines(header(), *entries, big)
    cut = len(full) - 2_500_000  # the last line is torn across several 1 MiB chunks
    path = write_session(raw=full[:cut])
    import_session_file(path=path)
    revision = Session.objects.get().current_revision
    kept = lines(header(), *entries)
    assert revision.bytes_read == len(kept)
    assert revision.blob_file.read_bytes() == kept
    assert revision.blob_sha256 == hashlib.sha256(kept).hexdigest()
    with path.open("ab") as f:
        f.write(full[cut:])
    assert import_session_file(path=path).new_entries == 1
    assert Session.objects.get().current_revision.blob_file.read_bytes() == full


def test_it_migrates_a_v2_file_keeping_its_ids(write_session) -> None:
    hook = {
        "type": "message",
        "id": "h0000001",
        "parentId": "e0000001",
        "timestamp": "2026-01-02T10:00:03.000Z",
        "message": {
            "role": "hookMessage",
            "customType": "note",
            "content": "hi",
            "display": True,
            "timestamp": 1,
        },
    }
    path = write_session(header(version=2), *chain(2), hook)
    result = import_session_file(path=path)
    assert result.problems == []
    session = Session.objects.get()
    assert (session.file_version, session.header["version"]) == (2, 3)
    stored = engine_entries(session)
    assert [e["id"] for e in stored] == ["e0000000", "e0000001", "h0000001"]
    assert stored[-1]["message"]["role"] == "custom"
    assert stored == parse_session_file(path).entries


def test_what_runs_within_an_import_commits_with_it_or_not_at_all(write_session) -> None:
    path = write_session(header(), *chain(3))
    seen: list[str] = []
    result = import_session_file(path=path, within=lambda r: seen.append(r.status))
    assert seen == [Status.NEW] and result.session is not None

    def refuse(result):  # type: ignore[no-untyped-def]
        raise RuntimeError("the audit log is unavailable")

    grown = write_session(header(), *chain(5))
    with pytest.raises(RuntimeError):
        import_session_file(path=grown, within=refuse)
    # The append was rolled back with it: the stored session is as the first import left it.
    assert Session.objects.get().entry_count == 3
    assert Entry.objects.count() == 3
