"""Settings files and project trust (dist/core/settings-manager.js, dist/core/trust-manager.js,
dist/core/project-trust.js)."""

from __future__ import annotations

import json
import posixpath

from contextlab.pi.dialects.base import PromptRules
from contextlab.pi.entries import Json
from contextlab.pi.jsutil import path_join
from contextlab.pi.resources.filesystem import FileSystem
from contextlab.pi.resources.results import Diagnostic
from contextlab.pi.resources.skills import node_fs_message

# Settings and project trust


def read_json_object(fs: FileSystem, path: str, diagnostics: list[Diagnostic]) -> Json:
    if not fs.exists(path):
        return {}
    try:
        text = fs.read_text(path)
    except OSError as error:
        diagnostics.append(Diagnostic("error", node_fs_message(error, "open"), path))
        return {}
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as error:
        diagnostics.append(Diagnostic("error", f"invalid JSON: {error}", path, exact=False))
        return {}
    if not isinstance(value, dict):
        return {}
    skills = value.get("skills")
    # SettingsManager.migrateSettings: the old {customDirectories: [...]} form of "skills".
    if isinstance(skills, dict):
        dirs = skills.get("customDirectories")
        if isinstance(dirs, list) and dirs:
            value["skills"] = dirs
        else:
            del value["skills"]
    return value


def has_trust_requiring_project_resources(
    fs: FileSystem, cwd: str, home: str, rules: PromptRules
) -> bool:
    """``hasTrustRequiringProjectResources``: .pi/ entries, or .agents/skills up to the root."""
    user_agents_skills = path_join(fs.realpath(home), ".agents", "skills")
    current = fs.realpath(cwd)
    config_dir = path_join(current, rules.config_dir_name)
    if any(fs.exists(path_join(config_dir, e)) for e in rules.trust_requiring_config_entries):
        return True
    while True:
        agents_skills = path_join(current, ".agents", "skills")
        if agents_skills != user_agents_skills and fs.exists(agents_skills):
            return True
        parent = posixpath.dirname(current)
        if parent == current:
            return False
        current = parent


def trust_store_decision(
    fs: FileSystem, agent_dir: str, cwd: str, diagnostics: list[Diagnostic], rules: PromptRules
) -> tuple[bool, str] | None:
    """The nearest saved decision in ``<agentDir>/trust.json`` for cwd or an ancestor."""
    path = path_join(agent_dir, "trust.json")
    if not fs.exists(path):
        return None
    try:
        data = json.loads(fs.read_text(path))
    except (OSError, ValueError) as error:
        # Pi stops at startup with "Failed to read trust store ...".
        message = rules.trust_store_unreadable.format(path, error)
        diagnostics.append(Diagnostic("error", message, path, exact=False))
        return None
    if not isinstance(data, dict):
        diagnostics.append(Diagnostic("error", rules.trust_store_not_object.format(path), path))
        return None
    current = fs.realpath(cwd)
    while True:
        value = data.get(current)
        if value is True or value is False:
            return value, current
        parent = posixpath.dirname(current)
        if parent == current:
            return None
        current = parent
