"""Differential proof: our system prompt and resources against the real Pi 0.80.2.

Each scenario builds a small world in a temp dir (a HOME, an agent dir, a project tree) and asks
both sides for the prompt: Pi through DefaultResourceLoader + a real AgentSession (so tool
snippets and guidelines are Pi's own), we through discover_resources + build_system_prompt. The
whole matrix goes to Node in one batch. Every scenario compares the full prompt text byte for
byte, the context files, SYSTEM/APPEND texts, the skills, the skill diagnostics, the trust
decision and the active tools.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from contextlab.pi.dialects import PI_0_80
from contextlab.pi.prompt import (
    active_tool_names,
    build_system_prompt,
    build_system_prompt_from_options,
)
from contextlab.pi.resources import ContextFile, Skill, discover_resources

from .conftest import run_oracle

pytestmark = pytest.mark.oracle

TZ = "Pacific/Kiritimati"  # UTC+14: a date that differs from UTC's for part of each day
PI_ROOT = "/opt/pi-0.80.2/"

Files = dict[str, str | None]  # relative path -> content; None makes a directory


def _sk(name: str | None, description: str | None, extra: str = "") -> str:
    lines = ["---"]
    if name is not None:
        lines.append(f"name: {name}")
    if description is not None:
        lines.append(f"description: {description}")
    if extra:
        lines.append(extra)
    lines.append("---")
    lines.append("# Body\nDo things.\n")
    return "\n".join(lines)


# name -> (files, cwd, projectTrusted, tools, symlinks {link: target}, CLI-like loader options)
SCENARIOS: dict[
    str, tuple[Files, str, bool | None, list[str] | None, dict[str, str], dict[str, Any]]
] = {}


def scenario(
    name: str,
    files: Files,
    *,
    cwd: str = "w",
    trusted: bool | None = True,
    tools: list[str] | None = None,
    links: dict[str, str] | None = None,
    options: dict[str, Any] | None = None,
) -> None:
    SCENARIOS[name] = (files, cwd, trusted, tools, links or {}, options or {})


# Pi's DefaultResourceLoader option -> our discover_resources keyword.
LOADER_OPTIONS = {
    "noContextFiles": "no_context_files",
    "noSkills": "no_skills",
    "additionalSkillPaths": "skill_paths",
    "systemPrompt": "system_prompt",
    "appendSystemPrompt": "append_system_prompt",
}


NESTED: Files = {
    "agent/AGENTS.md": "global rules\n",
    "w/AGENTS.md": "outer\n",
    "w/a/CLAUDE.md": "claude in a",
    "w/a/b/AGENTS.MD": "upper-case MD\r\nwith CRLF\r\n",
    "w/a/b/c/README.md": "not a context file",
}
scenario("empty", {"w/x.txt": "x"})
scenario("nested-context", NESTED, cwd="w/a/b/c")
scenario("nested-context-no-tools", NESTED, cwd="w/a/b/c", tools=[])
scenario("agents-wins-over-claude", {"w/AGENTS.md": "a", "w/CLAUDE.md": "c", "w/CLAUDE.MD": "C"})
scenario("claude-upper-only", {"w/CLAUDE.MD": "only upper"})
scenario("cwd-is-agent-dir", {"agent/AGENTS.md": "same file"}, cwd="agent")
scenario("agents-md-is-a-directory", {"w/AGENTS.md/x": "dir", "w/CLAUDE.md": "fallback"})
scenario(
    "non-ascii-and-xml-specials",
    {
        "w/prøj ü &<>\"'/AGENTS.md": '<tag attr="x"> & \' 😀 \u2028 end',
        "agent/skills/xml/SKILL.md": _sk(
            "xml-skill", "Use <b>bold</b> & \"quotes\" 'single' — ü 😀"
        ),
    },
    cwd="w/prøj ü &<>\"'",
)
SKILLS: Files = {
    "agent/skills/foo/SKILL.md": _sk("foo", "Does foo things."),
    "agent/skills/foo/other.md": _sk("ignored-because-skill-md", "x"),
    "agent/skills/foo/sub/SKILL.md": _sk("never-seen", "below a SKILL.md"),
    "agent/skills/bar.md": _sk(None, "A root-level md skill named after its folder."),
    "agent/skills/group/baz/SKILL.md": _sk("baz", "Nested in a group folder."),
    "agent/skills/group/loose.md": _sk("loose", "Not at the root: not a skill."),
    "agent/skills/.hidden/SKILL.md": _sk("hidden-dir", "dot folders are skipped"),
    "agent/skills/node_modules/x/SKILL.md": _sk("nm", "node_modules is skipped"),
    "agent/skills/manual/SKILL.md": _sk("manual", "Manual only.", "disable-model-invocation: true"),
    "agent/skills/strbool/SKILL.md": _sk(
        "strbool", "String true.", 'disable-model-invocation: "true"'
    ),
    "agent/skills/multi/SKILL.md": _sk("multi", "|\n  Line one\n  Line two & <three>"),
    "agent/skills/crlf/SKILL.md": (
        "---\r\nname: crlf\r\ndescription: CRLF frontmatter\r\n---\r\nbody\r\n"
    ),
    "agent/skills/yes/SKILL.md": _sk("yes", "yes"),
    "agent/skills/nofm/SKILL.md": "# no frontmatter at all\n",
    "agent/skills/unclosed/SKILL.md": "---\nname: unclosed\ndescription: never closed\n",
}
scenario("skills-valid", SKILLS)
scenario("skills-hidden-without-read", SKILLS, tools=["bash", "edit"])
scenario("skills-with-only-read", SKILLS, tools=["read"])
INVALID: Files = {
    "agent/skills/nodesc/SKILL.md": _sk("nodesc", None),
    "agent/skills/blank/SKILL.md": _sk("blank", '"   "'),
    "agent/skills/badyaml/SKILL.md": "---\nname: [unclosed\ndescription: x\n---\n",
    "agent/skills/dupkey/SKILL.md": _sk("dupkey", "one", "description: two"),
    "agent/skills/longname/SKILL.md": _sk("a" * 70, "Long name."),
    "agent/skills/badchars/SKILL.md": _sk("Bad_Name", "Bad characters."),
    "agent/skills/hyphens/SKILL.md": _sk("-bad--name-", "Hyphens."),
    "agent/skills/longdesc/SKILL.md": _sk("longdesc", "x" * 1030),
    "agent/skills/numdesc/SKILL.md": _sk("numdesc", "42"),
    "agent/skills/numname/SKILL.md": _sk("7", "Numeric name."),
    "agent/skills/zeroname/SKILL.md": _sk("0", "Zero name falls back to the folder."),
    "agent/skills/boolname/SKILL.md": _sk("true", "Boolean name."),
    "agent/skills/falsedesc/SKILL.md": _sk("falsedesc", "false"),
    "agent/skills/Upper/SKILL.md": _sk(None, "Folder name with capitals."),
}
scenario("skills-invalid", INVALID)
scenario(
    "skills-collisions",
    {
        "agent/skills/dup/SKILL.md": _sk("dup", "From the agent dir."),
        "home/.agents/skills/dup/SKILL.md": _sk("dup", "From ~/.agents."),
        "home/.agents/skills/other/SKILL.md": _sk("dup", "Another with the same name."),
        "home/.agents/skills/root.md": _sk("root-md", "agents mode takes no root .md files"),
        "w/.pi/skills/dup/SKILL.md": _sk("dup", "Project wins."),
    },
)
IGNORED: Files = {
    "agent/skills/.gitignore": "ignored/\n*.draft.md\n# comment\n!keep.draft.md\n/rooted\n",
    "agent/skills/.ignore": "Secret*\n",
    "agent/skills/ignored/SKILL.md": _sk("ignored", "gitignored folder"),
    "agent/skills/a.draft.md": _sk("a-draft", "ignored root file"),
    "agent/skills/keep.draft.md": _sk("keep-draft", "negated back in"),
    "agent/skills/rooted/SKILL.md": _sk("rooted", "anchored pattern"),
    "agent/skills/secrets/SKILL.md": _sk("secrets", "case-insensitive match of Secret*"),
    "agent/skills/group/.fdignore": "inner\n",
    "agent/skills/group/inner/SKILL.md": _sk("inner", "ignored by a nested .fdignore"),
    "agent/skills/group/outer/SKILL.md": _sk("outer", "kept"),
    "agent/skills/group/deep/x/**/y": None,
}
scenario("skills-ignore-files", IGNORED)
ANCESTORS: Files = {
    ".agents/skills/above-git/SKILL.md": _sk("above-git", "Above the git root."),
    "w/.git/HEAD": "ref: refs/heads/main\n",
    "w/.agents/skills/at-root/SKILL.md": _sk("at-root", "At the git root."),
    "w/x/.agents/skills/in-x/SKILL.md": _sk("in-x", "In x."),
    "w/x/y/.agents/skills/in-y/SKILL.md": _sk("in-y", "In y (the cwd)."),
    "w/x/y/.agents/skills/root-file.md": _sk("root-file", "agents mode: no root md"),
}
scenario("agents-skills-to-git-root", ANCESTORS, cwd="w/x/y")
scenario("agents-skills-untrusted", ANCESTORS, cwd="w/x/y", trusted=False)
scenario("agents-skills-trust-ask", ANCESTORS, cwd="w/x/y", trusted=None)
NO_GIT = {k: v for k, v in ANCESTORS.items() if not k.startswith("w/.git")}
scenario("agents-skills-no-git-root", NO_GIT, cwd="w/x/y")
PROMPTS: Files = {
    "agent/SYSTEM.md": "Global SYSTEM.md\n",
    "agent/APPEND_SYSTEM.md": "Global append.",
    "w/.pi/SYSTEM.md": "Project SYSTEM.md: you are a pirate.",
    "w/.pi/APPEND_SYSTEM.md": "Project append\n\n",
    "w/.pi/skills/proj/SKILL.md": _sk("proj", "Project skill."),
    "w/AGENTS.md": "context",
    "agent/skills/user/SKILL.md": _sk("user", "User skill."),
}
scenario("system-md-trusted", PROMPTS)
scenario("system-md-untrusted", PROMPTS, trusted=False)
scenario("system-md-custom-without-read", PROMPTS, tools=["bash"])
scenario("system-md-custom-empty-tools", PROMPTS, tools=[])
scenario(
    "trust-json-true-on-parent",
    {**PROMPTS, "agent/trust.json": "{{ROOT_JSON_TRUE}}"},
    trusted=None,
)
scenario("trust-json-false", {**PROMPTS, "agent/trust.json": "{{CWD_JSON_FALSE}}"}, trusted=None)
scenario(
    "trust-default-always",
    {**PROMPTS, "agent/settings.json": '{"defaultProjectTrust": "always"}'},
    trusted=None,
)
scenario(
    "trust-default-never",
    {**PROMPTS, "agent/settings.json": '{"defaultProjectTrust": "never"}'},
    trusted=None,
)
scenario("trust-ask", PROMPTS, trusted=None)
scenario("trust-bare-pi-dir", {"w/.pi/notes.txt": "x", "w/AGENTS.md": "a"}, trusted=None)
scenario(
    "empty-system-and-append",
    {"agent/SYSTEM.md": "", "agent/APPEND_SYSTEM.md": "", "w/AGENTS.md": ""},
)
scenario("append-only-global", {"agent/APPEND_SYSTEM.md": "Always answer in French.\n"})
for label, tools in (
    ("tools-bash-grep", ["bash", "grep"]),
    ("tools-explorers", ["read", "grep", "find", "ls"]),
    ("tools-unknown", ["nope", "read", "also-nope"]),
    ("tools-repeated", ["edit", "edit", "bash", "read", "bash"]),
    ("tools-all", ["read", "bash", "edit", "write", "grep", "find", "ls"]),
    ("tools-ls-first", ["ls", "write"]),
):
    scenario(label, {"w/AGENTS.md": "ctx", "agent/skills/s/SKILL.md": _sk("s", "S.")}, tools=tools)
scenario(
    "settings-skill-paths",
    {
        "agent/settings.json": '{"skills": ["extra", "~/homeskills/one.md", "missing-dir"]}',
        "agent/extra/e1/SKILL.md": _sk("e1", "From a settings folder."),
        "agent/extra/top.md": _sk("top", "Root md in a settings folder."),
        "home/homeskills/one.md": _sk("one", "A single file from settings."),
        "agent/skills/e1/SKILL.md": _sk("e1", "Auto-discovered, loses to settings."),
    },
)
scenario(
    "symlinked-skill-seen-once",
    {"agent/skills/real/SKILL.md": _sk("real", "Real file.")},
    links={"home/.agents/skills/link": "agent/skills/real"},
)
scenario(
    "windows-cwd",
    {"agent/AGENTS.md": "global", "agent/skills/win/SKILL.md": _sk("win", "Still found.")},
    cwd="C:\\Users\\ann\\proj",
)
scenario(
    "project-settings-skills-trusted",
    {
        "w/.pi/settings.json": '{"skills": ["../shared-skills", "local.md"]}',
        "w/shared-skills/sh/SKILL.md": _sk("sh", "From project settings."),
        "w/.pi/local.md": _sk("local", "A file listed in project settings."),
        "agent/skills/sh/SKILL.md": _sk("sh", "User skill that loses to the project."),
    },
)
scenario(
    "project-settings-skills-untrusted",
    {
        "w/.pi/settings.json": '{"skills": ["../shared-skills"]}',
        "w/shared-skills/sh/SKILL.md": _sk("sh", "Ignored: untrusted project settings."),
    },
    trusted=False,
)
scenario(
    "settings-legacy-skills-object",
    {
        "agent/settings.json": '{"skills": {"customDirectories": ["legacy"]}}',
        "agent/legacy/old/SKILL.md": _sk("old", "Found through customDirectories."),
    },
)
scenario(
    "settings-not-markdown-and-broken-json",
    {
        "agent/settings.json": '{"skills": ["notes.txt"]}',
        "agent/notes.txt": "not markdown",
        "w/.pi/settings.json": "{broken",
    },
)
scenario(
    "skill-md-is-a-directory-and-broken-link",
    {
        "agent/skills/odd/SKILL.md/inner/SKILL.md": _sk("inner-of-odd", "SKILL.md is a folder."),
        "agent/skills/fine/SKILL.md": _sk("fine", "Fine."),
    },
    links={"agent/skills/broken": "agent/nowhere", "agent/skills/broken.md": "agent/gone.md"},
)
scenario(
    "cwd-through-a-symlink",
    {
        "real/proj/AGENTS.md": "via link",
        "real/proj/.pi/SYSTEM.md": "linked project system",
        "agent/trust.json": "{{REAL_TRUE}}",
    },
    cwd="w/link",
    trusted=None,
    links={"w/link": "real/proj"},
)
scenario(
    "cwd-is-home-with-agents-skills",
    {"home/.agents/skills/h/SKILL.md": _sk("h", "Home skill."), "home/AGENTS.md": "home ctx"},
    cwd="home",
    trusted=None,
)
scenario(
    "unnormalised-paths",
    {"agent/AGENTS.md": "g", "w/sub/AGENTS.md": "s", "agent/skills/n/SKILL.md": _sk("n", "N.")},
    cwd="w/sub/../sub/./",
)
scenario(
    "unicode-file-order",
    {
        "agent/skills/Zed/SKILL.md": _sk("zed", "Capital Z sorts first."),
        "agent/skills/alpha/SKILL.md": _sk("alpha", "a."),
        "agent/skills/émile/SKILL.md": _sk("emile", "Non-ASCII sorts last."),
        "agent/skills/_under/SKILL.md": _sk("under", "Underscore."),
        "agent/skills/10/SKILL.md": _sk("ten", "Digits."),
        "agent/skills/9/SKILL.md": _sk("nine", "Digits."),
    },
)
scenario(
    "settings-override-patterns",
    {
        "agent/settings.json": json.dumps(
            {
                "skills": [
                    "!skills/off*",
                    "-skills/forced-out",
                    "extra",
                    "!extra/e2",
                    "+skills/off-but-forced",
                    "!by-name",
                    "-./skills/root.md",
                ]
            }
        ),
        "agent/skills/off1/SKILL.md": _sk("off1", "Excluded by a glob on the folder."),
        "agent/skills/off-but-forced/SKILL.md": _sk("obf", "Excluded, then forced back in."),
        "agent/skills/forced-out/SKILL.md": _sk("forced-out", "Force-excluded."),
        "agent/skills/kept/SKILL.md": _sk("kept", "Kept."),
        "agent/skills/root.md": _sk("root", "Force-excluded root file."),
        "agent/skills/group/by-name/SKILL.md": _sk("by-name", "Excluded by its folder name."),
        "agent/extra/e1/SKILL.md": _sk("e1", "Listed folder."),
        "agent/extra/e2/SKILL.md": _sk("e2", "Listed folder, excluded."),
        "home/.agents/skills/off2/SKILL.md": _sk("off2", "Matched relative to ~/.agents."),
    },
)
scenario(
    "project-settings-include-glob",
    {
        "w/.pi/settings.json": json.dumps({"skills": ["../lib", "*one*", "!skills/nope"]}),
        "w/lib/one/SKILL.md": _sk("one", "Included by the glob."),
        "w/lib/two/SKILL.md": _sk("two", "Not matched by the include glob."),
        "w/.pi/skills/nope/SKILL.md": _sk("nope", "Project override excludes it."),
        "w/.pi/skills/yep/SKILL.md": _sk("yep", "Project auto skill."),
        "w/.agents/skills/skills/nope/SKILL.md": _sk("nope2", "Relative to .agents."),
    },
)
scenario(
    "system-md-unreadable-becomes-its-path",
    {"agent/SYSTEM.md/x": "a folder, not a file", "agent/APPEND_SYSTEM.md/y": "also a folder"},
)
CLI_FILES: Files = {
    "agent/AGENTS.md": "global",
    "w/AGENTS.md": "project",
    "agent/SYSTEM.md": "discovered system",
    "agent/APPEND_SYSTEM.md": "discovered append",
    "agent/skills/auto/SKILL.md": _sk("auto", "Auto-discovered."),
    "extra/cli/SKILL.md": _sk("cli", "Given with --skill."),
    "extra/auto-twin/SKILL.md": _sk("auto", "Same name as an auto skill, so it loses."),
    "extra/single.md": _sk("single", "A single --skill file."),
    "prompts/sys.md": "System prompt from a --system-prompt file.\n",
    "prompts/app.md": "Append from a file.",
}
scenario(
    "cli-no-context-files-no-skills",
    CLI_FILES,
    options={"noContextFiles": True, "noSkills": True},
)
scenario(
    "cli-skill-paths",
    CLI_FILES,
    options={
        "additionalSkillPaths": [
            "{{BASE}}/extra",
            "{{BASE}}/extra/single.md",
            "{{BASE}}/missing",
            "{{BASE}}/agent/skills/auto/SKILL.md",
        ]
    },
)
scenario(
    "cli-no-skills-with-skill-paths",
    CLI_FILES,
    options={"noSkills": True, "additionalSkillPaths": ["{{BASE}}/extra/cli"]},
)
scenario(
    "cli-system-prompt-file-and-append-texts",
    CLI_FILES,
    options={
        "systemPrompt": "{{BASE}}/prompts/sys.md",
        "appendSystemPrompt": ["Literal append.", "{{BASE}}/prompts/app.md", ""],
    },
)
scenario(
    "cli-system-prompt-literal",
    CLI_FILES,
    options={"systemPrompt": "You are a literal system prompt.", "appendSystemPrompt": []},
    tools=["bash"],
)


def _materialise(root: Path, name: str) -> dict[str, Any]:
    files, cwd, trusted, tools, links, options = SCENARIOS[name]
    base = root / name
    for rel in ("home", "agent", "w"):
        (base / rel).mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        path = base / rel
        if content is None:
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if content == "{{ROOT_JSON_TRUE}}":
            content = json.dumps({str(base): True, "/nowhere": False})
        elif content == "{{CWD_JSON_FALSE}}":
            content = json.dumps({str(base / cwd): False, str(base): True})
        elif content == "{{REAL_TRUE}}":
            content = json.dumps({str(base / "real" / "proj"): True})
        path.write_bytes(content.encode("utf-8"))
    for link, target in links.items():
        (base / link).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(base / target, base / link)
    full_cwd = cwd if "\\" in cwd else f"{base}/{cwd}"

    def fill(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace("{{BASE}}", str(base))
        if isinstance(value, list):
            return [fill(v) for v in value]
        return value

    return {
        "loaderOptions": {key: fill(value) for key, value in options.items()},
        "kind": "session",
        "cwd": full_cwd,
        "agentDir": str(base / "agent"),
        "home": str(base / "home"),
        "projectTrusted": trusted,
        "tools": tools,
    }


@pytest.fixture(scope="module")
def matrix() -> dict[str, tuple[dict[str, Any], dict[str, Any], Any]]:
    with tempfile.TemporaryDirectory(prefix="prompt-oracle-") as tmp:
        root = Path(tmp).resolve()
        cases = {name: _materialise(root, name) for name in SCENARIOS}
        # Ours first: Pi's session setup writes auth.json into the agent dir.
        ours = {
            name: discover_resources(
                cwd=c["cwd"],
                agent_dir=c["agentDir"],
                home=c["home"],
                project_trusted=c["projectTrusted"],
                **{LOADER_OPTIONS[k]: v for k, v in c["loaderOptions"].items()},
            )
            for name, c in cases.items()
        }
        empty_cwd = root / "process-cwd"
        empty_cwd.mkdir()
        for case in cases.values():
            case["processCwd"] = str(empty_cwd)
        results = run_oracle(
            "prompt.mjs",
            list(cases.values()),
            env={"TZ": TZ, "PI_PACKAGE_DIR": PI_ROOT},
            cwd=empty_cwd,
        )
        yield {
            name: (case, result, ours[name])
            for (name, case), result in zip(cases.items(), results, strict=True)
        }


def _skill_dict(skill: Skill) -> dict[str, Any]:
    out = skill.as_dict()
    del out["source"]
    return out


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_it_matches_pi_for_scenario(matrix: dict[str, Any], name: str) -> None:
    case, pi, ours = matrix[name]
    assert "error" not in pi, pi.get("error")
    if case["projectTrusted"] is None:
        assert ours.project_trusted is pi["projectTrusted"], ours.trust_reason
    assert active_tool_names(case["tools"]) == pi["activeTools"]
    assert [{"path": c.path, "content": c.content} for c in ours.context_files] == pi[
        "contextFiles"
    ]
    assert ours.system_prompt == pi["systemPrompt"]
    assert list(ours.append_system_prompt) == pi["appendSystemPrompt"]
    assert [_skill_dict(s) for s in ours.skills] == pi["skills"]
    ours_diags = [d.as_dict() for d in ours.diagnostics if d.type != "error"]
    assert len(ours_diags) == len(pi["diagnostics"]), (ours_diags, pi["diagnostics"])
    for mine, theirs in zip(ours_diags, pi["diagnostics"], strict=True):
        if mine.pop("exact", True):
            assert mine == theirs
        else:  # YAML syntax errors: same kind and file, our own wording
            assert (mine["type"], mine["path"]) == (theirs["type"], theirs["path"])

    # The date Pi used is its local date in TZ at build time; ours must be the same day.
    today = datetime.now(ZoneInfo(TZ)).date().isoformat()
    if pi["dateBefore"] != pi["dateAfter"] or pi["dateAfter"] != today:
        pytest.skip("the test ran across midnight in the oracle's time zone")
    prompt = build_system_prompt(
        cwd=case["cwd"], date=today, pi_root=PI_ROOT, tools=case["tools"], resources=ours
    )
    assert "".join(layer.text for layer in prompt.layers) == prompt.text
    expected = pi["prompt"]
    if "\\" in case["cwd"]:
        # Pi on Linux resolves a Windows path against its process cwd; on Windows, where such
        # a session comes from, the cwd stays native (see the options case context-then-skills).
        expected = expected.replace(f"{case['processCwd']}/", "", 1)
    assert prompt.text == expected


SKILL_A = Skill("alpha", "A <skill> & 'more'", "/s/alpha/SKILL.md", "/s/alpha")
SKILL_HIDDEN = Skill("hidden", "H", "/s/hidden/SKILL.md", "/s/hidden", True)
OPTION_CASES: dict[str, dict[str, Any]] = {
    "undefined-tools-default": {"cwd": "/p"},
    "custom-undefined-tools-shows-skills": {
        "cwd": "/p",
        "customPrompt": "Custom.",
        "skills": [SKILL_A],
    },
    "custom-empty-string-is-absent": {"cwd": "/p", "customPrompt": "", "skills": [SKILL_A]},
    "selected-without-snippets": {"cwd": "/p", "selectedTools": ["read", "bash", "mine"]},
    "snippets-for-custom-tool": {
        "cwd": "/p",
        "selectedTools": ["mine", "read"],
        "toolSnippets": {"mine": "My tool", "read": "Read"},
        "promptGuidelines": ["  Use mine.  ", "", "Use mine.", "Be concise in your responses"],
    },
    "only-hidden-skills": {"cwd": "/p", "skills": [SKILL_HIDDEN], "contextFiles": [["/c.md", ""]]},
    "context-then-skills": {
        "cwd": "D:\\work\\repo",
        "appendSystemPrompt": "app",
        "contextFiles": [["/a/AGENTS.md", "x\n"], ["/b/CLAUDE.md", "y"]],
        "skills": [SKILL_A, SKILL_HIDDEN],
    },
    "empty-append-is-absent": {"cwd": "/p", "appendSystemPrompt": ""},
}


def _to_pi_options(spec: dict[str, Any]) -> dict[str, Any]:
    out = dict(spec)
    if "contextFiles" in out:
        out["contextFiles"] = [{"path": p, "content": c} for p, c in out["contextFiles"]]
    if "skills" in out:
        out["skills"] = [_skill_dict(s) for s in out["skills"]]
    return out


def _to_ours(spec: dict[str, Any], date: str) -> Callable[[], Any]:
    return lambda: build_system_prompt_from_options(
        cwd=spec["cwd"],
        date=date,
        custom_prompt=spec.get("customPrompt"),
        selected_tools=spec.get("selectedTools"),
        tool_snippets=spec.get("toolSnippets"),
        prompt_guidelines=spec.get("promptGuidelines"),
        append_system_prompt=spec.get("appendSystemPrompt"),
        context_files=[ContextFile(p, c) for p, c in spec.get("contextFiles", [])],
        skills=spec.get("skills"),
        pi_root=PI_ROOT,
    )


def test_it_matches_pi_build_system_prompt_on_identical_options() -> None:
    payload = [
        {"kind": "options", "home": "/nonexistent-home", "options": _to_pi_options(spec)}
        for spec in OPTION_CASES.values()
    ]
    results = run_oracle("prompt.mjs", payload, env={"TZ": TZ, "PI_PACKAGE_DIR": PI_ROOT})
    for (name, spec), result in zip(OPTION_CASES.items(), results, strict=True):
        assert "error" not in result, (name, result)
        if result["dateBefore"] != result["dateAfter"]:
            pytest.skip("midnight")
        ours = _to_ours(spec, result["dateBefore"])()
        assert ours.text == result["prompt"], name
        assert "".join(layer.text for layer in ours.layers) == ours.text


# --- node-ignore and frontmatter, on many small inputs in one batch --------------------------

_IGNORE_PARTS = [
    "a", "b", "ab", "*", "**", "?", "[ab]", "[a-c]", "[!a]", "[z-a]", "\\*", "*.md", "foo.md",
    "Foo", ".x", "c d", "c\\ d", "x*y", "a?", "[]", "\\[a]", "***",
]  # fmt: skip
_PATH_PARTS = ["a", "b", "ab", "foo.md", "Foo.MD", ".x", "c d", "x", "xzy", "a1", "*", "[ab]"]


def _ignore_cases() -> list[dict[str, list[str]]]:
    import random

    rng = random.Random(20261202)
    cases = []
    for _ in range(400):
        patterns = []
        for _ in range(rng.randint(1, 4)):
            pattern = "/".join(rng.choice(_IGNORE_PARTS) for _ in range(rng.randint(1, 3)))
            pattern = rng.choice(["", "", "!", "/", "\\!", "#", "\\#"]) + pattern
            pattern += rng.choice(["", "", "/", " ", "\\ ", "  "])
            patterns.append(pattern)
        paths = []
        for _ in range(12):
            path = "/".join(rng.choice(_PATH_PARTS) for _ in range(rng.randint(1, 4)))
            paths.append(path + rng.choice(["", "/"]))
        cases.append({"patterns": patterns, "paths": paths})
    cases.append(
        {"patterns": ["ignored/", "*.draft.md", "!keep.draft.md"], "paths": ["./a", "../b"]}
    )
    return cases


FRONTMATTERS = [
    "---\nname: x\ndescription: plain\n---\nbody\n",
    "---\nbools: [true, True, TRUE, false, yes, no, on, off, y, n, Yes]\n---\n",
    "---\nnulls: [~, null, Null, NULL, , nil]\nempty:\n---\n",
    "---\nints: [0, -0, +5, 017, 0o17, 0x1f, 0b101, 1_000, 12:30, 9007199254740993]\n---\n",
    "---\nfloats: [1.5, .5, -.5, 1e3, 1E-2, .inf, -.Inf, 1.]\n---\n",
    "---\nwhen: 2024-01-01\nat: 2024-01-01T10:00:00Z\n---\n",
    "---\ndq: \"tab\\there \\u00e9 \\x41 \\\"q\\\" \\\\\"\nsq: 'it''s'\n---\n",
    "---\ndescription: first line\n  continued line\n\n  new paragraph\n---\n",
    "---\ndescription: >\n  folded\n  text\n\n  more\n---\n",
    "---\ndescription: |-\n  strip\n  chomp\n---\n",
    "---\ndescription: |+\n  keep\n\n---\n",
    "---\ndescription: >2\n   indented\n  two\n---\n",
    "---\nlist:\n  - a\n  - b: c\nmap: {x: 1, y: [2]}\n---\n",
    "---\nbase: &b {k: v}\nref: *b\n---\n",
    "---\ns: !!str 5\nn: !!int '7'\n---\n",
    "---\n# comment\nname: c # trailing\ndescription: 'x # not a comment'\n---\n",
    "---\nname:\tx\n---\n",
    "---\n\tname: x\n---\n",
    "---\nname: a\nname: b\n---\n",
    "---\nname: a: b\n---\n",
    "---\nkey without value\n---\n",
    "---\njust a scalar\n---\n",
    "---\n- a\n- b\n---\n",
    "---\nname: ü 😀 <&>\n---\n",
    "\ufeff---\nname: bom\n---\n",
    "---\r\nname: crlf\r\ndescription: x\r\n---\r\nbody\r\n",
    "---\rname: cr\rdescription: y\r---\r",
    "---\n---\nbody only\n",
    "----\nname: four dashes\n---\n",
    "---\nname: x\n---more\nafter\n",
    "---\nname: unclosed\n",
    "no frontmatter\n---\nname: x\n---\n",
    "---\nname: x\n...\n---\n",
    "---\n? complex key\n: value\n---\n",
    "---\n[1, 2]: list key\n---\n",
    "---\nname: 'unterminated\n---\n",
    '---\nname: "bad escape \\q"\n---\n',
    "---\nname: [a, b\n---\n",
    "---\n  indented: root\n  second: x\n---\n",
    "---\nname: x\n  bad: indent\n---\n",
    "---\ndisable-model-invocation: true\ndescription: d\n---\n",
    "---\nlong: " + "w " * 600 + "\n---\n",
    "---\n%YAML 1.1\n---\n",
    "---\n@reserved\n---\n",
    "---\nname: `backtick\n---\n",
    "---\nname: -\n---\n",
    "---\nname: - item\n---\n",
    "---\nx: 0.1\ny: 1e400\nz: -1e-400\n---\n",
    "---\nbase: &b {k: v}\nderived:\n  <<: *b\n  x: 1\n---\n",
    "---\nbin: !!binary aGVsbG8=\n---\n",
    "---\nset: !!set {a, b}\n---\n",
    "---\nts: !!timestamp 2024-01-01\n---\n",
    "---\nempty: |\nnext: x\n---\n",
    "---\nname: 'a'b\n---\n",
    '---\nname: "multi\n  line\n\n  para"\n---\n',
    "---\nname: plain\n  # not a comment inside?\n  more\n---\n",
    "---\nanchor: &a value\nalias: *a\n---\n",
    "---\ndisable model invocation: true\n---\n",
    "---\n1: one\ntrue: t\n~: n\n1.5: f\n---\n",
    "---\nname: x\n\n\n---\n",
    "---\nname: >-\n  folded\n  strip\n---\n",
    "---\nname: |2-\n    keep indent\n---\n",
    '---\nname: "\\u263A \\U0001F600 \\N \\_"\n---\n',
    "---\n\"quoted key\": v\n'single': w\n---\n",
    "---\nlist: [a, 'b', \"c\", 1, true, null, ]\n---\n",
    "---\nname: x\ndescription: Use when: the user asks\n---\n",
    '---\ndescription: "Use when: the user asks"\n---\n',
]


def _json_value(value: Any) -> Any:
    # JSON.stringify of what the `yaml` package builds for !!binary, !!set and !!timestamp.
    if isinstance(value, bytes):
        return {"type": "Buffer", "data": list(value)}
    if isinstance(value, (set, frozenset)):
        return {}
    if isinstance(value, datetime):
        return value.astimezone(ZoneInfo("UTC")).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    if isinstance(value, date):
        return f"{value.isoformat()}T00:00:00.000Z"
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None  # JSON.stringify writes Infinity and NaN as null
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    return value


def test_it_ports_node_ignore_rule_for_rule() -> None:
    from contextlab.pi.resources import Ignore

    cases = _ignore_cases()
    results = run_oracle("prompt_units.mjs", {"ignore": cases})["ignore"]
    mismatches = []
    for case, expected in zip(cases, results, strict=True):
        ig = Ignore()
        ig.add(case["patterns"])
        for path, want in zip(case["paths"], expected, strict=True):
            try:
                got: Any = ig.ignores(path)
            except (TypeError, ValueError):
                got = "throws"
            if got != want:
                mismatches.append((case["patterns"], path, want, got))
    assert not mismatches, mismatches[:10]
    assert sum(len(c["paths"]) for c in cases) > 4800


def _frontmatter_mismatches(texts: list[str]) -> list[tuple[str, Any, Any]]:
    """(text, Pi's parseFrontmatter result, ours) for every text where they differ; where we
    cannot reproduce the YAML package's error message, any error matches an error."""
    from contextlab.pi.resources import FrontmatterError, parse_frontmatter

    results = run_oracle("prompt_units.mjs", {"frontmatter": texts})["frontmatter"]
    mismatches = []
    for text, expected in zip(texts, results, strict=True):
        try:
            value, body = parse_frontmatter(text)
            got: dict[str, Any] = {"value": _json_value(value), "body": body}
        except FrontmatterError as error:
            got = {"error": str(error) if error.exact else True}
        want = (
            expected if "error" not in expected or got.get("error") is not True else {"error": True}
        )
        if got != want:
            mismatches.append((text, want, got))
    return mismatches


def test_it_parses_frontmatter_like_the_yaml_package() -> None:
    mismatches = _frontmatter_mismatches(FRONTMATTERS)
    assert not mismatches, "\n".join(repr(m) for m in mismatches)


# --- The recorded corpus: the prompt Pi really sent, rebuilt from the uploaded resources ------


SUMMARY_SYSTEM = PI_0_80.summarization_system_prompt


def _corpus_scenarios() -> list[Path]:
    corpus = Path(__file__).resolve().parent / "corpus"
    return sorted(
        p for p in corpus.glob("*") if (p / "manifest.json").exists() and (p / "fs").is_dir()
    )


@pytest.mark.parametrize("scenario_dir", _corpus_scenarios(), ids=lambda p: p.name)
def test_it_rebuilds_the_system_prompt_pi_sent_in_recorded_sessions(scenario_dir: Path) -> None:
    manifest = json.loads((scenario_dir / "manifest.json").read_text())
    root = manifest["scenarioRoot"]
    uploads = {
        f"{root}/{path.relative_to(scenario_dir / 'fs').as_posix()}": path.read_text(
            encoding="utf-8"
        )
        for path in (scenario_dir / "fs").rglob("*")
        if path.is_file()
    }
    resources = discover_resources(
        cwd=manifest["cwd"], agent_dir=manifest["agentDir"], home=manifest["home"], fs=uploads
    )
    prompt = build_system_prompt(
        cwd=manifest["cwd"],
        date=manifest["recordedDate"],
        pi_root=manifest["piPackageDir"],
        tools=manifest["activeTools"],
        resources=resources,
    )
    sent = set()
    for body_path in sorted((scenario_dir / "requests").glob("*.body.json")):
        body = json.loads(body_path.read_text(encoding="utf-8"))
        first = body["messages"][0]
        # Compaction and branch-summary requests carry their own fixed system prompt.
        if first["role"] in ("system", "developer") and first["content"] != SUMMARY_SYSTEM:
            sent.add(first["content"])
    assert sent == {prompt.text}
    assert {layer.name for layer in prompt.layers} >= {"project_context", "skills"}


_GLOB_PARTS = [
    "*", "**", "?", "a", "b", "ab", "*.md", "SKILL.md", "[ab]", "[!a]*", "{a,b}", "{x,*.md}",
    ".x", "\\*", "a*", "*b", ".*", "[a-c]?", "skills",
]  # fmt: skip
_GLOB_PATH_PARTS = ["a", "b", "ab", "x.md", "SKILL.md", ".x", "c", "skills", "*", "ba"]


def _minimatch_cases() -> list[dict[str, Any]]:
    import random

    rng = random.Random(7)
    cases = []
    for _ in range(500):
        pattern = "/".join(rng.choice(_GLOB_PARTS) for _ in range(rng.randint(1, 3)))
        pattern = rng.choice(["", "", "", "/", "./"]) + pattern
        paths = []
        for _ in range(10):
            path = "/".join(rng.choice(_GLOB_PATH_PARTS) for _ in range(rng.randint(1, 4)))
            paths.append(rng.choice(["", "", "", "/"]) + path)
        cases.append({"pattern": pattern, "paths": paths})
    return cases


def test_it_matches_settings_patterns_like_minimatch() -> None:
    from contextlab.pi.resources import minimatch

    cases = _minimatch_cases()
    results = run_oracle("prompt_units.mjs", {"minimatch": cases})["minimatch"]
    mismatches = [
        (case["pattern"], path, want)
        for case, expected in zip(cases, results, strict=True)
        for path, want in zip(case["paths"], expected, strict=True)
        if minimatch(path, case["pattern"]) != want
    ]
    assert not mismatches, (len(mismatches), mismatches[:15])


_VALUE_PIECES = [
    "Use", " when", ": ", ":", " #", "#", "'", '"', "[", "]", "{", "}", ",", "&", "*", "!",
    "|", ">", "%", "@", "`", "- ", "-", "? ", "?", "ü", "😀", "\t", " ", "\\", "yes", "1",
    "0x1", "null", "~", ".5", "true", "\n  ", "\n", "  ", "`code`", "*Important*", "@user",
]  # fmt: skip


def test_it_reads_generated_skill_descriptions_like_the_yaml_package() -> None:
    """Hand-written SKILL.md descriptions hold colons, quotes and hashes: try many."""
    import random

    rng = random.Random(99)
    texts = []
    for _ in range(600):
        value = "".join(rng.choice(_VALUE_PIECES) for _ in range(rng.randint(1, 8)))
        texts.append(f"---\nname: skill\ndescription: {value}\n---\nbody\n")
    mismatches = [m for m in _frontmatter_mismatches(texts) if not _known_yaml_divergence(m[0])]
    assert not mismatches, (len(mismatches), mismatches[:8])


def _known_yaml_divergence(text: str) -> bool:
    """The YAML 1.2 corners our PyYAML-based reader still rejects (see _CoreSchemaLoader)."""
    import re

    body = text.split("\n")[1:-3]
    return (
        any(re.match(r"\s*:(\s|$)", line) for line in body)  # empty implicit key
        or bool(re.search(r"\{[^}]*\?", text))  # "?" inside a flow mapping
        or "!\t" in text  # a tab right after a tag
    )
