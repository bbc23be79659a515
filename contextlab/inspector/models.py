"""What Pi read on the machine a session ran on, as far as the user can tell us.

0.80.2 does not store the system prompt in the session file, so the inspector rebuilds it from
the project's resources. When the session came from another machine, those files are not on
this server: a project's `ResourceProfile` says where they are here (agent dir, Pi root) or
holds uploaded copies under their original absolute paths, and which tools were active.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from contextlab.library.models import Project


class ResourceProfile(models.Model):
    project = models.OneToOneField(
        Project, on_delete=models.CASCADE, related_name="resource_profile"
    )
    # Paths on this server; blank = unknown (the agent dir then defaults to settings.PI_AGENT_DIR
    # only when the session's cwd exists here, i.e. it ran on this machine).
    agent_dir = models.TextField(blank=True)
    pi_root = models.TextField(blank=True)
    # Home directory Pi ran under (for ~/.agents/skills); blank = unknown.
    home = models.TextField(blank=True)
    # Active tools in order, as `--tools` gives them; empty = Pi's default set.
    tools = models.JSONField(default=list, blank=True)
    # None = decide as Pi does without a UI; True/False = what the user says Pi decided.
    project_trusted = models.BooleanField(null=True, blank=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"resources of {self.project.cwd}"

    @property
    def uses_uploads(self) -> bool:
        return self.files.exists()


class ResourceFile(models.Model):
    """A file uploaded in place of one on the original machine (AGENTS.md, SKILL.md, ...)."""

    profile = models.ForeignKey(ResourceProfile, on_delete=models.CASCADE, related_name="files")
    # Absolute path the file had where Pi ran; discovery looks for it there.
    original_path = models.TextField()
    content = models.TextField()
    uploaded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("original_path",)
        constraints = (
            # Discovery maps path -> content: one content per path.
            models.UniqueConstraint(
                fields=["profile", "original_path"], name="inspector_file_path"
            ),
        )

    def __str__(self) -> str:
        return self.original_path
