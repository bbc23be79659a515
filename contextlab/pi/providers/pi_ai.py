"""Which pi-ai rules shaped a request: one ``PiAi`` per range of releases whose provider rules
are the same, oldest first (``GENERATIONS``).

pi-ai (npm ``@mariozechner/pi-ai`` up to 0.73, ``@earendil-works/pi-ai`` after) is released in
lockstep with the coding agent, under the same version numbers. Its request bodies changed in
small steps; the provider ports (``openai_completions``, ``anthropic_messages``), the summary call
(``summary``) and pi-ai's ``maxTokens`` clamp (``options``) take a ``PiAi`` and follow its fields.
Each field names the pi-ai dist file it follows and the first release checked to have it (the
releases between the last one checked without it and that one were not read: they are assumed
to follow the older rule until the matrix says otherwise).

Callers pass the object, or a name ``resolve`` understands: a 1.x variant of the ``--dialect``
choice (``"1.0"``, ``"1.3"``, ``"1.5"``, ``"1.6"``), a release (``"0.84.4"``), or None for the
0.80.2 rules (the engine's original port)::

    pi_ai = pi_ai_for_release("0.84.4")   # the generation 0.84.4 belongs to
    body = openai_completions.build_request_body(model, context, options, pi_ai=pi_ai)

MIT licence, (c) Mario Zechner / Earendil Works, for the rules this module names.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

__all__ = [
    "GENERATIONS",
    "PI_AI_0_73",
    "PI_AI_0_80",
    "PI_AI_1_6",
    "VARIANTS",
    "PiAi",
    "pi_ai_for_release",
    "release_key",
    "resolve",
]


@dataclass(frozen=True)
class PiAi:
    """The provider rules of pi-ai from release ``first`` to the next generation's ``first``."""

    name: str
    first: str
    # --- dist/api/simple-options.js ``buildBaseOptions`` / ``clampMaxTokensToContext`` --------
    # An agent turn's ``maxTokens``: "none" (0.76 to 0.80.2: the caller's, none), "cap"
    # (``min(model.maxTokens, 32000)``, up to 0.75), "clamp" (the model's cap clamped to the room
    # left in the window, 0.80.3 on).
    # "model" (the model's maxTokens uncapped: 0.74.1 and 0.74.2, read in their dist by the
    # release table, ``RULES.turnMaxTokens``).
    turn_max_tokens: Literal["none", "cap", "model", "clamp"] = "none"
    # The clamp's safety margin: "fixed" 4096, or "ratio" max(4096, 15 % of the input) unless
    # that leaves under 32768 (1.5.0 on).
    clamp_margin: Literal["fixed", "ratio"] = "fixed"
    # dist/utils/estimate.js ``CHARS_PER_TOKEN``: 4 (to 1.0.3), 3.5 (1.3.0 on); kept doubled so
    # the estimate stays in integers.
    chars_per_token_x2: int = 8
    # --- dist/models.js ``getSupportedThinkingLevels``: "max" from 0.80.6 ---------------------
    thinking_levels: tuple[str, ...] = ("off", "minimal", "low", "medium", "high", "xhigh")
    # --- dist/utils/transcript.js: the prompt and tools travel as system messages (0.87.0 on) --
    transcript: bool = False
    # --- dist/api/transform-messages.js: thinking of another model sent as text (to 1.0.3) or
    # dropped (1.3.0 on; the 0.x transform is contextlab.pi.context's) ------------------------
    foreign_thinking_as_text: bool = True
    # --- dist/api/openai-completions.js -----------------------------------------------------
    # ``detectCompat``'s developer role: "standard" (every standard host, OpenRouter included;
    # to 0.78), "openrouter-models" (standard hosts but OpenRouter, and OpenRouter's anthropic/
    # and openai/ models; 0.79.0 to 1.5.2), "openai" (OpenAI's own API only; 1.6.0).
    developer_role: Literal["standard", "openrouter-models", "openai"] = "openrouter-models"
    # A tool result without text: "image-note" ("(see attached image)" always, to 0.80.3),
    # "empty" ("(no tool output)" when it has no image; 0.80.6), "blank" (also when its text
    # is only whitespace; 1.4.0).
    empty_tool_result: Literal["image-note", "empty", "blank"] = "image-note"
    # z.ai's enabled thinking carries ``clear_thinking: false`` (0.80.3).
    zai_clear_thinking: bool = False
    # DeepSeek (any case of its host) and z.ai hosts take ``max_tokens`` (0.84.4).
    deepseek_zai_max_tokens: bool = False
    # Reasoning details: "tool-calls" (every parsed tool-call ``thoughtSignature``; to 0.82.1)
    # or "validated" (OpenAI reasoning details, checked, and the raw reasoning field only
    # without them; 0.84.4).
    reasoning_details: Literal["tool-calls", "validated"] = "tool-calls"
    # Pipe-separated tool-call ids keep their item id (shortHash when too long), and a tool
    # result may carry OpenRouter's Anthropic cache marker (0.82.1).
    combined_tool_call_ids: bool = False
    # Sampling parameters from the model: "none", "model" (``samplingParams``; 0.84.4),
    # "by-level" (also ``samplingParamsByThinkingLevel``; 1.0.3).
    sampling: Literal["none", "model", "by-level"] = "none"
    # Empty text parts of a user message are left out (0.87.1).
    drops_empty_user_text: bool = False
    # ``tools: []`` whenever the history holds tool calls and no tool is declared: "always",
    # or only with ``compat.requiresToolsWithToolHistory`` (1.5.2), which also brings
    # ``requiresNonNullAssistantContent``.
    tools_with_tool_history: Literal["always", "compat"] = "always"
    # ``supportsStrictMode`` detected (0.x: not for a few hosts; Cerebras too in 0.86.1) or false
    # unless set (0.87.1). It sends ``constrainedSampling`` tools strict
    # (``providers.constrained_sampling``).
    strict_mode_detected: bool = True
    strict_mode_not_cerebras: bool = False
    # --- dist/api/anthropic-messages.js ----------------------------------------------------
    # The SDK's ``beta.messages.create`` to ``/v1/messages?beta=true`` with ``getBetaFeatures``
    # (interleaved thinking only with thinking on; mid-conversation effort, fallbacks), from
    # 0.85.1; before, ``/v1/messages`` with the client's ``anthropic-beta`` header (interleaved
    # thinking always unless adaptive).
    anthropic_beta_endpoint: bool = False
    # A thinking block with empty text but a signature is replayed (0.84.4; before: dropped).
    anthropic_signed_empty_thinking: bool = False
    # ``compat.supportsMidConvoEffort`` models: effort markers even with thinking off (1.0.3; from
    # 1.3.0 thinking off sends ``thinking: disabled`` only), and the top-level effort: "high"
    # (to 1.3.0) or "low" (1.5.2).
    anthropic_effort_when_off: bool = True
    anthropic_top_effort: Literal["high", "low"] = "high"
    # Later system messages (mid-conversation models) wait for the next assistant message that
    # sends something (1.5.2; before, for the next assistant message).
    anthropic_holds_updates_past_empty_replies: bool = False
    # An error tool result's images follow the turn's results, captioned (1.3.0).
    anthropic_split_error_images: bool = False
    # ``input_schema`` keeps ``$defs`` / ``definitions`` (1.3.0) and ``additionalProperties``
    # (1.6.0).
    anthropic_schema_defs: bool = False
    anthropic_schema_additional_properties: bool = False
    # Message threads (``thread`` in the body, the threads beta) by default: never, for provider
    # "anthropic" on api.anthropic.com (1.5.2), or for any provider there (1.6.0).
    anthropic_message_threads: Literal["none", "anthropic-provider", "anthropic-host"] = "none"
    # --- pi-coding-agent dist/core/compaction/*.js: the summary call (released with pi-ai) ----
    # A summary's own ``maxTokens``: "budget" (0.8 x reserve, 0.5 for a turn prefix, capped by
    # model.maxTokens; branch summaries 4096 in 1.x; then pi-ai's clamp; to 1.3.0), or "none"
    # (1.4.0: the clamp only).
    summary_max_tokens: Literal["budget", "none"] = "budget"
    # ``serializeConversation`` writes ``[Assistant thinking]`` (to 1.0.3; 1.3.0 omits it).
    summary_serialises_thinking: bool = True
    # The turn-prefix prompt carries ``Additional focus: <instructions>`` (1.4.0).
    turn_prefix_focus: bool = False
    # Branch summaries apply context edits and pass the thinking level as reasoning (1.5.2).
    branch_summary_edits: bool = False
    # A tool result cut for a summary is cut on a code point boundary (``sliceHead``, 1.5.2;
    # before, ``text.slice`` could split a surrogate pair).
    summary_slice_head: bool = False

    def before(self, other: PiAi) -> bool:
        """Whether this generation is older than ``other``."""
        return release_key(self.first) < release_key(other.first)


def release_key(version: str) -> tuple[int, ...]:
    """``"0.80.10"`` -> ``(0, 80, 10)``, for ordering releases; ``ValueError`` for another
    shape."""
    parts = version.split(".")
    if len(parts) != 3 or not all(part.isdigit() for part in parts):
        raise ValueError(f"not a release number: {version!r} (expected X.Y.Z)")
    return tuple(int(part) for part in parts)


# Each generation is the one before it with what changed, in release order.
PI_AI_0_73 = PiAi("0.73", "0.70.0", turn_max_tokens="cap", developer_role="standard")
PI_AI_0_76 = replace(PI_AI_0_73, name="0.76", first="0.76.0", turn_max_tokens="none")
PI_AI_0_80 = replace(PI_AI_0_76, name="0.80", first="0.79.0", developer_role="openrouter-models")
PI_AI_0_80_3 = replace(
    PI_AI_0_80, name="0.80.3", first="0.80.3", turn_max_tokens="clamp", zai_clear_thinking=True
)
PI_AI_0_80_6 = replace(
    PI_AI_0_80_3,
    name="0.80.6",
    first="0.80.6",
    empty_tool_result="empty",
    thinking_levels=(*PI_AI_0_80_3.thinking_levels, "max"),
)
PI_AI_0_82 = replace(PI_AI_0_80_6, name="0.82", first="0.82.1", combined_tool_call_ids=True)
PI_AI_0_84 = replace(
    PI_AI_0_82,
    name="0.84",
    first="0.84.4",
    deepseek_zai_max_tokens=True,
    reasoning_details="validated",
    sampling="model",
    anthropic_signed_empty_thinking=True,
)
PI_AI_0_85 = replace(PI_AI_0_84, name="0.85", first="0.85.1", anthropic_beta_endpoint=True)
# 0.86.1 already persists its prompt: dist/utils/transcript.js, with 0.85's message conversion and
# strict tools still detected (dist/api/openai-completions.js ``detectCompat``).
PI_AI_0_86 = replace(
    PI_AI_0_85, name="0.86", first="0.86.1", transcript=True, strict_mode_not_cerebras=True
)
PI_AI_0_87 = replace(
    PI_AI_0_86,
    name="0.87",
    first="0.87.0",
    drops_empty_user_text=True,
    strict_mode_detected=False,
)
PI_AI_1_0 = replace(PI_AI_0_87, name="1.0", first="1.0.3", sampling="by-level")
PI_AI_1_3 = replace(
    PI_AI_1_0,
    name="1.3",
    first="1.3.0",
    chars_per_token_x2=7,
    foreign_thinking_as_text=False,
    summary_serialises_thinking=False,
    anthropic_effort_when_off=False,
    anthropic_split_error_images=True,
    anthropic_schema_defs=True,
)
PI_AI_1_4 = replace(
    PI_AI_1_3,
    name="1.4",
    first="1.4.0",
    empty_tool_result="blank",
    summary_max_tokens="none",
    turn_prefix_focus=True,
)
PI_AI_1_5 = replace(
    PI_AI_1_4,
    name="1.5",
    first="1.5.0",
    clamp_margin="ratio",
    tools_with_tool_history="compat",
    branch_summary_edits=True,
    summary_slice_head=True,
    anthropic_top_effort="low",
    anthropic_holds_updates_past_empty_replies=True,
    anthropic_message_threads="anthropic-provider",
)
PI_AI_1_6 = replace(
    PI_AI_1_5,
    name="1.6",
    first="1.6.0",
    developer_role="openai",
    anthropic_schema_additional_properties=True,
    anthropic_message_threads="anthropic-host",
)

GENERATIONS: tuple[PiAi, ...] = (
    PI_AI_0_73,
    PI_AI_0_76,
    PI_AI_0_80,
    PI_AI_0_80_3,
    PI_AI_0_80_6,
    PI_AI_0_82,
    PI_AI_0_84,
    PI_AI_0_85,
    PI_AI_0_86,
    PI_AI_0_87,
    PI_AI_1_0,
    PI_AI_1_3,
    PI_AI_1_4,
    PI_AI_1_5,
    PI_AI_1_6,
)

# The 1.x generations a user may choose by name (``--dialect 1.0`` ...), oldest first.
VARIANTS: dict[str, PiAi] = {
    "1.0": PI_AI_1_0,
    "1.3": PI_AI_1_3,
    "1.5": PI_AI_1_5,
    "1.6": PI_AI_1_6,
}


def pi_ai_for_release(version: str) -> PiAi:
    """The generation whose range holds release ``version`` (X.Y.Z)."""
    key = release_key(version)
    found = GENERATIONS[0]
    for generation in GENERATIONS:
        if release_key(generation.first) <= key:
            found = generation
    return found


def resolve(pi_ai: PiAi | str | None) -> PiAi:
    """A ``PiAi`` from what a caller passed: the object, a variant name, a release, or None
    (0.80.2's rules)."""
    if isinstance(pi_ai, PiAi):
        return pi_ai
    if pi_ai is None:
        return PI_AI_0_80
    if pi_ai in VARIANTS:
        return VARIANTS[pi_ai]
    return pi_ai_for_release(pi_ai)
