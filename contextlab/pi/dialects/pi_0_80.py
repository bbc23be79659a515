"""Pi 0.80.x (npm @earendil-works/pi-coding-agent@0.80.2): XML project context, date line."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from contextlab.pi.dialects.base import (
    Dialect,
    MessageTexts,
    PromptRules,
    SummaryTexts,
    ToolTexts,
)
from contextlab.pi.dialects.release_table import ReleaseTexts

# Pi 0.80.2's texts and tool definitions, from the release table (releases_data.py).
data = ReleaseTexts("0.80.2")

# Copied from dist/core/system-prompt.js and dist/core/skills.js by a script (not retyped);
# tests/conformance/test_prompt_oracle.py proves them byte-exact against the real Pi.
# ruff: noqa: E501
PROMPT_RULES_0_80 = PromptRules(
    identity="You are an expert coding assistant operating inside pi, a coding agent harness. You help users by reading files, executing commands, editing code, and writing new files.",
    tools_header="Available tools:",
    no_tools="(none)",
    tools_footer="In addition to the tools above, you may have access to other custom tools depending on the project.",
    guidelines_header="Guidelines:",
    bash_file_ops_guideline="Use bash for file operations like ls, rg, find",
    bash_guideline_suppressed_by=("grep", "find", "ls"),
    always_guidelines=(
        "Be concise in your responses",
        "Show file paths clearly when working with files",
    ),
    docs_header="Pi documentation (read only when the user asks about pi itself, its SDK, extensions, themes, skills, or TUI):",
    docs_lines=(
        "- Main documentation: {readme}",
        "- Additional docs: {docs}",
        "- Examples: {examples} (extensions, custom tools, SDK)",
        "- When reading pi docs or examples, resolve docs/... under Additional docs and examples/... under Examples, not the current working directory",
        "- When asked about: extensions (docs/extensions.md, examples/extensions/), themes (docs/themes.md), skills (docs/skills.md), prompt templates (docs/prompt-templates.md), TUI components (docs/tui.md), keybindings (docs/keybindings.md), SDK integrations (docs/sdk.md), custom providers (docs/custom-provider.md), adding models (docs/models.md), pi packages (docs/packages.md)",
        "- When working on pi topics, read the docs and examples, and follow .md cross-references before implementing",
        "- Always read pi .md files completely and follow links to related docs (e.g., tui.md for TUI API details)",
    ),
    project_context_open="\n\n<project_context>\n\nProject-specific instructions and guidelines:\n\n",
    project_context_file='<project_instructions path="{path}">\n{content}\n</project_instructions>\n\n',
    project_context_close="</project_context>\n",
    skills_preamble=(
        "\n\nThe following skills provide specialized instructions for specific tasks.",
        "Use the read tool to load a skill's file when the task matches its description.",
        "When a skill file references a relative path, resolve it against the skill directory (parent of SKILL.md / dirname of the path) and use that absolute path in tool commands.",
        "",
    ),
    skills_open="<available_skills>",
    skills_close="</available_skills>",
    date_prefix="\nCurrent date: ",
    cwd_prefix="\nCurrent working directory: ",
    default_tools=("read", "bash", "edit", "write"),
    context_file_names=("AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD"),
    config_dir_name=".pi",
    project_trust_gates_resources=True,
    trust_requiring_config_entries=(
        "settings.json",
        "extensions",
        "skills",
        "prompts",
        "themes",
        "SYSTEM.md",
        "APPEND_SYSTEM.md",
    ),
    skill_name_too_long=data.SKILL_NAME_TOO_LONG,
    skill_name_invalid_characters=data.SKILL_NAME_INVALID_CHARACTERS,
    skill_name_hyphen_edges=data.SKILL_NAME_HYPHEN_EDGES,
    skill_name_consecutive_hyphens=data.SKILL_NAME_CONSECUTIVE_HYPHENS,
    skill_description_required=data.SKILL_DESCRIPTION_REQUIRED,
    skill_description_too_long=data.SKILL_DESCRIPTION_TOO_LONG,
    skill_name_collision=data.SKILL_NAME_COLLISION,
    skill_path_missing=data.SKILL_PATH_MISSING,
    skill_path_not_markdown=data.SKILL_PATH_NOT_MARKDOWN,
    trust_store_unreadable=data.TRUST_STORE_UNREADABLE,
    trust_store_not_object=data.TRUST_STORE_NOT_OBJECT,
)


# Inline literals of Pi, copied by tools/extract_pi_strings.mjs (kept in releases_data.py).
MESSAGE_TEXTS_0_80 = MessageTexts(
    bash_ran_open=data.BASH_RAN_OPEN,
    bash_ran_close=data.BASH_RAN_CLOSE,
    bash_output_open=data.BASH_OUTPUT_OPEN,
    bash_output_close=data.BASH_OUTPUT_CLOSE,
    bash_no_output=data.BASH_NO_OUTPUT,
    bash_cancelled=data.BASH_CANCELLED,
    bash_exit_code=data.BASH_EXIT_CODE,
    bash_output_truncated_open=data.BASH_OUTPUT_TRUNCATED_OPEN,
    bash_output_truncated_close=data.BASH_OUTPUT_TRUNCATED_CLOSE,
    user_image_placeholder=data.USER_IMAGE_PLACEHOLDER,
    tool_image_placeholder=data.TOOL_IMAGE_PLACEHOLDER,
    no_result_text=data.NO_RESULT_TEXT,
)

SUMMARY_TEXTS_0_80 = SummaryTexts(
    no_prior_history=data.NO_PRIOR_HISTORY,
    split_turn_joiner=data.SPLIT_TURN_JOINER,
    additional_focus=data.ADDITIONAL_FOCUS,
    conversation_open=data.CONVERSATION_OPEN,
    conversation_close=data.CONVERSATION_CLOSE,
    previous_summary_open=data.PREVIOUS_SUMMARY_OPEN,
    previous_summary_close=data.PREVIOUS_SUMMARY_CLOSE,
    no_content_summary=data.NO_CONTENT_SUMMARY,
    no_summary_generated=data.NO_SUMMARY_GENERATED,
    read_files_open=data.READ_FILES_OPEN,
    read_files_close=data.READ_FILES_CLOSE,
    modified_files_open=data.MODIFIED_FILES_OPEN,
    modified_files_close=data.MODIFIED_FILES_CLOSE,
    serialized_user=data.SERIALIZED_USER,
    serialized_assistant_thinking=data.SERIALIZED_ASSISTANT_THINKING,
    serialized_assistant=data.SERIALIZED_ASSISTANT,
    serialized_assistant_tool_calls=data.SERIALIZED_ASSISTANT_TOOL_CALLS,
    serialized_tool_result=data.SERIALIZED_TOOL_RESULT,
    summary_truncated_open=data.SUMMARY_TRUNCATED_OPEN,
    summary_truncated_close=data.SUMMARY_TRUNCATED_CLOSE,
    # TOOL_RESULT_MAX_CHARS of dist/core/compaction/utils.js.
    tool_result_max_chars=2000,
)

TOOL_TEXTS_0_80 = ToolTexts(
    bash_notice_last_line=data.BASH_NOTICE_LAST_LINE,
    bash_notice_lines=data.BASH_NOTICE_LINES,
    bash_notice_bytes=data.BASH_NOTICE_BYTES,
    bash_empty_output=data.BASH_EMPTY_OUTPUT,
    bash_status_separator=data.BASH_STATUS_SEPARATOR,
    bash_status_exit_code=data.BASH_STATUS_EXIT_CODE,
    bash_status_timed_out=data.BASH_STATUS_TIMED_OUT,
    bash_status_aborted=data.BASH_STATUS_ABORTED,
    read_offset_beyond_end=data.READ_OFFSET_BEYOND_END,
    read_notice_first_line=data.READ_NOTICE_FIRST_LINE,
    read_notice_lines=data.READ_NOTICE_LINES,
    read_notice_bytes=data.READ_NOTICE_BYTES,
    read_notice_more_lines=data.READ_NOTICE_MORE_LINES,
    grep_no_matches=data.GREP_NO_MATCHES,
    grep_match_limit=data.GREP_MATCH_LIMIT,
    grep_lines_truncated=data.GREP_LINES_TRUNCATED,
    find_no_files=data.FIND_NO_FILES,
    find_result_limit=data.FIND_RESULT_LIMIT,
    find_result_limit_custom_glob=data.FIND_RESULT_LIMIT_CUSTOM_GLOB,
    ls_empty=data.LS_EMPTY,
    ls_entry_limit=data.LS_ENTRY_LIMIT,
    byte_limit_reached=data.BYTE_LIMIT_REACHED,
    notices_open=data.NOTICES_OPEN,
    notices_separator=data.NOTICES_SEPARATOR,
    notices_close=data.NOTICES_CLOSE,
    truncated_line_suffix=data.TRUNCATED_LINE_SUFFIX,
)


def dialect_texts(texts: ReleaseTexts) -> dict[str, Any]:
    """A release's texts for the ``Dialect`` fields that are texts (convertToLlm's wrappers, the
    summarisation prompts), by name: ``compaction_summary_prefix`` is
    ``COMPACTION_SUMMARY_PREFIX`` (values typed ``Any`` so that they can be spread into
    ``replace``)."""
    names = [f.name for f in fields(Dialect) if f.type == "str" and f.name != "version"]
    return {name: getattr(texts, name.upper()) for name in names}


PI_0_80 = Dialect(
    version="0.80.2",
    compaction_summary_prefix=data.COMPACTION_SUMMARY_PREFIX,
    compaction_summary_suffix=data.COMPACTION_SUMMARY_SUFFIX,
    branch_summary_prefix=data.BRANCH_SUMMARY_PREFIX,
    branch_summary_suffix=data.BRANCH_SUMMARY_SUFFIX,
    summarization_system_prompt=data.SUMMARIZATION_SYSTEM_PROMPT,
    summarization_prompt=data.SUMMARIZATION_PROMPT,
    update_summarization_prompt=data.UPDATE_SUMMARIZATION_PROMPT,
    turn_prefix_summarization_prompt=data.TURN_PREFIX_SUMMARIZATION_PROMPT,
    branch_summary_preamble=data.BRANCH_SUMMARY_PREAMBLE,
    branch_summary_prompt=data.BRANCH_SUMMARY_PROMPT,
    message_texts=MESSAGE_TEXTS_0_80,
    summary_texts=SUMMARY_TEXTS_0_80,
    tool_texts=TOOL_TEXTS_0_80,
    tools=tuple(data.TOOLS),
    prompt=PROMPT_RULES_0_80,
)
