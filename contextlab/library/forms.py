from __future__ import annotations

from django import forms

SORTS = {
    "recent": ("-last_activity", "-id"),
    "oldest": ("first_activity", "id"),
    "entries": ("-entry_count", "-id"),
    "tokens": ("-tokens_estimated", "-id"),
    "cost": ("-cost_total", "-id"),
    "name": ("name", "first_message", "id"),
}


class LibraryFilterForm(forms.Form):
    """The library's filters; every field optional, bad values fall back to the defaults."""

    q = forms.CharField(required=False, max_length=200, label="Name or first message")
    project = forms.IntegerField(required=False, min_value=1)
    model = forms.CharField(required=False, max_length=200)
    flag = forms.ChoiceField(
        required=False,
        choices=[
            ("", "all sessions"),
            ("problems", "with import problems"),
            ("compacted", "with compactions"),
            ("branched", "with branches"),
        ],
    )
    sort = forms.ChoiceField(
        required=False,
        choices=[(key, key) for key in SORTS],
    )
    # A review label (contextlab.review), never one of Pi's own `label` entries.
    review_label = forms.CharField(required=False, max_length=40)
