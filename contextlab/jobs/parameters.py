"""What a user chose for a job, typed. `Job.parameters` stores it as JSON under Pi's own setting
names (`keepRecentTokens`, `customInstructions`, ...), the names the command line and the engine's
options use; `as_json` and `from_json` are the one place that maps between the two.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class JobParameters:
    # None: not chosen (the job uses Pi's default, or the model's limit).
    keep_recent_tokens: int | None = None
    reserve_tokens: int | None = None
    custom_instructions: str = ""
    replace_instructions: bool | None = None  # a branch summary's custom prompt replaces Pi's

    def as_json(self) -> dict[str, Any]:
        """Only what was chosen, under Pi's names (Job.parameters)."""
        out: dict[str, Any] = {}
        if self.keep_recent_tokens is not None:
            out["keepRecentTokens"] = self.keep_recent_tokens
        if self.reserve_tokens is not None:
            out["reserveTokens"] = self.reserve_tokens
        if self.custom_instructions:
            out["customInstructions"] = self.custom_instructions
        if self.replace_instructions is not None:
            out["replaceInstructions"] = self.replace_instructions
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> JobParameters:
        data = data or {}

        def tokens(name: str) -> int | None:
            value = data.get(name)
            return value if type(value) is int and value >= 0 else None

        instructions = data.get("customInstructions")
        return cls(
            keep_recent_tokens=tokens("keepRecentTokens"),
            reserve_tokens=tokens("reserveTokens"),
            custom_instructions=instructions if isinstance(instructions, str) else "",
            replace_instructions=(
                bool(data["replaceInstructions"]) if "replaceInstructions" in data else None
            ),
        )
