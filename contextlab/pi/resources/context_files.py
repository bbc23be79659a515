"""Context files (AGENTS.md / CLAUDE.md up the tree) and SYSTEM.md / APPEND_SYSTEM.md
(dist/core/resource-loader.js)."""

from __future__ import annotations

import posixpath

from contextlab.pi.dialects import DEFAULT_DIALECT, Dialect
from contextlab.pi.dialects.base import PromptRules
from contextlab.pi.jsutil import path_join
from contextlab.pi.resources.filesystem import FileSystem
from contextlab.pi.resources.results import ContextFile, prompt_rules

# Context files, SYSTEM.md / APPEND_SYSTEM.md


def _load_context_file_from_dir(
    fs: FileSystem, directory: str, rules: PromptRules, looked: list[str]
) -> ContextFile | None:
    for name in rules.context_file_names:
        path = path_join(directory, name)
        if fs.exists(path):
            try:
                return ContextFile(path, fs.read_text(path))
            except OSError:
                continue  # Pi warns on stderr and tries the next name
        looked.append(path)
    return None


def load_project_context_files(
    fs: FileSystem,
    *,
    cwd: str | None,
    agent_dir: str,
    dialect: Dialect = DEFAULT_DIALECT,
    looked: list[str] | None = None,
) -> list[ContextFile]:
    """``loadProjectContextFiles``: the agent dir's file, then ancestors outermost first.

    ``cwd`` None means a cwd that cannot be searched here (foreign path): only the agent dir.
    """
    rules = prompt_rules(dialect)
    looked = looked if looked is not None else []
    files: list[ContextFile] = []
    seen: set[str] = set()
    global_file = _load_context_file_from_dir(fs, agent_dir, rules, looked)
    if global_file:
        files.append(global_file)
        seen.add(global_file.path)
    ancestors: list[ContextFile] = []
    current = cwd
    while current is not None:
        found = _load_context_file_from_dir(fs, current, rules, looked)
        if found and found.path not in seen:
            ancestors.insert(0, found)
            seen.add(found.path)
        if current == "/":
            break
        parent = posixpath.dirname(current)
        if parent == current:
            break
        current = parent
    files.extend(ancestors)
    return files


def read_prompt_file(fs: FileSystem, path: str) -> str:
    """resolvePromptInput on a discovered file: its text, or the path itself if unreadable."""
    try:
        return fs.read_text(path)
    except OSError:
        return path
