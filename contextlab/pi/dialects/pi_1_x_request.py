"""Pi 1.x's steps of building a request, behind ``contextlab.pi.request.build_request``.

Pi 1.x (npm @earendil-works/pi-coding-agent@1.0.3 to 1.6.0; docs/pi-dialects.md) keeps its
prompt in the session: the request's system prompt and tool declarations are the replay of the
``system`` messages on the projected path, ``context_edit`` entries rewrite or omit messages, and
every agent turn carries pi-ai's ``max_completion_tokens`` clamp. The rules are ported in
``pi_1_x`` (projection, conversion), ``providers.options`` (the clamp) and the provider ports
(``providers.openai_completions``, ``providers.anthropic_messages``), which follow the pi-ai
generation (``providers.pi_ai.PiAi``) the steps carry; this module only plugs them into the one
request builder, so that the ``context`` command, the
inspector, the chart, the API and the jobs read a 1.x turn the same way.

    dialect = PI_1_X_VARIANTS["1.6"]
    request = build_request(entries, leaf_id, dialect=dialect, model_lookup=...)
    request.prompt.layers  # one per persisted part, each with the entry that last set it
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from contextlab.pi.context import SessionContext
from contextlab.pi.dialects import pi_1_x, pi_1_x_compaction
from contextlab.pi.dialects.base import Dialect
from contextlab.pi.entries import Json
from contextlab.pi.jsutil import json_stringify
from contextlab.pi.prompt import PromptLayer, SystemPrompt, estimate_tokens
from contextlab.pi.providers import anthropic_messages, openai_completions
from contextlab.pi.providers.pi_ai import VARIANTS, PiAi, resolve
from contextlab.pi.request import PiRequest, RequestSteps

__all__ = ["PI_1_X", "PI_1_X_VARIANTS", "Pi1xSteps", "content_layer_title", "dialect_for"]


def content_layer_title(name: str) -> str:
    """How a persisted part of the prompt is titled: its section name, or (name "") the content
    system messages append."""
    return name if name else "appended content"


class Pi1xSteps(RequestSteps):
    """Pi 1.x: ``buildSessionProjection`` + ``convertToLlm`` + the system replay; ``pi_ai`` is
    the pi-ai generation that shaped the body and the clamp (a ``PiAi``, or a name of
    ``providers.pi_ai.VARIANTS`` or a release)."""

    incremental = False  # iter_leaf_projections walks leaf by leaf (pi_1_x has its own walk)
    prompt_in_session = True
    sends_max_tokens = True

    def __init__(self, pi_ai: PiAi | str = "1.6") -> None:
        self.pi_ai = resolve(pi_ai)

    def session_context(self, path: list[Json], dialect: Dialect) -> SessionContext:
        projection = pi_1_x.projection_of_path(path)
        owners = [entry for entry, messages in projection.entries for _ in messages]
        return SessionContext(
            projection.messages, projection.thinking_level, projection.model, owners, projection
        )

    def llm_messages(self, messages: list[Json], dialect: Dialect) -> list[Json]:
        return pi_1_x.convert_to_llm(messages)

    def sent_messages(
        self, messages: list[Json], model: Json, now_ms: Any, dialect: Dialect
    ) -> list[Json]:
        return pi_1_x.sent_messages(messages, model, self.pi_ai)

    def estimate_tokens(self, message: Json) -> int | float:
        """Pi 1.x's compaction estimate: system messages count their sections and tools."""
        return pi_1_x_compaction.estimate_tokens(message)

    def context_estimate(self, request: PiRequest) -> int | float:
        """``estimateProjectedContextTokens``: the last valid usage plus what follows, unless a
        context edit or compaction came after it (then the replayed prompt and every message)."""
        return pi_1_x_compaction.estimate_projected_context_tokens(
            _projection(request), request.path
        )

    def anthropic_body(self, request: PiRequest, model: Json) -> str | None:
        """The anthropic-messages body of the turn: the transcript (prompt and tools as its
        system messages), the thinking level as ``reasoning``, the session id, and pi-ai's clamp
        of the model's ``maxTokens`` (again after a thinking budget is added)."""
        context, options = self._anthropic_call(request)
        window = int(model.get("contextWindow") or 0)
        estimate = pi_1_x.estimate_context_tokens(request.messages, self.pi_ai)
        body = anthropic_messages.build_simple_params(
            model,
            context,
            options,
            pi_ai=self.pi_ai,
            clamp_to_context=lambda cap: pi_1_x.clamp_max_tokens(window, cap, estimate, self.pi_ai),
        )
        return json_stringify(body)

    def _anthropic_call(self, request: PiRequest) -> tuple[Json, Json]:
        """The coding agent's ``streamSimple`` call for a turn (pi-agent-core's agent loop):
        ``{messages}`` with the system messages in place, ``reasoning`` unless off, the session
        id; pi-ai adds ``maxTokens`` (the clamp, ``max_tokens``)."""
        thinking = request.thinking_level
        options: Json = {
            "maxTokens": request.max_tokens,
            "reasoning": thinking if isinstance(thinking, str) and thinking != "off" else None,
            "sessionId": request.session_id,
        }
        return {"messages": request.messages}, options

    def session_prompt(self, request: PiRequest) -> None:
        projection = _projection(request)
        head = pi_1_x.current_system_message(request.messages)
        text = pi_1_x.system_message_text(head) if head is not None else ""
        layers = tuple(
            PromptLayer(
                part.name,
                content_layer_title(part.name),
                part.text,
                (f"entry {part.entry_id}",),
                estimate_tokens(part.text),
                entry_id=part.entry_id,
            )
            for part in pi_1_x.prompt_sections(projection)
        )
        request.prompt = SystemPrompt(text, layers)
        request.tools = pi_1_x.current_tools(request.messages)
        request.tool_origins = pi_1_x.tool_origins(projection)

    def max_tokens(self, request: PiRequest) -> int | None:
        model = request.limits_model
        if model is None:
            return None
        return pi_1_x.clamp_max_tokens(
            int(model.get("contextWindow") or 0),
            int(model.get("maxTokens") or 0),
            pi_1_x.estimate_context_tokens(request.messages, self.pi_ai),
            self.pi_ai,
        )

    def request_body(self, request: PiRequest, model: Json) -> str:
        thinking = request.thinking_level
        options = openai_completions.simple_options(
            model,
            reasoning=thinking if isinstance(thinking, str) and thinking != "off" else None,
            max_tokens=request.max_tokens,
            session_id=request.session_id,
            pi_ai=self.pi_ai,
        )
        return openai_completions.build_request_body(
            model, {"messages": request.messages}, options, pi_ai=self.pi_ai
        )

    def cli_json(self, request: PiRequest, *, with_dialect: bool) -> Json:
        """Pi 1.x's ``context`` object (docs/pi-engine.md, "The context command")."""
        choice = request.choice
        return {
            "leafId": request.leaf_id,
            "systemPrompt": request.prompt.text if request.prompt else "",
            "tools": [
                {
                    "name": t.get("name"),
                    "description": t.get("description"),
                    "parameters": t.get("parameters"),
                }
                for t in request.tools
            ],
            "messages": [pi_1_x.message_for_display(m) for m in request.messages],
            "sent": request.sent,
            "model": request.context.model,
            "thinkingLevel": request.thinking_level,
            "maxTokens": request.max_tokens,
            "dialect": "1.x",
            "dialectSource": choice.as_dict() if choice else None,
            # Where each part of the prompt and each tool was last set.
            "promptSections": [
                {"name": layer.name, "entryId": layer.entry_id}
                for layer in (request.prompt.layers if request.prompt else ())
            ],
            "toolOrigins": request.tool_origins,
        }


def _projection(request: PiRequest) -> pi_1_x.Projection:
    projection = request.context.projection
    if isinstance(projection, pi_1_x.Projection):
        return projection
    return pi_1_x.projection_of_path(request.path)


def dialect_for(pi_ai: PiAi | str) -> Dialect:
    """The 1.x dialect whose requests follow the pi-ai generation ``pi_ai`` (a ``PiAi``, a
    variant name or a release)."""
    generation = resolve(pi_ai)
    return replace(pi_1_x.TEXTS_1X, version=f"{generation.name}.x", steps=Pi1xSteps(generation))


# One dialect per pi-ai generation a user may choose; "1.6" is Pi 1.6.0's.
PI_1_X_VARIANTS: dict[str, Dialect] = {name: dialect_for(name) for name in VARIANTS}
PI_1_X = PI_1_X_VARIANTS["1.6"]
