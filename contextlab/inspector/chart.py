"""The context growth chart: the size of every request along the active path, in each request's
dialect, from the tree index's per-entry estimates (``contextlab.pi.growth``), beside what the
provider reported for it."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from contextlab.inspector.selectors import SessionIndex, entries_by_id
from contextlab.inspector.services import DEFAULT_RESERVE_TOKENS, model_info, session_inputs
from contextlab.library.models import Session
from contextlab.pi import context as pi_context
from contextlab.pi import growth as pi_growth
from contextlab.pi import held as pi_held

__all__ = ["context_growth"]


def _growth_steps(
    session: Session, index: SessionIndex
) -> tuple[list[pi_growth.PathEntry], dict[str, dict[str, Any]]]:
    """The active path's entries as the engine's estimate needs them: the stored per-entry
    estimates, and in whole only the few entries Pi 1.x counts otherwise (system messages,
    compactions, context edits and their targets)."""
    path = index.path_ids
    items = index.items
    whole_ids = [i for i in path if pi_growth.needs_whole(items[i].type, items[i].role)]
    wholes = entries_by_id(session, index, whole_ids)
    targets = {
        i: target
        for i in whole_ids
        if (target := pi_growth.edit_target(wholes.get(i) or {})) in items
    }
    wholes.update(entries_by_id(session, index, [t for t in targets.values() if t not in wholes]))
    steps = [
        pi_growth.path_entry(
            entry_id,
            item.type,
            item.role,
            item.tokens,
            whole=wholes[entry_id],
            target=wholes.get(targets[entry_id]) if entry_id in targets else None,
        )
        if entry_id in wholes
        else pi_growth.PathEntry(entry_id, item.type, item.role, item.tokens)
        for entry_id in path
        for item in (items[entry_id],)
    ]
    return steps, wholes


def context_growth(session: Session, index: SessionIndex) -> dict[str, Any]:
    """Context size of every request along the active path: Pi's estimate of what was sent in
    the request's dialect and what the provider reported for it (input + cache tokens of the
    reply), compactions marked with their tokens before -> after.

    One pass over the path with per-entry estimates (the stored estimateTokens of each entry, the
    few entries Pi 1.x counts otherwise read whole) and the replies' usage from the index, so a
    20k-entry path costs no projection per request and a few queries.
    """
    path = index.path_ids
    points: list[dict[str, Any]] = []
    if not path:
        return {"points": points, "contextWindow": None, "reserveTokens": DEFAULT_RESERVE_TOKENS}
    inputs = session_inputs(session)
    steps, wholes = _growth_steps(session, index)
    dialects: list[dict[str, Any]] = []
    for estimate in pi_growth.request_estimates(steps, chosen=inputs.chosen):
        compaction = None
        if estimate.compaction is not None:
            compaction_id, after = estimate.compaction
            before = wholes.get(compaction_id, {}).get("tokensBefore") or 0
            compaction = {"id": compaction_id, "before": before, "after": after}
        choice = estimate.choice
        if choice is not None and (not dialects or dialects[-1]["reason"] != choice.reason):
            dialects.append(
                {"dialect": choice.dialect, "reason": choice.reason, "from": estimate.leaf}
            )
        points.append(
            {
                "leaf": estimate.leaf,
                "reply": estimate.reply,
                "estimate": estimate.tokens,
                "reported": (
                    index.reported.get(estimate.reply) if estimate.reply is not None else None
                ),
                "compaction": compaction,
                "dialect": choice.dialect if choice else None,
            }
        )
    # The model of the path's last request: the engine's rule, on the one entry that sets it.
    model = None
    setter = pi_held.last_model_setter(path, len(path), index.type_of, index.role_of)
    if setter is not None:
        state: list[Any] = ["off", None, None]
        pi_context.settings_step(entries_by_id(session, index, [path[setter]])[path[setter]], state)
        model = state[1]
    found = pi_context.model_for_transform(model, catalog_lookup=inputs.model_lookup())
    info = model_info(model, found)
    return {
        "points": points,
        "contextWindow": info.get("context_window"),
        "reserveTokens": DEFAULT_RESERVE_TOKENS,
        "model": f"{info.get('provider')}/{info.get('id')}" if info else None,
        # Which dialect each run of points is read in, and why.
        "dialects": dialects,
        # A point opens `{pageUrl}?entry=<leaf>&tab=context`.
        "pageUrl": reverse("inspector:session", args=[session.pk]),
    }
