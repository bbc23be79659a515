"""What the engine says Pi would do for a job on a stored session: the summary plan in the
session's dialect (``contextlab.pi.summaries``), against the model the job will call.

The dialect is told per leaf (Pi 1.x once a persisted system message is on the path); a choice
(``chosen``: the ``--dialect`` values) overrides it.
"""

from __future__ import annotations

from collections.abc import Sequence

from contextlab.jobs.parameters import JobParameters
from contextlab.jobs.providers import ProviderConfig
from contextlab.jobs.services.errors import JobError
from contextlab.library.models import Session
from contextlab.library.selectors import engine_entries
from contextlab.pi import summaries
from contextlab.pi.entries import Json
from contextlab.pi.summaries import SummaryError, SummaryPlan

__all__ = [
    "plan_branch_summary",
    "plan_branch_summary_entries",
    "plan_compaction",
    "plan_compaction_entries",
    "profile_dialect",
    "summary_model",
]


def profile_dialect(session: Session) -> str | None:
    """The dialect a session's project chooses for its jobs (a value of the ``--dialect``
    choices), or None: detected per leaf. Resource profiles record no choice yet."""
    return None


def summary_model(config: ProviderConfig, params: JobParameters) -> Json:
    """The pi-ai model the job's summaries go to: the configured provider's, with the limits the
    user gave in place of its own."""
    limited = params.with_limits(config.context_window, config.max_tokens)
    return {
        **config.pi_model(),
        "contextWindow": limited.context_window,
        "maxTokens": limited.model_max_tokens,
    }


def _not_in(exc: SummaryError, name: str) -> JobError:
    return JobError(f"Entry {exc.entry_id} is not in session {name}")


def plan_compaction_entries(
    entries: Sequence[Json],
    leaf_id: str,
    params: JobParameters,
    config: ProviderConfig,
    name: str,
    *,
    chosen: str | None = None,
) -> SummaryPlan:
    """Pi's ``prepareCompaction`` + the request(s) ``compact`` would send, at ``leaf_id``."""
    try:
        return summaries.plan_compaction(
            entries,
            leaf_id,
            params.summary_options(),
            model=summary_model(config, params),
            chosen=chosen,
        )
    except SummaryError as exc:
        raise _not_in(exc, name) from None


def plan_compaction(
    session: Session,
    leaf_id: str,
    params: JobParameters,
    config: ProviderConfig,
    *,
    chosen: str | None = None,
) -> SummaryPlan:
    return plan_compaction_entries(
        engine_entries(session), leaf_id, params, config, session.session_id, chosen=chosen
    )


def plan_branch_summary_entries(
    entries: Sequence[Json],
    old_leaf: str,
    target: str,
    params: JobParameters,
    config: ProviderConfig,
    name: str,
    *,
    chosen: str | None = None,
) -> SummaryPlan:
    """Pi's ``navigateTree`` with a summary: entries to summarise, the request, the new leaf."""
    try:
        return summaries.plan_branch_summary(
            entries,
            old_leaf,
            target,
            params.summary_options(),
            model=summary_model(config, params),
            chosen=chosen,
        )
    except SummaryError as exc:
        raise _not_in(exc, name) from None


def plan_branch_summary(
    session: Session,
    old_leaf: str,
    target: str,
    params: JobParameters,
    config: ProviderConfig,
    *,
    chosen: str | None = None,
) -> SummaryPlan:
    return plan_branch_summary_entries(
        engine_entries(session), old_leaf, target, params, config, session.session_id, chosen=chosen
    )
