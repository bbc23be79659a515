"""The diff tab's message comparison (``diffs.request_diff``) compares messages by their JSON text
with sorted keys while serialising only the messages that could differ: checked against the
plain rule (every message digested) on every request point of the recorded sessions, and on
messages equal to Python but not in JSON (1, 1.0 and True; 0.0 and -0.0)."""

from __future__ import annotations

import copy
import hashlib
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from contextlab.inspector import diffs
from contextlab.inspector.diffs import message_key, request_diff, same_json
from contextlab.pi.held import previous_request
from contextlab.pi.request import DEFAULT_DIALECT
from contextlab.pi.session import SessionTree, parse_session_file
from contextlab.pi.turn import build_turn
from tests.conformance.conftest import corpus_sessions

CORPUS_1X = Path(__file__).resolve().parents[1] / "conformance" / "corpus-1.6.0"
SESSIONS = sorted(CORPUS_1X.glob("*/session.jsonl")) + corpus_sessions()


def _plain(before, after) -> dict:
    """The rule, written the obvious way: every message's sorted JSON compared."""
    sent_before = [message_key(m) for m in before.sent]
    sent_after = [message_key(m) for m in after.sent]
    common = 0
    while (
        common < min(len(sent_before), len(sent_after))
        and sent_before[common] == sent_after[common]
    ):
        common += 1
    keys_before = {message_key(m) for m in before.agent_messages}
    keys_after = {message_key(m) for m in after.agent_messages}
    return {
        "common_prefix": common,
        "added": [
            message_key(m) for m in after.agent_messages if message_key(m) not in keys_before
        ],
        "removed": [
            message_key(m) for m in before.agent_messages if message_key(m) not in keys_after
        ],
    }


def _ours(before, after, monkeypatch) -> dict:
    monkeypatch.setattr(diffs, "summary_line", lambda message, estimate: message_key(message))
    found = request_diff(before, after)
    return {key: found[key] for key in ("common_prefix", "added", "removed")}


def _name(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.parent.name}"


@pytest.mark.parametrize("path", SESSIONS, ids=_name)
def test_the_diff_of_each_entry_and_the_request_before_it_follows_the_plain_rule(path, monkeypatch):
    session = parse_session_file(path)
    tree = SessionTree(session.entries)
    by_id = {e["id"]: e for e in session.entries}
    compared = 0
    for entry in session.entries:
        ids = [e["id"] for e in tree.path(entry["id"])]
        previous = previous_request(ids, lambda i: by_id[i].get("type"), lambda i: _role(by_id[i]))
        if previous is None:
            continue
        after = build_turn(session.entries, entry["id"], header=session.header)
        before = build_turn(session.entries, previous, header=session.header)
        assert _ours(before, after, monkeypatch) == _plain(before, after), entry["id"]
        compared += 1
    assert compared or len(session.entries) < 4


def _role(entry: dict) -> str:
    message = entry.get("message")
    return (message.get("role") or "") if isinstance(message, dict) else ""


def _request(messages):
    return SimpleNamespace(
        sent=messages,
        agent_messages=messages,
        dialect=DEFAULT_DIALECT,
        prompt=None,
        prompt_date=None,
        tools=[],
        tool_origins={},
    )


def _user(text, stamp):
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": stamp}


@pytest.mark.parametrize(
    ("old", "new"),
    [(1, True), (1, 1.0), (0.0, -0.0), (0, False), (None, 0)],
    ids=["int-bool", "int-float", "zero-signs", "zero-false", "null-zero"],
)
def test_messages_equal_in_python_but_not_in_json_are_a_change(old, new, monkeypatch):
    shared = [_user("first", 1), _user("second", 2)]
    before = _request([*shared, {**_user("third", 3), "usage": {"input": old}}])
    after = _request([*shared, {**_user("third", 3), "usage": {"input": new}}])
    found = _ours(before, after, monkeypatch)
    assert found == _plain(before, after)
    assert found["common_prefix"] == 2
    assert len(found["added"]) == 1 and len(found["removed"]) == 1


def test_copies_of_a_message_and_a_message_repeated_are_the_same_message(monkeypatch):
    first, second = _user("first", 1), _user("again", 2)
    before = _request([first, second])
    # The same messages as other objects (decoded twice), then a repeat of an earlier one.
    after = _request([copy.deepcopy(first), copy.deepcopy(second), copy.deepcopy(first)])
    found = _ours(before, after, monkeypatch)
    assert found == _plain(before, after) == {"common_prefix": 2, "added": [], "removed": []}


def test_same_json_is_strict_about_types_and_lenient_about_key_order():
    assert same_json({"a": 1, "b": [1.5, "x"]}, {"b": [1.5, "x"], "a": 1})
    assert not same_json({"a": 1}, {"a": True})
    assert not same_json({"a": 1}, {"a": 1.0})
    assert not same_json([0.0], [-0.0])
    assert not same_json({"a": 1}, {"a": 1, "b": None})
    assert not same_json([1], (1,))  # not sure: the caller digests both


def test_same_json_on_a_nesting_deeper_than_the_stack_says_not_sure():
    deep_a: list = []
    deep_b: list = []
    for _ in range(sys.getrecursionlimit() + 10):
        deep_a, deep_b = [deep_a], [deep_b]
    assert same_json(deep_a, deep_b) is False


def test_only_messages_that_could_differ_are_serialised(monkeypatch):
    shared = [_user(f"message {n}", n) for n in range(200)]
    before = _request(shared)
    after = _request([*shared, _user("new", 1000)])
    serialised = []

    def counting(message):
        serialised.append(message)
        return hashlib.sha1(repr(sorted(message.items())).encode()).digest()

    monkeypatch.setattr(diffs, "message_key", counting)
    found = _ours(before, after, monkeypatch)
    assert found["common_prefix"] == 200 and len(found["added"]) == 1
    assert len(serialised) <= 2
