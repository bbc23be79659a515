"""What resource discovery returns: context files, skills, diagnostics, the whole set."""

from __future__ import annotations

from dataclasses import dataclass

from contextlab.pi.dialects import Dialect
from contextlab.pi.dialects.base import PromptRules
from contextlab.pi.entries import Json

# Results


@dataclass(frozen=True)
class ContextFile:
    path: str
    content: str


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    file_path: str
    base_dir: str
    disable_model_invocation: bool = False
    # "user", "project" or "path", as loadSkills labels it.
    source: str = "path"

    def as_dict(self) -> Json:
        return {
            "name": self.name,
            "description": self.description,
            "filePath": self.file_path,
            "baseDir": self.base_dir,
            "disableModelInvocation": self.disable_model_invocation,
            "source": self.source,
        }


@dataclass(frozen=True)
class Diagnostic:
    """One of Pi's resource diagnostics (``{type, message, path, collision?}``)."""

    type: str
    message: str
    path: str
    collision: dict[str, str] | None = None
    # False when the message is ours, not Pi's wording (YAML syntax errors: Pi reports the
    # `yaml` package's message, which this engine does not reproduce word for word).
    exact: bool = True

    def as_dict(self) -> Json:
        out: Json = {"type": self.type, "message": self.message, "path": self.path}
        if self.collision is not None:
            out["collision"] = dict(self.collision)
        if not self.exact:
            out["exact"] = False
        return out


@dataclass(frozen=True)
class PromptResources:
    cwd: str
    agent_dir: str
    home: str
    context_files: tuple[ContextFile, ...] = ()
    system_prompt: str | None = None
    system_prompt_path: str | None = None
    append_system_prompt: tuple[str, ...] = ()
    append_system_prompt_paths: tuple[str, ...] = ()
    skills: tuple[Skill, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    project_trusted: bool = True
    # How trust was decided ("caller", "no-trust-requiring-resources", "trust.json",
    # "defaultProjectTrust", "ask-noninteractive", "foreign-cwd") and a sentence for people.
    trust_source: str = "caller"
    trust_reason: str = ""
    # Paths Pi would read that did not exist where we looked.
    not_found: tuple[str, ...] = ()
    # Things Pi would take into account that this engine cannot see or does not model.
    unknown: tuple[str, ...] = ()

    def as_dict(self) -> Json:
        return {
            "cwd": self.cwd,
            "agentDir": self.agent_dir,
            "home": self.home,
            "contextFiles": [{"path": c.path, "content": c.content} for c in self.context_files],
            "systemPrompt": self.system_prompt,
            "systemPromptPath": self.system_prompt_path,
            "appendSystemPrompt": list(self.append_system_prompt),
            "appendSystemPromptPaths": list(self.append_system_prompt_paths),
            "skills": [s.as_dict() for s in self.skills],
            "diagnostics": [d.as_dict() for d in self.diagnostics],
            "projectTrusted": self.project_trusted,
            "trustSource": self.trust_source,
            "trustReason": self.trust_reason,
            "notFound": list(self.not_found),
            "unknown": list(self.unknown),
        }


class ResourceError(ValueError):
    """Bad input to discovery (e.g. an agent dir that is not an absolute path)."""


def prompt_rules(dialect: Dialect) -> PromptRules:
    if dialect.prompt is None:
        raise ValueError(f"dialect {dialect.version} has no system-prompt rules")
    return dialect.prompt
