from __future__ import annotations

import posixpath
from typing import Any, ClassVar

from django import forms

from contextlab.inspector.models import ResourceProfile
from contextlab.inspector.roots import inside_server_roots

KNOWN_TOOLS_HELP = (
    "Comma-separated, in order (e.g. read, bash, edit, write). Empty: Pi's default set."
)


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> list[Any]:
        single = super().clean
        if isinstance(data, list | tuple):
            return [single(d, initial) for d in data]
        return [single(data, initial)] if data else []


def _absolute(value: str, what: str) -> str:
    value = value.strip()
    if value and not posixpath.isabs(value):
        raise forms.ValidationError(f"{what} must be an absolute path, got {value!r}")
    return value.rstrip("/") or value


class ResourceProfileForm(forms.ModelForm[ResourceProfile]):
    tools_text = forms.CharField(required=False, label="Tools", help_text=KNOWN_TOOLS_HELP)
    trust = forms.ChoiceField(
        required=False,
        choices=[("", "decide as Pi does"), ("yes", "trusted"), ("no", "not trusted")],
        label="Project trust",
    )
    upload_paths = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="Original paths of the uploaded files",
        help_text="One absolute path per uploaded file, in the same order "
        "(e.g. /home/ann/proj/AGENTS.md, /home/ann/.pi/agent/skills/x/SKILL.md).",
    )
    upload_files = MultipleFileField(required=False, label="Files")

    class Meta:
        model = ResourceProfile
        fields = ("agent_dir", "pi_root", "home", "dialect")
        labels: ClassVar[dict[str, str]] = {
            "agent_dir": "Agent dir on this server",
            "pi_root": "Pi package root on this server",
            "home": "Home directory where Pi ran",
            "dialect": "Pi version that wrote the sessions",
        }
        widgets: ClassVar[dict[str, forms.Widget]] = {
            "agent_dir": forms.TextInput(),
            "pi_root": forms.TextInput(),
            "home": forms.TextInput(),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance and self.instance.pk:
            self.fields["tools_text"].initial = ", ".join(self.instance.tools or [])
            trusted = self.instance.project_trusted
            self.fields["trust"].initial = "" if trusted is None else ("yes" if trusted else "no")

    def clean_agent_dir(self) -> str:
        value = _absolute(self.cleaned_data["agent_dir"], "The agent dir")
        # Refused the same way whether the folder exists or not (that is not for users to learn).
        if value and not inside_server_roots(value):
            raise forms.ValidationError(
                "The agent dir must be under a folder this server reads (CONTEXTLAB_SERVER_ROOTS,"
                " set by an administrator); otherwise upload copies of its files instead."
            )
        return value

    def clean_pi_root(self) -> str:
        return _absolute(self.cleaned_data["pi_root"], "The Pi root")

    def clean_home(self) -> str:
        return _absolute(self.cleaned_data["home"], "The home directory")

    def clean_tools_text(self) -> list[str]:
        raw = self.cleaned_data.get("tools_text") or ""
        return [t.strip() for t in raw.replace("\n", ",").split(",") if t.strip()]

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        files = data.get("upload_files") or []
        paths = [p.strip() for p in (data.get("upload_paths") or "").splitlines() if p.strip()]
        if files and len(paths) != len(files):
            raise forms.ValidationError(
                "Give one original path per uploaded file "
                f"({len(files)} files, {len(paths)} paths)."
            )
        for path in paths:
            if not posixpath.isabs(path):
                raise forms.ValidationError(f"{path!r} is not an absolute path.")
        decoded = []
        for path, upload in zip(paths, files, strict=False):
            try:
                text = upload.read().decode("utf-8")
            except UnicodeDecodeError:
                raise forms.ValidationError(f"{upload.name} is not UTF-8 text.") from None
            if "\x00" in text:  # PostgreSQL text cannot hold it (and no prompt file has one)
                raise forms.ValidationError(
                    f"{upload.name} holds a NUL character: it is not a text file Pi reads."
                )
            decoded.append((path, text))
        data["uploads"] = decoded
        return data
