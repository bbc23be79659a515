"""Lines nested far deeper than Python's parsers recurse: every line Pi reads is stored whole,
whatever its depth; a line Pi would skip is a problem of that line, never a failed import.

Pi reads a line with JSON.parse, which in V8 is iterative: Node reads 1,000,000 levels (the real
Pi 0.80.2 below keeps a line 5,000 deep). orjson reads 1,024 and writes 254; Python's json
recurses once per level.
"""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pytest
from django.core.management import call_command

from contextlab.library.importer import import_session_file
from contextlab.library.models import Entry, Session
from contextlab.library.selectors import engine_entries
from contextlab.library.storage.values import dump_data
from contextlab.pi.jsutil import json_parse, json_parse_deep
from tests.conformance.conftest import ORACLES, node_binary, oracle_available
from tests.library.conftest import header, lines, message

pytestmark = pytest.mark.django_db


def deep_call(depth: int, *, entry_id: str = "deep0001", index_key: bool = False) -> bytes:
    """An assistant message whose tool call's argument nests `depth` arrays (as text: no Python
    encoder writes 5,000 levels). With `index_key`, an integer-like key sends the line through
    the engine's reader instead of orjson's (JavaScript orders such keys first)."""
    arguments = '{"path":"a.json",' + ('"0":"first",' if index_key else "") + '"content":'
    arguments += "[" * depth + "1" + "]" * depth + "}"
    head = f'{{"type":"message","id":"{entry_id}","parentId":"e0000001",'
    return (
        head + '"timestamp":"2026-01-02T10:00:02.000Z","message":{"role":"assistant","content":'
        '[{"type":"toolCall","id":"call_1","name":"write","arguments":' + arguments + "}],"
        '"api":"openai-responses","provider":"openai","model":"gpt-5","stopReason":"toolUse",'
        '"timestamp":1767348002000}}'
    ).encode()


def session_with(*deep_lines: bytes) -> bytes:
    first = message("e0000000", None, "user", "nest it")
    second = message("e0000001", "e0000000", "assistant", "sure")
    last = message("e0000009", "deep0001", "user", "thanks")
    return lines(header(), first, second, *deep_lines, last)


def content_depth(value: object) -> int:
    depth = 0
    while isinstance(value, list):
        value = value[0]
        depth += 1
    return depth


def stored_argument(entry_id: str) -> dict:
    data = Entry.objects.get(entry_id=entry_id).data
    return data["message"]["content"][0]["arguments"]


@pytest.mark.parametrize("depth", [600, 5000])
@pytest.mark.parametrize("index_key", [False, True], ids=["orjson-reader", "engine-reader"])
def test_a_deeply_nested_line_is_stored_whole(tmp_path: Path, depth: int, index_key: bool) -> None:
    raw = deep_call(depth, index_key=index_key)
    path = tmp_path / "deep.jsonl"
    path.write_bytes(session_with(raw))
    result = import_session_file(path=path)
    assert result.status == "new", result.problems
    assert result.problems == [] and result.entries == 4
    argument = stored_argument("deep0001")
    assert content_depth(argument["content"]) == depth
    assert list(argument) == (["0", "path", "content"] if index_key else ["path", "content"])
    session = Session.objects.get()
    assert [e["id"] for e in engine_entries(session)][-2:] == ["deep0001", "e0000009"]
    # Compared as text: Python's == recurses per level too.
    stored = dump_data(engine_entries(session)[2], None)
    assert stored == dump_data(json_parse(raw.decode()), None)
    assert stored[1] is None
    if not index_key:
        assert stored[0] == raw  # the line as written


@pytest.mark.parametrize("depth", [600, 5000])
def test_import_sessions_stores_a_deep_line_of_a_legacy_file(tmp_path: Path, depth: int) -> None:
    # A v1 file is migrated: its entries are written again from the parsed values.
    v1_header = {k: v for k, v in header().items() if k != "version"}
    deep = json.loads(deep_call(3))
    for key in ("id", "parentId"):
        deep.pop(key)
    text = json.dumps(deep).replace("[[[1]]]", "[" * depth + "1" + "]" * depth)
    path = tmp_path / "v1.jsonl"
    path.write_bytes(lines(v1_header) + text.encode() + b"\n")
    out = io.StringIO()
    call_command("import_sessions", str(path), "--json", stdout=out, stderr=io.StringIO())
    [report] = json.loads(out.getvalue())["files"]
    assert (report["status"], report["entries"], report["problems"]) == ("new", 1, [])
    [entry] = Entry.objects.all()
    assert content_depth(entry.data["message"]["content"][0]["arguments"]["content"]) == depth


def test_a_deep_line_that_is_not_json_is_a_problem_of_that_line(tmp_path: Path) -> None:
    broken = deep_call(5000)[:-40]  # cut inside the nesting: JSON.parse throws, Pi skips it
    path = tmp_path / "broken.jsonl"
    path.write_bytes(session_with(broken, deep_call(5000, entry_id="deep0001")))
    result = import_session_file(path=path)
    assert result.status == "new"
    assert [(p.line, p.reason.split(":")[0]) for p in result.problems] == [(4, "invalid JSON")]
    assert result.entries == 4
    assert content_depth(stored_argument("deep0001")["content"]) == 5000


def test_pi_keeps_the_lines_contextlab_stores_at_5000_levels(tmp_path: Path) -> None:
    if node_binary() is None or not oracle_available("0.80.2"):
        pytest.skip("the pinned Pi 0.80.2 oracle is not installed")
    path = tmp_path / "deep.jsonl"
    path.write_bytes(
        session_with(deep_call(5000)[:-40], deep_call(5000, entry_id="deep0001", index_key=True))
    )
    module = ORACLES["0.80.2"][1] / "dist" / "core" / "session-manager.js"
    script = (
        f"import {{ SessionManager }} from {json.dumps(module.as_uri())};"
        f"const sm = SessionManager.open({json.dumps(str(path))});"
        "process.stdout.write(JSON.stringify(sm.getEntries().map((e) => e.id)));"
    )
    pi = subprocess.run(
        [node_binary(), "--input-type=module", "-e", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    import_session_file(path=path)
    ours = list(Entry.objects.order_by("seq").values_list("entry_id", flat=True))
    assert json.loads(pi.stdout) == ours == ["e0000000", "e0000001", "deep0001", "e0000009"]


@pytest.mark.parametrize(
    "text",
    [
        '{"a":[1,2,{"b":null}],"2":true,"1":"x\\u00e9","a":-2.5e3}',
        ' [ 1 , 12345678901234567890 , "\\ud800", false, {} , [] ] ',
        '{"x":{"y":{"z":[{"k":1}]},"w":2},"v":3}',
    ],
)
def test_the_iterative_reader_reads_as_json_parse(text: str) -> None:
    ours = json_parse_deep(text)
    assert ours == json_parse(text)
    assert json.dumps(ours) == json.dumps(json_parse(text))  # key order too


@pytest.mark.parametrize(
    "text", ["[1,]", '{"a":1,}', "[1 2]", '{"a" 1}', "[", "[]]", "[] x", '"a\nb"', "[01]", "{]"]
)
def test_the_iterative_reader_rejects_what_json_parse_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        json_parse_deep(text)
