"""The non-dry-run path of ``manage.py compact`` and ``manage.py branch-summary``.

Given a stored session (its Pi session id, or ``pk:N``), the command runs a job to its end in
this process (the same job body a worker runs) and appends the entry to the stored session. Given
a session file, it calls the model the same way and prints the new JSONL line Pi would append; the
file itself is never written.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from contextlab.jobs import providers, services
from contextlab.jobs.models import Job
from contextlab.library.models import Session
from contextlab.pi.jsutil import json_stringify

Json = dict[str, Any]


def stored_session(arg: str) -> Session | None:
    """The stored session named by ``arg`` when ``arg`` is not a file: a Pi session id or pk:N."""
    if Path(arg).exists():
        return None
    if arg.startswith("pk:") and arg[3:].isdigit():
        return Session.objects.filter(pk=int(arg[3:])).first()
    return Session.objects.filter(session_id=arg).first()


def compaction_parameters(options: dict[str, Any]) -> Json:
    params: Json = {
        "reserveTokens": options["reserve_tokens"],
        "keepRecentTokens": options["keep_recent_tokens"],
    }
    if options.get("instructions"):
        params["customInstructions"] = options["instructions"]
    if options.get("model_max_tokens"):
        params["modelMaxTokens"] = options["model_max_tokens"]
    return params


def branch_parameters(options: dict[str, Any]) -> Json:
    params: Json = {"reserveTokens": options["reserve_tokens"]}
    if options.get("instructions"):
        params["customInstructions"] = options["instructions"]
        params["replaceInstructions"] = bool(options.get("replace_instructions"))
    if options.get("context_window"):
        params["contextWindow"] = options["context_window"]
    return params


def run_stored(
    session: Session, *, kind: str, leaf: str | None, target: str = "", parameters: Json
) -> Job:
    """Create the job and run it here, sleeping between retries as a worker would."""
    try:
        job = services.job_create(
            session=session,
            kind=kind,
            leaf_entry_id=leaf,
            target_entry_id=target,
            parameters=parameters,
            enqueue=False,
        )
    except services.JobError as exc:
        raise CommandError(f"{session.session_id}: {exc}") from exc
    while True:
        try:
            done = services.job_execute(job_id=job.pk)
        except services.RetryLater as later:
            time.sleep(later.countdown)
            continue
        if done is None:  # pragma: no cover - the job was created here; nobody else claims it
            raise CommandError(f"job #{job.pk} was claimed by another worker")
        if done.status != Job.Status.SUCCEEDED:
            raise CommandError(f"{session.session_id}: job #{done.pk} {done.status}: {done.error}")
        return done


def stored_result(job: Job) -> Json:
    return {
        "job": job.pk,
        "status": job.status,
        "entryIds": job.result_entry_ids,
        "provider": job.provider.get("label"),
        "offline": job.is_offline,
        "usage": job.usage,
    }


def run_file(
    source: str,
    entries: list[Json],
    *,
    kind: str,
    leaf: str,
    target: str = "",
    parameters: Json,
) -> str:
    """The JSONL line (without newline) Pi would append to the file after this summary."""
    try:
        entry, _ = services.summarise_file_entries(
            entries=entries,
            kind=kind,
            leaf_id=leaf,
            target_id=target,
            parameters=parameters,
            name=source,
        )
    except services.JobError as exc:
        raise CommandError(f"{source}: {exc}") from exc
    except providers.ProviderError as exc:
        raise CommandError(f"{source}: {exc}") from exc
    return json_stringify(entry)
