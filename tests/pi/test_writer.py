"""Pi's write side (SessionManager): ids, key order, summaries, the leaf after navigation."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta, timezone

from contextlab.pi.writer import (
    ENTRY_KEY_ORDER,
    SessionWriter,
    generate_id,
    iso_timestamp,
    leaf_after_navigation,
    ordered_entry,
    summarizer_thinking_level,
)


def _uuids(*values):
    source = itertools.cycle(values)
    return lambda: next(source)


def test_it_draws_a_new_eight_character_id_and_falls_back_to_a_whole_uuid():
    assert generate_id({"aaaaaaaa"}, _uuids("aaaaaaaa-1", "bbbbbbbb-2")) == "bbbbbbbb"
    assert generate_id({"aaaaaaaa"}, _uuids("aaaaaaaa-1")) == "aaaaaaaa-1"
    assert len(generate_id(set())) == 8


def test_it_prints_timestamps_as_javascripts_to_iso_string():
    moment = datetime(2025, 3, 4, 5, 6, 7, 891_999, tzinfo=timezone(timedelta(hours=2)))
    assert iso_timestamp(moment) == "2025-03-04T03:06:07.891Z"
    assert iso_timestamp(datetime(2025, 1, 1, tzinfo=UTC)) == "2025-01-01T00:00:00.000Z"


def test_it_appends_a_compaction_as_a_child_of_the_leaf_in_pis_key_order():
    writer = SessionWriter(
        {"a", "b0000000"}, "b0000000", random_uuid=_uuids("b0000000", "c0000000")
    )
    entry = writer.append_compaction(
        timestamp="T", summary="S", first_kept_entry_id="a", tokens_before=5, details={}
    )
    assert list(entry) == list(ENTRY_KEY_ORDER["compaction"])
    assert (entry["id"], entry["parentId"], entry["fromHook"]) == ("c0000000", "b0000000", False)
    assert writer.leaf_id == "c0000000"
    # The id just handed out counts as taken for the next append.
    writer = SessionWriter(set(), None, random_uuid=_uuids("d0000000", "d0000000", "e0000000"))
    first = writer.branch_with_summary(None, timestamp="T", summary="S")
    second = writer.branch_with_summary("x", timestamp="T", summary="S")
    assert (first["id"], second["id"]) == ("d0000000", "e0000000")


def test_it_attaches_a_branch_summary_where_the_leaf_lands():
    writer = SessionWriter(set(), "old")
    entry = writer.branch_with_summary(None, timestamp="T", summary="S", details={"x": 1})
    assert list(entry) == list(ENTRY_KEY_ORDER["branch_summary"])
    assert (entry["parentId"], entry["fromId"]) == (None, "root")
    assert writer.leaf_id == entry["id"]
    assert writer.branch_with_summary("p", timestamp="T", summary="S")["fromId"] == "p"


def test_the_leaf_goes_before_a_user_or_custom_message_and_onto_anything_else():
    user = {"type": "message", "id": "u", "parentId": "p", "message": {"role": "user"}}
    custom = {"type": "custom_message", "id": "c", "parentId": None}
    reply = {"type": "message", "id": "r", "parentId": "u", "message": {"role": "assistant"}}
    assert leaf_after_navigation(user) == "p"
    assert leaf_after_navigation(custom) is None
    assert leaf_after_navigation(reply) == "r"


def test_it_restores_pis_key_order_and_keeps_unknown_keys_after():
    stored = {"summary": "S", "z": 1, "type": "branch_summary", "id": "i", "fromId": "f"}
    assert list(ordered_entry(stored)) == ["type", "id", "fromId", "summary", "z"]
    assert ordered_entry({"type": "other", "b": 1, "a": 2}) == {"type": "other", "b": 1, "a": 2}


def test_the_summariser_gets_the_sessions_thinking_level_unless_it_is_off():
    def change(level):
        return {"type": "thinking_level_change", "thinkingLevel": level}

    assert summarizer_thinking_level([change("high"), {"type": "message"}]) == "high"
    assert summarizer_thinking_level([change("high"), change("off")]) is None
    assert summarizer_thinking_level([]) is None


def test_pi_1x_writes_usage_the_stamped_system_state_and_the_leaf_it_left():
    from contextlab.pi.writer import ENTRY_KEY_ORDER_1X, Pi1xSessionWriter

    system = {"role": "system", "content": "", "sections": {"a": "A"}, "timestamp": 1}
    writer = Pi1xSessionWriter(set(), "leaf", random_uuid=_uuids("c0000000", "d0000000"))
    entry = writer.append_compaction(
        timestamp="2025-01-01T00:00:01.500Z",
        summary="S",
        first_kept_entry_id="a",
        tokens_before=5,
        details={},
        usage={"input": 1},
        system_message=system,
    )
    assert list(entry) == list(ENTRY_KEY_ORDER_1X["compaction"])
    assert entry["systemMessage"] == {**system, "timestamp": 1735689601500}
    assert list(entry["systemMessage"]) == list(system)
    # A branch summary names the leaf it was written from, not the entry it hangs under; no
    # reply, no usage.
    branch = Pi1xSessionWriter(set(), "old").branch_with_summary("p", timestamp="T", summary="S")
    assert (branch["parentId"], branch["fromId"]) == ("p", "old")
    assert "usage" not in branch
    assert (
        Pi1xSessionWriter(set(), None).branch_with_summary(None, timestamp="T", summary="S")[
            "fromId"
        ]
        == "root"
    )
    # One order restores the entries of either version.
    assert list(ordered_entry(dict(reversed(list(entry.items()))))) == list(entry)
