"""The request of one turn, in the dialect of the Pi that sent it: what every caller asks for.

``build_turn`` tells (or takes) the turn's dialect — ``contextlab.pi.dialects.detect``: Pi 1.x
once a persisted system message is on the path, else 0.80 unless the caller chose 0.73 — and
builds the request with ``contextlab.pi.request.build_request`` in that dialect. The ``context``
command, the inspector, the API and the jobs all come here, so a turn reads the same everywhere.

    request = build_turn(entries, leaf_id, header=header, model_lookup=lookup,
                         prompt_for=lambda dialect: PromptSource(...))
    request.choice.dialect, request.choice.reason
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from contextlab.pi.captured import CapturedPrompt
from contextlab.pi.context import session_path
from contextlab.pi.dialects import DEFAULT_DIALECT, Dialect
from contextlab.pi.dialects.detect import (
    DialectChoice,
    choice_for,
    detect_turn_dialect,
    detected_choice,
)
from contextlab.pi.dialects.pi_0_73 import PI_0_73
from contextlab.pi.dialects.pi_1_x_request import PI_1_X_VARIANTS
from contextlab.pi.dialects.release_detect import fit_captured_prompt
from contextlab.pi.dialects.releases import dialect_for_release
from contextlab.pi.entries import Json
from contextlab.pi.request import (
    LimitOverrides,
    ModelLookup,
    PiRequest,
    PromptSource,
    build_request,
    with_prompt,
)

__all__ = ["PromptFor", "build_turn", "dialect_for", "turn_dialect"]

# The prompt's sources for a Pi 0.x dialect (resources are discovered per dialect: 0.73 has no
# project trust); not called for a dialect that keeps the prompt in the session.
PromptFor = Callable[[Dialect], PromptSource | None]
_LAST: Any = object()


def dialect_for(choice: DialectChoice) -> Dialect:
    """The engine's dialect for a detected or chosen one: the release's when one was told or
    chosen (``choice.release``), else the dialect's."""
    if choice.release is not None:
        return dialect_for_release(choice.release.chosen)
    if choice.dialect == "1.x":
        return PI_1_X_VARIANTS[choice.variant or "1.6"]
    if choice.dialect == "0.73":
        return PI_0_73
    return DEFAULT_DIALECT


def turn_dialect(
    entries: Sequence[Json],
    leaf_id: Any,
    by_id: Mapping[Any, Json] | None = None,
    *,
    chosen: str | None = None,
    chosen_by: str = "--pi-version",
    leaf_path: list[Json] | None = None,
) -> tuple[DialectChoice, Dialect]:
    choice = detect_turn_dialect(
        entries, leaf_id, by_id, chosen=chosen, chosen_by=chosen_by, leaf_path=leaf_path
    )
    return choice, dialect_for(choice)


def build_turn(
    entries: Sequence[Json],
    leaf_id: Any = _LAST,
    *,
    by_id: dict[str, Json] | None = None,
    header: Json | None = None,
    chosen: str | None = None,
    chosen_by: str = "--pi-version",
    model_lookup: ModelLookup | None = None,
    prompt_for: PromptFor | None = None,
    limits: LimitOverrides | None = None,
    now_ms: Any = _LAST,
    captured: CapturedPrompt | None = None,
    captured_sources: PromptFor | None = None,
) -> PiRequest:
    """The request Pi sent (or would send) with ``leaf_id`` as leaf, in the turn's dialect.

    ``chosen`` (a value of ``detect.CHOICES`` or a release X.Y.Z: ``--dialect``,
    ``--pi-version``, a project's profile) overrides detection (``chosen_by`` names who chose,
    for the release's ``why``); ``prompt_for`` gives a Pi 0.x prompt's sources for the dialect
    (None: no prompt); ``limits`` override the model's context window and maxTokens. The
    request's ``choice`` says which dialect built it and why.

    ``captured``: the prompt contextlab's Pi extension captured for this request. When nobody
    chose and the file leaves candidate releases that send differently, the candidates are
    narrowed to those whose own prompt (from ``captured_sources``, else ``prompt_for``) is the
    captured one byte for byte (``release_detect.fit_captured_prompt``).
    """
    if leaf_id is _LAST:
        leaf_id = entries[-1].get("id") if entries else None
    # The leaf's path, walked once for the dialect and the request (a deep turn's is thousands
    # of entries); neither changes it.
    path = session_path(entries, leaf_id, by_id)
    choice, dialect = turn_dialect(
        entries, leaf_id, by_id, chosen=chosen, chosen_by=chosen_by, leaf_path=path
    )
    extra: dict[str, Any] = {} if now_ms is _LAST else {"now_ms": now_ms}

    def build(dialect: Dialect, source: PromptSource | None) -> PiRequest:
        return build_request(
            entries,
            leaf_id,
            by_id=by_id,
            header=header,
            dialect=dialect,
            model_lookup=model_lookup,
            prompt=source,
            limits=limits,
            path=path,
            **extra,
        )

    sources = captured_sources or prompt_for
    if (
        captured is not None
        and sources is not None
        and chosen is None
        and choice.release is not None
        and not _prompt_in_session(dialect)
    ):
        choice, dialect = _fit_captured(choice, dialect, build(dialect, None), captured, sources)
    source = None
    if prompt_for is not None and not _prompt_in_session(dialect):
        source = prompt_for(dialect)
    request = build(dialect, source)
    request.choice = choice
    return request


def _fit_captured(
    choice: DialectChoice,
    dialect: Dialect,
    base: PiRequest,
    captured: CapturedPrompt,
    sources: PromptFor,
) -> tuple[DialectChoice, Dialect]:
    """The turn's release narrowed by its captured prompt: each group's prompt is built on the
    detected dialect's request without a prompt (``base``: the prompt reads only the sources,
    the request's date and path, and the dialect)."""
    assert choice.release is not None

    def fits(release: str) -> bool:
        mine = dialect_for_release(release)
        if _prompt_in_session(mine):
            return False
        built = with_prompt(replace(base, dialect=mine), sources(mine)).prompt
        return built is not None and built.text == captured.system_prompt

    found = fit_captured_prompt(choice.release, fits)
    if found is choice.release:
        return choice, dialect
    fitted = detected_choice(choice_for(None), found)
    if found.chosen == choice.release.chosen:
        return replace(choice, release=found), dialect
    return fitted, dialect_for(fitted)


def _prompt_in_session(dialect: Dialect) -> bool:
    return dialect.steps is not None and dialect.steps.prompt_in_session
