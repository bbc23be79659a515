"""One request as the provider received it (JSON body, curl), and two requests compared.

The body is the engine's (``PiRequest.provider_body``: the ports of pi-ai's openai-completions
and anthropic-messages providers, in the turn's dialect) for the request the inspector already
built for the entry: the system prompt (Pi 1.x: the session's own; Pi 0.x: rebuilt from the
project's resources), the messages as sent, the tools (Pi 1.x: as the session declared them;
Pi 0.x: the project's resource profile, else Pi's default set), the thinking level, the output
cap. APIs without a port get the provider-neutral context instead, said so plainly.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from contextlab.inspector import linediff
from contextlab.inspector.diffs import (
    align,
    message_identity,
    message_key,
    numbered,
    prompt_changes,
    summary_line,
)
from contextlab.inspector.linediff import diff_lines
from contextlab.inspector.messages import MessageViews
from contextlab.inspector.selectors import SessionIndex
from contextlab.inspector.services import Inspection, TurnRequest, inspect_entry, turn_request
from contextlab.library.models import Session
from contextlab.pi import context as pi_context
from contextlab.pi.jsutil import JsonPieces
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
    # order), or the provider-neutral context when the API has no port: in pieces (a message
    # each), written once.
    body_pieces: Iterable[str]
    exact: bool  # built by a port of Pi's provider (else the provider-neutral context)
    tools: list[str]
    note: str = ""

    @cached_property
    def body_text(self) -> str:
        return "".join(self.body_pieces)

    @property
    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(self.body_text)
        return body

    @property
    def body_json(self) -> str:
        return self.body_text

    @property
    def curl(self) -> str:
        """A curl command sending the body (one line of JSON in a quoted here-document)."""
        return "".join(self.curl_pieces())

    def curl_pieces(self) -> Iterator[str]:
        """``curl`` in pieces: its head, the body's pieces, its tail (the body is not held
        whole unless ``body_text`` was asked for)."""
        head, tail = self._curl_ends()
        yield head
        if "body_text" in self.__dict__:
            yield self.body_text
        else:
            yield from self.body_pieces
        yield tail

    def _curl_ends(self) -> tuple[str, str]:
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
        return " \\\n  ".join(lines) + "\n", "\nPI_REQUEST_BODY\n"


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
    body = request.provider_body_chunks(model)
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
    pieces = JsonPieces(context, depth=2)
    return ProviderRequest(turn, api, pieces, False, names, note.strip())


# --- two requests side by side ---------------------------------------------------------------

# Line-diff steps one comparison may spend in all (a few seconds of Python at most, see
# linediff.MAX_WORK for one pair), and a deadline checked between messages: past either, the
# changed messages left are shown as replaced, never diffed at any cost.
COMPARE_WORK = 3_000_000
COMPARE_SECONDS = 5.0
# What the page holds of one message or one diff line (the full text is one click away).
SHOWN_CHARS = 4000
SHOWN_LINE_CHARS = 1000
# Of a run of messages only in A or only in B, the first and last RUN_EDGE are shown (a request
# after 10,000 new messages is not a page of 10,000 messages); rows past MAX_ROWS are counted.
RUN_EDGE = 10
MAX_ROWS = 600

TOO_DIFFERENT = "too different to show line by line: replaced"
OUT_OF_TIME = "not compared line by line (this comparison's time for line diffs is spent)"


@dataclass
class Row:
    """One line of the comparison: a message on the left, the right, or both."""

    # changed | removed | added | same-run (a run of equal messages folded) | more (messages
    # not shown: the middle of a long run only in A or B, or everything past MAX_ROWS)
    kind: str
    left: dict[str, Any] | None = None
    right: dict[str, Any] | None = None
    count: int = 0  # for same-run
    lines: list[tuple[str, str]] = field(default_factory=list)  # (op, text) for changed
    # Why a changed message is shown whole on both sides, not line by line ("" when it is not).
    replaced: str = ""
    note: str = ""  # for more: what the folded messages are


@dataclass
class Side:
    """What the page shows of one request's head (plain data: a comparison is cached whole)."""

    entry_id: str
    tag: str
    text: str
    dialect_label: str
    model: dict[str, Any] | None
    thinking_level: str
    total_with_prompt: int

    @classmethod
    def of(cls, inspection: Inspection) -> Side:
        return cls(
            entry_id=inspection.entry_id,
            tag=inspection.item.tag,
            text=inspection.item.text,
            dialect_label=str(inspection.dialect.get("label") or ""),
            model=inspection.model,
            thinking_level=inspection.thinking_level,
            total_with_prompt=int(inspection.total_with_prompt),
        )


@dataclass
class Comparison:
    a: Side
    b: Side
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


class _Owners:
    """The entry each sent message of a request came from. Pi's user, assistant and tool
    result messages are sent as the very objects the context holds; a converted message (a
    summary, a custom message) or one pi-ai rewrote is found by its identity. A message Pi made
    itself for the request (a missing tool result) has none."""

    def __init__(self, inspection: Inspection) -> None:
        messages = inspection.messages
        if isinstance(messages, MessageViews):  # without making a view of each
            self.views = list(messages.sent_messages())
        else:
            self.views = [(v.message, v.entry_id) for v in messages if v.entry_id and not v.omitted]
        self.by_object = {id(message): entry_id for message, entry_id in self.views}
        self.by_identity: dict[tuple[Any, ...], str | None] | None = None

    def get(self, message: dict[str, Any], identity: tuple[Any, ...]) -> str | None:
        found = self.by_object.get(id(message))
        if found is not None:
            return found
        if self.by_identity is None:  # built once, on the first message not found above
            self.by_identity = {}
            for message, entry_id in self.views:
                role = pi_context.sent_role(message)
                self.by_identity.setdefault(message_identity(message, role), entry_id)
        return self.by_identity.get(identity)


def _view(
    message: dict[str, Any], estimate: Any, entry_id: str | None, text: str | None = None
) -> dict[str, Any]:
    full = _text(message) if text is None else text
    return {
        **summary_line(message, estimate),
        "full": full[:SHOWN_CHARS],
        "hidden": max(0, len(full) - SHOWN_CHARS),
        "entry_id": entry_id,
    }


def _cut_line(line: tuple[str, str]) -> tuple[str, str]:
    op, text = line
    if len(text) <= SHOWN_LINE_CHARS:
        return line
    return op, f"{text[:SHOWN_LINE_CHARS]}… ({len(text) - SHOWN_LINE_CHARS} more characters)"


class Abandoned(Exception):
    """The comparison was stopped: nobody waits for it any more (see ``computed.client_gone``)."""


def compare_requests(
    session: Session,
    index: SessionIndex,
    a: str,
    b: str,
    *,
    abandoned: Callable[[], bool] = lambda: False,
) -> Comparison:
    """The requests at ``a`` and ``b`` side by side. Steps:

    1. each request as the inspector builds it (kept per process on the session's index);
    2. the messages sent paired by identity (``diffs.message_identity``: entry, tool call), in
       order (``diffs.align``), so a compaction or a branch between the two shows the messages
       it really removed and added, not every message after it "changed"; between two common
       messages, the same run of roles on both sides is compared message by message;
    3. a pair whose content differs gets a line diff of bounded cost (``linediff``), within
       the comparison's own budget of work and time; past it, "replaced";
    4. the system prompts (``diffs.prompt_changes``).

    ``abandoned`` is asked between the two requests and before every line diff: when it says
    so, ``Abandoned`` is raised (the client is gone, its result would be thrown away).
    """
    # 1.
    left = inspect_entry(session, index, a, tab="context")
    if abandoned():
        raise Abandoned
    right = inspect_entry(session, index, b, tab="context")
    assert left.request is not None and right.request is not None
    estimate_left = steps_of(left.request.dialect).estimate_tokens
    estimate_right = steps_of(right.request.dialect).estimate_tokens
    owners_left, owners_right = _Owners(left), _Owners(right)
    # 2.
    ids_left = [message_identity(m) for m in left.sent]
    ids_right = [message_identity(m) for m in right.sent]
    chain = align(numbered(ids_left), numbered(ids_right))
    rows: list[Row] = []
    counts = {"same": 0, "changed": 0, "replaced": 0, "removed": 0, "added": 0}
    hidden = {"same": 0, "changed": 0, "removed": 0, "added": 0}  # past MAX_ROWS
    budget = COMPARE_WORK
    deadline = time.monotonic() + COMPARE_SECONDS

    def one_side(kind: str, first: int, last: int) -> None:
        """Messages only in A (removed) or only in B (added); of a long run, its two ends."""
        sent, ids, owners, estimate = (
            (left.sent, ids_left, owners_left, estimate_left)
            if kind == "removed"
            else (right.sent, ids_right, owners_right, estimate_right)
        )
        counts[kind] += last - first
        if len(rows) >= MAX_ROWS:
            hidden[kind] += last - first
            return
        shown = list(range(first, last))
        if len(shown) > 2 * RUN_EDGE + 1:
            shown = [*shown[:RUN_EDGE], -1, *shown[-RUN_EDGE:]]
        for n in shown:
            if n < 0:
                more = last - first - 2 * RUN_EDGE
                side = "A" if kind == "removed" else "B"
                rows.append(Row("more", count=more, note=f"only in {side}"))
                continue
            view = _view(sent[n], estimate, owners.get(sent[n], ids[n]))
            rows.append(Row(kind, left=view) if kind == "removed" else Row(kind, right=view))

    def pair(ci: int, cj: int) -> None:
        nonlocal budget
        lm, rm = left.sent[ci], right.sent[cj]
        same = lm is rm or message_key(lm) == message_key(rm)
        counts["same" if same else "changed"] += 1
        if same and rows and rows[-1].kind == "same-run":
            rows[-1].count += 1
            return
        if len(rows) >= MAX_ROWS:
            hidden["same" if same else "changed"] += 1
            return
        if same:
            view = _view(lm, estimate_left, owners_left.get(lm, ids_left[ci]), text="")
            rows.append(Row("same-run", count=1, left=view))
            return
        # 3.
        if abandoned():
            raise Abandoned
        before, after = _text(lm), _text(rm)
        row = Row(
            "changed",
            _view(lm, estimate_left, owners_left.get(lm, ids_left[ci]), before),
            _view(rm, estimate_right, owners_right.get(rm, ids_right[cj]), after),
        )
        if budget <= 0 or time.monotonic() > deadline:
            row.replaced = OUT_OF_TIME
        else:
            diff = diff_lines(before, after, max_work=min(linediff.MAX_WORK, budget))
            budget -= diff.work
            if diff.replaced:
                row.replaced = TOO_DIFFERENT if budget > 0 else OUT_OF_TIME
            else:
                row.lines = [_cut_line(line) for line in diff.lines]
        counts["replaced"] += bool(row.replaced)
        rows.append(row)

    def gap(i: int, ci: int, j: int, cj: int) -> None:
        """The messages between two common ones. The same run of roles on both sides is the
        same turns taken twice (a user message rewritten on a new branch, two siblings, two
        branch summaries): compared message by message; anything else is what one request
        has and the other has not (before and after a compaction: the summarised messages,
        the summary)."""
        if ci - i == cj - j > 0 and all(
            left.sent[i + k].get("role") == right.sent[j + k].get("role") for k in range(ci - i)
        ):
            for k in range(ci - i):
                pair(i + k, j + k)
            return
        one_side("removed", i, ci)
        one_side("added", j, cj)

    i = j = 0
    for ci, cj in chain:
        gap(i, ci, j, cj)
        pair(ci, cj)
        i, j = ci + 1, cj + 1
    gap(i, len(left.sent), j, len(right.sent))
    if any(hidden.values()):
        parts = [
            f"{n} {label}"
            for n, label in (
                (hidden["same"], "the same"),
                (hidden["changed"], "changed"),
                (hidden["removed"], "only in A"),
                (hidden["added"], "only in B"),
            )
            if n
        ]
        rows.append(Row("more", count=sum(hidden.values()), note="not shown: " + ", ".join(parts)))
    # 4.
    prompt = prompt_changes(left.request, right.request)
    summary = {"a_messages": len(left.sent), "b_messages": len(right.sent), **counts}
    return Comparison(
        Side.of(left),
        Side.of(right),
        rows,
        prompt["lines"],
        not prompt["changed"],
        summary,
        prompt,
    )
