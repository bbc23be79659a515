"""Compaction and branch-summary jobs: plan, create, run, cancel, retry; export back to Pi.

The parts, by responsibility:

- ``planning``: what the engine says Pi would do (``contextlab.pi.summaries``, in the session's
  dialect) against the model the job will call;
- ``lifecycle``: create (queued once the transaction commits), cancel, retry; navigation without
  a summary;
- ``running``: claim, lease, the model calls, and the one transaction that appends the entry;
- ``files``: the same run for a session file (the command line without ``--dry-run``);
- ``export``: the stored session as the JSONL file Pi opens;
- ``whatif``: where Pi would have auto-compacted.
"""

from contextlab.jobs.services.errors import JobConflict, JobError, RetryLater
from contextlab.jobs.services.export import session_export_chunks, session_export_filename
from contextlab.jobs.services.files import summarise_file_entries
from contextlab.jobs.services.lifecycle import (
    job_cancel,
    job_create,
    job_retry,
    session_continue_without_summary,
)
from contextlab.jobs.services.planning import (
    plan_branch_summary,
    plan_compaction,
    plan_entries,
    profile_dialect,
    summary_model,
)
from contextlab.jobs.services.running import (
    Summarised,
    internal_error_message,
    job_claim,
    job_execute,
    job_run,
    summarise_plan,
)
from contextlab.jobs.services.whatif import what_if_auto_compaction

__all__ = [
    "JobConflict",
    "JobError",
    "RetryLater",
    "Summarised",
    "internal_error_message",
    "job_cancel",
    "job_claim",
    "job_create",
    "job_execute",
    "job_retry",
    "job_run",
    "plan_branch_summary",
    "plan_compaction",
    "plan_entries",
    "profile_dialect",
    "session_continue_without_summary",
    "session_export_chunks",
    "session_export_filename",
    "summarise_file_entries",
    "summarise_plan",
    "summary_model",
    "what_if_auto_compaction",
]
