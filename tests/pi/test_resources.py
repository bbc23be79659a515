"""Resource discovery: virtual filesystems, foreign cwds, trust decisions, frontmatter, skills."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextlab.pi.resources import (
    FrontmatterError,
    Ignore,
    MappingFileSystem,
    ResourceError,
    discover_resources,
    is_foreign_path,
    load_skill_from_file,
    parse_frontmatter,
)

SKILL = "---\nname: {name}\ndescription: {description}\n---\nBody\n"


def _tree() -> dict[str, str]:
    return {
        "agent/AGENTS.md": "global\n",
        "agent/skills/foo/SKILL.md": SKILL.format(name="foo", description="Foo."),
        "agent/skills/root.md": SKILL.format(name="root", description="Root file."),
        "agent/skills/bad/SKILL.md": "---\nname: bad\n---\n",
        "agent/APPEND_SYSTEM.md": "append",
        "proj/CLAUDE.md": "project",
        "proj/sub/AGENTS.md": "sub",
        "home/.agents/skills/foo/SKILL.md": SKILL.format(name="foo", description="Loses."),
    }


def _discover(base: str, fs: object = None, **kwargs: object):  # type: ignore[no-untyped-def]
    return discover_resources(
        cwd=f"{base}/proj/sub",
        agent_dir=f"{base}/agent",
        home=f"{base}/home",
        fs=fs,
        **kwargs,  # type: ignore[arg-type]
    )


def test_it_finds_the_same_resources_in_uploaded_files_as_on_disk(tmp_path: Path) -> None:
    for rel, content in _tree().items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(content)
    on_disk = _discover(str(tmp_path))
    uploaded = _discover(
        str(tmp_path), fs={f"{tmp_path}/{rel}": content for rel, content in _tree().items()}
    )
    assert uploaded.as_dict() == on_disk.as_dict()
    assert [c.path for c in on_disk.context_files] == [
        f"{tmp_path}/agent/AGENTS.md",
        f"{tmp_path}/proj/CLAUDE.md",
        f"{tmp_path}/proj/sub/AGENTS.md",
    ]
    assert [s.name for s in on_disk.skills] == ["foo", "root"]
    assert on_disk.skills[1].file_path.endswith("/agent/skills/root.md")
    kinds = [(d.type, d.message) for d in on_disk.diagnostics]
    assert ("warning", "description is required") in kinds
    assert ("collision", 'name "foo" collision') in kinds
    assert on_disk.append_system_prompt == ("append",)
    assert f"{tmp_path}/agent/SYSTEM.md" in on_disk.not_found


def test_it_searches_nothing_for_a_windows_cwd_and_says_so() -> None:
    resources = discover_resources(
        cwd="C:\\Users\\ann\\proj",
        agent_dir="/agent",
        home="/home/ann",
        fs={
            "/agent/AGENTS.md": "global",
            "/agent/skills/x/SKILL.md": SKILL.format(name="x", description="X"),
        },
    )
    assert [c.path for c in resources.context_files] == ["/agent/AGENTS.md"]
    assert [s.name for s in resources.skills] == ["x"]
    assert resources.trust_source == "foreign-cwd"
    assert any("C:\\Users\\ann\\proj is not a POSIX path" in text for text in resources.unknown)
    assert is_foreign_path("\\\\server\\share") and is_foreign_path("relative/dir")


def test_it_decides_trust_like_pi_without_a_ui() -> None:
    project = {"/w/.pi/SYSTEM.md": "project system", "/a/SYSTEM.md": "global system"}

    def decide(extra: dict[str, str]) -> tuple[bool, str, str | None]:
        r = discover_resources(cwd="/w", agent_dir="/a", home="/h", fs={**project, **extra})
        return r.project_trusted, r.trust_source, r.system_prompt

    assert decide({}) == (False, "ask-noninteractive", "global system")
    assert decide({"/a/trust.json": json.dumps({"/": True, "/w": None})}) == (
        True,
        "trust.json",
        "project system",
    )
    assert decide({"/a/trust.json": json.dumps({"/w": False})})[:2] == (False, "trust.json")
    assert decide({"/a/settings.json": '{"defaultProjectTrust": "always"}'})[:2] == (
        True,
        "defaultProjectTrust",
    )
    bare = discover_resources(cwd="/w", agent_dir="/a", home="/h", fs={"/w/.pi/notes": "x"})
    assert bare.trust_source == "no-trust-requiring-resources" and bare.project_trusted
    given = discover_resources(
        cwd="/w", agent_dir="/a", home="/h", fs=project, project_trusted=True
    )
    assert (given.trust_source, given.system_prompt) == ("caller", "project system")


def test_it_ignores_home_agents_skills_when_deciding_trust() -> None:
    files = {"/h/.agents/skills/s/SKILL.md": SKILL.format(name="s", description="S")}
    resources = discover_resources(cwd="/h/proj", agent_dir="/a", home="/h", fs=files)
    assert resources.trust_source == "no-trust-requiring-resources"
    assert [s.name for s in resources.skills] == ["s"]


def test_it_reports_a_broken_trust_store_instead_of_crashing() -> None:
    resources = discover_resources(
        cwd="/w",
        agent_dir="/a",
        home="/h",
        fs={"/w/.pi/skills/x.md": "", "/a/trust.json": "{not json"},
    )
    assert not resources.project_trusted
    assert resources.diagnostics[0].type == "error"
    assert "Failed to read trust store /a/trust.json" in resources.diagnostics[0].message


def test_it_rejects_an_agent_dir_that_is_not_absolute() -> None:
    with pytest.raises(ResourceError, match="not an absolute POSIX path"):
        discover_resources(cwd="/w", agent_dir="agent", home="/h", fs={})
    with pytest.raises(ResourceError, match="lacks exists"):
        discover_resources(cwd="/w", agent_dir="/a", home="/h", fs=object())


def test_it_sets_aside_uploaded_files_without_a_posix_path() -> None:
    fs = MappingFileSystem({"rel/AGENTS.md": "x", "C:\\p\\AGENTS.md": "y", "/p/AGENTS.md": "z"})
    assert fs.skipped == ["rel/AGENTS.md", "C:\\p\\AGENTS.md"]
    resources = discover_resources(cwd="/p", agent_dir="/a", home="/h", fs=fs)
    assert [c.content for c in resources.context_files] == ["z"]
    assert "uploaded file C:\\p\\AGENTS.md has no absolute POSIX path: not used" in (
        resources.unknown
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("---\nname: x\ndescription: yes\n---\nbody", {"name": "x", "description": "yes"}),
        ("---\non: off\nn: 010\nd: 2024-01-01\n---\n", {"on": "off", "n": 10, "d": "2024-01-01"}),
        ("---\r\nname: crlf\r\n---\r\n", {"name": "crlf"}),
        ("---\nname:\tx\n---\n", {"name": "x"}),
        ("---\ndescription: |\n  a\n  b\n---\n", {"description": "a\nb\n"}),
        ("no frontmatter", {}),
        ("---\nname: unclosed\n", {}),
        ("---\n---\nbody", {}),
        ("---\njust text\n---\n", "just text"),
    ],
)
def test_it_parses_frontmatter_with_yaml_1_2_scalars(text: str, expected: object) -> None:
    assert parse_frontmatter(text)[0] == expected


def test_it_returns_the_trimmed_body() -> None:
    assert parse_frontmatter("---\na: 1\n---\n\n  body  \n\n") == ({"a": 1}, "body")


def test_it_rejects_frontmatter_the_yaml_package_rejects() -> None:
    with pytest.raises(FrontmatterError, match="invalid YAML frontmatter") as caught:
        parse_frontmatter("---\nname: [x\n---\n")
    assert not caught.value.exact


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "---\nname: a\nname: b\n---\n",
            "Map keys must be unique at line 2, column 1:\n\nname: a\nname: b\n^\n",
        ),
        (
            "---\nname: x\ndescription: Use when: asked\n---\n",
            "Nested mappings are not allowed in compact mappings at line 2, column 14:\n\n"
            "description: Use when: asked\n             ^\n",
        ),
    ],
)
def test_it_words_the_common_yaml_mistakes_as_pi_does(text: str, message: str) -> None:
    with pytest.raises(FrontmatterError) as caught:
        parse_frontmatter(text)
    assert caught.value.exact and str(caught.value) == message


def _skill(text: str, path: str = "/s/dir/SKILL.md"):  # type: ignore[no-untyped-def]
    return load_skill_from_file(MappingFileSystem({path: text}), path, "user")


def test_it_validates_skills_with_pis_warnings() -> None:
    skill, diags = _skill(SKILL.format(name="-Bad--", description="d"))
    assert skill is not None and skill.name == "-Bad--"
    assert [d.message for d in diags] == [
        "name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)",
        "name must not start or end with a hyphen",
        "name must not contain consecutive hyphens",
    ]
    skill, diags = _skill(SKILL.format(name="x", description="é" * 1025))
    assert skill is not None
    assert [d.message for d in diags] == ["description exceeds 1024 characters (1025)"]


def test_it_names_a_skill_after_its_folder_when_the_name_is_falsy() -> None:
    skill, _ = _skill("---\nname: 0\ndescription: d\n---\n", "/s/my-folder/SKILL.md")
    assert skill is not None and skill.name == "my-folder"


def test_it_drops_skills_whose_fields_are_not_strings_as_node_would() -> None:
    skill, diags = _skill("---\nname: x\ndescription: 42\n---\n")
    assert skill is None and [d.message for d in diags] == ["description.trim is not a function"]
    skill, diags = _skill("---\nname: 7\ndescription: d\n---\n")
    assert skill is None and [d.message for d in diags] == ["name.startsWith is not a function"]


def test_it_hides_only_a_real_boolean_disable_model_invocation() -> None:
    on, _ = _skill("---\nname: a\ndescription: d\ndisable-model-invocation: TRUE\n---\n")
    text, _ = _skill('---\nname: a\ndescription: d\ndisable-model-invocation: "true"\n---\n')
    assert on is not None and on.disable_model_invocation
    assert text is not None and not text.disable_model_invocation


def test_it_marks_yaml_error_messages_as_ours() -> None:
    skill, diags = _skill("---\nname: [x\n---\n")
    assert skill is None and not diags[0].exact
    assert diags[0].as_dict()["exact"] is False
    skill, diags = _skill("---\nname: a\ndescription: a: b\n---\n")
    assert skill is None and diags[0].exact and "exact" not in diags[0].as_dict()


def test_it_matches_gitignore_rules_like_node_ignore() -> None:
    ig = Ignore()
    ig.add(["build/", "*.draft.md", "!keep.draft.md", "Secret*", "docs/**/tmp"])
    assert ig.ignores("build/")
    assert not ig.ignores("build")  # a trailing slash pattern only matches folders
    assert ig.ignores("a.draft.md") and not ig.ignores("keep.draft.md")
    assert ig.ignores("secrets/")  # case-insensitive by default
    assert ig.ignores("docs/a/b/tmp") and ig.ignores("docs/tmp")
    assert ig.ignores("build/inner/x.md")  # children of an ignored folder stay ignored
    with pytest.raises(ValueError):
        ig.ignores("./x")


def test_it_warns_that_installed_extensions_are_not_modelled() -> None:
    resources = discover_resources(
        cwd="/w",
        agent_dir="/a",
        home="/h",
        fs={"/a/extensions/tool.ts": "export default () => {}", "/w/AGENTS.md": "x"},
    )
    assert resources.unknown == (
        "extensions in /a/extensions may add tools or change the prompt: not modelled",
    )
