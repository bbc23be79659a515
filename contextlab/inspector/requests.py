"""One request as the provider received it (JSON body, curl), and two requests compared.

The body is the engine's (``PiRequest.provider_body``: the ports of pi-ai's openai-completions
and anthropic-messages providers, in the turn's dialect) for the request the inspector already
built for the entry: the system prompt (Pi 1.x: the session's own; Pi 0.x: rebuilt from the
project's resources), the messages as sent, the tools (Pi 1.x: as the session declared them;
Pi 0.x: the project's resource profile, else Pi's default set), the thinking level, the output
cap. APIs without a port get the provider-neutral context instead, said so plainly.
"""

from __future__ import annotations

import difflib
import json
import shlex
from dataclasses import dataclass, field
from typing import Any

from contextlab.inspector.diffs import message_key, prompt_changes, summary_line
from contextlab.inspector.selectors import SessionIndex
from contextlab.inspector.services import Inspection, TurnRequest, inspect_entry, turn_request
from contextlab.library.models import Session
from contextlab.pi.jsutil import json_stringify
from contextlab.pi.request import steps_of

# Where each API's request goes under the model's baseUrl, and the key's header.
ENDPOINTS = {
    "openai-completions": ("/chat/completions", "Authorization: Bearer $OPENAI_API_KEY"),
    "anthropic-messages": ("/v1/messages", "x-api-key: $ANTHROPIC_API_KEY"),
}


@dataclass
class ProviderRequest:
    # The request as every entry point shows it (services.turn_request).
    turn: TurnRequest
    api: str
    # The body's bytes as the provider received them (pi-ai's JSON.stringify: compact, Pi's key
    # order), or the provider-neutral context when the API has no port.
    body_text: str
    exact: bool  # built by a port of Pi's provider (else the provider-neutral context)
    tools: list[str]
    note: str = ""

    @property
    def body(self) -> dict[str, Any]:
        return json.loads(self.body_text)  # type: ignore[no-any-return]

    @property
    def body_json(self) -> str:
        return self.body_text

    @property
    def curl(self) -> str:
        """A curl command sending the body (one line of JSON in a quoted here-document)."""
        model = dict(self.turn.model_info.get("found") or {})
        path, key_header = ENDPOINTS.get(self.api, ("", "Authorization: Bearer $API_KEY"))
        headers: dict[str, str] = {}
        # Where Pi's provider sent this body and the headers that shape it (Pi 1.x's Anthropic
        # requests: /v1/messages?beta=true with the betas as anthropic-beta).
        request = self.turn.request
        target = request.provider_target(model) if self.exact else None
        if target is not None:
            path, headers = target
        elif self.api == "anthropic-messages":
            headers = {"anthropic-version": "2023-06-01"}
        url = str(model.get("baseUrl") or "https://PROVIDER_BASE_URL").rstrip("/") + path
        lines = [f"curl -sS {shlex.quote(url)}", "-H 'content-type: application/json'"]
        lines.append(f'-H "{key_header}"')
        lines.extend(f"-H {shlex.quote(f'{name}: {value}')}" for name, value in headers.items())
        lines.append("--data-binary @- <<'PI_REQUEST_BODY'")
        return " \\\n  ".join(lines) + "\n" + self.body_text + "\nPI_REQUEST_BODY\n"


def provider_request(session: Session, index: SessionIndex, entry_id: str) -> ProviderRequest:
    """The request at ``entry_id`` as its provider received it: only the request is built (no
    page view-models), so a deep leaf of a large session costs what its request holds."""
    turn = turn_request(session, index, entry_id)
    request = turn.request
    model = dict(turn.model_info.get("found") or {})
    api = str(model.get("api") or "")
    names = [str(t.get("name")) for t in request.tools]
    notes = []
    if turn.model_info.get("assumed"):
        notes.append(
            "The model is in neither Pi's catalog nor the project's models.json: its "
            "capabilities (reasoning, input types, limits) are assumed."
        )
    if turn.prompt_unknown:
        notes.append("Parts of the system prompt are unknown on this server.")
    note = " ".join(notes)
    body = request.provider_body(model)
    if body is not None:
        return ProviderRequest(turn, api, body, True, names, note)
    context = {
        "model": model.get("id"),
        "thinkingLevel": str(request.thinking_level),
        "systemPrompt": request.prompt.text if request.prompt else "",
        "messages": request.sent,
        "tools": [
            {"name": t["name"], "description": t["description"], "parameters": t["parameters"]}
            for t in request.tools
        ],
    }
    note = (
        f"Pi's {api or 'unknown'} provider has no port here: this is the context Pi hands to "
        "it (system prompt, messages as sent, tools), not the provider's own body. " + note
    )
    return ProviderRequest(turn, api, json_stringify(context), False, names, note.strip())


# --- two requests side by side ---------------------------------------------------------------


@dataclass
class Row:
    """One line of the comparison: a message on the left, the right, or both."""

    kind: str  # equal | changed | removed | added | same-run (a run of equal messages folded)
    left: dict[str, Any] | None = None
    right: dict[str, Any] | None = None
    count: int = 0  # for same-run
    lines: list[tuple[str, str]] = field(default_factory=list)  # (op, text) for changed


@dataclass
class Comparison:
    a: Inspection
    b: Inspection
    rows: list[Row]
    prompt_lines: list[tuple[str, str]]  # unified diff of the system prompts; empty if equal
    same_prompt: bool
    summary: dict[str, Any]
    # How the prompt changed from A to B (Pi 1.x: by section and tool; see diffs.prompt_changes).
    prompt: dict[str, Any] = field(default_factory=dict)


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "thinking":
            parts.append("[thinking] " + str(block.get("thinking", "")))
        elif kind == "toolCall":
            parts.append(
                f"[tool call {block.get('name')}] "
                + json.dumps(block.get("arguments"), ensure_ascii=False)
            )
        else:
            parts.append(f"[{kind}]")
    return "\n".join(parts)


def _view(message: dict[str, Any], estimate: Any) -> dict[str, Any]:
    return {**summary_line(message, estimate), "full": _text(message)}


def _line_diff(before: str, after: str) -> list[tuple[str, str]]:
    out = []
    for line in difflib.ndiff(before.splitlines(), after.splitlines()):
        op = line[:1]
        if op == "?":
            continue
        out.append({"-": ("del", line[2:]), "+": ("ins", line[2:])}.get(op, ("eq", line[2:])))
    return out


def compare_requests(session: Session, index: SessionIndex, a: str, b: str) -> Comparison:
    left = inspect_entry(session, index, a, tab="json")
    right = inspect_entry(session, index, b, tab="json")
    assert left.request is not None and right.request is not None
    estimate_left = steps_of(left.request.dialect).estimate_tokens
    estimate_right = steps_of(right.request.dialect).estimate_tokens
    before = [message_key(m) for m in left.sent]
    after = [message_key(m) for m in right.sent]
    rows: list[Row] = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            rows.append(Row("same-run", count=i2 - i1, left=_view(left.sent[i1], estimate_left)))
            continue
        pairs = min(i2 - i1, j2 - j1) if op == "replace" else 0
        for k in range(pairs):
            lm, rm = left.sent[i1 + k], right.sent[j1 + k]
            rows.append(
                Row(
                    "changed",
                    _view(lm, estimate_left),
                    _view(rm, estimate_right),
                    lines=_line_diff(_text(lm), _text(rm)),
                )
            )
        rows.extend(
            Row("removed", left=_view(m, estimate_left)) for m in left.sent[i1 + pairs : i2]
        )
        rows.extend(
            Row("added", right=_view(m, estimate_right)) for m in right.sent[j1 + pairs : j2]
        )
    prompt = prompt_changes(left.request, right.request)
    summary = {
        "a_messages": len(left.sent),
        "b_messages": len(right.sent),
        "same": sum(r.count for r in rows if r.kind == "same-run"),
        "changed": sum(1 for r in rows if r.kind == "changed"),
        "removed": sum(1 for r in rows if r.kind == "removed"),
        "added": sum(1 for r in rows if r.kind == "added"),
    }
    return Comparison(left, right, rows, prompt["lines"], not prompt["changed"], summary, prompt)
