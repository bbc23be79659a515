"""A session's summary figures (counts, tokens, cost, name, models), kept entry by entry, and
the token estimate of one entry."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from contextlab.library.models import Session
from contextlab.pi.dialects import pi_1_x_compaction
from contextlab.pi.entries import message_of_entry
from contextlab.pi.session import js_trim
from contextlab.pi.tokens import estimate_tokens


def entry_as_message(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The message an entry puts into a context (the engine's rule), for its token estimate."""
    return message_of_entry(entry, "estimate")


def entry_tokens(entry: dict[str, Any]) -> int:
    """Pi's estimateTokens of what the entry contributes; 0 where Pi gets NaN or throws.

    A Pi 1.x system message (the persisted prompt: its sections and tool declarations) is
    counted by the 1.x estimate, as Pi 1.6.0's compaction counts it; so is the system message a
    1.x compaction carries, which the compaction puts back into the context with its summary.
    Usage entries contribute nothing to a context: 0.
    """
    message = entry_as_message(entry)
    if message is None:
        return 0
    tokens = _estimate(message)
    system = entry.get("systemMessage") if entry.get("type") == "compaction" else None
    if isinstance(system, dict):
        tokens += _estimate({**system, "role": "system"})
    return tokens


def _estimate(message: dict[str, Any]) -> int:
    try:
        if message.get("role") == "system":
            tokens: int | float = pi_1_x_compaction.estimate_tokens(message)
        else:
            tokens = estimate_tokens(message)
    except (TypeError, AttributeError, KeyError, ValueError):
        return 0  # a malformed message: Pi would throw here
    except RecursionError:
        # Arguments nested thousands deep: Pi's JSON.stringify of them overflows its stack too.
        return 0
    return int(tokens) if isinstance(tokens, int) or math.isfinite(tokens) else 0


@dataclass
class Figures:
    """A session's summary figures, updated entry by entry (so appends need no full re-read)."""

    entry_count: int = 0
    message_count: int = 0
    compaction_count: int = 0
    branch_count: int = 0
    tokens_estimated: int = 0
    usage_tokens: int = 0
    cost_total: float = 0.0
    name: str = ""
    first_message: str = ""
    leaf_entry_id: str = ""
    first_activity: datetime | None = None
    last_activity: datetime | None = None
    models_used: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, session: Session) -> Figures:
        return cls(
            entry_count=session.entry_count,
            message_count=session.message_count,
            compaction_count=session.compaction_count,
            branch_count=session.branch_count,
            tokens_estimated=session.tokens_estimated,
            usage_tokens=session.usage_tokens,
            cost_total=session.cost_total,
            name=session.name,
            first_message=session.first_message,
            leaf_entry_id=session.leaf_entry_id,
            first_activity=session.first_activity,
            last_activity=session.last_activity,
            models_used=list(session.models_used),
        )

    def apply_to(self, session: Session) -> None:
        for name in self.__dataclass_fields__:
            setattr(session, name, getattr(self, name))

    def add(self, entry: dict[str, Any], when: datetime | None, tokens: int) -> None:
        self.entry_count += 1
        self.tokens_estimated += tokens
        self.leaf_entry_id = entry["id"]
        if when is not None:
            if self.first_activity is None or when < self.first_activity:
                self.first_activity = when
            if self.last_activity is None or when > self.last_activity:
                self.last_activity = when
        kind = entry.get("type")
        if kind == "message":
            self.message_count += 1
            message = entry.get("message")
            if isinstance(message, dict):
                self._add_message(message)
        elif kind == "compaction":
            self.compaction_count += 1
            self._add_usage(entry.get("usage"))  # Pi 1.x: the summary calls' usage
        elif kind == "branch_summary":
            self._add_usage(entry.get("usage"))  # Pi 1.x
        elif kind == "usage":
            # Pi 1.x: a model call outside the conversation (cache warming), billed all the same.
            self._add_model(entry.get("provider"), entry.get("model"))
            self._add_usage(entry.get("usage"))
        elif kind == "session_info":
            # Pi's getSessionName: the last session_info in file order; empty clears it.
            raw = entry.get("name")
            self.name = js_trim(raw) if isinstance(raw, str) else ""
        elif kind == "model_change":
            self._add_model(entry.get("provider"), entry.get("modelId"))

    def _add_message(self, message: dict[str, Any]) -> None:
        role = message.get("role")
        if role == "user" and not self.first_message:
            self.first_message = _user_text(message.get("content"))[:500]
        elif role == "assistant":
            self._add_model(message.get("provider"), message.get("model"))
            self._add_usage(message.get("usage"))

    def _add_usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        total = usage.get("totalTokens")
        if isinstance(total, int | float) and math.isfinite(total):
            self.usage_tokens += int(total)
        cost = usage.get("cost")
        if isinstance(cost, dict):
            value = cost.get("total")
            if isinstance(value, int | float) and math.isfinite(value):
                self.cost_total += float(value)

    def _add_model(self, provider: Any, model: Any) -> None:
        if isinstance(model, str) and model:
            name = f"{provider}/{model}" if isinstance(provider, str) and provider else model
            if name not in self.models_used:
                self.models_used.append(name)


def _user_text(content: Any) -> str:
    # As Pi's buildSessionInfo: a string, or the text blocks joined with " ".
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        )
    return ""
