"""The shape of a dialect: what one Pi version says and how it behaves where versions differ."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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

    # Built-in tool definitions in registry order: name, description, promptSnippet,
    # promptGuidelines, parameters (JSON schema).
    tools: tuple[dict[str, Any], ...]
    default_active_tools: tuple[str, ...] = ("read", "bash", "edit", "write")

    # Rules that changed between versions (pi-reference.md §9).
    truncation_counts_trailing_newline: bool = False
    estimate_counts_user_images: bool = True
    zero_usage_is_valid: bool = False
    summary_max_tokens_capped_by_model: bool = True
    prepare_compaction_none_when_empty: bool = True

    extra: dict[str, Any] = field(default_factory=dict)

    def tool(self, name: str) -> dict[str, Any] | None:
        for definition in self.tools:
            if definition["name"] == name:
                return definition
        return None
