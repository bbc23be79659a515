"""The request Pi sent (or would send) at a leaf: the one builder every caller uses.

``build_request`` answers, for one leaf of a session, everything that went to the model: the
dialect, the AgentMessages ``buildSessionContext`` projects (with the entry each came from),
their ``convertToLlm`` form, what pi-ai's ``transformMessages`` hands the provider for the
leaf's model, that model and its limits, the thinking level, the time of the request, the
built-in tools and (given where to find its resources) the system prompt with its layers. The
``context`` command, the inspector and the differential suite call it; the benchmark walks every
leaf with ``iter_leaf_projections`` (below), the chart adds up per-entry estimates with
``contextlab.pi.growth.request_estimates``; see docs/pi-engine.md, "The request at a leaf".

The steps that differ between Pi versions (how the context is projected, converted and
transformed, how the system prompt is assembled, what the provider's HTTP body holds) are
methods of ``RequestSteps``; a dialect whose Pi does otherwise carries a subclass in
``Dialect.steps``. Pi 0.80's steps are the defaults.

``iter_leaf_projections`` gives the same answer for every entry as leaf in one depth-first walk,
sharing the work of a parent with its children (Pi re-walks the whole path for each leaf); it
does so for the default steps and falls back to ``build_request`` per leaf for any other.

Request time: Pi stamps synthetic tool results with ``Date.now()`` when it sends the request;
the closest deterministic stand-in is the newest valid timestamp on the path (walking back from
the leaf), else the header's (``request_time_ms``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from contextlab.pi.context import (
    OrphanTracker,
    SessionContext,
    context_of_path,
    convert_message,
    convert_to_llm,
    first_pass,
    latest_timestamp,
    messages_for_path,
    model_for_transform,
    session_path,
    settings_step,
    transform_messages,
)
from contextlab.pi.dialects import DEFAULT_DIALECT, Dialect
from contextlab.pi.dialects.detect import DialectChoice
from contextlab.pi.entries import Json, message_of_entry
from contextlab.pi.jsutil import (
    JsonPieces,
    entry_date_ms,
    entry_time_ms,
    json_stringify,
)
from contextlab.pi.prompt import SystemPrompt, active_tool_names, build_system_prompt
from contextlab.pi.providers import anthropic_messages, openai_completions
from contextlab.pi.providers.pi_ai import PI_AI_0_80, PiAi
from contextlab.pi.resources import PromptResources
from contextlab.pi.session import SessionTree
from contextlab.pi.tokens import estimate_context_tokens, estimate_tokens

__all__ = [
    "LeafProjection",
    "LimitOverrides",
    "ModelLimits",
    "ModelLookup",
    "PiRequest",
    "PromptSource",
    "RequestSteps",
    "TurnParts",
    "build_prompt",
    "build_request",
    "iter_leaf_projections",
    "limits_model",
    "request_time_ms",
    "steps_of",
    "with_prompt",
]

# `(provider, modelId) -> pi-ai model or None`: models.json then pi-ai's catalog, as the caller
# knows them (contextlab.pi.models.find_model with the agent dir).
ModelLookup = Callable[[Any, Any], Json | None]
_LAST: Any = object()  # leaf omitted: the last entry, as buildSessionContext


@dataclass(frozen=True)
class PromptSource:
    """Where the system prompt's parts come from on this machine (Pi 0.80 builds it afresh).

    ``date`` is the prompt's ``YYYY-MM-DD``; when None, ``local_date(request time)`` gives it
    (the caller's time zone: the engine reads neither the clock nor the environment).
    """

    cwd: str
    resources: PromptResources
    tools: Sequence[str] | None = None
    pi_root: str | None = None
    date: str | None = None
    local_date: Callable[[Any], str | None] | None = None


@dataclass(frozen=True)
class ModelLimits:
    context_window: int | None
    max_tokens: int | None
    # The model is not in models.json nor in pi-ai's catalog: api and input are guessed.
    assumed: bool

    @classmethod
    def of(cls, model: Json) -> ModelLimits:
        return cls(model.get("contextWindow"), model.get("maxTokens"), bool(model.get("assumed")))


@dataclass(frozen=True)
class LimitOverrides:
    """The model's limits as the caller gives them (the ``context`` command's
    ``--context-window`` / ``--model-max-tokens``): they override models.json and the catalog,
    and stand in for a model neither knows (both needed then)."""

    context_window: int | None = None
    max_tokens: int | None = None


def limits_model(model: Json, overrides: LimitOverrides | None = None) -> Json | None:
    """``model`` (as ``model_for_transform`` resolved it) with its limits, or None when they
    are unknown: an assumed model has none unless the caller gives both."""
    context_window = overrides.context_window if overrides else None
    max_tokens = overrides.max_tokens if overrides else None
    if model.get("assumed"):
        if context_window is None or max_tokens is None or model.get("id") is None:
            return None
        found = dict(model)
        found.setdefault("baseUrl", "")
    else:
        found = dict(model)
    if context_window is not None:
        found["contextWindow"] = context_window
    if max_tokens is not None:
        found["maxTokens"] = max_tokens
    return found


@dataclass
class PiRequest:
    dialect: Dialect
    leaf_id: str | None
    path: list[Json]
    context: SessionContext  # AgentMessages, thinking level, {provider, modelId}, owners
    messages: list[Json]  # convertToLlm
    model: Json  # the pi-ai model the transform ran for
    sent: list[Json]  # transformMessages: what the provider receives
    request_time_ms: Any
    prompt: SystemPrompt | None = None
    prompt_date: str | None = None
    # The active tools' definitions: Pi 0.x's built-in ones named by the prompt source; Pi 1.x's
    # as its system messages declared them.
    tools: list[Json] = field(default_factory=list)
    # The model with its limits (context window, maxTokens; the caller's overrides applied), or
    # None when neither models.json, the catalog nor the caller knows them.
    limits_model: Json | None = None
    # What the request carried as its output cap (``max_completion_tokens``; None: none sent, or
    # the limits it depends on are unknown).
    max_tokens: int | None = None
    # Which Pi dialect built it and why (``contextlab.pi.turn.build_turn`` sets it).
    choice: DialectChoice | None = None
    # Pi 1.x: tool name -> the entry whose system message last declared it.
    tool_origins: dict[Any, Any] = field(default_factory=dict)
    session_id: str | None = None

    @property
    def agent_messages(self) -> list[Json]:
        return self.context.messages

    @property
    def owners(self) -> list[Json]:
        """The entry each AgentMessage came from (the compaction entry for its summary)."""
        return self.context.owners

    @property
    def thinking_level(self) -> Any:
        return self.context.thinking_level

    @property
    def synthetic_results(self) -> int:
        """How many tool results ``transformMessages`` made up for calls left without one."""
        text = self.dialect.message_texts.no_result_text
        return sum(
            1
            for m in self.sent
            if m.get("role") == "toolResult"
            and m.get("isError") is True
            and m.get("content") == [{"type": "text", "text": text}]
        )

    @property
    def limits(self) -> ModelLimits:
        return ModelLimits.of(self.model)

    @property
    def sendable(self) -> bool:
        """Whether Pi sends a request that ends like this one: its last message is a user
        message or a tool result (after an assistant message the next user message comes
        first)."""
        return bool(self.sent) and self.sent[-1].get("role") in ("user", "toolResult")

    @property
    def max_tokens_unknown(self) -> bool:
        """Whether the dialect sends an output cap that follows the model's limits, and those
        are unknown (``max_tokens`` None then says nothing about what was sent)."""
        return (
            self.max_tokens is None
            and self.limits_model is None
            and steps_of(self.dialect).sends_max_tokens
        )

    def context_estimate(self) -> int | float:
        """Pi's own estimate of this context's size (what its auto-compaction compares with the
        window), in the dialect."""
        return steps_of(self.dialect).context_estimate(self)

    def _provider_model(self, model: Json | None) -> Json:
        if model is not None:
            return model
        return self.limits_model if self.limits_model is not None else self.model

    def chat_completions_body(self, model: Json | None = None) -> str:
        """What an openai-completions provider receives for this request (``model``: the
        provider's model, default the one with the request's limits, else the one the
        transform ran for)."""
        return steps_of(self.dialect).request_body(self, self._provider_model(model))

    def provider_body(self, model: Json | None = None) -> str | None:
        """The HTTP body the provider of ``model``'s api receives for this request (as
        ``chat_completions_body``), as pi-ai's ``JSON.stringify`` writes it; None for an api
        (or a dialect's api) the engine has no port of."""
        model = self._provider_model(model)
        steps = steps_of(self.dialect)
        api = model.get("api")
        if api == "openai-completions":
            return steps.request_body(self, model)
        if api == "anthropic-messages":
            return steps.anthropic_body(self, model)
        return None

    def anthropic_max_tokens(self, model: Json | None = None) -> int | None:
        """The ``max_tokens`` of the anthropic-messages body (``provider_body``), without
        converting and writing out the messages: pi-ai takes the cap from the model and the
        options only (a clamp to the context window is the caller's, already in
        ``max_tokens``), so the body of the same request with no messages carries the same one
        (tests/pi/test_anthropic_max_tokens.py holds it to the whole body on every corpus).
        None for another api. Steps that build the body their own way are asked for it whole."""
        model = self._provider_model(model)
        if model.get("api") != "anthropic-messages":
            return None
        steps = steps_of(self.dialect)
        own = type(steps)
        if (
            own.anthropic_body is not RequestSteps.anthropic_body
            or own.anthropic_params is not RequestSteps.anthropic_params
        ):
            body = steps.anthropic_body(self, model)
            value = json.loads(body).get("max_tokens") if body is not None else None
        else:
            value = steps.anthropic_params(replace(self, sent=[]), model).get("max_tokens")
        return value if isinstance(value, int) else None

    def provider_body_chunks(self, model: Json | None = None) -> Iterable[str] | None:
        """``provider_body`` in pieces whose concatenation is the same text (a message each),
        so a request of thousands of messages is written out without its whole text held;
        None where ``provider_body`` is None. Steps that build the body their own way (they
        override ``request_body``, ``chat_completions_body`` or ``anthropic_body``) give their
        text as one piece."""
        model = self._provider_model(model)
        steps = steps_of(self.dialect)
        api = model.get("api")
        params: Json | None
        if api == "openai-completions":
            own = type(steps)
            if (
                own.request_body is not RequestSteps.request_body
                or own.chat_completions_body is not RequestSteps.chat_completions_body
            ):
                return (steps.request_body(self, model),)
            params = steps.request_params(self, model)
        elif api == "anthropic-messages":
            if type(steps).anthropic_body is not RequestSteps.anthropic_body:
                body = steps.anthropic_body(self, model)
                return None if body is None else (body,)
            params = steps.anthropic_params(self, model)
        else:
            return None
        return JsonPieces(params, depth=2)

    def provider_target(self, model: Json | None = None) -> tuple[str, dict[str, str]] | None:
        """Where ``provider_body`` goes under the model's ``baseUrl`` and the API headers that
        shape it besides the key (``anthropic-version``, ``anthropic-beta``); None for an api
        the engine has no port of."""
        model = self._provider_model(model)
        api = model.get("api")
        if api == "openai-completions":
            return "/chat/completions", {}
        if api == "anthropic-messages":
            path, betas = steps_of(self.dialect).anthropic_target(self, model)
            headers = {"anthropic-version": "2023-06-01"}
            if betas:
                headers["anthropic-beta"] = ",".join(betas)
            return path, headers
        return None

    def cli_json(self, *, with_dialect: bool = False) -> Json:
        """The ``context`` command's object (docs/pi-engine.md, "The context command"), in the
        dialect's shape; ``with_dialect``: a 0.x object also gets ``maxTokens``, ``dialect`` and
        ``dialectSource`` after its usual keys (a 1.x object always has them)."""
        return steps_of(self.dialect).cli_json(self, with_dialect=with_dialect)


@dataclass(frozen=True)
class TurnParts:
    """What an agent turn's chat-completions body is made of, as its steps take it."""

    system_prompt: str | None
    messages: list[Json]
    tools: Sequence[Json]
    thinking_level: Any
    dialect: Dialect
    max_tokens: int | None = None


def _turn_parts(request: PiRequest) -> TurnParts:
    return TurnParts(
        system_prompt=request.prompt.text if request.prompt else None,
        messages=request.sent,
        tools=request.tools,
        thinking_level=request.thinking_level,
        dialect=request.dialect,
        max_tokens=request.max_tokens,
    )


class RequestSteps:
    """Pi 0.80's steps of building a request; a dialect whose Pi differs overrides some.

    ``incremental``: whether ``iter_leaf_projections`` may share work along the tree with its
    own copy of these rules (true only for these steps, unchanged).
    """

    incremental = True
    # The pi-ai generation whose provider rules shape the body (``providers.pi_ai``).
    pi_ai: PiAi = PI_AI_0_80
    # Whether the prompt and tools are read from the session (Pi 1.x) rather than rebuilt from
    # the resources of the machine Pi ran on (Pi 0.x: a ``PromptSource``).
    prompt_in_session = False

    def session_context(self, path: list[Json], dialect: Dialect) -> SessionContext:
        return context_of_path(path)

    def llm_messages(self, messages: list[Json], dialect: Dialect) -> list[Json]:
        return convert_to_llm(messages, dialect)

    def sent_messages(
        self, messages: list[Json], model: Json, now_ms: Any, dialect: Dialect
    ) -> list[Json]:
        return transform_messages(messages, model, now_ms=now_ms, dialect=dialect)

    def system_prompt(
        self, source: PromptSource, path: list[Json], date: str, dialect: Dialect
    ) -> SystemPrompt:
        """Pi 0.80 rebuilds the prompt from the resources on disk (nothing is in the session)."""
        return build_system_prompt(
            cwd=source.cwd,
            date=date,
            pi_root=source.pi_root,
            tools=list(source.tools) if source.tools is not None else None,
            resources=source.resources,
            dialect=dialect,
        )

    # Whether an agent turn's max_completion_tokens follows the model's limits (Pi 0.80 sends
    # none).
    sends_max_tokens = False

    def estimate_tokens(self, message: Json) -> int | float:
        """The coding agent's per-message ``estimateTokens`` (what compaction counts)."""
        return estimate_tokens(message)

    def context_estimate(self, request: PiRequest) -> int | float:
        """``estimateContextTokens``: the last valid assistant usage plus the estimates of the
        messages after it (without one, every message's estimate)."""
        return estimate_context_tokens(request.agent_messages).tokens

    def session_prompt(self, request: PiRequest) -> None:
        """Set the request's prompt, tools and their origins from what the session itself holds
        (dialects with ``prompt_in_session``)."""

    def max_tokens(self, request: PiRequest) -> int | None:
        """The agent turn's ``max_completion_tokens``: Pi 0.80 sends none."""
        return None

    def request_body(self, request: PiRequest, model: Json) -> str:
        """The chat-completions body of ``request`` for ``model`` (through
        ``chat_completions_body``, the step a dialect overrides to shape it)."""
        return self.chat_completions_body(model, _turn_parts(request))

    def request_params(self, request: PiRequest, model: Json) -> Json:
        """``request_body`` before it is written out (the object pi-ai stringifies)."""
        return self.chat_completions_params(model, _turn_parts(request))

    def anthropic_body(self, request: PiRequest, model: Json) -> str | None:
        """The body pi-ai's anthropic-messages provider sends for an agent turn (``streamSimple``
        with the thinking level as ``reasoning`` and the dialect's ``max_tokens``)."""
        return json_stringify(self.anthropic_params(request, model))

    def anthropic_params(self, request: PiRequest, model: Json) -> Json:
        """``anthropic_body`` before it is written out (the object pi-ai stringifies)."""
        context, options = self._anthropic_call(request)
        return anthropic_messages.build_simple_params(model, context, options, pi_ai=self.pi_ai)

    def anthropic_target(self, request: PiRequest, model: Json) -> tuple[str, list[str]]:
        """Where the agent turn's anthropic-messages body goes (path) and its ``anthropic-beta``
        features."""
        context, options = self._anthropic_call(request)
        return anthropic_messages.simple_request_target(model, context, options, pi_ai=self.pi_ai)

    def _anthropic_call(self, request: PiRequest) -> tuple[Json, Json]:
        """The context and ``streamSimple`` options the coding agent passes for a turn."""
        context = {
            "systemPrompt": request.prompt.text if request.prompt else "",
            "messages": request.sent,
            "tools": _declared(request.tools),
        }
        options = {"reasoning": _reasoning(request.thinking_level), "maxTokens": request.max_tokens}
        return context, options

    def chat_completions_body(self, model: Json, parts: TurnParts) -> str:
        """The HTTP body pi-ai's openai-completions provider sends for an agent turn, as the
        coding agent calls ``streamSimple``: the thinking level as the reasoning effort, the
        dialect's ``max_tokens`` (Pi 0.80: none), the tools' name, description and parameters."""
        return json_stringify(self.chat_completions_params(model, parts))

    def chat_completions_params(self, model: Json, parts: TurnParts) -> Json:
        """``chat_completions_body`` before it is written out (the object pi-ai stringifies)."""
        context = {
            "systemPrompt": parts.system_prompt,
            "messages": parts.messages,
            "tools": _declared(parts.tools),
        }
        options = openai_completions.simple_options(
            model,
            reasoning=_reasoning(parts.thinking_level),
            max_tokens=parts.max_tokens,
            pi_ai=self.pi_ai,
        )
        return openai_completions.build_params(model, context, options, pi_ai=self.pi_ai)

    def cli_json(self, request: PiRequest, *, with_dialect: bool) -> Json:
        """Pi 0.x's ``context`` object: the prompt by layer, the messages, what was sent, the
        tools."""
        out: Json = {
            "leafId": request.leaf_id,
            "systemPrompt": request.prompt.text if request.prompt else None,
            "layers": [layer.as_dict() for layer in request.prompt.layers]
            if request.prompt
            else [],
            "messages": request.messages,
            "sent": request.sent,
            "model": request.context.model,
            "thinkingLevel": request.context.thinking_level,
            # The tools declared with the prompt (the active set's definitions; a captured
            # request's own), as in a 1.x object.
            "tools": _declared(request.tools),
        }
        if with_dialect:
            out["maxTokens"] = request.max_tokens
            out["dialect"] = request.choice.dialect if request.choice else None
            out["dialectSource"] = request.choice.as_dict() if request.choice else None
        return out


def _reasoning(thinking_level: Any) -> str | None:
    """The coding agent's ``reasoning`` option for a thinking level (none when off)."""
    return None if thinking_level in (None, "off") else str(thinking_level)


def _declared(tools: Sequence[Json]) -> list[Json]:
    """The tool definitions as the agent hands them to pi-ai: name, description, parameters."""
    return [
        {"name": t["name"], "description": t["description"], "parameters": t["parameters"]}
        for t in tools
    ]


DEFAULT_STEPS = RequestSteps()


def steps_of(dialect: Dialect) -> RequestSteps:
    return dialect.steps if dialect.steps is not None else DEFAULT_STEPS


def request_time_ms(path: Sequence[Json], header: Json | None = None) -> Any:
    """When the request after the path's last entry was made: the newest valid timestamp on
    the path, walking back from the leaf, else the header's; None when nothing says."""
    for entry in reversed(path):
        stamp = entry_date_ms(entry)
        if stamp is not None:
            return stamp
    if header is not None and "timestamp" in header:
        return entry_time_ms(header.get("timestamp"))
    return None


def build_prompt(
    source: PromptSource,
    *,
    date: str,
    path: Sequence[Json] = (),
    dialect: Dialect = DEFAULT_DIALECT,
) -> SystemPrompt:
    """The system prompt the dialect's Pi used for a request at the end of ``path`` (the step
    ``build_request`` takes, for callers that need only the prompt)."""
    return steps_of(dialect).system_prompt(source, list(path), date, dialect)


def _tool_definitions(dialect: Dialect, names: Sequence[str] | None) -> list[Json]:
    active = active_tool_names(names, dialect=dialect)
    return [tool for name in active for tool in (dialect.tool(name),) if tool is not None]


def build_request(
    entries: Sequence[Json],
    leaf_id: Any = _LAST,
    *,
    by_id: dict[str, Json] | None = None,
    header: Json | None = None,
    dialect: Dialect = DEFAULT_DIALECT,
    model_lookup: ModelLookup | None = None,
    now_ms: Any = _LAST,
    prompt: PromptSource | None = None,
    limits: LimitOverrides | None = None,
    path: list[Json] | None = None,
) -> PiRequest:
    """The request Pi sent (or would send) with ``leaf_id`` as leaf (``path``: its path, when
    the caller walked it already: ``session_path(entries, leaf_id, by_id)``, not changed here).

    1. The path root -> leaf, as ``buildSessionContext`` walks it (``leaf_id=None``: empty; an
       omitted or unknown leaf: the last entry).
    2. The dialect's projection of the path: AgentMessages, thinking level, model, owners.
    3. ``convertToLlm``; the pi-ai model for the context's ``{provider, modelId}``
       (``model_lookup``, else pi-ai's catalog; unknown: assumed, flagged).
    4. ``transformMessages`` for that model, synthetic results stamped with ``now_ms`` (default:
       ``request_time_ms``).
    5. The system prompt and the tools: read from the session where the dialect keeps them
       there (Pi 1.x); else, given a ``prompt`` source, rebuilt (dated ``source.date`` or the
       local date of the request time) with the active built-in tools' definitions.
    6. The model's limits (``limits`` override them) and the output cap the dialect sends.
    """
    steps = steps_of(dialect)
    if path is None:
        path = session_path(entries, leaf_id, by_id)
    context = steps.session_context(path, dialect)
    messages = steps.llm_messages(context.messages, dialect)
    model = model_for_transform(
        context.model, messages=context.messages, catalog_lookup=model_lookup
    )
    when = request_time_ms(path, header) if now_ms is _LAST else now_ms
    sent = steps.sent_messages(messages, model, when, dialect)
    request = PiRequest(
        dialect=dialect,
        leaf_id=path[-1].get("id") if path else None,
        path=path,
        context=context,
        messages=messages,
        model=model,
        sent=sent,
        request_time_ms=when,
        limits_model=limits_model(model, limits),
        session_id=_session_id(header),
    )
    if steps.prompt_in_session:
        steps.session_prompt(request)
    elif prompt is not None:
        _prompt_step(request, prompt)
    request.max_tokens = steps.max_tokens(request)
    return request


def _prompt_step(request: PiRequest, source: PromptSource) -> None:
    date = source.date
    if date is None and source.local_date is not None:
        date = source.local_date(request.request_time_ms)
    request.prompt_date = date or ""
    request.prompt = build_prompt(
        source, date=request.prompt_date, path=request.path, dialect=request.dialect
    )
    request.tools = _tool_definitions(request.dialect, source.tools)


def with_prompt(request: PiRequest, source: PromptSource | None) -> PiRequest:
    """A copy of ``request`` (built without a prompt source) with the prompt step of
    ``build_request`` done for ``source``: for a caller that keeps a leaf's request and reads
    the resources afresh. A dialect that keeps the prompt in the session has it already: the
    copy is the same request."""
    out = replace(request)
    steps = steps_of(request.dialect)
    if steps.prompt_in_session or source is None:
        return out
    _prompt_step(out, source)
    out.max_tokens = steps.max_tokens(out)
    return out


def _session_id(header: Json | None) -> str | None:
    value = header.get("id") if header else None
    return value if isinstance(value, str) else None


# --------------------------------------------------------------------------------------------
# Every entry as leaf, sharing work along the tree
# --------------------------------------------------------------------------------------------


@dataclass
class LeafProjection:
    """``build_request`` at one leaf, without the prompt: context, LLM messages, what is sent."""

    leaf_id: str
    context: SessionContext
    llm: list[Json]
    sent: list[Json] | None
    request_time_ms: Any = None


class _Frame:
    """Projection state after one path entry; a child starts from a copy of its parent's."""

    __slots__ = (
        "latest",
        "llm",
        "model_key",
        "owners",
        "raw",
        "request_ms",
        "state",
        "tracker",
        "transform_model",
    )

    def __init__(self) -> None:
        self.state: list[Any] = ["off", None, None]
        self.raw: list[Json] = []
        self.owners: list[Json] = []
        self.llm: list[Json] = []
        self.tracker: OrphanTracker | None = None
        self.model_key: Any = _LAST
        self.transform_model: Json | None = None
        self.request_ms: Any = None
        self.latest: Any = None  # newest timestamp among `llm` (transformMessages' fallback)


def _model_key(model: Json | None) -> Any:
    return None if model is None else (model.get("provider"), model.get("modelId"))


def iter_leaf_projections(
    entries: list[Json],
    *,
    tree: SessionTree | None = None,
    header: Json | None = None,
    with_sent: bool = True,
    with_owners: bool = False,
    now_ms: Any = None,
    dialect: Dialect = DEFAULT_DIALECT,
    catalog_lookup: ModelLookup | None = None,
) -> Iterator[LeafProjection]:
    """``build_request`` for every entry as the leaf (without the prompt), in one walk.

    Yields, for each entry reachable from a root (depth first, Pi's child order), the same
    context, LLM messages and (``with_sent``) sent messages as ``build_request(entries,
    entry_id)`` (the contexts' ``owners`` only ``with_owners``: copying them costs a third more).
    Synthetic tool results are stamped with ``now_ms``, or (None) each leaf's
    ``request_time_ms``.

    1. A child starts from a copy of its parent's state and appends its own message (converted
       once per entry, transformed once per entry and model).
    2. A compaction rebuilds the messages from the path (as Pi does for every leaf).
    3. A change of the transform's model re-runs the transform over the leaf's messages.
    """
    tree = tree or SessionTree(entries)
    if not steps_of(dialect).incremental:
        yield from _per_leaf(entries, tree, header, with_sent, now_ms, dialect, catalog_lookup)
        return
    walk = _Walk(dialect, catalog_lookup, with_sent, now_ms, header, with_owners)
    stack: list[tuple[str, _Frame | None, int]] = [(r, None, 0) for r in reversed(tree.roots)]
    while stack:
        entry_id, parent_frame, depth = stack.pop()
        del walk.path[depth:]
        entry = tree.by_id[entry_id]
        walk.path.append(entry)
        frame = walk.step(parent_frame, entry)
        sent = walk.sent_of(frame) if with_sent else None
        context = SessionContext(
            list(frame.raw), frame.state[0], frame.state[1], list(frame.owners)
        )
        yield LeafProjection(entry_id, context, list(frame.llm), sent, walk.now_of(frame))
        for child in reversed(tree.children(entry_id)):
            stack.append((child, frame, depth + 1))


def _per_leaf(
    entries: list[Json],
    tree: SessionTree,
    header: Json | None,
    with_sent: bool,
    now_ms: Any,
    dialect: Dialect,
    catalog_lookup: ModelLookup | None,
) -> Iterator[LeafProjection]:
    for entry_id, _ in tree.walk():
        request = build_request(
            entries,
            entry_id,
            by_id=tree.by_id,
            header=header,
            dialect=dialect,
            model_lookup=catalog_lookup,
            now_ms=_LAST if now_ms is None else now_ms,
        )
        sent = request.sent if with_sent else None
        yield LeafProjection(
            entry_id, request.context, request.messages, sent, request.request_time_ms
        )


class _Walk:
    """The shared state of one ``iter_leaf_projections`` walk: caches keyed by object identity
    (the objects are kept alive so the ids stay valid) and the current path."""

    def __init__(
        self,
        dialect: Dialect,
        catalog_lookup: ModelLookup | None,
        with_sent: bool,
        now_ms: Any,
        header: Json | None,
        with_owners: bool,
    ) -> None:
        self.dialect = dialect
        self.with_owners = with_owners
        self.catalog_lookup = catalog_lookup
        self.with_sent = with_sent
        self.now_ms = now_ms
        self.header_ms = request_time_ms((), header)
        self.converted: dict[int, Json | None] = {}
        self.transformed: dict[tuple[int, int], Json] = {}
        self.emitted: dict[int, Json | None] = {}
        self.keep_alive: list[Any] = []
        self.path: list[Json] = []

    def message_of(self, entry: Json) -> Json | None:
        key = id(entry)
        if key not in self.emitted:
            self.emitted[key] = message_of_entry(entry, "context")
        return self.emitted[key]

    def convert(self, message: Json) -> Json | None:
        key = id(message)
        if key not in self.converted:
            self.keep_alive.append(message)
            self.converted[key] = convert_message(message, self.dialect)
        return self.converted[key]

    def first_pass(self, message: Json, frame: _Frame) -> Json:
        model = frame.transform_model
        assert model is not None
        key = (id(message), id(model))
        out = self.transformed.get(key)
        if out is None:
            supports_images = "image" in (model.get("input") or [])
            out = first_pass(message, model, supports_images, self.dialect)
            self.transformed[key] = out
        return out

    def now_of(self, frame: _Frame) -> Any:
        if self.now_ms is not None:
            return self.now_ms
        return frame.request_ms if frame.request_ms is not None else frame.latest

    def step(self, parent: _Frame | None, entry: Json) -> _Frame:
        frame = _Frame()
        if parent is not None:
            frame.state = list(parent.state)
            frame.model_key = parent.model_key
            frame.transform_model = parent.transform_model
        if self.now_ms is None:  # each leaf's own request time
            stamp = entry_date_ms(entry)
            if stamp is None:
                stamp = parent.request_ms if parent is not None else self.header_ms
            frame.request_ms = stamp
        previous_compaction = frame.state[2]
        settings_step(entry, frame.state)
        message = self.message_of(entry)
        rebuilt = frame.state[2] is not previous_compaction
        if rebuilt:
            frame.raw, owners = messages_for_path(self.path, frame.state[2])
            if self.with_owners:
                frame.owners = owners
            self.keep_alive.append(frame.raw)
            frame.llm = [c for m in frame.raw for c in (self.convert(m),) if c is not None]
            if self.now_ms is None:
                frame.latest = latest_timestamp(frame.llm)
        else:
            frame.raw = list(parent.raw) if parent is not None else []
            frame.llm = list(parent.llm) if parent is not None else []
            if self.with_owners:
                frame.owners = list(parent.owners) if parent is not None else []
            frame.latest = parent.latest if parent is not None else None
            if message is not None:
                frame.raw.append(message)
                if self.with_owners:
                    frame.owners.append(entry)
                converted_message = self.convert(message)
                if converted_message is not None:
                    frame.llm.append(converted_message)
                    if self.now_ms is None:
                        self._newer(frame, converted_message)
        if self.with_sent:
            self._share_tracker(parent, frame, message, rebuilt)
        return frame

    @staticmethod
    def _newer(frame: _Frame, message: Json) -> None:
        newest = latest_timestamp((message,))
        if newest is not None and (frame.latest is None or newest > frame.latest):
            frame.latest = newest

    def _share_tracker(
        self, parent: _Frame | None, frame: _Frame, message: Json | None, rebuilt: bool
    ) -> None:
        key = _model_key(frame.state[1])
        assumed = frame.transform_model is not None and frame.transform_model.get("assumed")
        if (
            key != frame.model_key
            or frame.transform_model is None
            or (
                # An assumed model takes its api from the context's messages: follow them.
                assumed
                and (rebuilt or (isinstance(message, dict) and message.get("role") == "assistant"))
            )
        ):
            resolved = model_for_transform(
                frame.state[1], messages=frame.raw, catalog_lookup=self.catalog_lookup
            )
            if resolved != frame.transform_model:
                frame.model_key = key
                frame.transform_model = resolved
                self.keep_alive.append(resolved)
                return  # tracker rebuilt lazily for the new model
        if rebuilt or parent is None or parent.tracker is None:
            return
        if message is not None and frame.llm and frame.llm[-1] is self.convert(message):
            tracker = parent.tracker.copy()
            tracker.push(self.first_pass(frame.llm[-1], frame))
            frame.tracker = tracker
        else:
            frame.tracker = parent.tracker

    def sent_of(self, frame: _Frame) -> list[Json]:
        if frame.tracker is None:
            tracker = OrphanTracker(self.dialect.message_texts.no_result_text)
            for message in frame.llm:
                tracker.push(self.first_pass(message, frame))
            frame.tracker = tracker
        return frame.tracker.finish(self.now_of(frame))
