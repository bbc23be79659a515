"""What a user chose for a job, typed. Forms, the API and the command line build it; the services
plan with it; `Job.parameters` stores it as JSON under Pi's own setting names
(`keepRecentTokens`, `customInstructions`, ...). `as_json` and `from_json` are the one place that
maps between the two, and `from_json` reads every row stored so far (unknown keys are ignored, a
malformed value is "not chosen").
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from contextlab.pi.summaries import SummaryOptions
from contextlab.pi.tokens import DEFAULT_KEEP_RECENT_TOKENS, DEFAULT_RESERVE_TOKENS

# Python name -> the JSON name, for the whole-number settings.
_TOKENS = {
    "keep_recent_tokens": "keepRecentTokens",
    "reserve_tokens": "reserveTokens",
    "context_window": "contextWindow",
    "model_max_tokens": "modelMaxTokens",
}


@dataclass(frozen=True)
class JobParameters:
    # None: not chosen (the job uses Pi's default, or the model's limit).
    keep_recent_tokens: int | None = None
    reserve_tokens: int | None = None
    custom_instructions: str = ""
    replace_instructions: bool | None = None  # a branch summary's custom prompt replaces Pi's
    # The limits of the model the summary is sent to, when the user gives them (the command
    # line's --context-window / --model-max-tokens); None: the configured provider's.
    context_window: int | None = None
    model_max_tokens: int | None = None
    # The summariser's thinking level; None: the session's at the leaf, as Pi passes it.
    thinking_level: str | None = None

    def as_json(self) -> dict[str, Any]:
        """Only what was chosen, under Pi's names (Job.parameters)."""
        out: dict[str, Any] = {}
        for name, key in _TOKENS.items():
            value = getattr(self, name)
            if value is not None:
                out[key] = value
        if self.custom_instructions:
            out["customInstructions"] = self.custom_instructions
        if self.replace_instructions is not None:
            out["replaceInstructions"] = self.replace_instructions
        if self.thinking_level is not None:
            out["thinkingLevel"] = self.thinking_level
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> JobParameters:
        data = data or {}

        def tokens(name: str) -> int | None:
            value = data.get(name)
            return value if type(value) is int and value >= 0 else None

        instructions = data.get("customInstructions")
        thinking = data.get("thinkingLevel")
        return cls(
            **{name: tokens(key) for name, key in _TOKENS.items()},
            custom_instructions=instructions if isinstance(instructions, str) else "",
            replace_instructions=(
                bool(data["replaceInstructions"]) if "replaceInstructions" in data else None
            ),
            thinking_level=thinking if isinstance(thinking, str) and thinking else None,
        )

    def with_limits(self, context_window: int, max_tokens: int) -> JobParameters:
        """These parameters with the model's limits filled in where the user gave none (Pi plans
        a summary against the model it will call)."""
        return replace(
            self,
            context_window=self.context_window
            if self.context_window is not None
            else context_window,
            model_max_tokens=(
                self.model_max_tokens if self.model_max_tokens is not None else max_tokens
            ),
        )

    def summary_options(self) -> SummaryOptions:
        """The engine's options: Pi's defaults where nothing was chosen."""
        return SummaryOptions(
            reserve_tokens=(
                self.reserve_tokens if self.reserve_tokens is not None else DEFAULT_RESERVE_TOKENS
            ),
            keep_recent_tokens=(
                self.keep_recent_tokens
                if self.keep_recent_tokens is not None
                else DEFAULT_KEEP_RECENT_TOKENS
            ),
            custom_instructions=self.custom_instructions or None,
            replace_instructions=bool(self.replace_instructions),
            thinking_level=self.thinking_level,
        )
