"""Every Pi release from 0.70.0 to 1.6.0 as a dialect, built from the generated release table.

``releases_data.py`` (``make dialect-data-releases``) holds what each release's own ``dist/``
says — texts, built-in tool definitions, how ``buildSystemPrompt`` assembles the prompt, limits —
as changes from the release before it. This module folds them into one release's values and
builds its ``Dialect``; what is code rather than text lives in the small range rules below, each
naming the Pi file it follows. There is no module per release::

    dialect = dialect_for_release("0.84.4")
    build_request(entries, leaf, dialect=dialect, ...)
"""

from __future__ import annotations

from dataclasses import fields, replace
from functools import cache
from typing import Any

from contextlab.pi.dialects.base import (
    Dialect,
    MessageTexts,
    PromptRules,
    SummaryTexts,
    ToolTexts,
)
from contextlab.pi.dialects.pi_0_73 import PI_0_73
from contextlab.pi.dialects.pi_0_80 import PI_0_80, PROMPT_RULES_0_80
from contextlab.pi.dialects.pi_1_x_request import PI_1_X, dialect_for
from contextlab.pi.dialects.release_table import RELEASES, parse_release, release_values
from contextlab.pi.providers.options import turn_max_tokens
from contextlab.pi.providers.pi_ai import PiAi, pi_ai_for_release, release_key
from contextlab.pi.request import PiRequest, RequestSteps

__all__ = [
    "RELEASES",
    "ReleaseSteps",
    "build_release_dialect",
    "dialect_for_release",
    "parse_release",
    "release_values",
]

# What needs project trust (dist/core/trust-manager.js ``TRUST_REQUIRING_CONFIG_ENTRIES``): the
# list is code, not extracted; every release that gates resources on trust has 0.80.2's.
_TRUST_ENTRIES = PROMPT_RULES_0_80.trust_requiring_config_entries


def _fill(cls: type[Any], values: dict[str, Any], **extra: Any) -> Any:
    """A dataclass whose fields are the table's upper-case keys (``bash_ran_open`` ↔
    ``BASH_RAN_OPEN``), plus ``extra``."""
    names = {f.name for f in fields(cls)} - set(extra)
    return cls(**{name: values[name.upper()] for name in names if name.upper() in values}, **extra)


def _prompt_rules(values: dict[str, Any]) -> PromptRules | None:
    """How ``buildSystemPrompt`` (dist/core/system-prompt.js) assembles the prompt; None for the
    releases that persist it in the session instead."""
    p = {k.removeprefix("PROMPT."): v for k, v in values.items() if k.startswith("PROMPT.")}
    if not p:
        return None
    markdown = "PROJECT_CONTEXT_HEADING" in values  # 0.73's "# Project Context"
    gated = bool(p["project_trust_gates_resources"])
    return PromptRules(
        identity=p["identity"],
        tools_header=p["tools_header"],
        no_tools=p["no_tools"],
        tools_footer=p["tools_footer"],
        guidelines_header=p["guidelines_header"],
        bash_file_ops_guideline=p["bash_file_ops_guideline"],
        # hasGrep || hasFind || hasLs (system-prompt.js): code, the same in every release.
        bash_guideline_suppressed_by=("grep", "find", "ls"),
        always_guidelines=tuple(p["always_guidelines"]),
        docs_header=p["docs_header"],
        docs_lines=tuple(p["docs_lines"]),
        project_context_open=(
            values["PROJECT_CONTEXT_HEADING"] + values["PROJECT_CONTEXT_PREAMBLE"]
            if markdown
            else p["project_context_open"]
        ),
        project_context_file=(
            values["PROJECT_CONTEXT_FILE"].replace("{0}", "{path}").replace("{1}", "{content}")
            if markdown
            else p["project_context_file"]
        ),
        project_context_close="" if markdown else p["project_context_close"],
        # formatSkillsForPrompt (dist/core/skills.js) joins the intro, an empty line and the
        # block with "\n".
        skills_preamble=(*p["skills_intro"], ""),
        skills_open=p["skills_open"],
        skills_close=p["skills_close"],
        date_prefix=p.get("date_prefix"),
        cwd_prefix=p["cwd_prefix"],
        default_tools=tuple(p["default_tools"]),
        context_file_names=tuple(p["context_file_names"]),
        bash_with_explorers_guideline=p.get("bash_with_explorers_guideline"),
        powershell_and_bash_guideline=p.get("powershell_and_bash_guideline"),
        powershell_guideline=p.get("powershell_guideline"),
        custom_prompt_cwd_suffix=p["cwd_suffixes"][-1] if p.get("cwd_suffixes") else "",
        project_trust_gates_resources=gated,
        trust_requiring_config_entries=_TRUST_ENTRIES if gated else (),
        skill_max_name_length=p["skill_max_name_length"],
        skill_max_description_length=p["skill_max_description_length"],
        skill_name_too_long=values["SKILL_NAME_TOO_LONG"],
        skill_name_invalid_characters=values["SKILL_NAME_INVALID_CHARACTERS"],
        skill_name_hyphen_edges=values["SKILL_NAME_HYPHEN_EDGES"],
        skill_name_consecutive_hyphens=values["SKILL_NAME_CONSECUTIVE_HYPHENS"],
        skill_description_required=values["SKILL_DESCRIPTION_REQUIRED"],
        skill_description_too_long=values["SKILL_DESCRIPTION_TOO_LONG"],
        skill_name_collision=values["SKILL_NAME_COLLISION"],
        skill_path_missing=values["SKILL_PATH_MISSING"],
        skill_path_not_markdown=values["SKILL_PATH_NOT_MARKDOWN"],
        trust_store_unreadable=values.get("TRUST_STORE_UNREADABLE", ""),
        trust_store_not_object=values.get("TRUST_STORE_NOT_OBJECT", ""),
    )


class ReleaseSteps(RequestSteps):
    """Pi 0.x's steps with the release's pi-ai generation: an agent turn's ``maxTokens`` is none,
    the 32000 cap (to 0.75) or the clamp of the model's cap to the window (0.80.3 on), as
    pi-ai's ``buildBaseOptions`` (dist/api/simple-options.js, ``providers.options``) gives it."""

    def __init__(self, pi_ai: PiAi) -> None:
        self.pi_ai = pi_ai
        self.sends_max_tokens = pi_ai.turn_max_tokens != "none"
        # iter_leaf_projections' incremental walk follows 0.80.2's steps only.
        self.incremental = not self.sends_max_tokens

    def max_tokens(self, request: PiRequest) -> int | None:
        model = request.limits_model
        if model is None:
            return None
        return turn_max_tokens(
            model,
            request.sent,
            self.pi_ai,
            system_prompt=request.prompt.text if request.prompt else None,
            tools=request.tools,
        )


@cache
def dialect_for_release(version: str) -> Dialect:
    """The dialect of release ``version``: its texts, tools and prompt rules from the table, its
    request steps from its pi-ai generation (``providers.pi_ai``)."""
    # The releases the engine was first built and proved against keep their own dialects.

    proved = {"0.73.1": PI_0_73, "0.80.2": PI_0_80, "1.6.0": PI_1_X}
    if version in proved:
        return proved[version]
    return build_release_dialect(version)


def build_release_dialect(version: str) -> Dialect:
    """``dialect_for_release`` built from the table alone (for every release, the proved ones
    included: tests/conformance/test_release_table.py compares the two)."""

    values = release_values(version)
    pi_ai = pi_ai_for_release(version)
    if pi_ai.transcript:
        # The prompt travels in the session (dist/core/session-manager.js system messages); the
        # 1.x steps replay it under this release's generation.
        return replace(dialect_for(pi_ai), version=version)
    # The agent turn's maxTokens rule as the release's own simple-options.js has it (0.75.4,
    # published after 0.76.0, already sends none).
    pi_ai = replace(pi_ai, turn_max_tokens=values.get("RULES.turnMaxTokens", pi_ai.turn_max_tokens))
    return Dialect(
        version=version,
        compaction_summary_prefix=values["COMPACTION_SUMMARY_PREFIX"],
        compaction_summary_suffix=values["COMPACTION_SUMMARY_SUFFIX"],
        branch_summary_prefix=values["BRANCH_SUMMARY_PREFIX"],
        branch_summary_suffix=values["BRANCH_SUMMARY_SUFFIX"],
        summarization_system_prompt=values["SUMMARIZATION_SYSTEM_PROMPT"],
        summarization_prompt=values["SUMMARIZATION_PROMPT"],
        update_summarization_prompt=values["UPDATE_SUMMARIZATION_PROMPT"],
        turn_prefix_summarization_prompt=values["TURN_PREFIX_SUMMARIZATION_PROMPT"],
        branch_summary_preamble=values["BRANCH_SUMMARY_PREAMBLE"],
        branch_summary_prompt=values["BRANCH_SUMMARY_PROMPT"],
        message_texts=_fill(MessageTexts, values),
        summary_texts=_fill(
            SummaryTexts,
            values,
            tool_result_max_chars=values["LIMITS.TOOL_RESULT_MAX_CHARS"],
        ),
        # 0.70 to 0.72 wrote a failed bash run's status without a separator literal of its own.
        tool_texts=_fill(
            ToolTexts, values, bash_status_separator=values.get("BASH_STATUS_SEPARATOR", "")
        ),
        tools=tuple(values[f"TOOL.{name}"] for name in values["TOOLS"]),
        prompt=_prompt_rules(values),
        steps=ReleaseSteps(pi_ai),
    )


def is_before(version: str, other: str) -> bool:
    return release_key(version) < release_key(other)
