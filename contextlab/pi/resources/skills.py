"""Skills (dist/core/skills.js) and the auto-discovery of skill folders
(dist/core/package-manager.js)."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from typing import Any

from contextlab.pi.dialects import DEFAULT_DIALECT, Dialect
from contextlab.pi.dialects.base import PromptRules
from contextlab.pi.jsutil import (
    js_len,
    js_trim,
    js_truthy,
    path_is_under,
    path_join,
    path_normalize,
    path_relative,
)
from contextlab.pi.resources.filesystem import FileSystem
from contextlab.pi.resources.frontmatter import FrontmatterError, frontmatter_get, parse_frontmatter
from contextlab.pi.resources.ignore import Ignore, add_ignore_rules
from contextlab.pi.resources.results import Diagnostic, Skill, prompt_rules

# Skills (dist/core/skills.js and the auto-discovery of dist/core/package-manager.js)


class _JsTypeError(Exception):
    """What Node throws when Pi calls a string method on a non-string frontmatter value."""


def _validate_name(name: Any, rules: PromptRules) -> list[str]:
    # A non-string name (YAML number, boolean, list, map) reaches name.startsWith() and throws;
    # the warnings collected before that are lost with the exception, as in Pi.
    if not isinstance(name, str):
        raise _JsTypeError("name.startsWith is not a function")
    errors: list[str] = []
    if js_len(name) > rules.skill_max_name_length:
        errors.append(rules.skill_name_too_long.format(rules.skill_max_name_length, js_len(name)))
    if not re.fullmatch(r"[a-z0-9-]+", name):
        errors.append(rules.skill_name_invalid_characters)
    if name.startswith("-") or name.endswith("-"):
        errors.append(rules.skill_name_hyphen_edges)
    if "--" in name:
        errors.append(rules.skill_name_consecutive_hyphens)
    return errors


def _validate_description(description: Any, rules: PromptRules) -> list[str]:
    if not js_truthy(description):
        return [rules.skill_description_required]
    if not isinstance(description, str):
        raise _JsTypeError("description.trim is not a function")
    if js_trim(description) == "":
        return [rules.skill_description_required]
    if js_len(description) > rules.skill_max_description_length:
        limit = rules.skill_max_description_length
        return [rules.skill_description_too_long.format(limit, js_len(description))]
    return []


def load_skill_from_file(
    fs: FileSystem, file_path: str, source: str, *, dialect: Dialect = DEFAULT_DIALECT
) -> tuple[Skill | None, list[Diagnostic]]:
    """``loadSkillFromFile``: the skill (or None) and its warnings."""
    rules = prompt_rules(dialect)
    diagnostics: list[Diagnostic] = []
    try:
        frontmatter, _body = parse_frontmatter(fs.read_text(file_path))
        skill_dir = posixpath.dirname(file_path)
        parent_dir_name = posixpath.basename(skill_dir)
        description = frontmatter_get(frontmatter, "description")
        for error in _validate_description(description, rules):
            diagnostics.append(Diagnostic("warning", error, file_path))
        raw_name = frontmatter_get(frontmatter, "name")
        name = raw_name if js_truthy(raw_name) else parent_dir_name
        for error in _validate_name(name, rules):
            diagnostics.append(Diagnostic("warning", error, file_path))
        mismatch = rules.skill_name_parent_mismatch_warning
        if mismatch and name != parent_dir_name:
            message = mismatch.format(name=name, parent=parent_dir_name)
            diagnostics.append(Diagnostic("warning", message, file_path))
        if not js_truthy(description) or js_trim(description) == "":
            return None, diagnostics
        return (
            Skill(
                name=name,
                description=description,
                file_path=file_path,
                base_dir=skill_dir,
                disable_model_invocation=frontmatter_get(frontmatter, "disable-model-invocation")
                is True,
                source=source,
            ),
            diagnostics,
        )
    except FrontmatterError as error:
        diagnostics.append(Diagnostic("warning", str(error), file_path, exact=error.exact))
    except _JsTypeError as error:
        diagnostics.append(Diagnostic("warning", str(error), file_path))
    except OSError as error:
        diagnostics.append(Diagnostic("warning", node_fs_message(error, "open"), file_path))
    return None, diagnostics


def node_fs_message(error: OSError, syscall: str) -> str:
    codes = {2: "ENOENT", 13: "EACCES", 21: "EISDIR", 20: "ENOTDIR"}
    code = codes.get(error.errno or 0, "EIO")
    text = {
        "ENOENT": "no such file or directory",
        "EACCES": "permission denied",
        "EISDIR": "illegal operation on a directory",
        "ENOTDIR": "not a directory",
    }.get(code, error.strerror or "i/o error")
    if code == "EISDIR":
        return f"{code}: {text}, read"
    return f"{code}: {text}, {syscall} '{error.filename}'"


def collect_skill_entries(
    fs: FileSystem, directory: str, mode: str, ig: Ignore | None = None, root: str | None = None
) -> list[str]:
    """``collectSkillEntries``: skill files under an auto-discovered folder, in Pi's order."""
    entries: list[str] = []
    if not fs.exists(directory):
        return entries
    root = root or directory
    ig = ig or Ignore()
    add_ignore_rules(fs, ig, directory, root)
    try:
        names = fs.listdir(directory)
        for name in names:
            if name != "SKILL.md":
                continue
            full = path_join(directory, name)
            if fs.is_file(full) and not ig.ignores(path_relative(root, full)):
                entries.append(full)
                return entries
        for name in names:
            if name.startswith(".") or name == "node_modules":
                continue
            full = path_join(directory, name)
            is_dir, is_file = fs.is_dir(full), fs.is_file(full)
            rel = path_relative(root, full)
            if (
                mode == "pi"
                and directory == root
                and is_file
                and name.endswith(".md")
                and not ig.ignores(rel)
            ):
                entries.append(full)
                continue
            if not is_dir:
                continue
            if ig.ignores(f"{rel}/"):
                continue
            entries.extend(collect_skill_entries(fs, full, mode, ig, root))
    except (OSError, ValueError, TypeError):
        pass  # Pi swallows errors while scanning and keeps what it found so far
    return entries


def _load_skills_from_dir(
    fs: FileSystem,
    directory: str,
    source: str,
    include_root_files: bool,
    dialect: Dialect,
    ig: Ignore | None = None,
    root: str | None = None,
) -> tuple[list[Skill], list[Diagnostic]]:
    """``loadSkillsFromDirInternal`` (used for folders listed in settings)."""
    skills: list[Skill] = []
    diagnostics: list[Diagnostic] = []
    if not fs.exists(directory):
        return skills, diagnostics
    root = root or directory
    ig = ig or Ignore()
    add_ignore_rules(fs, ig, directory, root)
    try:
        names = fs.listdir(directory)
        for name in names:
            if name != "SKILL.md":
                continue
            full = path_join(directory, name)
            if not fs.is_file(full) or ig.ignores(path_relative(root, full)):
                continue
            skill, diags = load_skill_from_file(fs, full, source, dialect=dialect)
            if skill:
                skills.append(skill)
            diagnostics.extend(diags)
            return skills, diagnostics
        for name in names:
            if name.startswith(".") or name == "node_modules":
                continue
            full = path_join(directory, name)
            is_dir, is_file = fs.is_dir(full), fs.is_file(full)
            rel = path_relative(root, full)
            if ig.ignores(f"{rel}/" if is_dir else rel):
                continue
            if is_dir:
                sub_skills, sub_diags = _load_skills_from_dir(
                    fs, full, source, False, dialect, ig, root
                )
                skills.extend(sub_skills)
                diagnostics.extend(sub_diags)
                continue
            if not is_file or not include_root_files or not name.endswith(".md"):
                continue
            skill, diags = load_skill_from_file(fs, full, source, dialect=dialect)
            if skill:
                skills.append(skill)
            diagnostics.extend(diags)
    except (OSError, ValueError, TypeError):
        pass
    return skills, diagnostics


def load_skills(
    fs: FileSystem,
    *,
    cwd: str,
    agent_dir: str,
    skill_paths: Iterable[str],
    dialect: Dialect = DEFAULT_DIALECT,
) -> tuple[list[Skill], list[Diagnostic]]:
    """``loadSkills({cwd, agentDir, skillPaths, includeDefaults: false})``."""
    rules = prompt_rules(dialect)
    skill_map: dict[str, Skill] = {}
    real_paths: set[str] = set()
    diagnostics: list[Diagnostic] = []
    collisions: list[Diagnostic] = []
    user_dir = path_join(agent_dir, "skills")
    project_dir = path_join(cwd, rules.config_dir_name, "skills")

    def add(skills: list[Skill], diags: list[Diagnostic]) -> None:
        diagnostics.extend(diags)
        for skill in skills:
            real = fs.realpath(skill.file_path)
            if real in real_paths:
                continue
            existing = skill_map.get(skill.name)
            if existing:
                collisions.append(
                    Diagnostic(
                        "collision",
                        rules.skill_name_collision.format(skill.name),
                        skill.file_path,
                        {
                            "resourceType": "skill",
                            "name": skill.name,
                            "winnerPath": existing.file_path,
                            "loserPath": skill.file_path,
                        },
                    )
                )
            else:
                skill_map[skill.name] = skill
                real_paths.add(real)

    for raw in skill_paths:
        path = path_normalize(raw.strip())
        if not fs.exists(path):
            diagnostics.append(Diagnostic("warning", rules.skill_path_missing, path))
            continue
        if path_is_under(path, user_dir):
            source = "user"
        elif path_is_under(path, project_dir):
            source = "project"
        else:
            source = "path"
        if fs.is_dir(path):
            add(*_load_skills_from_dir(fs, path, source, True, dialect))
        elif fs.is_file(path) and path.endswith(".md"):
            skill, diags = load_skill_from_file(fs, path, source, dialect=dialect)
            if skill:
                add([skill], diags)
            else:
                diagnostics.extend(diags)
        else:
            diagnostics.append(Diagnostic("warning", rules.skill_path_not_markdown, path))
    return list(skill_map.values()), diagnostics + collisions
