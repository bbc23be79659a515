"""``discover_resources``: everything Pi reads from disk for its system prompt
(``DefaultResourceLoader.reload()`` without extensions or packages)."""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from contextlab.pi.dialects import DEFAULT_DIALECT, Dialect
from contextlab.pi.dialects.base import PromptRules
from contextlab.pi.entries import Json
from contextlab.pi.jsutil import path_join, path_normalize
from contextlab.pi.resources.context_files import load_project_context_files, read_prompt_file
from contextlab.pi.resources.filesystem import (
    FileSystem,
    as_file_system,
    expand_home,
    is_foreign_path,
)
from contextlab.pi.resources.patterns import apply_patterns, is_enabled_by_overrides, is_pattern
from contextlab.pi.resources.results import (
    Diagnostic,
    PromptResources,
    ResourceError,
    prompt_rules,
)
from contextlab.pi.resources.skills import collect_skill_entries, load_skills
from contextlab.pi.resources.trust import (
    has_trust_requiring_project_resources,
    read_json_object,
    trust_store_decision,
)


@dataclass
class _Scope:
    """What every step of one discovery reads and adds to."""

    files: FileSystem
    rules: PromptRules
    cwd: str
    agent_dir: str
    home: str
    search_cwd: str | None  # None: a cwd that is no path on this server
    diagnostics: list[Diagnostic] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    looked: list[str] = field(default_factory=list)
    project_dir: str | None = None
    project_allowed: bool = False  # the project's .pi/ may be read (trusted, or not gated)


# Long on purpose: one pass in the order of DefaultResourceLoader.reload() (settings, trust,
# context files, skills, prompts), each step handing the next what it found.
def discover_resources(
    *,
    cwd: str,
    agent_dir: str,
    home: str | None = None,
    project_trusted: bool | None = None,
    fs: Any = None,
    dialect: Dialect = DEFAULT_DIALECT,
    no_context_files: bool = False,
    no_skills: bool = False,
    skill_paths: Iterable[str] = (),
    system_prompt: str | None = None,
    append_system_prompt: Iterable[str] | None = None,
) -> PromptResources:
    """Find the context files, SYSTEM.md/APPEND_SYSTEM.md and skills Pi would load.

    Mirrors ``DefaultResourceLoader.reload()`` without extensions or packages.
    ``project_trusted`` None decides trust as Pi does without a UI (no trust-requiring
    resources, then trust.json, then ``defaultProjectTrust``; "ask" counts as untrusted, which
    is what Pi's print/RPC modes do, while the interactive TUI would have asked). ``home`` is
    ``$HOME`` for ``~/.agents/skills`` (default: this process's HOME).

    The keyword-only CLI equivalents: ``no_context_files`` (``-nc``), ``no_skills``
    (``--no-skills``), ``skill_paths`` (``--skill``), ``system_prompt``
    (``--system-prompt``) and ``append_system_prompt`` (each ``--append-system-prompt``); a
    prompt value naming an existing file is read, otherwise used as text. Relative paths are
    taken from the cwd (Pi takes them from its process cwd, normally the same).

    Steps: 1. trust; 2. context files; 3. SYSTEM.md and APPEND_SYSTEM.md; 4. skills.
    """
    files = as_file_system(fs)
    if is_foreign_path(agent_dir):
        raise ResourceError(f"agent dir {agent_dir!r} is not an absolute POSIX path")
    if home is None:
        home = os.environ.get("HOME") or os.path.expanduser("~")
    scope = _Scope(
        files=files,
        rules=prompt_rules(dialect),
        cwd=cwd,
        agent_dir=path_normalize(agent_dir),
        home=path_normalize(home),
        search_cwd=None if is_foreign_path(cwd) else path_normalize(cwd),
    )
    global_settings = read_json_object(
        files, path_join(scope.agent_dir, "settings.json"), scope.diagnostics
    )
    trusted, trust_source, trust_reason = _decide_trust(scope, project_trusted, global_settings)
    for raw in getattr(files, "skipped", []):
        scope.unknown.append(f"uploaded file {raw} has no absolute POSIX path: not used")
    if scope.search_cwd is None:
        scope.unknown.append(
            f"cwd {cwd} is not a POSIX path on this server: context files, .pi/ resources and "
            ".agents/skills of the project and its ancestors were not searched"
        )
    project_settings = _open_project(scope, trusted)

    context_files = (
        []
        if no_context_files
        else load_project_context_files(
            files,
            cwd=scope.search_cwd,
            agent_dir=scope.agent_dir,
            dialect=dialect,
            looked=scope.looked,
        )
    )
    if system_prompt is None:
        system_prompt = _discover_prompt_file(scope, "SYSTEM.md")
    system_text, system_path = _prompt_input(scope, system_prompt)
    append_texts, append_paths = _append_prompts(scope, append_system_prompt)

    # Computed with --no-skills too: its notes on extensions and patterns still hold.
    enabled = _enabled_skill_paths(scope, project_settings, global_settings)
    if no_skills:
        enabled = []
    skills, skill_diagnostics = load_skills(
        files,
        cwd=scope.search_cwd or "/nonexistent-foreign-cwd",
        agent_dir=scope.agent_dir,
        skill_paths=_merge_paths(files, [*enabled, *(_cli_path(scope, p) for p in skill_paths)]),
        dialect=dialect,
    )
    scope.diagnostics.extend(skill_diagnostics)

    return PromptResources(
        cwd=cwd,
        agent_dir=scope.agent_dir,
        home=scope.home,
        context_files=tuple(context_files),
        system_prompt=system_text,
        system_prompt_path=system_path,
        append_system_prompt=tuple(append_texts),
        append_system_prompt_paths=tuple(append_paths),
        skills=tuple(skills),
        diagnostics=tuple(scope.diagnostics),
        project_trusted=trusted,
        trust_source=trust_source,
        trust_reason=trust_reason,
        not_found=tuple(dict.fromkeys(scope.looked)),
        unknown=tuple(scope.unknown),
    )


def _open_project(scope: _Scope, trusted: bool) -> dict[str, Any]:
    """Whether the project's .pi/ may be read (trusted, or a dialect without the trust gate)
    and, if so, its settings.json."""
    if not scope.search_cwd:
        return {}
    scope.project_dir = path_join(scope.search_cwd, scope.rules.config_dir_name)
    scope.project_allowed = trusted or not scope.rules.project_trust_gates_resources
    if not scope.project_allowed:
        return {}
    return read_json_object(
        scope.files, path_join(scope.project_dir, "settings.json"), scope.diagnostics
    )


def _decide_trust(
    scope: _Scope, project_trusted: bool | None, global_settings: Json
) -> tuple[bool, str, str]:
    """Trust (main.js createRuntime + resolveProjectTrusted without a UI): (trusted, source,
    reason)."""
    if project_trusted is not None:
        return project_trusted, "caller", "given by the caller"
    if scope.search_cwd is None:
        reason = (
            f"cwd {scope.cwd} is not a path on this server: its project resources cannot be checked"
        )
        return True, "foreign-cwd", reason
    if not has_trust_requiring_project_resources(
        scope.files, scope.search_cwd, scope.home, scope.rules
    ):
        reason = "the project has no .pi/ resources or .agents/skills that need trust"
        return True, "no-trust-requiring-resources", reason
    saved = trust_store_decision(
        scope.files, scope.agent_dir, scope.search_cwd, scope.diagnostics, scope.rules
    )
    default = global_settings.get("defaultProjectTrust")
    if saved is not None:
        return saved[0], "trust.json", f"trust.json entry for {saved[1]}: {str(saved[0]).lower()}"
    if default in ("always", "never"):
        return (
            default == "always",
            "defaultProjectTrust",
            (f"settings.json defaultProjectTrust is {default!r}"),
        )
    reason = (
        "no saved decision and defaultProjectTrust is 'ask': print mode treats the "
        "project as untrusted; the interactive TUI would have asked"
    )
    return False, "ask-noninteractive", reason


def _cli_path(scope: _Scope, value: str) -> str:
    """A ``--skill`` path: tilde-expanded, relative to the cwd."""
    expanded = expand_home(value.strip(), scope.home)
    if expanded.startswith("/"):
        return path_normalize(expanded)
    return path_normalize(path_join(scope.search_cwd or "/", expanded))


def _prompt_input(scope: _Scope, value: str | None) -> tuple[str | None, str | None]:
    """resolvePromptInput: (text, file it came from)."""
    if not value:
        return None, None
    # existsSync(value): no trimming, no tilde expansion.
    path = value if value.startswith("/") else path_join(scope.search_cwd or "/", value)
    if scope.files.exists(path):
        return read_prompt_file(scope.files, path), path
    return value, None


def _discover_prompt_file(scope: _Scope, name: str) -> str | None:
    """SYSTEM.md / APPEND_SYSTEM.md: the project's (trusted only), else the agent dir's."""
    if scope.project_allowed and scope.project_dir:
        project_path = path_join(scope.project_dir, name)
        if scope.files.exists(project_path):
            return project_path
        scope.looked.append(project_path)
    global_path = path_join(scope.agent_dir, name)
    if scope.files.exists(global_path):
        return global_path
    scope.looked.append(global_path)
    return None


def _append_prompts(scope: _Scope, given: Iterable[str] | None) -> tuple[list[str], list[str]]:
    """The APPEND_SYSTEM.md texts (each ``--append-system-prompt``, else the discovered file)
    and the files they came from."""
    sources = (
        list(given)
        if given is not None
        else [p for p in [_discover_prompt_file(scope, "APPEND_SYSTEM.md")] if p]
    )
    texts: list[str] = []
    paths: list[str] = []
    for source in sources:
        text, path = _prompt_input(scope, source)
        if text is not None:
            texts.append(text)
        if path is not None:
            paths.append(path)
    return texts, paths


def _settings_entries(settings: Json) -> list[str]:
    entries = settings.get("skills")
    if not isinstance(entries, list):
        return []
    return [e for e in entries if isinstance(e, str)]


def _enabled_skill_paths(scope: _Scope, project_settings: Json, global_settings: Json) -> list[str]:
    """Skills: settings entries, then auto-discovered folders, sorted by precedence, the ones
    switched off dropped (a real path seen before is dropped too)."""
    # path -> (precedence rank, enabled); the first time a path is added wins.
    accumulator: dict[str, tuple[int, bool]] = {}
    project_entries = _settings_entries(project_settings)
    global_entries = _settings_entries(global_settings)
    _add_settings_skills(scope, accumulator, project_entries, scope.project_dir, 0)
    _add_settings_skills(scope, accumulator, global_entries, scope.agent_dir, 2)
    _note_unmodelled(scope, project_settings, global_settings)
    _add_auto_discovered(scope, accumulator, project_entries, global_entries)

    ordered = sorted(accumulator.items(), key=lambda item: item[1][0])  # stable, like JS sort
    enabled_paths: list[str] = []
    seen_real: set[str] = set()
    for path, (_rank, enabled) in ordered:
        real = scope.files.realpath(path)
        if real in seen_real:
            continue
        seen_real.add(real)
        if enabled:
            enabled_paths.append(path)
    return enabled_paths


def _add_settings_skills(
    scope: _Scope,
    accumulator: dict[str, tuple[int, bool]],
    entries: list[str],
    base: str | None,
    rank: int,
) -> None:
    """resolveLocalEntries: files of the plain entries, enabled by the patterns of the list."""
    if not entries or base is None:
        return
    files = scope.files
    plain = [e for e in entries if not is_pattern(e)]
    patterns = [e for e in entries if is_pattern(e)]
    for pattern in patterns:
        if re.search(r"[+@!*?]\(", pattern.lstrip("!+-")):
            scope.unknown.append(
                f"skills pattern {pattern!r} in {path_join(base, 'settings.json')} uses an "
                "extglob, which this engine matches literally"
            )
    all_files: list[str] = []
    for entry in plain:
        expanded = expand_home(entry.strip(), scope.home)
        path = path_normalize(expanded if expanded.startswith("/") else path_join(base, expanded))
        if not files.exists(path):
            continue
        if files.is_file(path):
            all_files.append(path)
        elif files.is_dir(path):
            all_files.extend(collect_skill_entries(files, path, "pi"))
    enabled_by_patterns = apply_patterns(all_files, patterns, base)
    for path in all_files:
        if path and path not in accumulator:
            accumulator[path] = (rank, path in enabled_by_patterns)


def _note_unmodelled(scope: _Scope, project_settings: Json, global_settings: Json) -> None:
    """Extensions can register tools, add resources and replace the prompt per run
    (before_agent_start); none of that is modelled, so say when some are installed."""
    extension_dirs = [path_join(scope.agent_dir, "extensions")]
    if scope.project_allowed and scope.project_dir:
        extension_dirs.append(path_join(scope.project_dir, "extensions"))
    for directory in extension_dirs:
        try:
            installed = scope.files.is_dir(directory) and bool(scope.files.listdir(directory))
        except OSError:
            installed = True  # there, but unreadable to us
        if installed:
            scope.unknown.append(
                f"extensions in {directory} may add tools or change the prompt: not modelled"
            )
    for settings, label in ((project_settings, "project"), (global_settings, "global")):
        if settings.get("packages"):
            scope.unknown.append(f"{label} settings list packages, whose skills are not modelled")


def _add_auto_discovered(
    scope: _Scope,
    accumulator: dict[str, tuple[int, bool]],
    project_entries: list[str],
    global_entries: list[str],
) -> None:
    """addAutoDiscoveredResources: each folder's files, switched off by the override patterns
    (!, +, -) of the settings of the same scope, matched relative to that folder's base."""
    user_agents_skills = path_join(scope.home, ".agents", "skills")

    def add_auto(directory: str, mode: str, rank: int, overrides: list[str], base: str) -> None:
        for found in collect_skill_entries(scope.files, directory, mode):
            if found and found not in accumulator:
                accumulator[found] = (rank, is_enabled_by_overrides(found, overrides, base))

    if scope.project_allowed and scope.search_cwd and scope.project_dir:
        add_auto(
            path_join(scope.project_dir, "skills"), "pi", 1, project_entries, scope.project_dir
        )
        for skills_dir in _ancestor_agents_skill_dirs(scope.files, scope.search_cwd):
            if skills_dir != user_agents_skills:
                add_auto(skills_dir, "agents", 1, project_entries, posixpath.dirname(skills_dir))
    add_auto(path_join(scope.agent_dir, "skills"), "pi", 3, global_entries, scope.agent_dir)
    add_auto(user_agents_skills, "agents", 3, global_entries, posixpath.dirname(user_agents_skills))


def _merge_paths(files: FileSystem, paths: list[str]) -> list[str]:
    """mergePaths: --skill paths come last; a path already present (same real path) is
    dropped."""
    merged: list[str] = []
    seen_real: set[str] = set()
    for path in paths:
        real = files.realpath(path)
        if real not in seen_real:
            seen_real.add(real)
            merged.append(path)
    return merged


def _ancestor_agents_skill_dirs(fs: FileSystem, start: str) -> list[str]:
    """``collectAncestorAgentsSkillDirs``: cwd upwards to the git root (or the filesystem root)."""
    git_root: str | None = None
    probe = start
    while True:
        if fs.exists(path_join(probe, ".git")):
            git_root = probe
            break
        parent = posixpath.dirname(probe)
        if parent == probe:
            break
        probe = parent
    dirs: list[str] = []
    current = start
    while True:
        dirs.append(path_join(current, ".agents", "skills"))
        if git_root is not None and current == git_root:
            break
        parent = posixpath.dirname(current)
        if parent == current:
            break
        current = parent
    return dirs
