"""Prompts captured by contextlab's Pi extension (``integrations/pi-extension``), for Pi 0.x.

A Pi 0.x session file does not hold the system prompt: contextlab reconstructs it from the
project's resources. The extension records the exact prompt of each request as a ``custom`` entry
(``customType`` ``contextlab.prompt``), which Pi never puts into the model's context, written right
before the request goes out (so it is a child of the entry that was the leaf) and only when the
prompt, the tools or their inputs changed since the nearest capture on the branch.

So the captured prompt of the request at a leaf is, in order:
1. the leaf itself when it is a capture (the request was made at its parent, with the same context);
2. a capture among the leaf's children (the request made at this leaf);
3. the nearest capture above the leaf (the prompt had not changed since that request).

Data shape (``integrations/pi-extension/src/capture.ts``): ``{v, systemPrompt, system, tools,
api, provider, model, options, digest}``; ``tools`` is the provider payload's declarations
verbatim (chat completions: ``{type, function: {name, description, parameters}}``; Anthropic:
``{name, description, input_schema}``).

A capture is what Pi sent, so the request at a leaf that has one carries it (``with_captured``):
its system prompt and tool declarations replace the reconstruction's, wherever the request is
shown (the page, the request export, the API, the ``context`` command).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from contextlab.pi.entries import Json
from contextlab.pi.prompt import PromptLayer, SystemPrompt, estimate_tokens
from contextlab.pi.request import PiRequest, steps_of

CAPTURE_TYPE = "contextlab.prompt"


@dataclass(frozen=True, slots=True)
class CapturedPrompt:
    entry_id: str
    system_prompt: str
    tool_names: tuple[str, ...]
    options: Mapping[str, Any] | None
    # True when the capture was written with the request at this leaf (cases 1 and 2 above);
    # False when it is an earlier request's prompt, unchanged since.
    at_request: bool
    # The tool declarations as Pi's agent hands them to pi-ai ({name, description, parameters}),
    # read back from the payload's; None when the capture holds none it can read.
    tools: tuple[Json, ...] | None = None

    @property
    def context_files(self) -> list[Mapping[str, Any]]:
        files = (self.options or {}).get("contextFiles")
        return [f for f in files if isinstance(f, Mapping)] if isinstance(files, list) else []


def is_capture(entry: Mapping[str, Any] | None) -> bool:
    return (
        entry is not None
        and entry.get("type") == "custom"
        and entry.get("customType") == CAPTURE_TYPE
        and isinstance(entry.get("data"), Mapping)
        and isinstance(entry["data"].get("systemPrompt"), str)
    )


def _tool_name(tool: Any) -> str | None:
    if not isinstance(tool, Mapping):
        return None
    function = tool.get("function")
    name = function.get("name") if isinstance(function, Mapping) else tool.get("name")
    return name if isinstance(name, str) else None


def _declaration(tool: Any) -> Json | None:
    """A payload's tool declaration as the agent's definition ({name, description,
    parameters}): chat completions nest it under ``function``, Anthropic names the schema
    ``input_schema``. Missing parts stay missing (None), never invented."""
    if not isinstance(tool, Mapping):
        return None
    function = tool.get("function")
    found: Mapping[str, Any] = function if isinstance(function, Mapping) else tool
    name = found.get("name")
    description = found.get("description")
    parameters = found.get("parameters", found.get("input_schema"))
    if not isinstance(name, str) or not isinstance(description, str) or parameters is None:
        return None
    return {"name": name, "description": description, "parameters": parameters}


def _captured(entry: Mapping[str, Any], *, at_request: bool) -> CapturedPrompt:
    data: Mapping[str, Any] = entry["data"]
    tools = data.get("tools")
    names = [_tool_name(t) for t in tools] if isinstance(tools, list) else []
    declarations = [_declaration(t) for t in tools] if isinstance(tools, list) else []
    options = data.get("options")
    return CapturedPrompt(
        entry_id=str(entry.get("id")),
        system_prompt=data["systemPrompt"],
        tool_names=tuple(n for n in names if n is not None),
        options=options if isinstance(options, Mapping) else None,
        at_request=at_request,
        # A payload without tools sent none; a list Pi's provider wrote is read whole or not
        # at all (then the tools are the dialect's definitions of the captured names).
        tools=(
            ()
            if tools is None
            else tuple(d for d in declarations if d is not None)
            if isinstance(tools, list) and all(d is not None for d in declarations)
            else None
        ),
    )


CAPTURED_LAYER_TITLE = "System prompt captured by contextlab's Pi extension"


def with_captured(request: PiRequest, captured: CapturedPrompt | None) -> PiRequest:
    """``request`` with the captured prompt and tools in place of the reconstruction's (a copy;
    the same request when there is no capture or the dialect keeps its prompt in the session).

    The prompt is one layer, the captured text; the reconstruction's date stays as said (Pi's
    own prompt holds the date it printed)."""
    steps = steps_of(request.dialect)
    if captured is None or steps.prompt_in_session:
        return request
    out = replace(request)
    text = captured.system_prompt
    layer = PromptLayer(
        "captured",
        CAPTURED_LAYER_TITLE,
        text,
        (f"entry {captured.entry_id}",),
        estimate_tokens(text),
    )
    out.prompt = SystemPrompt(text=text, layers=(layer,), options=dict(captured.options or {}))
    if captured.tools is not None:
        out.tools = [dict(tool) for tool in captured.tools]
    elif captured.tool_names:
        found = (request.dialect.tool(name) for name in captured.tool_names)
        out.tools = [tool for tool in found if tool is not None]
    out.max_tokens = steps.max_tokens(out)
    return out


def captured_prompt_at(
    path_ids: Sequence[str],
    child_ids: Sequence[str],
    entries: Mapping[str, Mapping[str, Any]],
) -> CapturedPrompt | None:
    """The captured prompt of the request at the leaf ``path_ids[-1]`` (rules in the module doc).

    ``entries`` needs to hold only the candidates (custom entries on the path and among the leaf's
    children); others may be missing.
    """
    if not path_ids:
        return None
    leaf = entries.get(path_ids[-1])
    if is_capture(leaf):
        assert leaf is not None
        return _captured(leaf, at_request=True)
    for child_id in reversed(child_ids):
        child = entries.get(child_id)
        if is_capture(child):
            assert child is not None
            return _captured(child, at_request=True)
    for entry_id in reversed(path_ids[:-1]):
        entry = entries.get(entry_id)
        if is_capture(entry):
            assert entry is not None
            return _captured(entry, at_request=False)
    return None


def prompt_differences(reconstructed: str, captured: str) -> list[str]:
    """A unified diff's hunks (reconstructed → captured, without the two file-name lines), empty
    when the two are identical."""
    if reconstructed == captured:
        return []
    lines = difflib.unified_diff(reconstructed.splitlines(), captured.splitlines(), lineterm="")
    return list(lines)[2:]
