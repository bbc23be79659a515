"""The one owner of a turn's inputs besides the session file: which agent dir, Pi package dir,
home, tools, project trust and dialect a request is rebuilt with, where models.json is read
(the model's limits), which file system the resources come from, and the date the prompt prints
for the time of the request. The captured prompt (a capture in the session, see
``contextlab.pi.captured``) completes them: what Pi sent is taken over what is rebuilt.

Two places say what the inputs are, everything else asks them:

* ``server_inputs(session, profile)``: this server's, for a stored session (the project's
  resource profile, then settings.PI_AGENT_DIR / PI_PACKAGE_DIR, files read only under
  CONTEXTLAB_SERVER_ROOTS, dates in TIME_ZONE). The session page, its request export, compare,
  the chart and the API's ``context`` all use them, so they all show the same request.
* ``cli_inputs(...)``: the ``context`` command's flags (this machine's files, the process's time
  zone).

``context_json(parsed, tree, leaf_id=..., inputs=...)`` is the ``context`` command's object for a
session file (docs/pi-engine.md, "The context command"): Pi 0.x's ``{leafId, systemPrompt,
layers, messages, sent, model, thinkingLevel, tools}``, a Pi 1.x turn's ``{leafId,
systemPrompt, tools, messages, sent, model, thinkingLevel, maxTokens, dialect}`` followed by
``dialectSource``, ``promptSections`` and ``toolOrigins``.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.utils import timezone

from contextlab.inspector.roots import RootedFileSystem, inside_server_roots
from contextlab.pi import models as pi_models
from contextlab.pi import request as pi_request
from contextlab.pi.captured import captured_prompt_at, with_captured
from contextlab.pi.dialects import Dialect
from contextlab.pi.entries import Json
from contextlab.pi.resources import PromptResources, ResourceError, discover_resources
from contextlab.pi.session import SessionFile, SessionTree
from contextlab.pi.turn import build_turn

if TYPE_CHECKING:
    from contextlab.inspector.models import ResourceProfile
    from contextlab.library.models import Session

__all__ = [
    "PromptInputs",
    "TurnInputs",
    "changed_after",
    "cli_inputs",
    "context_json",
    "local_date",
    "process_local_date",
    "server_inputs",
]

# Who chose the release of a stored session's turns, as the release's ``why`` names it.
PROFILE_CHOOSES = "the project's resource profile"


def process_local_date(ms: Any) -> str | None:
    """The day of ``ms`` in this process's time zone, as Pi's prompt prints it (the command
    line's rule: Pi ran where the command runs)."""
    if ms is None:
        return None
    if hasattr(time, "tzset"):
        time.tzset()  # honour a TZ set after start-up, as Node reads it per call
    return time.strftime("%Y-%m-%d", time.localtime(ms / 1000))


def local_date(ms: Any) -> str | None:
    """The day of ``ms`` (the request time) in TIME_ZONE: the date the engine puts in a Pi 0.x
    prompt rebuilt on the server."""
    if not isinstance(ms, int | float) or isinstance(ms, bool):
        return None
    try:
        when = dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return timezone.localtime(when).date().isoformat()


@dataclass(frozen=True)
class PromptInputs:
    """Where a Pi 0.x prompt's parts come from for one dialect, and what the page says of it:
    no source when discovery failed."""

    source: pi_request.PromptSource | None
    resources: PromptResources | None
    unknown: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class TurnInputs:
    """What a turn's request depends on besides the session file (see the module doc)."""

    cwd: str
    agent_dir: str
    # Where models.json is read (the model's limits, its api); None: pi-ai's catalog only.
    models_dir: str | None
    # The dialect chosen for every turn (a value of detect.CHOICES); None: detected per turn.
    chosen: str | None = None
    # Who chose it (the release's ``why`` names it).
    chosen_by: str = "--pi-version"
    pi_root: str | None = None
    home: str | None = None
    tools: tuple[str, ...] | None = None
    project_trusted: bool | None = None
    # The file system resources are read from: None this machine's (the command line), a
    # RootedFileSystem, or {path: text} of a profile's uploaded files ({} reads nothing).
    fs: Any = None
    # A fixed prompt date (``--date``); None: ``date_of(request time)``.
    date: str | None = None
    date_of: Callable[[Any], str | None] = local_date
    limits: pi_request.LimitOverrides | None = None
    # What this server cannot know about the machine Pi ran on, whatever the turn.
    unknown: tuple[str, ...] = ()
    # Whether the page explains its assumptions (the tool set, the package dir) in notes.
    explain: bool = False

    @property
    def key(self) -> tuple[Any, ...]:
        """What a kept request without its prompt depends on (models.json, dialect, limits)."""
        return (self.models_dir, self.chosen, self.chosen_by, self.limits)

    def model_lookup(self) -> pi_request.ModelLookup:
        """pi-ai's model for {provider, modelId}: models.json in ``models_dir`` first."""
        models_dir = self.models_dir
        return lambda provider, model_id: pi_models.find_model(provider, model_id, models_dir)

    def prompt(self, dialect: Dialect) -> PromptInputs:
        """Where a Pi 0.x prompt's parts come from (resources discovered in ``dialect``)."""
        unknown = list(self.unknown)
        try:
            resources = discover_resources(
                cwd=self.cwd,
                agent_dir=self.agent_dir,
                home=self.home,
                project_trusted=self.project_trusted,
                dialect=dialect,
                fs=self.fs,
            )
        except ResourceError as exc:
            return PromptInputs(None, None, [*unknown, str(exc)], [])
        active = list(self.tools) if self.tools is not None else None
        if active is None and not self.explain:
            active = list(dialect.default_active_tools)
        source = pi_request.PromptSource(
            cwd=self.cwd,
            resources=resources,
            tools=active,
            pi_root=self.pi_root,
            date=self.date,
            local_date=self.date_of,
        )
        notes: list[str] = []
        if not self.explain:
            return PromptInputs(source, resources, unknown, notes)
        if resources.trust_reason:
            notes.append(f"Project trust: {resources.trust_reason}.")
        unknown.extend(resources.unknown)
        if self.tools is None:
            notes.append(
                "Tools: Pi's default set assumed (the session file does not record --tools);"
                " set the tool set in the resource profile if Pi ran with others."
            )
        if self.pi_root is None:
            unknown.append(
                "The Pi package root on this server is not set: the documentation paths in the"
                " prompt are placeholders."
            )
        return PromptInputs(source, resources, unknown, notes)

    def source_for(self, dialect: Dialect) -> pi_request.PromptSource:
        """The prompt source ``build_turn`` asks for (discovery errors raise)."""
        found = self.prompt(dialect)
        if found.source is None:
            raise ResourceError(found.unknown[-1])
        return found.source


def changed_after(inputs: TurnInputs, resources: PromptResources, request_ms: Any) -> list[str]:
    """The files of a rebuilt prompt that this server's disk holds in a version newer than the
    request (modified after it was sent): the prompt shows today's content, which may not be
    what Pi read (a capture, when there is one, says what it did read). Uploaded copies and
    the command line's files are taken as they are."""
    if not isinstance(inputs.fs, RootedFileSystem) or not isinstance(request_ms, int | float):
        return []
    paths = [f.path for f in resources.context_files]
    paths += [p for p in (resources.system_prompt_path,) if p]
    paths += list(resources.append_system_prompt_paths)
    out = []
    for path in paths:
        try:
            modified_ms = os.stat(path).st_mtime * 1000
        except OSError:
            continue
        if modified_ms > request_ms:
            when = dt.datetime.fromtimestamp(modified_ms / 1000, dt.UTC)
            out.append(
                f"{path} was changed on this server after this request"
                f" ({timezone.localtime(when):%Y-%m-%d %H:%M}): the prompt holds its content"
                " today, which may not be what Pi read then."
            )
    return out


def server_inputs(session: Session, profile: ResourceProfile | None) -> TurnInputs:
    """This server's inputs for a stored session's turns: the project's resource profile
    (uploaded files, agent dir, Pi root, home, tools, trust, dialect), else the settings; the
    server's own files only under CONTEXTLAB_SERVER_ROOTS, and only when the session ran here
    or the profile says where they are."""
    cwd = str(session.header.get("cwd") or session.project.cwd)
    unknown: list[str] = []
    fs: Any
    uploads = list(profile.files.all()) if profile else []
    # Only folders under CONTEXTLAB_SERVER_ROOTS are read; the answer is the same whether a
    # folder outside them exists or not, so it tells nobody which server paths exist.
    ran_here = inside_server_roots(cwd) and Path(cwd).is_dir()
    agent_dir = (profile.agent_dir if profile else "") or settings.PI_AGENT_DIR
    if uploads:
        fs = {f.original_path: f.content for f in uploads}
    elif ran_here or profile:
        fs = RootedFileSystem()
    else:
        fs = {}
        unknown.append(
            f"This session ran in {cwd}, which is not under a folder this server reads"
            " (CONTEXTLAB_SERVER_ROOTS): its AGENTS.md / CLAUDE.md files, skills, SYSTEM.md and"
            " APPEND_SYSTEM.md are unknown here. The prompt below has only what needs no files."
            " Give the project's resource profile to complete it."
        )
    # models.json: the profile's agent dir, or this server's when the session ran here (as its
    # resources are), read only under the roots.
    models_from = (profile.agent_dir if profile else "") or (agent_dir if ran_here else "")
    models_dir = (
        models_from if models_from and inside_server_roots(f"{models_from}/models.json") else None
    )
    return TurnInputs(
        cwd=cwd,
        agent_dir=agent_dir,
        models_dir=models_dir,
        chosen=(profile.dialect or None) if profile else None,
        chosen_by=PROFILE_CHOOSES,
        pi_root=(profile.pi_root if profile else "") or settings.PI_PACKAGE_DIR or None,
        home=(profile.home if profile else "") or None,
        tools=tuple(profile.tools) if profile and profile.tools else None,
        project_trusted=profile.project_trusted if profile else None,
        fs=fs,
        date_of=local_date,
        unknown=tuple(unknown),
        explain=True,
    )


def cli_inputs(
    header: Json | None,
    *,
    agent_dir: str,
    pi_root: str | None = None,
    date: str | None = None,
    tools: Sequence[str] | None = None,
    home: str | None = None,
    chosen: str | None = None,
    limits: pi_request.LimitOverrides | None = None,
) -> TurnInputs:
    """The ``context`` command's inputs: its flags, this machine's files, the process's time
    zone (``tools`` None: the dialect's default set)."""
    cwd = (header or {}).get("cwd")
    return TurnInputs(
        cwd=cwd if isinstance(cwd, str) else os.getcwd(),
        agent_dir=agent_dir,
        models_dir=agent_dir,
        chosen=chosen,
        pi_root=pi_root,
        home=home,
        tools=tuple(tools) if tools is not None else None,
        date=date,
        date_of=process_local_date,
        limits=limits,
    )


def context_json(
    parsed: SessionFile,
    tree: SessionTree,
    *,
    leaf_id: str | None,
    inputs: TurnInputs,
) -> Json:
    """The ``context`` command's object for the turn at ``leaf_id`` of a session file, its
    captured prompt (if the file holds one for this request) taken over the rebuilt one."""
    captured = None
    if leaf_id is not None and leaf_id in tree.by_id:
        path_ids = [str(e["id"]) for e in tree.path(leaf_id)]
        captured = captured_prompt_at(path_ids, tree.children(leaf_id), tree.by_id)
    request = build_turn(
        parsed.entries,
        leaf_id,
        by_id=tree.by_id,
        header=parsed.header,
        chosen=inputs.chosen,
        chosen_by=inputs.chosen_by,
        model_lookup=inputs.model_lookup(),
        prompt_for=inputs.source_for,
        limits=inputs.limits,
        captured=captured,
    )
    request = with_captured(request, captured)
    return request_json(request, leaf_id=leaf_id, with_dialect=inputs.chosen is not None)


def request_json(request: pi_request.PiRequest, *, leaf_id: str | None, with_dialect: bool) -> Json:
    """The ``context`` object of a built request (the command's, the API's)."""
    result = request.cli_json(with_dialect=with_dialect)
    result["leafId"] = leaf_id
    if request.choice is not None and request.choice.release is not None:
        # Which release wrote the turn: candidates told from the file, the one used, why.
        result["piRelease"] = request.choice.release.as_dict()
    return result
