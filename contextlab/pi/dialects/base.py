"""The shape of a dialect: what one Pi version says and how it behaves where versions differ."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the steps module builds on the engine, which imports the dialects
    from contextlab.pi.request import RequestSteps


@dataclass(frozen=True)
class PromptRules:
    """The system prompt's fixed strings and the version-specific rules that shape it.

    Pi 0.80 keeps them in dist/core/system-prompt.js, dist/core/skills.js,
    dist/core/resource-loader.js and dist/core/trust-manager.js.
    """

    identity: str
    tools_header: str
    no_tools: str
    tools_footer: str
    guidelines_header: str
    # Added first when bash is active and none of the tools named next is.
    bash_file_ops_guideline: str
    bash_guideline_suppressed_by: tuple[str, ...]
    always_guidelines: tuple[str, ...]
    docs_header: str
    # Templates with {readme}, {docs} and {examples}.
    docs_lines: tuple[str, ...]
    # Templates with {path} and {content} for the files; open/close wrap the block.
    project_context_open: str
    project_context_file: str
    project_context_close: str
    skills_preamble: tuple[str, ...]
    skills_open: str
    skills_close: str
    # None: no ``Current date:`` line (every release after 0.80.2).
    date_prefix: str | None
    cwd_prefix: str
    default_tools: tuple[str, ...]
    context_file_names: tuple[str, ...]
    # 0.73 added a guideline when bash was active together with grep/find/ls; 0.80 has none.
    bash_with_explorers_guideline: str | None = None
    # 0.84 words the file-operations guideline for PowerShell (with bash, or alone).
    powershell_and_bash_guideline: str | None = None
    powershell_guideline: str | None = None
    # What follows the cwd line of a prompt built on a custom SYSTEM.md (0.84: a newline).
    custom_prompt_cwd_suffix: str = ""
    config_dir_name: str = ".pi"
    # Project .pi/ resources and ancestor .agents/skills need project trust (0.80+).
    project_trust_gates_resources: bool = True
    trust_requiring_config_entries: tuple[str, ...] = ()
    skill_max_name_length: int = 64
    skill_max_description_length: int = 1024
    # 0.73 also warned when a skill's name differed from its parent directory: that version's
    # message, with {name} and {parent}; None where the check does not exist (0.80).
    skill_name_parent_mismatch_warning: str | None = None
    # Skill diagnostics (dist/core/skills.js), str.format templates.
    skill_name_too_long: str = field(kw_only=True)  # {0} limit, {1} length
    skill_name_invalid_characters: str = field(kw_only=True)
    skill_name_hyphen_edges: str = field(kw_only=True)
    skill_name_consecutive_hyphens: str = field(kw_only=True)
    skill_description_required: str = field(kw_only=True)
    skill_description_too_long: str = field(kw_only=True)  # {0} limit, {1} length
    skill_name_collision: str = field(kw_only=True)  # {0} name
    skill_path_missing: str = field(kw_only=True)
    skill_path_not_markdown: str = field(kw_only=True)
    # Errors reading <agentDir>/trust.json (dist/core/trust-manager.js): {0} path, {1} reason.
    trust_store_unreadable: str = field(kw_only=True)
    trust_store_not_object: str = field(kw_only=True)  # {0} path


@dataclass(frozen=True)
class MessageTexts:
    """Fixed texts of what the model receives besides the wrappers: ``bashExecutionToText``
    (dist/core/messages.js) and pi-ai's ``transformMessages`` (pi-ai's
    dist/api/transform-messages.js).

    Pi writes them inline, so each is the fixed part of a literal; ``*_open``/``*_close`` surround
    an interpolated value.
    """

    bash_ran_open: str
    bash_ran_close: str
    bash_output_open: str
    bash_output_close: str
    bash_no_output: str
    bash_cancelled: str
    # Followed by the exit code.
    bash_exit_code: str
    bash_output_truncated_open: str
    bash_output_truncated_close: str
    user_image_placeholder: str
    tool_image_placeholder: str
    # The text of the error result synthesised for a tool call left without one.
    no_result_text: str


@dataclass(frozen=True)
class SummaryTexts:
    """Fixed texts and limits of compaction and branch summaries (dist/core/compaction/*.js)."""

    # Stands in for the history summary when a split turn has nothing before its prefix.
    no_prior_history: str
    # Between the history summary and the turn-prefix summary of a split turn.
    split_turn_joiner: str
    # Between the summarisation prompt and the user's custom instructions.
    additional_focus: str
    # Around the serialised conversation and the previous summary in a summarisation prompt.
    conversation_open: str
    conversation_close: str
    previous_summary_open: str
    previous_summary_close: str
    # Branch summaries: no message to summarise, and an empty model answer.
    no_content_summary: str
    no_summary_generated: str
    read_files_open: str
    read_files_close: str
    modified_files_open: str
    modified_files_close: str
    # serializeConversation's role labels.
    serialized_user: str
    serialized_assistant_thinking: str
    serialized_assistant: str
    serialized_assistant_tool_calls: str
    serialized_tool_result: str
    # A serialised tool result is cut to tool_result_max_chars UTF-16 units and gets
    # open + count of the cut units + close.
    summary_truncated_open: str
    summary_truncated_close: str
    tool_result_max_chars: int


@dataclass(frozen=True)
class ToolTexts:
    """What the built-in tools answer besides the content, and their truncation notices
    (dist/core/tools/*.js).

    Templates are ``str.format`` templates whose ``{n}`` is Pi's n-th interpolation, in the order
    the field comments give; ``contextlab/pi/truncate.py`` also recognises stored notices by
    these templates.
    """

    # bash: {0} size kept, {1} last line, {2} its size, {3} full output path.
    bash_notice_last_line: str
    # bash: {0} first line, {1} last line, {2} total lines, {3} full output path.
    bash_notice_lines: str
    # bash: as above with {3} the byte limit, {4} the full output path.
    bash_notice_bytes: str
    bash_empty_output: str
    # Between the output and the status of a failed run.
    bash_status_separator: str
    bash_status_exit_code: str  # {0} exit code
    bash_status_timed_out: str  # {0} seconds
    bash_status_aborted: str
    read_offset_beyond_end: str  # {0} offset, {1} lines in file
    # {0} line, {1} its size, {2} byte limit, {3} line, {4} path, {5} byte limit in bytes.
    read_notice_first_line: str
    # {0} first line, {1} last line, {2} lines in file, {3} next offset.
    read_notice_lines: str
    # As above with {3} the byte limit, {4} the next offset.
    read_notice_bytes: str
    read_notice_more_lines: str  # {0} lines remaining, {1} next offset
    grep_no_matches: str
    grep_match_limit: str  # {0} limit, {1} twice the limit
    grep_lines_truncated: str  # {0} characters kept per line
    find_no_files: str
    find_result_limit: str  # {0} limit, {1} twice the limit
    find_result_limit_custom_glob: str  # {0} limit
    ls_empty: str
    ls_entry_limit: str  # {0} limit, {1} twice the limit
    byte_limit_reached: str  # {0} byte limit
    # grep, find and ls join their notices into one bracket.
    notices_open: str
    notices_separator: str
    notices_close: str
    # Appended to a line cut by truncateLine.
    truncated_line_suffix: str


@dataclass(frozen=True)
class Dialect:
    version: str

    # Wrappers of convertToLlm (dist/core/messages.js).
    compaction_summary_prefix: str
    compaction_summary_suffix: str
    branch_summary_prefix: str
    branch_summary_suffix: str

    # Summarisation prompts (dist/core/compaction/*.js).
    summarization_system_prompt: str
    summarization_prompt: str
    update_summarization_prompt: str
    turn_prefix_summarization_prompt: str
    branch_summary_preamble: str
    branch_summary_prompt: str

    message_texts: MessageTexts
    summary_texts: SummaryTexts
    tool_texts: ToolTexts

    # Built-in tool definitions in registry order: name, description, promptSnippet,
    # promptGuidelines, parameters (JSON schema).
    tools: tuple[dict[str, Any], ...]
    default_active_tools: tuple[str, ...] = ("read", "bash", "edit", "write")

    # System-prompt strings and rules (contextlab/pi/prompt.py, contextlab/pi/resources.py).
    prompt: PromptRules | None = None

    # How this Pi builds a request where it differs from Pi 0.80 (where the system prompt comes
    # from, entries that edit the context, provider tweaks): a ``RequestSteps`` subclass that
    # ``contextlab.pi.request.build_request`` delegates to. None: Pi 0.80's steps.
    steps: RequestSteps | None = None

    def tool(self, name: str) -> dict[str, Any] | None:
        for definition in self.tools:
            if definition["name"] == name:
                return definition
        return None
