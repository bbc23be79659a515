"""The release table (contextlab/pi/dialects/releases_data.py, tools/gen_release_table.py) holds
what each release's own dist says, and the dialect it builds for a release is the one the engine
was proved with where a hand-built dialect exists (0.73.1, 0.80.2)."""

from dataclasses import fields

import pytest

from contextlab.pi.dialects import releases_data
from contextlab.pi.dialects.pi_0_73 import PI_0_73
from contextlab.pi.dialects.pi_0_80 import PI_0_80
from contextlab.pi.dialects.releases import (
    RELEASES,
    build_release_dialect,
    dialect_for_release,
    parse_release,
    release_values,
)
from contextlab.pi.prompt import build_system_prompt_from_options
from contextlab.pi.request import steps_of

# Project trust strings: 0.73.1 has no trust-manager.js, its hand-built dialect keeps 0.80's.
_NOT_IN_0_73 = {"trust_store_unreadable", "trust_store_not_object"}


@pytest.mark.parametrize(("version", "hand_built"), [("0.80.2", PI_0_80), ("0.73.1", PI_0_73)])
def test_it_builds_the_hand_built_dialect_of_a_release_from_the_table(version, hand_built):
    built = build_release_dialect(version)
    assert dialect_for_release(version) is hand_built
    for f in fields(hand_built):
        if f.name in ("version", "steps", "prompt"):
            continue
        assert getattr(built, f.name) == getattr(hand_built, f.name), f.name
    for f in fields(hand_built.prompt):
        if version == "0.73.1" and f.name in _NOT_IN_0_73:
            continue
        assert getattr(built.prompt, f.name) == getattr(hand_built.prompt, f.name), f.name
    hand_steps = steps_of(hand_built)
    assert (built.steps.pi_ai, built.steps.sends_max_tokens) == (
        hand_steps.pi_ai,
        hand_steps.sends_max_tokens,
    )


def test_it_holds_every_release_from_0_70_0_to_1_6_0_of_both_package_names():
    assert RELEASES[0] == "0.70.0"
    assert RELEASES[-1] == "1.6.0"
    assert release_values("0.73.1")["PACKAGE"] == "@mariozechner/pi-coding-agent"
    assert release_values("0.74.0")["PACKAGE"] == "@earendil-works/pi-coding-agent"
    # Each text once: far fewer texts than release x key.
    assert len(releases_data.TEXTS) < 10 * len(RELEASES)


def test_it_refuses_a_release_it_does_not_hold():
    with pytest.raises(ValueError, match=r"unknown Pi release '0\.80\.99'.*0\.70\.0 to 1\.6\.0"):
        parse_release("0.80.99")


def _prompt(version, **options):
    return build_system_prompt_from_options(
        cwd="/w",
        date="2026-12-06",
        selected_tools=["read", "bash", "edit", "write"],
        tool_snippets={"read": "Read", "bash": "Run"},
        pi_root="/pkg",
        dialect=dialect_for_release(version),
        **options,
    ).text


def test_it_drops_the_date_line_after_0_80_2():
    assert "\nCurrent date: 2026-12-06\n" in _prompt("0.80.2")
    assert "Current date:" not in _prompt("0.80.10")
    assert _prompt("0.80.10").endswith("\nCurrent working directory: /w")


def test_it_ends_a_custom_prompt_with_a_newline_from_0_84():
    assert _prompt("0.82.1", custom_prompt="Mine").endswith("directory: /w")
    assert _prompt("0.84.4", custom_prompt="Mine").endswith("directory: /w\n")


def test_it_lists_the_environment_variables_docs_from_0_82():
    assert "environment variables (docs/environment-variables.md)" not in _prompt("0.80.10")
    assert "environment variables (docs/environment-variables.md)" in _prompt("0.82.1")


def test_it_takes_the_1x_releases_prompt_from_the_session():
    dialect = dialect_for_release("1.0.3")
    assert dialect.steps is not None and dialect.steps.prompt_in_session
    assert dialect.steps.pi_ai.name == "1.0"
    assert dialect.version == "1.0.3"


def _reply(id_, parent, **usage_extra):
    return {
        "type": "message",
        "id": id_,
        "parentId": parent,
        "message": {
            "role": "assistant",
            "api": "openai-completions",
            "stopReason": "stop",
            "content": [{"type": "text", "text": "ok"}],
            "usage": {"input": 10, "output": 2, **usage_extra},
        },
    }


def _user(id_, parent):
    return {
        "type": "message",
        "id": id_,
        "parentId": parent,
        "message": {"role": "user", "content": "hi"},
    }


def test_it_narrows_the_release_from_what_the_file_holds():
    from contextlab.pi.dialects.release_detect import detect_release

    old = [_user("u1", None), _reply("a1", "u1"), _user("u2", "a1")]
    found = detect_release(old, "u2")
    assert found.candidates[-1] == "0.80.2" and found.chosen == "0.80.2"
    # usage.reasoning (pi-ai 0.80.3 on) without rawStopReason (0.83.0 on) or a system message.
    new = [_user("u1", None), _reply("a1", "u1", reasoning=0), _user("u2", "a1")]
    found = detect_release(new, "u2")
    assert (found.candidates[0], found.candidates[-1]) == ("0.80.3", "0.82.1")
    # 0.80.7, 0.80.10 and 0.81.1 build the same request: the largest group of candidates.
    assert found.chosen == "0.81.1"
    assert "different requests" in found.why and "assistant usage.reasoning (a1)" in found.why
    chosen = detect_release(new, "u2", chosen="0.80.10")
    assert chosen.chosen == "0.80.10" and chosen.why.startswith("chosen (--pi-version)")


@pytest.mark.parametrize(("usage", "last"), [(None, "0.80.10"), ({"input": 1}, "0.82.1")])
def test_a_summary_pi_wrote_without_usage_rules_out_0_81_on(usage, last):
    from contextlab.pi.dialects.release_detect import detect_release

    compaction = {"type": "compaction", "id": "c1", "parentId": "a1", "summary": "s"}
    compaction |= {"firstKeptEntryId": "u1", "tokensBefore": 9, "fromHook": False}
    if usage:
        compaction["usage"] = usage
    entries = [_user("u1", None), _reply("a1", "u1", reasoning=0), compaction, _user("u2", "c1")]
    found = detect_release(entries, "u2")
    assert (found.candidates[0], found.candidates[-1]) == (
        "0.80.3" if not usage else "0.81.1",
        last,
    )
    # An extension's summary (fromHook) says nothing about Pi's own.
    compaction.pop("usage", None)
    compaction["fromHook"] = True
    assert detect_release(entries, "u2").candidates[-1] == "0.82.1"


def _system(id_, version, names=("read", "edit")):
    """A 1.x system message as release ``version`` writes it: its tools' declarations, their
    snippets in the tools section and their guidelines in the rules section."""
    values = release_values(version)
    tools = [values[f"TOOL.{n}"] for n in names]
    listed = "".join(f"\n- {t['name']}: {t['promptSnippet']}" for t in tools)
    rules = "".join(f"\n- {g}" for t in tools for g in t.get("promptGuidelines") or ())
    return {
        "type": "message",
        "id": id_,
        "parentId": None,
        "message": {
            "role": "system",
            "content": "",
            "sections": {
                "tools": f"<tools>{listed}\n</tools>",
                "rules": f"<rules>{rules}\n</rules>",
            },
            "toolsAdded": [
                {"name": t["name"], "description": t["description"], "parameters": t["parameters"]}
                for t in tools
            ],
        },
    }


@pytest.mark.parametrize(
    ("writer", "span"), [("1.4.0", ("0.86.1", "1.4.0")), ("1.5.0", ("1.5.0", "1.6.0"))]
)
def test_a_1x_session_tells_the_release_by_the_tool_declarations_it_saved(writer, span):
    from contextlab.pi.dialects.release_detect import detect_release

    # 1.5.0 rewrote edit's guidelines (dist/core/tools/edit.js): the saved rules section says
    # which side of it wrote the session, before any reply.
    entries = [_system("s1", writer), _user("u1", "s1")]
    found = detect_release(entries, "u1")
    assert (found.candidates[0], found.candidates[-1]) == span
    assert "saved declarations of edit" in found.why
    # 0.87.1 to 0.99.1 send the same request: the largest group alike, not 1.6.0.
    if writer == "1.4.0":
        assert found.chosen == "0.99.1"


@pytest.mark.parametrize(
    ("writer", "span"), [("1.4.0", ("0.86.1", "1.4.0")), ("1.5.2", ("1.5.0", "1.6.0"))]
)
def test_a_1x_session_tells_the_release_by_the_default_prompt_it_saved(writer, span):
    from contextlab.pi.dialects.release_detect import detect_release

    # read and bash read alike in every 1.x release; the preamble and the tools section's last
    # line changed in 1.5.0 (dist/core/system-prompt.js buildSystemPromptSections).
    values = release_values(writer)
    entries = [_system("s1", writer, names=("read", "bash")), _user("u1", "s1")]
    sections = entries[0]["message"]["sections"]
    sections["preamble"] = values["PROMPT_1X.preamble"]
    sections["tools"] = sections["tools"].replace(
        "\n</tools>", values["PROMPT_1X.tools_footer"] + "\n</tools>"
    )
    found = detect_release(entries, "u1")
    assert (found.candidates[0], found.candidates[-1]) == span
    assert "saved preamble and tools section" in found.why
    # A SYSTEM.md prompt has no tools section: nothing told.
    del sections["tools"]
    assert detect_release(entries, "u1").candidates[-1] == "1.6.0"
    assert detect_release(entries, "u1").candidates[0] == "0.86.1"


def test_a_tool_no_release_declares_so_tells_nothing():
    from contextlab.pi.dialects.release_detect import detect_release

    entries = [_system("s1", "1.6.0"), _user("u1", "s1")]
    entries[0]["message"]["toolsAdded"][1]["description"] = "An extension's own edit"
    found = detect_release(entries, "u1")
    assert found.candidates[0] == "0.86.1" and found.chosen == "1.6.0"


def test_the_context_command_takes_a_release_and_refuses_an_unknown_one(tmp_path):
    import io
    import json

    from django.core.management import CommandError, call_command

    session = tmp_path / "s.jsonl"
    header = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-12-06T00:00:00.000Z"}
    lines = [header, _user("u1", None), _reply("a1", "u1", reasoning=0), _user("u2", "a1")]
    session.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = io.StringIO()
    call_command("context", str(session), "--pi-version", "0.80.10", "--json", stdout=out)
    result = json.loads(out.getvalue())
    assert list(result)[-1] == "piRelease"
    assert result["piRelease"]["chosen"] == "0.80.10"
    assert "Current date:" not in result["systemPrompt"]
    with pytest.raises(CommandError, match=r"unknown Pi release '9\.9\.9'"):
        call_command("context", str(session), "--pi-version", "9.9.9", "--json")


def test_a_1x_turn_prefix_prompt_follows_its_release():
    from contextlab.pi.dialects.pi_1_x_compaction import turn_prefix_prompt

    # dist/core/compaction/compaction.js generateTurnPrefixSummary: 0.87.1 reworded the prompt and
    # framed the conversation with headings; 0.86.1 and 0.87.0 had 0.x's.
    messages = [{"role": "user", "content": "hi", "timestamp": 1}]
    old = turn_prefix_prompt(messages, None, "0.87.0")
    assert old == (
        "<conversation>\n[User]: hi\n</conversation>\n\n"
        + release_values("0.87.0")["TURN_PREFIX_SUMMARIZATION_PROMPT"]
    )
    assert old.endswith(release_values("0.80.2")["TURN_PREFIX_SUMMARIZATION_PROMPT"])
    new = turn_prefix_prompt(messages, None, "0.87.1")
    assert new.startswith("# Conversation\n[User]: hi\n\n# Instructions\n")
    assert new == turn_prefix_prompt(messages, None, "1.6")


def test_0x_summary_rules_by_release():
    from contextlab.pi.summaries import branch_summary_max_tokens_0x, summary_tool_choice

    # dist/core/compaction/branch-summarization.js: a fixed 2048 to 0.84.4, then the model's cap
    # up to 4096.
    assert branch_summary_max_tokens_0x("0.84.4", {"maxTokens": 16384}) == 2048
    assert branch_summary_max_tokens_0x(None, {"maxTokens": 16384}) == 2048
    assert branch_summary_max_tokens_0x("0.85.0", {"maxTokens": 16384}) == 4096
    assert branch_summary_max_tokens_0x("0.85.1", {"maxTokens": 3000}) == 3000
    assert branch_summary_max_tokens_0x("0.85.1", {"maxTokens": 0}) == 4096
    # dist/core/compaction/compaction.js completeSummarization: toolChoice "none" in 0.84.3 only.
    assert [summary_tool_choice(v) for v in ("0.84.2", "0.84.3", "0.84.4")] == [None, "none", None]
