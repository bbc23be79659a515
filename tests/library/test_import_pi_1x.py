"""Sessions written by Pi 1.x in the library: every entry type and message field Pi 1.6.0 writes
is imported without a problem, the figures count the persisted prompt and the model calls Pi
1.x records outside the conversation, and search finds a prompt's sections and the text a
context edit puts in."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextlab.library.importer import import_session_file
from contextlab.library.models import Entry, Session
from contextlab.library.search import apply_search
from contextlab.pi.dialects import pi_1_x_compaction
from contextlab.pi.session import parse_session_file
from tests.conftest import REPO
from tests.library.conftest import header, message

CORPUS_1X = REPO / "tests" / "conformance" / "corpus-1.6.0"
SESSIONS = sorted(CORPUS_1X.glob("*/session.jsonl"))

pytestmark = pytest.mark.django_db

USAGE = {
    "input": 900,
    "output": 1,
    "cacheRead": 800,
    "cacheWrite": 0,
    "reasoning": 0,
    "totalTokens": 1701,
    "cost": {"input": 0.1, "output": 0, "cacheRead": 0.2, "cacheWrite": 0, "total": 0.3},
}


def _system(entry_id: str, parent: str | None, **message: object) -> dict:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-01-02T10:00:00.500Z",
        "message": {"role": "system", "content": "", "timestamp": 1, **message},
    }


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.parent.name)
def test_a_pi_1_6_0_session_imports_without_problems_and_counts_its_prompt(path: Path) -> None:
    result = import_session_file(path=path)
    assert result.problems == []
    session = Session.objects.get()
    entries = parse_session_file(path).entries
    stored = dict(Entry.objects.for_session(session).values_list("entry_id", "tokens"))
    systems = [
        e for e in entries if e["type"] == "message" and e["message"].get("role") == "system"
    ]
    assert systems
    for entry in systems:
        assert stored[entry["id"]] == pi_1_x_compaction.estimate_tokens(entry["message"])
    assert stored[systems[0]["id"]] > 1000  # the full prompt (a patch may only delete)
    for entry in entries:
        if entry["type"] == "compaction" and "systemMessage" in entry:
            summary = pi_1_x_compaction.estimate_tokens(
                {"role": "compactionSummary", "summary": entry["summary"]}
            )
            prompt = pi_1_x_compaction.estimate_tokens(entry["systemMessage"])
            assert stored[entry["id"]] >= summary + prompt - 1  # the summary's wrapper aside
    assert session.tokens_estimated == sum(stored.values())
    calls = [
        usage["totalTokens"]
        for e in entries
        if isinstance(usage := (e.get("message") or e).get("usage"), dict)
        and (e["type"] != "message" or e["message"]["role"] == "assistant")
    ]
    assert session.usage_tokens == sum(calls)


def test_a_usage_entry_is_imported_and_counted_as_a_model_call(write_session) -> None:
    system = _system("s0000001", None, sections={"preamble": "P"}, toolsAdded=[])
    user = message("u0000001", "s0000001", "user", "hello")
    reply = message(
        "a0000001",
        "u0000001",
        "assistant",
        "hi",
        thinkingLevel="medium",
        durationMs=120,
        rawStopReason="stop",
        responseId="r1",
    )
    reply["message"]["usage"]["reasoning"] = 3
    warm = {
        "type": "usage",
        "id": "w0000001",
        "parentId": "a0000001",
        "timestamp": "2026-01-02T10:05:00.000Z",
        "kind": "cache_warm",
        "provider": "fakeai",
        "model": "fake-warm",
        "usage": USAGE,
        "note": "extension override",
    }
    path = write_session(header(), system, user, reply, warm)
    result = import_session_file(path=path)
    assert result.problems == []
    session = Session.objects.get()
    assert session.usage_tokens == 15 + 1701
    assert session.cost_total == pytest.approx(0.01 + 0.3)
    assert session.models_used == ["anthropic/claude-sonnet-4-5", "fakeai/fake-warm"]
    assert session.leaf_entry_id == "w0000001"
    assert Entry.objects.get(entry_id="w0000001").tokens == 0


def test_search_finds_a_prompt_section_a_tool_and_a_context_edit_replacement(
    write_session,
) -> None:
    system = _system(
        "s0000001",
        None,
        sections={"addendum": "<addendum>\nAlways answer in Esperanto.\n</addendum>"},
        toolsAdded=[{"name": "frobnicate", "description": "Twiddles knobs.", "parameters": {}}],
    )
    user = message("u0000001", "s0000001", "user", "token=abc123")
    edit = {
        "type": "context_edit",
        "id": "c0000001",
        "parentId": "u0000001",
        "timestamp": "2026-01-02T10:00:02.000Z",
        "targetId": "u0000001",
        "replacement": {"content": [{"type": "text", "text": "[redacted by pelican policy]"}]},
    }
    omit = {
        "type": "context_edit",
        "id": "c0000002",
        "parentId": "c0000001",
        "timestamp": "2026-01-02T10:00:03.000Z",
        "targetId": "u0000001",
        "replacement": None,
    }
    path = write_session(header(), system, user, edit, omit)
    assert import_session_file(path=path).problems == []
    entries = Entry.objects.filter(session=Session.objects.get())

    def found(query: str) -> list[str]:
        return sorted(apply_search(entries, query).values_list("entry_id", flat=True))

    assert found("Esperanto") == ["s0000001"]
    assert found("frobnicate") == ["s0000001"]
    assert found("knobs") == ["s0000001"]
    assert found("pelican policy") == ["c0000001"]
    assert Entry.objects.get(entry_id="c0000002").search_text == ""
