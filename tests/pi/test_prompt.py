"""System-prompt layers: exact concatenation, per-layer token estimates, Pi's option rules."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextlab.pi.dialects import PI_0_80
from contextlab.pi.jsutil import js_len
from contextlab.pi.prompt import (
    PI_ROOT_PLACEHOLDER,
    active_tool_names,
    build_system_prompt,
    build_system_prompt_from_options,
    format_skills_for_prompt,
    normalize_prompt_guidelines,
    normalize_prompt_snippet,
    tool_prompt_options,
)
from contextlab.pi.resources import ContextFile, PromptResources, Skill

RULES = PI_0_80.prompt
assert RULES is not None


def _resources(**kwargs: object) -> PromptResources:
    return PromptResources(cwd="/p", agent_dir="/a", home="/h", **kwargs)  # type: ignore[arg-type]


FULL = _resources(
    context_files=(ContextFile("/AGENTS.md", "root rules\n"), ContextFile("/p/CLAUDE.md", "p")),
    append_system_prompt=("appended 😀",),
    append_system_prompt_paths=("/a/APPEND_SYSTEM.md",),
    skills=(
        Skill("s-one", 'does <one> & "two"', "/a/skills/s-one/SKILL.md", "/a/skills/s-one"),
        Skill("hidden", "manual only", "/a/skills/hidden/SKILL.md", "/a/skills/hidden", True),
    ),
)


def test_it_joins_layers_into_exactly_the_prompt_text() -> None:
    prompt = build_system_prompt(
        cwd="/p", date="2026-01-02", pi_root="/opt/pi", tools=None, resources=FULL
    )
    assert "".join(layer.text for layer in prompt.layers) == prompt.text
    assert [layer.name for layer in prompt.layers] == [
        "identity",
        "tools",
        "guidelines",
        "docs",
        "append",
        "project_context",
        "skills",
        "date",
        "cwd",
    ]
    assert prompt.text.startswith(RULES.identity + "\n\nAvailable tools:\n- read: ")
    assert prompt.text.endswith(
        "</available_skills>\nCurrent date: 2026-01-02\nCurrent working directory: /p"
    )


def test_it_estimates_tokens_per_layer_in_utf16_units() -> None:
    prompt = build_system_prompt(
        cwd="/p", date="2026-01-02", pi_root="/opt/pi", tools=None, resources=FULL
    )
    for layer in prompt.layers:
        assert layer.tokens == math.ceil(js_len(layer.text) / 4)
    append = prompt.layer("append")
    assert append is not None
    # "\n\nappended 😀": the emoji is two UTF-16 units, so 13 units -> 4 tokens.
    assert js_len(append.text) == 13 and append.tokens == 4
    assert append.sources == ("/a/APPEND_SYSTEM.md",)
    assert append.as_dict()["tokens"] == 4


def test_it_takes_the_custom_branch_with_system_md() -> None:
    resources = _resources(
        system_prompt="Be a pirate.", system_prompt_path="/a/SYSTEM.md", skills=FULL.skills
    )
    prompt = build_system_prompt(
        cwd="C:\\Users\\ann\\proj",
        date="2026-01-02",
        pi_root=None,
        tools=["bash"],
        resources=resources,
    )
    assert [layer.name for layer in prompt.layers] == ["custom", "date", "cwd"]
    assert prompt.text == (
        "Be a pirate.\nCurrent date: 2026-01-02\nCurrent working directory: C:/Users/ann/proj"
    )
    assert "Skills are not listed: the read tool is not active." in prompt.notes


def test_it_lists_skills_in_the_custom_branch_when_selected_tools_is_undefined() -> None:
    prompt = build_system_prompt_from_options(
        cwd="/p", date="2026-01-02", custom_prompt="X", skills=FULL.skills
    )
    skills = prompt.layer("skills")
    assert skills is not None
    assert "<name>s-one</name>" in skills.text and "hidden" not in skills.text
    assert "does &lt;one&gt; &amp; &quot;two&quot;" in skills.text


def test_it_treats_an_empty_custom_prompt_as_absent() -> None:
    prompt = build_system_prompt_from_options(cwd="/p", date="2026-01-02", custom_prompt="")
    assert prompt.layers[0].name == "identity"


def test_it_flags_unknown_docs_paths_with_a_placeholder() -> None:
    prompt = build_system_prompt(
        cwd="/p", date="2026-01-02", pi_root=None, tools=None, resources=_resources()
    )
    docs = prompt.layer("docs")
    assert docs is not None and docs.unknown
    assert f"- Main documentation: {PI_ROOT_PLACEHOLDER}/README.md" in docs.text
    assert any("Pi package folder unknown" in note for note in prompt.notes)


def test_it_resolves_docs_paths_like_node() -> None:
    prompt = build_system_prompt(
        cwd="/p", date="2026-01-02", pi_root="/opt/x/../pi/", tools=None, resources=_resources()
    )
    docs = prompt.layer("docs")
    assert docs is not None and not docs.unknown
    assert docs.sources == ("/opt/pi/README.md", "/opt/pi/docs", "/opt/pi/examples")


def test_it_drops_unknown_and_repeated_tools_like_pi() -> None:
    assert active_tool_names(["ls", "nope", "read", "ls"]) == ["ls", "read"]
    assert active_tool_names(None) == ["read", "bash", "edit", "write"]
    prompt = build_system_prompt(
        cwd="/p", date="2026-01-02", pi_root="/r", tools=["nope"], resources=_resources()
    )
    assert "Available tools:\n(none)\n" in prompt.text
    assert "Tool 'nope' is not a registered Pi tool: Pi ignores it." in prompt.notes


def test_it_adds_the_bash_guideline_only_without_grep_find_ls() -> None:
    with_bash = build_system_prompt_from_options(
        cwd="/p", date="2026-01-02", selected_tools=["bash"]
    )
    assert "- Use bash for file operations like ls, rg, find\n" in with_bash.text
    with_ls = build_system_prompt_from_options(
        cwd="/p", date="2026-01-02", selected_tools=["bash", "ls"]
    )
    assert "Use bash for file operations" not in with_ls.text


def test_it_deduplicates_guidelines_keeping_the_first() -> None:
    prompt = build_system_prompt_from_options(
        cwd="/p",
        date="2026-01-02",
        selected_tools=[],
        prompt_guidelines=["  Be concise in your responses ", "b", "b", "   "],
    )
    guidelines = prompt.layer("guidelines")
    assert guidelines is not None
    assert guidelines.text == (
        "\n\nGuidelines:\n- Be concise in your responses\n- b\n"
        "- Show file paths clearly when working with files"
    )


def test_it_normalises_snippets_and_guidelines_as_agent_session() -> None:
    assert normalize_prompt_snippet("  a\r\n\n b\t\u00a0c  ") == "a b c"
    assert normalize_prompt_snippet(" \n ") is None
    assert normalize_prompt_snippet(None) is None
    assert normalize_prompt_guidelines([" x ", "x", "", "\ufeffy"]) == ["x", "y"]
    selected, snippets, guidelines = tool_prompt_options(["edit", "read"])
    assert selected == ["edit", "read"]
    assert list(snippets) == ["edit", "read"]
    assert guidelines[-1] == "Use read to examine files instead of cat or sed."


def test_it_formats_nothing_when_every_skill_is_hidden() -> None:
    assert format_skills_for_prompt([FULL.skills[1]]) == ""


def test_it_keeps_context_file_content_raw() -> None:
    prompt = build_system_prompt_from_options(
        cwd="/p",
        date="2026-01-02",
        context_files=[ContextFile('/x/"a"&.md', "<b>\n")],
    )
    layer = prompt.layer("project_context")
    assert layer is not None
    assert '<project_instructions path="/x/"a"&.md">\n<b>\n\n</project_instructions>' in layer.text
    assert layer.text.endswith("</project_context>\n")


def test_it_rejects_a_malformed_date() -> None:
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        build_system_prompt_from_options(cwd="/p", date="2.1.2026")


def test_it_says_when_system_md_or_append_is_empty() -> None:
    resources = _resources(
        system_prompt="",
        system_prompt_path="/a/SYSTEM.md",
        append_system_prompt=("",),
        append_system_prompt_paths=("/a/APPEND_SYSTEM.md",),
    )
    prompt = build_system_prompt(
        cwd="/p", date="2026-01-02", pi_root="/r", tools=None, resources=resources
    )
    assert prompt.layers[0].name == "identity" and prompt.layer("append") is None
    assert "/a/SYSTEM.md is empty: Pi builds its default prompt." in prompt.notes
    assert "/a/APPEND_SYSTEM.md is empty: nothing is appended." in prompt.notes


_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=30)


@settings(max_examples=200, deadline=None)
@given(
    custom=st.one_of(st.none(), _text),
    tools=st.one_of(st.none(), st.lists(st.sampled_from(["read", "bash", "grep", "x"]))),
    append=st.one_of(st.none(), _text),
    contexts=st.lists(st.tuples(_text, _text), max_size=3),
    skills=st.lists(st.tuples(_text, _text, st.booleans()), max_size=3),
    cwd=_text,
)
def test_it_always_concatenates_layers_to_the_text(
    custom: str | None,
    tools: list[str] | None,
    append: str | None,
    contexts: list[tuple[str, str]],
    skills: list[tuple[str, str, bool]],
    cwd: str,
) -> None:
    prompt = build_system_prompt_from_options(
        cwd=cwd,
        date="2026-01-02",
        custom_prompt=custom,
        selected_tools=tools,
        tool_snippets={"read": "Read", "x": "X"},
        append_system_prompt=append,
        context_files=[ContextFile(p, c) for p, c in contexts],
        skills=[Skill(n, d, f"/s/{n}", "/s", hidden) for n, d, hidden in skills],
    )
    assert "".join(layer.text for layer in prompt.layers) == prompt.text
    assert all(layer.tokens == math.ceil(js_len(layer.text) / 4) for layer in prompt.layers)
    assert prompt.layers[-1].name == "cwd" and prompt.layers[-2].name == "date"
    assert sum(layer.tokens for layer in prompt.layers) >= prompt.tokens


def test_it_names_the_tools_behind_snippets_and_guidelines() -> None:
    prompt = build_system_prompt(
        cwd="/p",
        date="2026-01-02",
        pi_root="/r",
        tools=["bash", "edit", "ls"],
        resources=_resources(),
    )
    tools, guidelines = prompt.layer("tools"), prompt.layer("guidelines")
    assert tools is not None and guidelines is not None
    assert tools.sources == ("<builtin:bash>", "<builtin:edit>", "<builtin:ls>")
    assert guidelines.sources == ("<builtin:edit>",)
