"""What the engine says Pi would do for a job on a stored session: the summary plan in the
session's dialect (``contextlab.pi.summaries``), against the model the job will call.

The dialect is told per leaf (Pi 1.x once a persisted system message is on the path); a choice
(``chosen``: the ``--dialect`` values) overrides it.
"""

from __future__ import annotations

from collections.abc import Sequence

from contextlab.inspector.models import ResourceProfile
from contextlab.jobs.models import Job
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
    "plan_compaction",
    "plan_entries",
    "profile_dialect",
    "summary_model",
]


def profile_dialect(session: Session) -> str | None:
    """The dialect a session's project chooses in its resource profile (a value of the
    ``--dialect`` choices), or None: detected per leaf, as the inspector does."""
    chosen = (
        ResourceProfile.objects.filter(project_id=session.project_id)
        .values_list("dialect", flat=True)
        .first()
    )
    return chosen or None


def summary_model(config: ProviderConfig, params: JobParameters) -> Json:
    """The pi-ai model the job's summaries go to: the configured provider's, with the limits the
    user gave in place of its own."""
    limited = params.with_limits(config.context_window, config.max_tokens)
    return {
        **config.pi_model(),
        "contextWindow": limited.context_window,
        "maxTokens": limited.model_max_tokens,
    }


def plan_entries(
    kind: str,
    entries: Sequence[Json],
    leaf_id: str,
    params: JobParameters,
    config: ProviderConfig,
    name: str,
    *,
    target: str = "",
    chosen: str | None = None,
) -> SummaryPlan:
    """The plan of a ``compaction`` at ``leaf_id`` (Pi's ``prepareCompaction`` + the requests
    ``compact`` would send) or of a ``branch_summary`` leaving ``leaf_id`` for ``target`` (Pi's
    ``navigateTree`` with a summary: the entries, the request, the new leaf); ``name`` names the
    session in errors."""
    options, model = params.summary_options(), summary_model(config, params)
    try:
        if kind == Job.Kind.COMPACTION:
            return summaries.plan_compaction(entries, leaf_id, options, model=model, chosen=chosen)
        return summaries.plan_branch_summary(
            entries, leaf_id, target, options, model=model, chosen=chosen
        )
    except SummaryError as exc:
        raise JobError(f"Entry {exc.entry_id} is not in session {name}") from None


def plan_compaction(
    session: Session,
    leaf_id: str,
    params: JobParameters,
    config: ProviderConfig,
    *,
    chosen: str | None = None,
) -> SummaryPlan:
    return plan_entries(
        Job.Kind.COMPACTION,
        engine_entries(session),
        leaf_id,
        params,
        config,
        session.session_id,
        chosen=chosen,
    )


def plan_branch_summary(
    session: Session,
    old_leaf: str,
    target: str,
    params: JobParameters,
    config: ProviderConfig,
    *,
    chosen: str | None = None,
) -> SummaryPlan:
    return plan_entries(
        Job.Kind.BRANCH_SUMMARY,
        engine_entries(session),
        old_leaf,
        params,
        config,
        session.session_id,
        target=target,
        chosen=chosen,
    )
