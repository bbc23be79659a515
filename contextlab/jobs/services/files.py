"""A summary for a session *file* (not stored): what ``manage.py compact`` and
``branch-summary`` print without ``--dry-run``. Same plan, same model calls and same joining as a
job; nothing is written."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.utils import timezone

from contextlab.jobs import providers
from contextlab.jobs.parameters import JobParameters
from contextlab.jobs.services.errors import JobError
from contextlab.jobs.services.planning import plan_entries
from contextlab.jobs.services.running import Summarised, summarise_plan
from contextlab.pi.entries import Json
from contextlab.pi.summaries import build_entry

__all__ = ["summarise_file_entries"]


def summarise_file_entries(
    *,
    entries: Sequence[Json],
    kind: str,
    leaf_id: str,
    target_id: str = "",
    parameters: JobParameters | None = None,
    chosen: str | None = None,
    name: str = "<file>",
    config: providers.ProviderConfig | None = None,
    now: datetime | None = None,
) -> tuple[Json, Summarised]:
    """The entry Pi would append to the file after this summary, in the leaf's dialect
    (``chosen``: a ``--dialect`` value overrides it): keys in Pi's order, a fresh id unique in
    the file, for the caller to print as one JSONL line.

    Raises JobError with Pi's message when there is nothing to do or Pi would refuse a reply,
    ProviderError when the model fails.
    """
    config = config or providers.active_provider()
    params = parameters or JobParameters()
    plan = plan_entries(
        kind, entries, leaf_id, params, config, name, target=target_id, chosen=chosen
    )
    if plan.nothing:
        raise JobError(plan.nothing)
    outcome = summarise_plan(plan, config)
    assert outcome is not None
    if outcome.error:
        raise JobError(outcome.error)
    existing = {str(e.get("id")) for e in entries}
    entry = build_entry(
        plan,
        existing,
        now or timezone.now(),
        outcome.summary,
        outcome.details,
        usage=outcome.entry_usage,
    )
    return entry, outcome
