"""What Pi read on the machine a session ran on, as far as the user can tell us.

Pi 0.x does not store the system prompt in the session file, so the inspector rebuilds it from
the project's resources. When the session came from another machine, those files are not on
this server: a project's `ResourceProfile` says where they are here (agent dir, Pi root) or
holds uploaded copies under their original absolute paths, and which tools were active. It also
says which Pi wrote the project's sessions where the file cannot tell (0.73 and 0.80 write the
same entries), or overrides what the file says.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from contextlab.library.models import Project, SessionRevision
from contextlab.pi.dialects.detect import CHOICES
from contextlab.pi.dialects.release_table import RELEASES

# "" = tell each turn's dialect from the session file (0.80 where it cannot tell 0.73 from 0.80);
# a dialect (0.73, 0.80, 1.x or a 1.x generation); or a release X.Y.Z of the release table, as
# `--pi-version` chooses one (every release fits in max_length 8).
DIALECT_CHOICES = (
    ("", "detect from the session file"),
    *((c, f"Pi {c}") for c in CHOICES),
    *((r, f"Pi {r}") for r in RELEASES),
)


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
    # The Pi dialect or release every turn of the project's sessions is read in (a value of
    # contextlab.pi.dialects.detect.CHOICES or a release of release_table.RELEASES);
    # blank = detected per turn.
    dialect = models.CharField(max_length=8, blank=True, default="", choices=DIALECT_CHOICES)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"resources of {self.project.cwd}"


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


class TreeIndex(models.Model):
    """The tree index of a revision as it stood at `entry_count` entries (see
    `contextlab.inspector.selectors.session_index`): the compact per-entry facts the tree and the
    inspector read, so that a process opening a session for the first time reads one row instead
    of parsing every entry's JSON.

    One row per revision, replaced when the revision grew (a different `entry_count` or leaf) or
    the code that computes the facts changed (`format`). `data` is the JSON of the facts (text,
    not bytea: read without hex decoding).
    """

    revision = models.OneToOneField(
        SessionRevision, on_delete=models.CASCADE, related_name="tree_index", primary_key=True
    )
    entry_count = models.PositiveIntegerField()
    leaf_entry_id = models.CharField(max_length=100, blank=True)
    format = models.PositiveIntegerField()
    data = models.TextField()
    # The search text of every entry, in the order of `data`'s ids (read only once searched).
    search = models.TextField()
    built_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"tree index of revision {self.revision_id} at {self.entry_count} entries"
