"""Pi's system prompt, rebuilt layer by layer (dist/core/system-prompt.js, agent-session.js).

Two levels:

* ``build_system_prompt_from_options`` mirrors Pi's ``buildSystemPrompt(options)`` one to one
  (same option names and the same JavaScript truthiness), so the oracle can feed both sides the
  identical input.
* ``build_system_prompt`` first computes those options the way
  ``AgentSession._rebuildSystemPrompt`` does (only registered tools survive, snippets and
  guidelines normalised) from a tool list and the resources found by
  ``contextlab.pi.resources.discover_resources``.

The prompt comes back as layers. Every layer carries its own leading separator (``"\\n\\n"`` or
``"\\n"``), exactly as Pi appends its sections, so ``"".join(layer.text) == text`` holds with no
glue and each layer begins where Pi's code begins the matching section.
"""

from __future__ import annotations

import math
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from contextlab.pi.dialects import DEFAULT_DIALECT, Dialect
from contextlab.pi.dialects.base import PromptRules
from contextlab.pi.entries import Json
from contextlab.pi.jsutil import JS_WHITESPACE_CLASS, js_len, js_trim, path_resolve
from contextlab.pi.resources import ContextFile, PromptResources, Skill, is_foreign_path

# Shown instead of the Pi package folder when it is not known; the docs layer is then flagged.
PI_ROOT_PLACEHOLDER = "<pi-package-dir>"

# JavaScript's \s (not Python's): see jsutil.JS_WHITESPACE.
_JS_WS_RUN = re.compile(f"[{JS_WHITESPACE_CLASS}]+")
_CRLF_RUN = re.compile(r"[\r\n]+")
_DATE = re.compile(r"^\d{4,}-\d{2}-\d{2}$")


def estimate_tokens(text: str) -> int:
    """Pi's estimate: ceil(chars / 4), chars counted as UTF-16 code units."""
    return math.ceil(js_len(text) / 4)


@dataclass(frozen=True)
class PromptLayer:
    name: str
    title: str
    text: str
    sources: tuple[str, ...] = ()
    tokens: int = 0
    # True when the text holds a placeholder for something this server cannot know.
    unknown: bool = False
    # A prompt kept in the session (Pi 1.x): the entry that last set this part.
    entry_id: str | None = None

    def as_dict(self) -> Json:
        out: Json = {
            "name": self.name,
            "title": self.title,
            "text": self.text,
            "sources": list(self.sources),
            "tokens": self.tokens,
            "unknown": self.unknown,
        }
        if self.entry_id is not None:
            out["entryId"] = self.entry_id
        return out


@dataclass(frozen=True)
class SystemPrompt:
    text: str
    layers: tuple[PromptLayer, ...]
    # Why something is absent or uncertain (hidden skills, unknown docs paths, ...).
    notes: tuple[str, ...] = ()
    # The exact options handed to build_system_prompt_from_options, for display and oracles.
    options: Json = field(default_factory=dict)

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)

    def layer(self, name: str) -> PromptLayer | None:
        for layer in self.layers:
            if layer.name == name:
                return layer
        return None

    def as_dict(self) -> Json:
        return {
            "text": self.text,
            "tokens": self.tokens,
            "layers": [layer.as_dict() for layer in self.layers],
            "notes": list(self.notes),
        }


def _layer(
    name: str, title: str, text: str, sources: Sequence[str] = (), *, unknown: bool = False
) -> PromptLayer:
    return PromptLayer(name, title, text, tuple(sources), estimate_tokens(text), unknown)


def _rules(dialect: Dialect) -> PromptRules:
    if dialect.prompt is None:
        raise ValueError(f"dialect {dialect.version} has no system-prompt rules")
    return dialect.prompt


def _escape_xml(text: str) -> str:
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&apos;")
    )


def format_skills_for_prompt(skills: Sequence[Skill], *, dialect: Dialect = DEFAULT_DIALECT) -> str:
    """``formatSkillsForPrompt``: skills with disable-model-invocation are left out."""
    rules = _rules(dialect)
    visible = [skill for skill in skills if not skill.disable_model_invocation]
    if not visible:
        return ""
    lines = [*rules.skills_preamble, rules.skills_open]
    for skill in visible:
        lines.append("  <skill>")
        lines.append(f"    <name>{_escape_xml(skill.name)}</name>")
        lines.append(f"    <description>{_escape_xml(skill.description)}</description>")
        lines.append(f"    <location>{_escape_xml(skill.file_path)}</location>")
        lines.append("  </skill>")
    lines.append(rules.skills_close)
    return "\n".join(lines)


def docs_paths(pi_root: str | None) -> tuple[str, str, str]:
    """README, docs and examples paths as ``dist/config.js`` gives them for a package folder."""
    if pi_root is None:
        return (
            f"{PI_ROOT_PLACEHOLDER}/README.md",
            f"{PI_ROOT_PLACEHOLDER}/docs",
            f"{PI_ROOT_PLACEHOLDER}/examples",
        )
    # getPackageDir() applies normalizePath (tilde expansion is the only change that matters
    # here), then the getters resolve(join(dir, name)).
    root = pi_root
    if root == "~" or root.startswith("~/"):
        root = posixpath.expanduser(root)
    return (
        path_resolve(root + "/README.md"),
        path_resolve(root + "/docs"),
        path_resolve(root + "/examples"),
    )


# Long on purpose: it follows Pi's buildSystemPrompt statement by statement, so that the two
# read side by side (tests/conformance/test_prompt_oracle.py compares them).
def build_system_prompt_from_options(
    *,
    cwd: str,
    date: str,
    custom_prompt: str | None = None,
    selected_tools: Sequence[str] | None = None,
    tool_snippets: Mapping[str, str] | None = None,
    prompt_guidelines: Sequence[str] | None = None,
    append_system_prompt: str | None = None,
    context_files: Sequence[ContextFile] | None = None,
    skills: Sequence[Skill] | None = None,
    pi_root: str | None = None,
    context_file_sources: Sequence[str] | None = None,
    append_sources: Sequence[str] = (),
    custom_sources: Sequence[str] = (),
    tool_sources: Mapping[str, str] | None = None,
    guideline_sources: Sequence[str] | None = None,
    dialect: Dialect = DEFAULT_DIALECT,
) -> SystemPrompt:
    """Pi's ``buildSystemPrompt(BuildSystemPromptOptions)``, split into layers.

    ``date`` is what Pi computes from the local clock (``YYYY-MM-DD``); the engine never reads
    the clock. The ``*_sources`` arguments only label layers, they never change the text.
    """
    if not _DATE.match(date):
        raise ValueError(f"date must be YYYY-MM-DD, got {date!r}")
    rules = _rules(dialect)
    contexts = list(context_files or [])
    skill_list = list(skills or [])
    layers: list[PromptLayer] = []
    notes: list[str] = []
    append_section = f"\n\n{append_system_prompt}" if append_system_prompt else ""

    if custom_prompt:
        layers.append(
            _layer("custom", "Custom system prompt (SYSTEM.md)", custom_prompt, custom_sources)
        )
        has_read = selected_tools is None or "read" in selected_tools
    else:
        tools = list(selected_tools) if selected_tools is not None else list(rules.default_tools)
        snippets = tool_snippets or {}
        visible = [name for name in tools if snippets.get(name)]
        tools_list = (
            "\n".join(f"- {name}: {snippets[name]}" for name in visible)
            if visible
            else rules.no_tools
        )
        guidelines: list[str] = []

        def add(guideline: str) -> None:
            if guideline not in guidelines:
                guidelines.append(guideline)

        explorers = any(t in tools for t in rules.bash_guideline_suppressed_by)
        bash, powershell = "bash" in tools, "powershell" in tools
        if bash and powershell and not explorers and rules.powershell_and_bash_guideline:
            add(rules.powershell_and_bash_guideline)
        elif powershell and not bash and not explorers and rules.powershell_guideline:
            add(rules.powershell_guideline)
        elif bash and not explorers:
            add(rules.bash_file_ops_guideline)
        elif bash and rules.bash_with_explorers_guideline:
            add(rules.bash_with_explorers_guideline)
        for guideline in prompt_guidelines or []:
            normalized = js_trim(guideline)
            if normalized:
                add(normalized)
        for guideline in rules.always_guidelines:
            add(guideline)
        has_read = "read" in tools

        sources = tool_sources or {}
        layers.append(_layer("identity", "Identity", rules.identity))
        layers.append(
            _layer(
                "tools",
                "Available tools",
                f"\n\n{rules.tools_header}\n{tools_list}\n\n{rules.tools_footer}",
                [sources.get(name, name) for name in visible],
            )
        )
        layers.append(
            _layer(
                "guidelines",
                "Guidelines",
                f"\n\n{rules.guidelines_header}\n" + "\n".join(f"- {g}" for g in guidelines),
                list(guideline_sources) if guideline_sources is not None else [],
            )
        )
        readme, docs, examples = docs_paths(pi_root)
        docs_text = "\n".join(
            line.format(readme=readme, docs=docs, examples=examples) for line in rules.docs_lines
        )
        if pi_root is None:
            notes.append(
                f"Pi package folder unknown: the docs paths show {PI_ROOT_PLACEHOLDER} "
                "instead of the real folder."
            )
        layers.append(
            _layer(
                "docs",
                "Pi documentation",
                f"\n\n{rules.docs_header}\n{docs_text}",
                [] if pi_root is None else [readme, docs, examples],
                unknown=pi_root is None,
            )
        )

    if append_section:
        layers.append(
            _layer("append", "Appended prompt (APPEND_SYSTEM.md)", append_section, append_sources)
        )
    if contexts:
        text = rules.project_context_open
        for item in contexts:
            text += rules.project_context_file.format(path=item.path, content=item.content)
        text += rules.project_context_close
        paths = (
            context_file_sources if context_file_sources is not None else [c.path for c in contexts]
        )
        layers.append(_layer("project_context", "Project context", text, paths))
    if skill_list:
        if has_read:
            text = format_skills_for_prompt(skill_list, dialect=dialect)
            if text:
                shown = [s.file_path for s in skill_list if not s.disable_model_invocation]
                layers.append(_layer("skills", "Skills", text, shown))
            else:
                notes.append("Every skill has disable-model-invocation: none is listed.")
        else:
            notes.append("Skills are not listed: the read tool is not active.")
    if rules.date_prefix is not None:
        layers.append(_layer("date", "Current date", f"{rules.date_prefix}{date}"))
    prompt_cwd = cwd.replace("\\", "/")
    suffix = rules.custom_prompt_cwd_suffix if custom_prompt else ""
    layers.append(_layer("cwd", "Working directory", f"{rules.cwd_prefix}{prompt_cwd}{suffix}"))

    options = {
        "customPrompt": custom_prompt,
        "selectedTools": None if selected_tools is None else list(selected_tools),
        "toolSnippets": None if tool_snippets is None else dict(tool_snippets),
        "promptGuidelines": None if prompt_guidelines is None else list(prompt_guidelines),
        "appendSystemPrompt": append_system_prompt,
        "cwd": cwd,
        "contextFiles": [{"path": c.path, "content": c.content} for c in contexts],
        "skills": [s.as_dict() for s in skill_list],
    }
    return SystemPrompt(
        text="".join(layer.text for layer in layers),
        layers=tuple(layers),
        notes=tuple(notes),
        options=options,
    )


def normalize_prompt_snippet(text: str | None) -> str | None:
    """``AgentSession._normalizePromptSnippet``: one line, whitespace runs collapsed, trimmed."""
    if not text:
        return None
    one_line = js_trim(_JS_WS_RUN.sub(" ", _CRLF_RUN.sub(" ", text)))
    return one_line or None


def normalize_prompt_guidelines(guidelines: Sequence[str] | None) -> list[str]:
    """``AgentSession._normalizePromptGuidelines``: trimmed, empties dropped, de-duplicated."""
    unique: list[str] = []
    for guideline in guidelines or []:
        normalized = js_trim(guideline)
        if normalized and normalized not in unique:
            unique.append(normalized)
    return unique


def active_tool_names(
    tools: Sequence[str] | None, *, dialect: Dialect = DEFAULT_DIALECT
) -> list[str]:
    """The active tools Pi ends up with for ``--tools`` (None: Pi's default set).

    Unknown names are dropped (``setActiveToolsByName`` only enables registered tools) and
    repeats collapse to the first position (``_refreshToolRegistry`` passes a Set).
    """
    requested = list(_rules(dialect).default_tools) if tools is None else list(tools)
    registered = {definition["name"] for definition in dialect.tools}
    active: list[str] = []
    for name in requested:
        if name in registered and name not in active:
            active.append(name)
    return active


def tool_prompt_options(
    tools: Sequence[str] | None, *, dialect: Dialect = DEFAULT_DIALECT
) -> tuple[list[str], dict[str, str], list[str]]:
    """``_rebuildSystemPrompt``'s selectedTools, toolSnippets and promptGuidelines."""
    selected = active_tool_names(tools, dialect=dialect)
    snippets: dict[str, str] = {}
    guidelines: list[str] = []
    for name in selected:
        definition = dialect.tool(name) or {}
        snippet = normalize_prompt_snippet(definition.get("promptSnippet"))
        if snippet:
            snippets[name] = snippet
        guidelines.extend(normalize_prompt_guidelines(definition.get("promptGuidelines")))
    return selected, snippets, guidelines


def build_system_prompt(
    *,
    cwd: str,
    date: str,
    pi_root: str | None,
    tools: list[str] | None,
    resources: PromptResources,
    dialect: Dialect = DEFAULT_DIALECT,
) -> SystemPrompt:
    """The base system prompt Pi builds for a session in ``cwd`` with these tools and resources."""
    selected, snippets, guidelines = tool_prompt_options(tools, dialect=dialect)
    dropped = [name for name in (tools or []) if name not in selected]
    append = "\n\n".join(resources.append_system_prompt) if resources.append_system_prompt else None
    # createAgentSession resolves the cwd (path.resolve) before the prompt sees it. A Windows
    # cwd stays as recorded: on Windows, where such a session ran, it was already absolute.
    prompt_cwd = cwd if is_foreign_path(cwd) else path_resolve(cwd)
    result = build_system_prompt_from_options(
        cwd=prompt_cwd,
        date=date,
        custom_prompt=resources.system_prompt,
        selected_tools=selected,
        tool_snippets=snippets,
        prompt_guidelines=guidelines,
        append_system_prompt=append,
        context_files=resources.context_files,
        skills=resources.skills,
        pi_root=pi_root,
        append_sources=resources.append_system_prompt_paths,
        custom_sources=(resources.system_prompt_path,) if resources.system_prompt_path else (),
        tool_sources={name: f"<builtin:{name}>" for name in selected},
        guideline_sources=[
            f"<builtin:{name}>"
            for name in selected
            if normalize_prompt_guidelines((dialect.tool(name) or {}).get("promptGuidelines"))
        ],
        dialect=dialect,
    )
    notes = list(result.notes)
    if resources.system_prompt_path and not resources.system_prompt:
        notes.append(f"{resources.system_prompt_path} is empty: Pi builds its default prompt.")
    if resources.append_system_prompt_paths and not append:
        notes.append(f"{resources.append_system_prompt_paths[0]} is empty: nothing is appended.")
    for name in dict.fromkeys(dropped):
        notes.append(f"Tool {name!r} is not a registered Pi tool: Pi ignores it.")
    return SystemPrompt(result.text, result.layers, tuple(notes), result.options)
