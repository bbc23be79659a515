"""Pi 0.73.x (npm @mariozechner/pi-coding-agent@0.73.1): markdown project context, no project
trust, the exploration guideline, the older summarisation system prompt, and a
``max_completion_tokens`` on every agent turn.

Everything else is Pi 0.80.2's: tests/conformance/test_pi_0_73.py proves that every other string
the extractor reads (tools/extract_pi_strings.mjs over the installed 0.73.1, kept as 0.73.1's row
of the release table, ``releases_data.py``) equals 0.80.2's, and rebuilds the requests the real
0.73.1 sent. Rules that are not strings (truncation line counting, user images in estimates,
summary budgets, overflow retry, branch re-chaining; docs/pi-dialects.md, "Pi 0.73.1") are not
carried here: the engine applies 0.80.2's.
"""

from __future__ import annotations

from dataclasses import replace

from contextlab.pi.dialects.pi_0_80 import PI_0_80, PROMPT_RULES_0_80
from contextlab.pi.dialects.release_table import ReleaseTexts
from contextlab.pi.providers.pi_ai import PI_AI_0_73
from contextlab.pi.request import PiRequest, RequestSteps

data = ReleaseTexts("0.73.1")

# The docs line 0.80 added ("When reading pi docs or examples, resolve docs/...").
_DOCS_LINE_ADDED_IN_0_80 = "- When reading pi docs or examples"

PROMPT_RULES_0_73 = replace(
    PROMPT_RULES_0_80,
    project_context_open=data.PROJECT_CONTEXT_HEADING + data.PROJECT_CONTEXT_PREAMBLE,
    project_context_file=data.PROJECT_CONTEXT_FILE.replace("{0}", "{path}").replace(
        "{1}", "{content}"
    ),
    project_context_close="",
    bash_with_explorers_guideline=data.BASH_WITH_EXPLORERS_GUIDELINE,
    docs_lines=tuple(
        line
        for line in PROMPT_RULES_0_80.docs_lines
        if not line.startswith(_DOCS_LINE_ADDED_IN_0_80)
    ),
    project_trust_gates_resources=False,
    trust_requiring_config_entries=(),
)

# pi-ai 0.73's streamSimple default (dist/providers/simple-options.js): every agent turn sends
# max_completion_tokens = min(model.maxTokens, 32000) when the model declares maxTokens.
AGENT_TURN_MAX_TOKENS_CAP = 32000


def agent_turn_max_tokens(model_max_tokens: int | float | None) -> int | None:
    """What pi-ai 0.73 sends as ``max_completion_tokens`` on an agent turn."""
    if not model_max_tokens or model_max_tokens <= 0:
        return None
    return int(min(model_max_tokens, AGENT_TURN_MAX_TOKENS_CAP))


class Pi073Steps(RequestSteps):
    """Pi 0.80's steps, and every agent turn capped at ``agent_turn_max_tokens``."""

    sends_max_tokens = True
    pi_ai = PI_AI_0_73

    def max_tokens(self, request: PiRequest) -> int | None:
        model = request.limits_model
        return agent_turn_max_tokens(model.get("maxTokens")) if model is not None else None


PI_0_73 = replace(
    PI_0_80,
    version="0.73.1",
    summarization_system_prompt=data.SUMMARIZATION_SYSTEM_PROMPT,
    tools=tuple(data.TOOLS),
    prompt=PROMPT_RULES_0_73,
    steps=Pi073Steps(),
)
