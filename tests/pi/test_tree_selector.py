"""Pi's /tree rules (tree-selector.js of 0.80.2) as the web tree applies them. No database."""

from __future__ import annotations

from contextlab.pi.session import SessionTree
from contextlab.pi.tree_selector import (
    build_view,
    collect_tool_calls,
    finish,
    flatten,
    format_tool_call,
    select_rows,
    tree_item,
)


def _msg(entry_id, parent, ts, role, content, **extra):
    message = {"role": role, "content": content, **extra}
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": ts,
        "message": message,
    }


def _view(entries, mode="default", query="", folded=()):
    tree = SessionTree(entries)
    calls: dict = {}
    for e in entries:
        collect_tool_calls(e, calls)
    items = {e["id"]: tree_item(e, calls) for e in entries}
    for entry_id, item in items.items():
        item.parent_id = tree.parent(entry_id)
    order = flatten(tree.roots, tree.children, tree.leaf_id)
    path = set(tree.path_ids(tree.leaf_id))
    labels = {k: str(v) for k, v in tree.labels.items()}
    return build_view(order, items, labels, tree.leaf_id, path, mode, query, folded)


def _branched():
    return [
        _msg("a", None, "2025-01-01T00:00:01Z", "user", "hello"),
        _msg("b", "a", "2025-01-01T00:00:02Z", "assistant", [{"type": "text", "text": "hi"}]),
        _msg("c1", "b", "2025-01-01T00:00:03Z", "user", "first try"),
        _msg("c2", "b", "2025-01-01T00:00:04Z", "user", "second try"),
        _msg("d", "c2", "2025-01-01T00:00:05Z", "assistant", [{"type": "text", "text": "ok"}]),
    ]


def _lines(view):
    finish(view, view.rows)
    return [f"{r.prefix}{r.item.tag}{r.item.text}" for r in view.rows]


def test_it_lists_the_branch_holding_the_leaf_first_with_pi_connectors():
    view = _view(_branched())
    assert _lines(view) == [
        "user: hello",
        "assistant: hi",
        "├⊟ user: second try",
        "│     assistant: ok",
        "└─ user: first try",
    ]
    assert [r.on_path for r in view.rows] == [True, True, True, True, False]
    assert view.rows[3].is_leaf


def test_it_folds_a_segment_and_hides_its_descendants():
    view = _view(_branched(), folded=["c2"])
    assert _lines(view) == [
        "user: hello",
        "assistant: hi",
        "├⊞ user: second try",
        "└─ user: first try",
    ]
    assert view.rows[2].folded


def test_it_hides_tool_call_only_replies_and_settings_entries_by_default():
    entries = [
        {
            "type": "model_change",
            "id": "m",
            "parentId": None,
            "timestamp": "2025-01-01T00:00:00Z",
            "provider": "anthropic",
            "modelId": "claude",
        },
        _msg("u", "m", "2025-01-01T00:00:01Z", "user", "list files"),
        _msg(
            "a",
            "u",
            "2025-01-01T00:00:02Z",
            "assistant",
            [{"type": "toolCall", "id": "t1", "name": "bash", "arguments": {"command": "ls -la"}}],
            stopReason="toolUse",
        ),
        _msg(
            "r",
            "a",
            "2025-01-01T00:00:03Z",
            "toolResult",
            [{"type": "text", "text": "x"}],
            toolCallId="t1",
            toolName="bash",
        ),
        _msg(
            "e",
            "r",
            "2025-01-01T00:00:04Z",
            "assistant",
            [],
            stopReason="error",
            errorMessage="overloaded\nretry",
        ),
        {
            "type": "label",
            "id": "l",
            "parentId": "e",
            "timestamp": "2025-01-01T00:00:05Z",
            "targetId": "u",
            "label": "start",
        },
    ]
    assert _lines(_view(entries)) == [
        "user: list files",
        "[bash: ls -la]",
        "assistant: overloaded retry",
    ]
    assert _view(entries).rows[0].label == "start"
    assert _lines(_view(entries, mode="no-tools")) == [
        "user: list files",
        "assistant: overloaded retry",
    ]
    assert _lines(_view(entries, mode="user-only")) == ["user: list files"]
    assert _lines(_view(entries, mode="labeled-only")) == ["user: list files"]
    assert _lines(_view(entries, mode="all")) == [
        "[model: claude]",
        "user: list files",
        "[bash: ls -la]",
        "assistant: overloaded retry",
        "[label: start]",
    ]


def test_it_searches_every_token_in_the_label_and_the_text():
    entries = _branched()
    assert _lines(_view(entries, query="SECOND try")) == ["user: second try"]
    assert _lines(_view(entries, query="try first")) == ["user: first try"]
    assert _lines(_view(entries, query="nothing-like-this")) == []


def test_it_formats_tool_calls_as_pi_does():
    assert (
        format_tool_call("read", {"path": "/a/b.py", "offset": 10, "limit": 5})
        == "[read: /a/b.py:10-14]"
    )
    assert format_tool_call("bash", {"command": "x" * 60}) == f"[bash: {'x' * 50}...]"
    assert format_tool_call("grep", {"pattern": "foo"}) == "[grep: /foo/ in .]"
    assert format_tool_call("custom", {"a": 1}) == '[custom: {"a":1}]'


def test_it_sends_the_rows_around_the_focus_of_a_long_linear_session():
    entries = [_msg("e0", None, "2025-01-01T00:00:00Z", "user", "start")]
    for n in range(1, 5000):
        role = "user" if n % 2 == 0 else "assistant"
        content = f"m{n}" if role == "user" else [{"type": "text", "text": f"m{n}"}]
        entries.append(
            _msg(
                f"e{n}",
                f"e{n - 1}",
                f"2025-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}Z",
                role,
                content,
            )
        )
    view = _view(entries)
    ranges = select_rows(view, [2500, len(view.rows) - 1], window=10, budget=1500)
    shown = sum(b - a + 1 for a, b in ranges)
    assert shown < 100
    assert any(a <= 2500 <= b for a, b in ranges)
    assert ranges[-1][1] == len(view.rows) - 1
