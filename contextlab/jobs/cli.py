"""What ``manage.py compact`` and ``manage.py branch-summary`` do, with and without ``--dry-run``.

Both ask the engine (``contextlab.pi.summaries``) in the dialect of the leaf's turn. With
``--dry-run`` they print its plan for a session file. Without it, given a stored session (its Pi
session id, or ``pk:N``), the command runs a job to its end in this process (the same job body a
worker runs) and appends the entry to the stored session; given a session file, it calls the
model the same way and prints the new JSONL line Pi would append; the file itself is never
written.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError, CommandParser

from contextlab.jobs import providers, services
from contextlab.jobs.models import Job
from contextlab.jobs.parameters import JobParameters
from contextlab.library.models import Session
from contextlab.pi import compaction, summaries
from contextlab.pi.dialects.detect import CHOICES, DialectChoice, detect_turn_dialect
from contextlab.pi.dialects.release_table import release_argument
from contextlab.pi.entries import Json
from contextlab.pi.jsutil import json_stringify
from contextlab.pi.models import find_model
from contextlab.pi.request import LimitOverrides
from contextlab.pi.session import SessionFile, SessionTree
from contextlab.pi.summaries import SummaryPlan


def stored_session(arg: str) -> Session | None:
    """The stored session named by ``arg`` when ``arg`` is not a file: a Pi session id or pk:N."""
    if Path(arg).exists():
        return None
    if arg.startswith("pk:") and arg[3:].isdigit():
        return Session.objects.filter(pk=int(arg[3:])).first()
    return Session.objects.filter(session_id=arg).first()


def compaction_parameters(options: dict[str, Any]) -> JobParameters:
    """The job's parameters from ``compact``'s options (a limit of 0: not given)."""
    return JobParameters(
        keep_recent_tokens=options["keep_recent_tokens"],
        reserve_tokens=options["reserve_tokens"],
        custom_instructions=options.get("instructions") or "",
        context_window=options.get("context_window") or None,
        model_max_tokens=options.get("model_max_tokens") or None,
    )


def branch_parameters(options: dict[str, Any]) -> JobParameters:
    """The job's parameters from ``branch-summary``'s options (a limit of 0: not given)."""
    instructions = options.get("instructions") or ""
    return JobParameters(
        reserve_tokens=options["reserve_tokens"],
        custom_instructions=instructions,
        replace_instructions=bool(options.get("replace_instructions")) if instructions else None,
        context_window=options.get("context_window") or None,
        model_max_tokens=options.get("model_max_tokens") or None,
    )


def run_stored(
    session: Session,
    *,
    kind: str,
    leaf: str | None,
    target: str = "",
    parameters: JobParameters,
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
    entries: Sequence[Json],
    *,
    kind: str,
    leaf: str,
    target: str = "",
    parameters: JobParameters,
    chosen: str | None = None,
) -> str:
    """The JSONL line (without newline) Pi would append to the file after this summary, in the
    leaf's dialect (``chosen``: the ``--dialect`` option)."""
    try:
        entry, _ = services.summarise_file_entries(
            entries=entries,
            kind=kind,
            leaf_id=leaf,
            target_id=target,
            parameters=parameters,
            chosen=chosen,
            name=source,
        )
    except services.JobError as exc:
        raise CommandError(f"{source}: {exc}") from exc
    except providers.ProviderError as exc:
        raise CommandError(f"{source}: {exc}") from exc
    return json_stringify(entry)


# --------------------------------------------------------------------------------------------
# --dry-run: the engine's plan as the commands print it
# --------------------------------------------------------------------------------------------


def non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(text)
    return value


def add_summary_arguments(parser: CommandParser) -> None:
    """The options ``compact`` and ``branch-summary`` share after their limits: the dialect or
    release of the turn, the agent dir of the models, ``--dry-run`` and ``--json``."""
    parser.add_argument(
        "--dialect",
        choices=CHOICES,
        help="the Pi version (default: detected; 0.80 for 0.x turns)",
    )
    parser.add_argument(
        "--pi-version",
        type=release_argument,
        help="the Pi release X.Y.Z that sent the turn (default: told from the file)",
    )
    parser.add_argument(
        "--agent-dir", help="Pi's agent dir for models.json (default: $PI_CODING_AGENT_DIR)"
    )
    parser.add_argument("--dry-run", action="store_true", help="preview only, call no model")
    parser.add_argument("--json", action="store_true", help="print JSON")


def _model_for(
    parsed: SessionFile,
    tree: SessionTree,
    leaf: str | None,
    choice: DialectChoice,
    options: dict[str, Any],
) -> Json | None:
    """The model a preview plans against: a Pi 1.x turn's own (the agent dir's models.json, then
    the catalogue, as the ``context`` command finds it), the command's limits over it."""
    agent_dir = options.get("agent_dir") or settings.PI_AGENT_DIR
    return summaries.summary_model(
        parsed.entries,
        leaf,
        choice=choice,
        by_id=tree.by_id,
        model_lookup=lambda provider, model_id: find_model(provider, model_id, agent_dir),
        limits=LimitOverrides(
            options.get("context_window") or None, options.get("model_max_tokens") or None
        ),
    )


def _with_dialect(result: Json, plan: SummaryPlan, chosen: str | None) -> Json:
    """A Pi 1.x turn's preview (or any chosen dialect's) says which dialect made it and why."""
    if plan.pi_1x or chosen is not None:
        result["dialect"] = plan.choice.dialect
        result["dialectSource"] = plan.choice.as_dict()
    return result


def compaction_preview(
    parsed: SessionFile, tree: SessionTree, leaf: str | None, options: dict[str, Any]
) -> Json:
    """``compact --dry-run --json``: the engine's plan at ``leaf`` in the turn's dialect (the
    contract's keys first), then ``nothingToCompact`` (Pi's refusal), ``shouldCompact`` (with
    ``--context-window``), a Pi 1.x turn's ``systemMessage`` (stamped now: the entry carries its
    own time), and ``dialect`` / ``dialectSource``."""
    chosen = options.get("dialect")
    choice = detect_turn_dialect(parsed.entries, leaf, tree.by_id, chosen=chosen)
    plan = summaries.plan_compaction(
        parsed.entries,
        leaf,
        summaries.SummaryOptions(
            reserve_tokens=options["reserve_tokens"],
            keep_recent_tokens=options["keep_recent_tokens"],
            custom_instructions=options.get("instructions") or None,
        ),
        model=_model_for(parsed, tree, leaf, choice, options),
        chosen=chosen,
        tree=tree,
        now_ms=int(time.time() * 1000),
    )
    result = dict(plan.preview)
    system_message = result.pop("systemMessage", None)
    if plan.nothing:
        result["nothingToCompact"] = plan.nothing
    if options.get("context_window") is not None and plan.tokens_before is not None:
        result["shouldCompact"] = compaction.should_compact(
            plan.tokens_before, options["context_window"], options["reserve_tokens"]
        )
    if plan.pi_1x:
        result["systemMessage"] = system_message
    return _with_dialect(result, plan, chosen)


def branch_summary_preview(
    parsed: SessionFile, tree: SessionTree, old_leaf: str, target: str, options: dict[str, Any]
) -> Json:
    """``branch-summary --dry-run --json``: the engine's plan for leaving ``old_leaf`` in the
    dialect of the branch left, then ``dialect`` / ``dialectSource`` for a Pi 1.x branch (or a
    chosen dialect)."""
    chosen = options.get("dialect")
    choice = detect_turn_dialect(parsed.entries, old_leaf, tree.by_id, chosen=chosen)
    plan = summaries.plan_branch_summary(
        parsed.entries,
        old_leaf,
        target,
        summaries.SummaryOptions(
            reserve_tokens=options["reserve_tokens"],
            custom_instructions=options.get("instructions") or None,
            replace_instructions=bool(options.get("replace_instructions")),
        ),
        model=_model_for(parsed, tree, old_leaf, choice, options),
        chosen=chosen,
        tree=tree,
    )
    return _with_dialect(dict(plan.preview), plan, chosen)


def print_json(stdout: Any, value: Any) -> None:
    stdout.write(json_stringify(value))


def render_text(value: dict[str, Any]) -> str:
    """A readable rendering: scalar fields, then each request's system prompt and user text."""
    lines: list[str] = []
    for key, item in value.items():
        if isinstance(item, dict) and "messages" in item:
            lines.append(f"== {key} (maxTokens {item['maxTokens']}) ==")
            lines.append(item["systemPrompt"])
            for message in item["messages"]:
                lines.append(f"-- {message['role']} --")
                lines.extend(block.get("text", "") for block in message["content"])
        elif isinstance(item, list) and item and isinstance(item[0], dict):
            lines.append(f"{key}:")
            lines.extend(f"  {json_stringify(i)}" for i in item)
        else:
            lines.append(f"{key}: {json_stringify(item)}")
    return "\n".join(lines)


def emit(stdout: Any, value: Json, options: dict[str, Any]) -> None:
    """``--json``: one JSON object; else the readable rendering."""
    if options.get("json"):
        print_json(stdout, value)
    else:
        stdout.write(render_text(value))
