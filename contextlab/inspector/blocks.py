"""How a message looks in the turn inspector: its content as blocks (text with any truncation
notice located, thinking, tool calls, images as data URLs), as stored or as the provider receives
it, and the one-line preview of a collapsed message."""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from contextlab.pi import context as pi_context
from contextlab.pi.truncate import locate_notice

_BASE64 = re.compile(r"^[A-Za-z0-9+/=\s]*$")
_IMAGE_MIME = re.compile(r"^image/(png|jpeg|gif|webp)$")


def dumps(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


@dataclass
class Block:
    kind: str  # text, thinking, toolCall, image, other
    text: str = ""
    notice: tuple[int, int] | None = None  # truncation notice span inside `text`
    image_src: str = ""
    name: str = ""
    redacted: bool = False

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
    usage_tokens: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    css: str = ""
    title: str = ""
    message: dict[str, Any] = field(default_factory=dict, repr=False)

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


def sent_blocks(message: dict[str, Any]) -> list[Block]:
    """The blocks as the provider receives them: summaries with Pi's wrapper text, custom and
    `!` bash messages as the user text convertToLlm makes of them."""
    if message.get("role") in ("compactionSummary", "branchSummary", "custom", "bashExecution"):
        converted = pi_context.convert_message(message)
        if converted is not None:
            return blocks(converted)
    return blocks(message)


def preview(message: dict[str, Any]) -> str:
    """One line of a message for the collapsed list (its first text, tool call or summary)."""
    if message.get("role") in ("compactionSummary", "branchSummary"):
        text = str(message.get("summary") or "")
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
