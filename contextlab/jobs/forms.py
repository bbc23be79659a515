"""The jobs' browser inputs, read by forms into typed values (JobParameters): compact here,
continue from here, the what-if settings. Field names are the HTML inputs', Pi's setting names.

A token setting that is missing or not a whole number falls back to Pi's default rather than
refusing the form (a cleared number box means "Pi's default")."""

from __future__ import annotations

from typing import Any

from django import forms

from contextlab.jobs.parameters import JobParameters
from contextlab.pi.tokens import DEFAULT_KEEP_RECENT_TOKENS, DEFAULT_RESERVE_TOKENS


def _whole(raw: Any, default: int) -> int:
    raw = (raw or "").strip() if isinstance(raw, str) else ""
    return int(raw) if raw.isascii() and raw.isdigit() else default


class CompactionSettingsForm(forms.Form):
    """Pi's compaction settings chosen in the form (defaults: Pi's own)."""

    keepRecentTokens = forms.CharField(required=False)
    reserveTokens = forms.CharField(required=False)

    def clean_keepRecentTokens(self) -> int:
        return _whole(self.cleaned_data.get("keepRecentTokens"), DEFAULT_KEEP_RECENT_TOKENS)

    def clean_reserveTokens(self) -> int:
        return _whole(self.cleaned_data.get("reserveTokens"), DEFAULT_RESERVE_TOKENS)

    def settings(self) -> dict[str, int]:
        """The two settings under Pi's names, for the form's template (valid or not)."""
        data = self.cleaned_data if self.is_valid() else {}
        return {
            "keepRecentTokens": data.get("keepRecentTokens", DEFAULT_KEEP_RECENT_TOKENS),
            "reserveTokens": data.get("reserveTokens", DEFAULT_RESERVE_TOKENS),
        }


class CompactForm(CompactionSettingsForm):
    """Compact here: the settings, the leaf, optional instructions (Pi's /compact <text>)."""

    leaf = forms.CharField(required=False)
    instructions = forms.CharField(required=False)  # stripped

    def parameters(self) -> JobParameters:
        chosen = self.settings()
        return JobParameters(
            keep_recent_tokens=chosen["keepRecentTokens"],
            reserve_tokens=chosen["reserveTokens"],
            custom_instructions=self.cleaned_data.get("instructions", ""),
        )


class ContinueForm(forms.Form):
    """Continue from here: Pi's three choices when navigating the tree."""

    CHOICES = (("none", "No summary"), ("summary", "Summarize"), ("custom", "Custom prompt"))

    target = forms.CharField(required=False)
    # The leaf the user navigates from (blank: the session's).
    from_leaf = forms.CharField(required=False)
    choice = forms.ChoiceField(choices=CHOICES, required=False)
    instructions = forms.CharField(required=False)
    replace = forms.BooleanField(required=False)

    def __init__(self, data: Any = None, **kwargs: Any) -> None:
        if data is not None:
            # The HTML input is `from`, a Python keyword.
            data = data.copy()
            data.setdefault("from_leaf", data.get("from", ""))
        super().__init__(data, **kwargs)

    def clean_choice(self) -> str:
        return self.cleaned_data.get("choice") or "none"

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("choice") == "custom" and not data.get("instructions"):
            raise forms.ValidationError("Write the custom instructions, or pick another choice")
        return data

    def parameters(self) -> JobParameters:
        if self.cleaned_data["choice"] != "custom":
            return JobParameters()
        return JobParameters(
            custom_instructions=self.cleaned_data["instructions"],
            replace_instructions=self.cleaned_data["replace"],
        )


class WhatIfForm(forms.Form):
    """The auto-compaction what-if's settings; a missing or bad number is the default."""

    leaf = forms.CharField(required=False)
    contextWindow = forms.CharField(required=False)
    reserveTokens = forms.CharField(required=False)
    keepRecentTokens = forms.CharField(required=False)

    def whole(self, name: str, default: int) -> int:
        raw = self.data.get(name, "")
        try:
            value = int(raw) if raw else default
        except ValueError:
            return default
        return max(0, value)
