"""What Pi reads from disk to build its system prompt, found exactly as Pi 0.80 finds it.

Truth: ``loadProjectContextFiles`` and ``DefaultResourceLoader`` (dist/core/resource-loader.js),
``loadSkills`` (dist/core/skills.js), auto-discovery of skill folders and ignore files
(dist/core/package-manager.js), project trust (dist/core/trust-manager.js,
dist/core/project-trust.js, main.js), settings (dist/core/settings-manager.js) and the
frontmatter reader (dist/utils/frontmatter.js).

Everything goes through a small filesystem protocol so the UI can hand in files uploaded from
another machine under their original absolute paths (``fs={"/home/ann/proj/AGENTS.md": "..."}``);
the default is the real disk. Paths are POSIX: a Windows-style cwd (``C:\\Users\\x``) is never
searched and the result says so.

The parts, each a module of this package:

- ``results``: what discovery returns (``PromptResources``, ``ContextFile``, ``Skill``, ...);
- ``filesystem``: the filesystem protocol and Node's POSIX ``path`` functions;
- ``ignore``: node-ignore (.gitignore, .ignore, .fdignore) for skill folders;
- ``yaml_core`` and ``frontmatter``: frontmatter read as Pi's ``yaml`` package reads it;
- ``skills``: loading and validating skills, walking skill folders;
- ``context_files``: AGENTS.md / CLAUDE.md up the tree, SYSTEM.md / APPEND_SYSTEM.md;
- ``trust``: settings files and project trust;
- ``patterns``: the ``skills`` patterns of settings.json (a minimatch subset);
- ``discovery``: ``discover_resources``, which puts them together in Pi's order.
"""

from contextlab.pi.resources.context_files import load_project_context_files
from contextlab.pi.resources.discovery import discover_resources
from contextlab.pi.resources.filesystem import (
    FileSystem,
    MappingFileSystem,
    RealFileSystem,
    as_file_system,
    is_foreign_path,
)
from contextlab.pi.resources.frontmatter import FrontmatterError, parse_frontmatter
from contextlab.pi.resources.ignore import Ignore
from contextlab.pi.resources.patterns import minimatch
from contextlab.pi.resources.results import (
    ContextFile,
    Diagnostic,
    PromptResources,
    ResourceError,
    Skill,
)
from contextlab.pi.resources.skills import load_skill_from_file, load_skills
from contextlab.pi.resources.trust import has_trust_requiring_project_resources

__all__ = [
    "ContextFile",
    "Diagnostic",
    "FileSystem",
    "FrontmatterError",
    "Ignore",
    "MappingFileSystem",
    "PromptResources",
    "RealFileSystem",
    "ResourceError",
    "Skill",
    "as_file_system",
    "discover_resources",
    "has_trust_requiring_project_resources",
    "is_foreign_path",
    "load_project_context_files",
    "load_skill_from_file",
    "load_skills",
    "minimatch",
    "parse_frontmatter",
]
