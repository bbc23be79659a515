"""How a message looks in the turn inspector: its content as blocks (text with any truncation
notice located, thinking, tool calls, images as data URLs), as stored or as the provider receives
it, and the one-line preview of a collapsed message."""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from contextlab import jsonsafe
from contextlab.pi import context as pi_context
from contextlab.pi.truncate import locate_notice

_BASE64 = re.compile(r"^[A-Za-z0-9+/=\s]*$")
_IMAGE_MIME = re.compile(r"^image/(png|jpeg|gif|webp)$")


def dumps(value: Any) -> str:
    return jsonsafe.pretty(value)  # any depth (orjson alone stops at 254 levels)


@dataclass
class Block:
    kind: str  # text, thinking, toolCall, image, section (a Pi 1.x prompt part), tools, other
    text: str = ""
    notice: tuple[int, int] | None = None  # truncation notice span inside `text`
    image_src: str = ""
    name: str = ""
    redacted: bool = False
    hidden: int = 0  # characters not rendered (CONTEXTLAB_MESSAGE_RENDER_CHARS)
    deleted: bool = False  # a section a Pi 1.x system message removes

    @property
    def before_notice(self) -> str:
        return self.text[: self.notice[0]] if self.notice else self.text

    @property
    def notice_text(self) -> str:
        return self.text[self.notice[0] : self.notice[1]] if self.notice else ""

    @property
    def after_notice(self) -> str:
        return self.text[self.notice[1] :] if self.notice else ""


@dataclass
class MessageView:
    position: int
    role: str
    entry_id: str | None
    entry_type: str
    tokens: int
    running: int
    blocks: list[Block]  # only for messages shown in full (the others load on demand)
    sent_as: str  # the role the provider sees ("user" for summaries and custom messages)
    dropped: str = ""  # why the provider layer drops it, if it does
    usage: dict[str, Any] | None = None
    usage_tokens: int | float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    css: str = ""
    title: str = ""
    message: dict[str, Any] = field(default_factory=dict, repr=False)
    # A Pi 1.x context edit of this message: {"id": the context_edit entry, "kind": "replaced"
    # or "omitted", "tokens": the original's estimate, "blocks": the original's blocks}. An
    # omitted message is shown where it stood, not counted and not sent.
    edit: dict[str, Any] | None = None

    @property
    def omitted(self) -> bool:
        return self.edit is not None and self.edit.get("kind") == "omitted"

    @property
    def preview(self) -> str:
        return preview(self.message)


def image_src(block: dict[str, Any]) -> str:
    """A data: URL for an image block, only for well-formed base64 of a raster image type."""
    mime = str(block.get("mimeType") or "")
    data = block.get("data")
    if not _IMAGE_MIME.match(mime) or not isinstance(data, str) or not _BASE64.match(data):
        return ""
    try:
        base64.b64decode(data[:4096] + "=" * (-len(data[:4096]) % 4), validate=False)
    except (binascii.Error, ValueError):
        return ""
    return f"data:{mime};base64,{data}"


def blocks(message: dict[str, Any]) -> list[Block]:
    role = message.get("role")
    tool_name = str(message.get("toolName") or "")
    if role in ("compactionSummary", "branchSummary"):
        return [Block("text", str(message.get("summary") or ""))]
    if role == "bashExecution":
        text = f"$ {message.get('command', '')}\n{message.get('output', '')}"
        return [Block("text", text)]
    content = message.get("content")
    if isinstance(content, str):
        return [Block("text", content)]
    out: list[Block] = []
    for raw in content if isinstance(content, list) else []:
        if not isinstance(raw, dict):
            out.append(Block("other", dumps(raw)))
            continue
        kind = raw.get("type")
        if kind == "text":
            text = str(raw.get("text") or "")
            notice = locate_notice(tool_name, text) if role == "toolResult" else None
            out.append(Block("text", text, notice=notice))
        elif kind == "thinking":
            out.append(
                Block(
                    "thinking", str(raw.get("thinking") or ""), redacted=bool(raw.get("redacted"))
                )
            )
        elif kind == "toolCall":
            out.append(
                Block("toolCall", dumps(raw.get("arguments")), name=str(raw.get("name") or ""))
            )
        elif kind == "image":
            out.append(Block("image", str(raw.get("mimeType") or ""), image_src=image_src(raw)))
        else:
            out.append(Block("other", dumps(raw)))
    return out


def system_blocks(message: dict[str, Any]) -> list[Block]:
    """A Pi 1.x system message as it is persisted: the content it appends, each section it sets
    (or removes), the tools it declares and withdraws."""
    out: list[Block] = []
    content = message.get("content")
    if isinstance(content, str) and content:
        out.append(Block("section", content, name="appended content"))
    elif isinstance(content, list) and content:
        out.extend(blocks({"content": content}))
    sections = message.get("sections")
    for name, value in sections.items() if isinstance(sections, dict) else ():
        out.append(Block("section", str(value or ""), name=str(name), deleted=value is None))
    for key, verb in (("toolsAdded", "declares"), ("toolsRemoved", "withdraws")):
        tools = message.get(key)
        names = [str(t.get("name")) for t in tools or [] if isinstance(t, dict)]
        if names:
            out.append(Block("tools", ", ".join(names), name=verb))
    return out


def sent_blocks(message: dict[str, Any], *, full: bool = False) -> list[Block]:
    """The blocks as the provider receives them: summaries with Pi's wrapper text, custom and
    `!` bash messages as the user text convertToLlm makes of them. Unless `full`, at most
    CONTEXTLAB_MESSAGE_RENDER_CHARS characters of the message are kept for the page (a 200 MB
    tool result must not become a 200 MB page): the rest is behind "show all"."""
    if message.get("role") == "system":
        out = system_blocks(message)
        return out if full else _capped(out)
    if message.get("role") in ("compactionSummary", "branchSummary", "custom", "bashExecution"):
        converted = pi_context.convert_message(message)
        if converted is not None:
            out = blocks(converted)
            return out if full else _capped(out)
    out = blocks(message)
    return out if full else _capped(out)


def _capped(out: list[Block]) -> list[Block]:
    budget = settings.CONTEXTLAB_MESSAGE_RENDER_CHARS
    for block in out:
        before = block.before_notice
        if len(before) <= budget:
            budget -= len(before)
            continue
        notice = block.text[len(before) :]  # Pi's truncation notice and what follows it
        block.hidden = len(before) - budget
        block.text = before[:budget] + notice
        if block.notice is not None:
            block.notice = (budget, budget + block.notice[1] - block.notice[0])
        budget = 0
    return out


def preview(message: dict[str, Any]) -> str:
    """One line of a message for the collapsed list (its first text, tool call or summary)."""
    if message.get("role") in ("compactionSummary", "branchSummary"):
        text = str(message.get("summary") or "")
    elif message.get("role") == "system":
        text = "; ".join(f"{b.name}: {b.text}" for b in system_blocks(message))
    elif message.get("role") == "bashExecution":
        text = f"$ {message.get('command', '')}"
    else:
        content = message.get("content")
        text = ""
        if isinstance(content, str):
            text = content
        elif isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and block.get("text"):
                    text = str(block["text"])
                    break
                if block.get("type") == "toolCall":
                    text = f"{block.get('name')}({dumps(block.get('arguments'))[:160]})"
                    break
                if block.get("type") == "thinking":
                    text = text or "(thinking)"
    return " ".join(text[:300].split())[:160]
