"""Compaction rules of Pi 0.80.2 (docs/pi-engine.md, "Compaction"); the oracle suite checks
the same functions against Pi on thousands of leaves."""

from __future__ import annotations

from typing import Any

from contextlab.pi.compaction import (
    SPLIT_TURN_JOINER,
    CompactionOptions,
    CompactionSettings,
    FileOps,
    auto_compaction_what_if,
    compaction_preview,
    compute_file_lists,
    extract_file_ops_from_message,
    find_cut_point,
    find_valid_cut_points,
    format_file_operations,
    join_split_turn,
    prepare_compaction,
    serialize_conversation,
    should_compact,
)
from contextlab.pi.dialects import DEFAULT_DIALECT


class Path:
    """A linear path of entries built step by step (ids e0, e1, ...)."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def add(self, kind: str, **fields: Any) -> str:
        entry_id = f"e{len(self.entries)}"
        parent = self.entries[-1]["id"] if self.entries else None
        self.entries.append(
            {
                "type": kind,
                "id": entry_id,
                "parentId": parent,
                "timestamp": "2026-01-01T00:00:00.000Z",
                **fields,
            }
        )
        return entry_id

    def by_id(self, entry_id: str) -> dict[str, Any]:
        return next(e for e in self.entries if e["id"] == entry_id)

    def user(self, text: str) -> str:
        return self.add("message", message={"role": "user", "content": text, "timestamp": 1})

    def assistant(self, *blocks: dict[str, Any], total: int = 0) -> str:
        usage = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": total}
        message = {
            "role": "assistant",
            "content": list(blocks),
            "usage": usage,
            "stopReason": "stop",
            "timestamp": 1,
        }
        return self.add("message", message=message)

    def result(self, text: str) -> str:
        message = {
            "role": "toolResult",
            "toolCallId": "c",
            "toolName": "read",
            "content": [{"type": "text", "text": text}],
            "isError": False,
            "timestamp": 1,
        }
        return self.add("message", message=message)


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": "c", "name": name, "arguments": args}


def test_it_never_cuts_at_tool_results_or_settings():
    p = Path()
    p.user("hi")
    p.assistant(call("read", path="a"))
    p.result("x")
    p.add("model_change", provider="p", modelId="m")
    p.add("custom_message", customType="n", content="c", display=True)
    p.add("branch_summary", fromId="e0", summary="s")
    assert find_valid_cut_points(p.entries, 0, len(p.entries)) == [0, 1, 4, 5]


def test_it_moves_the_cut_forward_keeping_less_than_asked():
    p = Path()
    p.user("a" * 400)  # 100 tokens
    p.assistant(text("b" * 400))
    p.user("c" * 40)  # 10 tokens
    p.assistant(text("d" * 40))
    # The budget of 15 is crossed at e2 (10 + 10); the cut is the cut point at or after it.
    cut = find_cut_point(p.entries, 0, 4, 15)
    assert (cut.first_kept_entry_index, cut.is_split_turn) == (2, False)


def test_it_finds_nothing_to_compact_when_the_newest_tool_result_is_too_big():
    p = Path()
    p.user("go")
    p.assistant(call("read", path="a"))
    p.result("z" * 4000)
    assert find_cut_point(p.entries, 0, 3, 100).first_kept_entry_index == 0
    assert prepare_compaction(p.entries, CompactionSettings(keep_recent_tokens=100)) is None


def test_it_reports_a_spurious_split_turn_after_a_settings_entry():
    p = Path()
    p.user("a" * 400)
    p.assistant(text("b" * 400))
    p.add("model_change", provider="p", modelId="m")
    p.user("c" * 40)
    p.assistant(text("d" * 40))
    prep = prepare_compaction(p.entries, CompactionSettings(keep_recent_tokens=15))
    assert prep is not None
    assert prep.first_kept_entry_id == "e2" and prep.is_split_turn
    assert [m["role"] for m in prep.turn_prefix_messages] == ["user", "assistant"]
    assert prep.messages_to_summarize == []
    assert (prep.turn_prefix_entry_ids, prep.summarized_entry_ids) == (["e0", "e1"], [])


def test_it_drops_the_previous_summary_when_a_split_turn_has_no_history():
    p = Path()
    p.user("old")
    p.add("compaction", summary="EARLIER", firstKeptEntryId="e0", tokensBefore=5)
    p.user("x" * 400)
    p.assistant(call("read", path="a"))
    p.result("r" * 40)
    p.assistant(text("y" * 40))
    preview = compaction_preview(p.entries, CompactionOptions(keep_recent_tokens=15))
    prep = preview.preparation
    assert prep is not None and prep.is_split_turn and prep.previous_summary == "EARLIER"
    # History is the user message "old" (kept by the earlier compaction), so it is summarised
    # with the update prompt; without that message, Pi would send the prefix request alone.
    assert preview.request is not None
    assert preview.turn_prefix_request is not None
    only_prefix = Path()
    only_prefix.user("x" * 400)
    only_prefix.assistant(call("read", path="a"))
    only_prefix.result("r" * 40)
    only_prefix.assistant(text("y" * 40))
    alone = compaction_preview(only_prefix.entries, CompactionOptions(keep_recent_tokens=15))
    assert alone.request is None and alone.turn_prefix_request is not None
    prefix_text = alone.turn_prefix_request["messages"][0]["content"][0]["text"]
    assert prefix_text.endswith(DEFAULT_DIALECT.turn_prefix_summarization_prompt)
    assert alone.turn_prefix_request["maxTokens"] == 8192


def test_it_uses_the_update_prompt_and_caps_max_tokens_by_the_model():
    p = Path()
    p.user("a" * 400)
    p.assistant(text("b" * 400))
    p.add("compaction", summary="PREV", firstKeptEntryId="e1", tokensBefore=9)
    p.user("c" * 400)
    p.assistant(text("d" * 40))
    options = CompactionOptions(
        keep_recent_tokens=5, model_max_tokens=1000, custom_instructions="focus"
    )
    request = compaction_preview(p.entries, options).request
    assert request is not None
    body = request["messages"][0]["content"][0]["text"]
    assert body.startswith("<conversation>\n[Assistant]: bbbb")
    assert "\n</conversation>\n\n<previous-summary>\nPREV\n</previous-summary>\n\n" in body
    assert body.endswith(
        DEFAULT_DIALECT.update_summarization_prompt + "\n\nAdditional focus: focus"
    )
    assert request["systemPrompt"] == DEFAULT_DIALECT.summarization_system_prompt
    assert request["maxTokens"] == 1000
    assert (
        compaction_preview(p.entries, CompactionOptions(keep_recent_tokens=5)).request["maxTokens"]
        == 13107
    )


def test_it_refuses_to_compact_twice():
    p = Path()
    p.user("a")
    p.add("compaction", summary="S", firstKeptEntryId="e0", tokensBefore=1)
    assert compaction_preview(p.entries).preparation is None


def test_it_serializes_the_conversation_as_pi_does():
    messages = [
        {
            "role": "user",
            "content": [
                text("a"),
                {"type": "image", "data": "", "mimeType": "image/png"},
                text("b"),
            ],
        },
        {
            "role": "assistant",
            "content": [
                text("t1"),
                {"type": "thinking", "thinking": "th"},
                call("edit", path="p", edits=[{"x": 1}]),
                text("t2"),
            ],
        },
        {"role": "toolResult", "content": [text("😀" * 1001)]},
        {"role": "user", "content": ""},
    ]
    out = serialize_conversation(messages)
    parts = out.split("\n\n")
    assert parts[0] == "[User]: ab"
    assert parts[1] == "[Assistant thinking]: th"
    assert parts[2] == "[Assistant]: t1\nt2"
    assert parts[3] == '[Assistant tool calls]: edit(path="p", edits=[{"x":1}])'
    # 2002 UTF-16 units: the cut at 2000 keeps 1000 emoji.
    assert out.endswith("😀" * 1000 + "\n\n[... 2 more characters truncated]")


def test_it_orders_tool_arguments_like_object_entries():
    msg = {
        "role": "assistant",
        "content": [call("x", b={"z": 0, "10": 1, "9": 2}, **{"2": "two", "1": "one"})],
    }
    assert serialize_conversation([msg]) == (
        '[Assistant tool calls]: x(1="one", 2="two", b={"9":2,"10":1,"z":0})'
    )


def test_it_tracks_raw_file_paths_and_sorts_lists():
    ops = FileOps()
    extract_file_ops_from_message(
        {
            "role": "assistant",
            "content": [
                call("read", path="./a"),
                call("read", path="a"),
                call("write", path="B"),
                call("edit", path="a"),
                call("bash", path="z"),
            ],
        },
        ops,
    )
    assert compute_file_lists(ops) == (["./a"], ["B", "a"])
    assert (
        format_file_operations(["r"], ["m"])
        == "\n\n<read-files>\nr\n</read-files>\n\n<modified-files>\nm\n</modified-files>"
    )
    assert format_file_operations([], []) == ""


def test_it_merges_previous_compaction_file_lists():
    p = Path()
    p.user("a" * 400)
    p.assistant(call("read", path="new.txt"))
    p.add(
        "compaction",
        summary="S",
        firstKeptEntryId="e0",
        tokensBefore=1,
        details={"readFiles": ["r.md"], "modifiedFiles": ["m.py"]},
    )
    p.user("b" * 400)
    p.assistant(text("c" * 40))
    prep = prepare_compaction(p.entries, CompactionSettings(keep_recent_tokens=5))
    assert prep is not None
    assert (prep.read_files, prep.modified_files) == (["new.txt", "r.md"], ["m.py"])


def test_it_compacts_strictly_above_the_threshold():
    assert not should_compact(900, 1000, 100)
    assert should_compact(901, 1000, 100)
    assert not should_compact(10**9, 1000, 100, enabled=False)


def test_it_finds_where_auto_compaction_would_run():
    p = Path()
    for i in range(6):
        p.user("u" * 400)
        p.assistant(text("a" * 400), total=300 * (i + 1))
    found = auto_compaction_what_if(
        p.entries, context_window=1000, reserve_tokens=100, keep_recent_tokens=150
    )
    assert found, "usage 1200 crosses 900"
    first = found[0]
    # e5 reports 900 (not above 1000 - 100); e7 reports 1200.
    assert (first.after_entry_id, first.context_tokens) == ("e7", 1200)
    assert (
        first.summarized_entry_ids and first.first_kept_entry_id not in first.summarized_entry_ids
    )
    assert first.estimated_tokens_after < first.tokens_before
    # Later usage figures (recorded without that compaction) are lowered by what it freed.
    freed = 1200 - first.estimated_tokens_after
    for later in found[1:]:
        recorded = int(p.by_id(later.after_entry_id)["message"]["usage"]["totalTokens"])
        assert later.context_tokens <= recorded - freed
        assert later.context_tokens > 900


def test_it_joins_split_summaries_with_pis_separator():
    assert SPLIT_TURN_JOINER == "\n\n---\n\n**Turn Context (split turn):**\n\n"
    assert join_split_turn("H", "P") == "H\n\n---\n\n**Turn Context (split turn):**\n\nP"
    assert join_split_turn(None, "P").startswith("No prior history.\n\n---\n\n")
