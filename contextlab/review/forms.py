"""The review's browser inputs, read by forms. They only type and trim what was sent: what is
allowed (a known user, a label's spelling, a comment's length) is the services' to say, so
that every caller (pages, commands, an API) gets the same answer and message."""

from __future__ import annotations

from django import forms

from contextlab.library.models import ProjectMembership


class MembershipForm(forms.Form):
    username = forms.CharField(required=False, max_length=150)
    role = forms.ChoiceField(choices=ProjectMembership.Role.choices, required=False)

    def clean_role(self) -> str:
        return self.cleaned_data.get("role") or ProjectMembership.Role.MEMBER


class CommentForm(forms.Form):
    entry = forms.CharField(required=False, strip=False)
    # Not stripped and not capped here: comment_create says why a body is refused.
    body = forms.CharField(required=False, strip=False)


class LabelForm(forms.Form):
    name = forms.CharField(required=False, strip=False)
