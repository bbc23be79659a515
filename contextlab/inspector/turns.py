"""The ``context`` command's object for one leaf: the engine's request of that turn, in its
dialect, with this machine's inputs (agent dir, files, time zone). ``manage.py context`` and the
API's ``GET /api/v1/sessions/{sessionId}/context`` both answer with it.

    result = context_json(parsed, tree, leaf_id=leaf, agent_dir=agent_dir)

The object's shape is the engine's (``PiRequest.cli_json``; docs/pi-engine.md, "The context
command"): Pi 0.x's ``{leafId, systemPrompt, layers, messages, sent, model, thinkingLevel}``, and
for a Pi 1.x turn ``{leafId, systemPrompt, tools, messages, sent, model, thinkingLevel,
maxTokens, dialect}`` followed by ``dialectSource``, ``promptSections`` and ``toolOrigins``.
"""

from __future__ import annotations

import os
import time
from typing import Any

from contextlab.pi.dialects import Dialect
from contextlab.pi.entries import Json
from contextlab.pi.models import find_model
from contextlab.pi.request import LimitOverrides, PromptSource
from contextlab.pi.resources import discover_resources
from contextlab.pi.session import SessionFile, SessionTree
from contextlab.pi.turn import build_turn

__all__ = ["context_json", "local_date"]


def local_date(ms: Any) -> str | None:
    """The day of ``ms`` in this process's time zone, as Pi's prompt prints it."""
    if ms is None:
        return None
    if hasattr(time, "tzset"):
        time.tzset()  # honour a TZ set after start-up, as Node reads it per call
    return time.strftime("%Y-%m-%d", time.localtime(ms / 1000))


def context_json(
    parsed: SessionFile,
    tree: SessionTree,
    *,
    leaf_id: str | None,
    agent_dir: str,
    pi_root: str | None = None,
    date: str | None = None,
    tools: list[str] | None = None,
    home: str | None = None,
    chosen: str | None = None,
    limits: LimitOverrides | None = None,
    fs: Any = None,
) -> Json:
    """The object for the turn at ``leaf_id``.

    ``agent_dir`` is Pi's agent dir (models.json, context files, skills),
    ``tools`` the active tools of a 0.x turn (None: the dialect's defaults), ``chosen`` a
    ``--dialect`` value (a 0.x object then also gets ``maxTokens``, ``dialect`` and
    ``dialectSource``), ``fs`` the file system resources and models.json are read from (None:
    this machine's, unrestricted, as for the command line's user).
    """
    models_dir = agent_dir if fs is None or fs.is_file(f"{agent_dir}/models.json") else None
    header = parsed.header or {}
    cwd = header.get("cwd") if isinstance(header.get("cwd"), str) else os.getcwd()

    def prompt_for(dialect: Dialect) -> PromptSource:
        resources = discover_resources(
            cwd=cwd, agent_dir=agent_dir, home=home, dialect=dialect, fs=fs
        )
        active = tools if tools is not None else list(dialect.default_active_tools)
        return PromptSource(
            cwd=cwd,
            resources=resources,
            tools=active,
            pi_root=pi_root,
            date=date,
            local_date=local_date,
        )

    request = build_turn(
        parsed.entries,
        leaf_id,
        by_id=tree.by_id,
        header=parsed.header,
        chosen=chosen,
        model_lookup=lambda provider, model_id: find_model(provider, model_id, models_dir),
        prompt_for=prompt_for,
        limits=limits,
    )
    result = request.cli_json(with_dialect=chosen is not None)
    result["leafId"] = leaf_id
    if request.choice is not None and request.choice.release is not None:
        # Which release wrote the turn: candidates told from the file, the one used, why.
        result["piRelease"] = request.choice.release.as_dict()
    return result
