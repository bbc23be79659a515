"""The held-span and request-point rules over light facts (``contextlab.pi.held``) and the
per-dialect request estimates (``contextlab.pi.growth``), checked against the engine's own
request builder on every entry of the recorded Pi 0.80.2 and 1.6.0 sessions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextlab.pi import growth, held
from contextlab.pi.entries import message_of_entry
from contextlab.pi.request import steps_of
from contextlab.pi.session import SessionTree, parse_session_file
from contextlab.pi.tokens import estimate_tokens
from contextlab.pi.turn import build_turn
from tests.conformance.conftest import corpus_sessions

CORPUS_1X = Path(__file__).resolve().parents[1] / "conformance" / "corpus-1.6.0"
SESSIONS = sorted(CORPUS_1X.glob("*/session.jsonl")) + corpus_sessions()


def _facts(entries):
    by_id = {e["id"]: e for e in entries}

    def type_of(entry_id):
        return by_id[entry_id].get("type")

    def role_of(entry_id):
        message = by_id[entry_id].get("message")
        if by_id[entry_id].get("type") != "message" or not isinstance(message, dict):
            return ""
        return message.get("role") or ""

    def first_kept_of(entry_id):
        value = by_id[entry_id].get("firstKeptEntryId")
        return value if isinstance(value, str) else None

    return by_id, type_of, role_of, first_kept_of


def _name(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.parent.name}"


@pytest.mark.parametrize("path", SESSIONS, ids=_name)
def test_the_condensed_path_builds_the_same_request_as_the_whole_path(path):
    session = parse_session_file(path)
    tree = SessionTree(session.entries)
    by_id, type_of, role_of, first_kept_of = _facts(session.entries)
    for entry in session.entries:
        ids = [e["id"] for e in tree.path(entry["id"])]
        span = held.held_span(ids, type_of, first_kept_of)
        reads = held.settings_read_before(ids, span.start, type_of, role_of).positions()
        condensed = held.condensed_path(ids, span.start, reads, by_id.__getitem__)
        whole = build_turn(session.entries, entry["id"], header=session.header)
        part = build_turn(condensed, entry["id"], header=session.header)
        assert part.choice == whole.choice, entry["id"]
        assert part.agent_messages == whole.agent_messages, entry["id"]
        assert part.sent == whole.sent, entry["id"]
        assert (part.prompt.text if part.prompt else None) == (
            whole.prompt.text if whole.prompt else None
        ), entry["id"]
        assert part.tools == whole.tools and part.tool_origins == whole.tool_origins
        assert (part.thinking_level, part.context.model) == (
            whole.thinking_level,
            whole.context.model,
        )
        # The held entries are those the messages came from (the compaction's summary first).
        owners = [owner["id"] for owner in whole.owners]
        held_ids = span.held(ids)
        assert [i for i in held_ids if i in owners] == list(dict.fromkeys(owners)), entry["id"]


@pytest.mark.parametrize("path", SESSIONS, ids=_name)
def test_request_estimates_count_every_request_as_its_dialect_does(path):
    session = parse_session_file(path)
    tree = SessionTree(session.entries)
    by_id, type_of, role_of, _ = _facts(session.entries)
    leaf = tree.leaf_id
    ids = [e["id"] for e in tree.path(leaf)]

    def stored(entry):  # what the library stores per entry
        message = message_of_entry(entry, "estimate")
        return int(estimate_tokens(message)) if message is not None else 0

    steps = []
    for entry_id in ids:
        entry = by_id[entry_id]
        whole = entry if growth.needs_whole(type_of(entry_id), role_of(entry_id)) else None
        target = growth.edit_target(entry)
        steps.append(
            growth.path_entry(
                entry_id,
                type_of(entry_id),
                role_of(entry_id),
                stored(entry),
                whole=whole,
                target=by_id.get(target) if target else None,
            )
        )
    found = growth.request_estimates(steps)
    assert found
    replies = [i for i in ids[1:] if held.is_reply(type_of(i), role_of(i))]
    assert [r.reply for r in found if r.reply is not None] == replies
    for estimate in found:
        request = build_turn(session.entries, estimate.leaf, header=session.header)
        count = steps_of(request.dialect).estimate_tokens
        assert estimate.tokens == sum(count(m) for m in request.agent_messages), estimate.leaf
        assert estimate.choice == request.choice, estimate.leaf


@pytest.mark.parametrize("path", sorted(CORPUS_1X.glob("*/session.jsonl")), ids=_name)
def test_every_recorded_request_is_a_request_point(path):
    session = parse_session_file(path)
    tree = SessionTree(session.entries)
    _, type_of, role_of, _ = _facts(session.entries)
    points = dict(
        held.request_points(
            (e["id"] for e in session.entries), type_of, role_of, lambda i: tree.parent(i)
        )
    )
    manifest = json.loads((path.parent / "manifest.json").read_text())
    recorded = {r["leafId"] for r in manifest["requests"] if r["kind"] == "agent"}
    # Every request Pi recorded has a reply in the file (an overflow's failed one too).
    assert recorded <= set(points), recorded - set(points)
    for leaf in recorded:
        ids = [e["id"] for e in tree.path(leaf)]
        previous = held.previous_request(ids, type_of, role_of)
        assert previous is None or previous in points


def test_a_compaction_without_a_kept_entry_on_the_path_keeps_nothing_before_it():
    ids = ["a", "b", "c", "d"]
    kinds = {"a": "message", "b": "message", "c": "compaction", "d": "message"}
    span = held.held_span(ids, kinds.get, {"c": "zz"}.get)
    assert (span.compaction, span.start) == (2, 2)
    assert span.held(ids) == ["c", "d"]
    assert held.replaced(ids, span, kinds.get) == ["a", "b"]
    span = held.held_span(ids, kinds.get, {"c": "b"}.get)
    assert span.held(ids) == ["c", "b", "d"] and held.replaced(ids, span, kinds.get) == ["a"]


def test_the_condensed_path_keeps_the_first_system_message_that_tells_the_dialect():
    """A 1.x session compacted without ``systemMessage`` (as a Pi 0.x tool would write it): the
    system messages all lie before the kept range, and still make the turn a Pi 1.x one."""
    session = parse_session_file(CORPUS_1X / "length" / "session.jsonl")
    entries = [dict(e) for e in session.entries]
    compaction = next(e for e in entries if e["type"] == "compaction")
    del compaction["systemMessage"]
    leaf = entries[-1]["id"]
    by_id, type_of, role_of, first_kept_of = _facts(entries)
    ids = [e["id"] for e in SessionTree(entries).path(leaf)]
    span = held.held_span(ids, type_of, first_kept_of)
    reads = held.settings_read_before(ids, span.start, type_of, role_of)
    assert span.start > reads.first_system >= 0
    condensed = held.condensed_path(ids, span.start, reads.positions(), by_id.__getitem__)
    whole = build_turn(entries, leaf, header=session.header)
    part = build_turn(condensed, leaf, header=session.header)
    assert whole.choice.dialect == "1.x" and part.choice == whole.choice
    assert part.agent_messages == whole.agent_messages and part.prompt == whole.prompt
