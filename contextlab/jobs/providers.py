"""The models that write summaries: OpenAI-compatible, Anthropic, or the offline summariser.

Configured from settings (read from the environment, see ``contextlab/settings.py``). The request
bodies and the usage of the replies are the engine's (``contextlab.pi.providers.summary``), so they
equal what Pi sends for the same preparation in the session's dialect (``variant``: the pi-ai 1.x
generation, None for Pi 0.80.2); the bodies are handed unchanged to the official SDKs. The offline
summariser needs no network: it fills Pi's summary sections deterministically from the
conversation and labels itself so the UI can say the summary is not a model's.

    config = active_provider()
    completion = complete(config, call.request, reasoning=call.thinking_level,
                          variant=call.variant)
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

# Celery's soft time limit (celery.exceptions re-exports it), without importing Celery.
from billiard.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from contextlab.pi.entries import Json
from contextlab.pi.providers.summary import (
    anthropic_usage,
    openai_usage,
    summary_betas,
    summary_request_body,
    usage_of,
)

logger = logging.getLogger(__name__)

ProviderKind = Literal["openai", "anthropic", "offline"]

OFFLINE_MODEL = "contextlab-offline-summariser"
# Pi's Anthropic client always asks for interleaved thinking unless the model thinks adaptively.
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
PI_ANTHROPIC_VERSION = "2023-06-01"  # what @anthropic-ai/sdk 0.91 (pi-ai 0.80.2's) sends


class ProviderError(Exception):
    """A summarisation call failed; ``retryable`` is true for 429, 5xx, timeouts and resets."""

    def __init__(self, message: str, *, retryable: bool = False, status: int | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.status = status


@dataclass(frozen=True)
class ProviderConfig:
    kind: ProviderKind
    model: str
    base_url: str = ""
    api_key: str = field(default="", repr=False)
    provider_name: str = ""
    context_window: int = 128000
    max_tokens: int = 16384
    reasoning: bool = False
    timeout: float = 120.0
    max_retries: int = 2
    cost_per_million: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)

    @property
    def is_offline(self) -> bool:
        return self.kind == "offline"

    @property
    def label(self) -> str:
        if self.is_offline:
            return "offline summariser (no model)"
        return f"{self.provider_name} · {self.model}"

    def pi_model(self) -> Json:
        """The pi-ai ``Model`` Pi would use for these settings (what the body ports read)."""
        api = {"openai": "openai-completions", "anthropic": "anthropic-messages"}.get(
            self.kind, "offline"
        )
        inp, out, cache_read, cache_write = self.cost_per_million
        return {
            "id": self.model,
            "name": self.model,
            "api": api,
            "provider": self.provider_name or self.kind,
            "baseUrl": self.base_url,
            "reasoning": self.reasoning,
            "input": ["text"],
            "cost": {
                "input": inp,
                "output": out,
                "cacheRead": cache_read,
                "cacheWrite": cache_write,
            },
            "contextWindow": self.context_window,
            "maxTokens": self.max_tokens,
        }

    def public(self) -> Json:
        """What the UI may show (never the key)."""
        return {
            "kind": self.kind,
            "label": self.label,
            "model": self.model,
            "baseUrl": self.base_url,
            "contextWindow": self.context_window,
            "maxTokens": self.max_tokens,
            "offline": self.is_offline,
            "hasKey": bool(self.api_key),
        }


def active_provider() -> ProviderConfig:
    return provider_from_settings(settings.CONTEXTLAB_LLM)


def provider_from_settings(conf: Json) -> ProviderConfig:
    kind = conf["provider"]
    common = {
        "timeout": conf["timeout"],
        "max_retries": conf["max_retries"],
    }
    if kind == "offline":
        return ProviderConfig(
            kind="offline", model=OFFLINE_MODEL, provider_name="offline", **common
        )
    section = conf[kind]
    return ProviderConfig(
        kind=kind,
        model=section["model"],
        base_url=section["base_url"],
        api_key=section["api_key"],
        provider_name=section["provider_name"],
        context_window=section["context_window"],
        max_tokens=section["max_tokens"],
        reasoning=section["reasoning"],
        cost_per_million=tuple(section["cost"]),
        **common,
    )


@dataclass
class Completion:
    """One summarisation answer, with everything the Job row records."""

    text: str
    stop_reason: str
    usage: Json
    request_body: Json
    response: Json
    error_message: str | None = None


# What a streaming call reports as it goes: ("sent", request bytes) once the body is on its way,
# then ("receiving", characters of text received so far) as the model streams.
OnStream = Callable[[str, int], None]


def complete(
    config: ProviderConfig,
    request: Json,
    *,
    reasoning: str | None = None,
    on_stream: OnStream | None = None,
    variant: str | None = None,
) -> Completion:
    """Send one summarisation request through the configured model's official SDK.

    ``reasoning`` is the summariser's thinking level (the body carries it only for a reasoning
    model), ``variant`` the pi-ai 1.x generation that shapes body and usage (None: Pi 0.80.2).
    A body larger than CONTEXTLAB_MAX_REQUEST_BYTES is not sent (ProviderError, not retryable).
    """
    if config.is_offline:
        raise ValueError("the offline summariser sends no HTTP request")
    body = summary_request_body(
        config.pi_model(), request, thinking_level=reasoning, variant=variant
    )
    size = len(json.dumps(body, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    limit = settings.CONTEXTLAB_MAX_REQUEST_BYTES
    if limit and size > limit:
        raise ProviderError(
            f"The request would be {size / 1e6:.1f} MB, over the limit of {limit / 1e6:.1f} MB "
            "(CONTEXTLAB_MAX_REQUEST_BYTES); nothing was sent. Compact a shorter part (a lower "
            "keep-recent setting does not help: pick an earlier entry) or raise the limit."
        )
    report = on_stream or (lambda _event, _amount: None)
    report("sent", size)
    if config.kind == "openai":
        return _complete_openai(config, body, report, variant)
    betas = summary_betas(config.pi_model(), reasoning, variant)
    return _complete_anthropic(config, body, report, variant, betas)


def _raise_for(exc: Exception, provider: str) -> None:
    import anthropic
    import openai

    if isinstance(exc, SoftTimeLimitExceeded):
        raise exc  # the job's time is up: not a provider failure (job_execute reports it)
    status = getattr(exc, "status_code", None)
    if isinstance(exc, openai.APITimeoutError | anthropic.APITimeoutError):
        raise ProviderError(f"{provider} did not answer in time ({exc})", retryable=True) from exc
    if isinstance(exc, openai.APIConnectionError | anthropic.APIConnectionError):
        raise ProviderError(f"Could not reach {provider}: {exc}", retryable=True) from exc
    if isinstance(exc, openai.APIStatusError | anthropic.APIStatusError):
        retryable = status == 429 or (status is not None and status >= 500)
        detail = _error_detail(exc)
        raise ProviderError(
            f"{provider} answered HTTP {status}: {detail}", retryable=retryable, status=status
        ) from exc
    # Anything else is a fault on this side (a reply the SDK could not read, a bug): its text
    # and type are for the worker's log, not for every viewer of the job.
    logger.error("request to %s failed unexpectedly", provider, exc_info=exc)
    raise ProviderError(
        f"The request to {provider} failed unexpectedly; the details are in the worker's log"
    ) from exc


def _error_detail(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return str(getattr(exc, "message", exc))


def _complete_openai(
    config: ProviderConfig, body: Json, report: OnStream, variant: str | None
) -> Completion:
    import openai

    client = openai.OpenAI(
        api_key=config.api_key or "not-needed",
        base_url=config.base_url,
        timeout=config.timeout,
        max_retries=config.max_retries,
    )
    texts: list[str] = []
    received = 0
    finish: str | None = None
    model = config.pi_model()
    usage = usage_of(model, input=0, output=0, variant=variant)
    try:
        # The SDK's generic POST sends the body as given: Pi's keys, in Pi's order (the typed
        # create() would re-order them and could not carry vendor keys like chat_template_kwargs).
        stream = client.post(
            "/chat/completions",
            body=body,
            cast_to=openai.types.chat.ChatCompletion,
            stream=True,
            stream_cls=openai.Stream[openai.types.chat.ChatCompletionChunk],
        )
        for chunk in stream:
            if chunk.usage is not None:
                usage = openai_usage(model, chunk.usage.model_dump(), variant)
            for choice in chunk.choices or []:
                if choice.delta is not None and choice.delta.content:
                    texts.append(choice.delta.content)
                    received += len(choice.delta.content)
                    report("receiving", received)
                if choice.finish_reason:
                    finish = choice.finish_reason
    except Exception as exc:
        _raise_for(exc, f"{config.provider_name} ({config.base_url})")
    stop = {"stop": "stop", "length": "length", "tool_calls": "toolUse"}.get(finish or "", "stop")
    if finish == "content_filter":
        return Completion(
            "",
            "error",
            usage,
            body,
            {"finish_reason": finish},
            "Provider finish_reason: content_filter",
        )
    text = "".join(texts)
    return Completion(
        text, stop, usage, body, {"finish_reason": finish, "text": text, "usage": usage}
    )


def _anthropic_client(config: ProviderConfig) -> Any:
    import anthropic

    return anthropic.Anthropic(
        api_key=config.api_key or None,
        base_url=config.base_url,
        timeout=config.timeout,
        max_retries=config.max_retries,
        # Pi's headers (pi-ai createClient with an API key): the key as x-api-key (this SDK would
        # send it as a bearer token), the API version Pi's SDK pins, Pi's beta flag.
        default_headers={
            "accept": "application/json",
            "anthropic-dangerous-direct-browser-access": "true",
            "anthropic-beta": INTERLEAVED_THINKING_BETA,
            "anthropic-version": PI_ANTHROPIC_VERSION,
            # Omit() removes the SDK's own header; its types say headers are str only.
            **(
                {"x-api-key": config.api_key, "Authorization": anthropic.Omit()}  # type: ignore[dict-item]
                if config.api_key
                else {}
            ),
        },
    )


def _complete_anthropic(
    config: ProviderConfig,
    body: Json,
    report: OnStream,
    variant: str | None,
    betas: list[str] | None = None,
) -> Completion:
    """``betas`` (pi-ai 1.x): the ``anthropic-beta`` features, sent as the SDK's
    ``beta.messages.create`` sends them (to ``?beta=true``; no header when there are none)."""
    import anthropic

    client = _anthropic_client(config)
    options: dict[str, Any] = {}
    if betas is not None:
        options = {
            "params": {"beta": "true"},
            "headers": {"anthropic-beta": ",".join(betas) if betas else anthropic.Omit()},
        }
    blocks: dict[int, str] = {}
    kinds: dict[int, str] = {}
    stop_reason: str | None = None
    received = 0
    # The reply's token counts by usage_of's names and the API's usage fields.
    fields = {
        "input": "input_tokens",
        "output": "output_tokens",
        "cache_read": "cache_read_input_tokens",
        "cache_write": "cache_creation_input_tokens",
    }
    counts = dict.fromkeys(fields, 0)
    # pi-ai records these too: 1h cache writes, and (1.x) the thinking tokens a delta reports.
    cache_write_1h = 0
    reasoning: int | None = None
    try:
        # The SDK's generic POST sends the body as given: Pi's keys, in Pi's order (the typed
        # create() would re-order them).
        stream = client.post(
            "/v1/messages",
            body=body,
            options=options,
            cast_to=anthropic.types.Message,
            stream=True,
            stream_cls=anthropic.Stream[anthropic.types.RawMessageStreamEvent],
        )
        for event in stream:
            if event.type == "message_start":
                u = event.message.usage
                counts = {name: getattr(u, field, 0) or 0 for name, field in fields.items()}
                cache_write_1h = _usage_field(u, "cache_creation", "ephemeral_1h_input_tokens") or 0
            elif event.type == "content_block_start":
                kinds[event.index] = event.content_block.type
                blocks[event.index] = ""
            elif event.type == "content_block_delta" and event.delta.type == "text_delta":
                blocks[event.index] = blocks.get(event.index, "") + event.delta.text
                received += len(event.delta.text)
                report("receiving", received)
            elif event.type == "message_delta":
                stop_reason = event.delta.stop_reason or stop_reason
                # Proxies may omit fields here; keep message_start's counts then.
                for name, field in fields.items():
                    if getattr(event.usage, field, None) is not None:
                        counts[name] = getattr(event.usage, field)
                long_write = _usage_field(
                    event.usage, "cache_creation", "ephemeral_1h_input_tokens"
                )
                if long_write is not None:
                    cache_write_1h = long_write
                thinking = _usage_field(event.usage, "output_tokens_details", "thinking_tokens")
                if thinking is not None:
                    reasoning = thinking
    except Exception as exc:
        _raise_for(exc, f"Anthropic ({config.base_url})")
    usage = anthropic_usage(
        config.pi_model(),
        **counts,
        cache_write_1h=cache_write_1h,
        reasoning=reasoning,
        variant=variant,
    )
    # Pi's pi-ai joins the summary from text blocks only, in block order.
    text = "\n".join(blocks[i] for i in sorted(blocks) if kinds.get(i) == "text")
    mapped = {
        "end_turn": "stop",
        "max_tokens": "length",
        "tool_use": "toolUse",
        "pause_turn": "stop",
        "stop_sequence": "stop",
    }
    if stop_reason in ("refusal", "sensitive"):
        return Completion(
            "",
            "error",
            usage,
            body,
            {"stop_reason": stop_reason},
            "The model refused to complete the request",
        )
    stop = mapped.get(stop_reason or "end_turn", "stop")
    return Completion(
        text, stop, usage, body, {"stop_reason": stop_reason, "text": text, "usage": usage}
    )


def _usage_field(usage: Any, group: str, name: str) -> Any:
    """``usage[group][name]`` of an Anthropic usage object (typed by the SDK or, for fields it
    does not know, a plain dict), None when absent."""
    part = getattr(usage, group, None)
    if isinstance(part, dict):
        return part.get(name)
    return getattr(part, name, None)


def provider_from_public(public: Json) -> ProviderConfig:
    """The configuration a job was created with: its kind and model, today's key and limits.

    Keys are never stored on the job, so the live settings supply them; if the settings now name
    another provider, the job is run with the one it was created for only when that one is still
    configured the same way, else the job fails with a clear message.
    """
    if public.get("offline") or public.get("kind") == "offline":
        return provider_from_settings({**settings.CONTEXTLAB_LLM, "provider": "offline"})
    conf = settings.CONTEXTLAB_LLM
    kind = public.get("kind")
    if kind not in ("openai", "anthropic"):
        raise ProviderError(f"Unknown provider kind {kind!r} on this job")
    config = provider_from_settings({**conf, "provider": kind})
    if public.get("model") and config.model != public["model"]:
        raise ProviderError(
            f"The job was created for model {public['model']} but {kind} is now configured with "
            f"{config.model}; retry the job to use the new model"
        )
    return config
