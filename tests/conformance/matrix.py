"""The release matrix: every recorded request of a release rebuilt from its session file alone.

``check_release(version)`` reads the corpus recorded for ``version`` (``record_versions``; the
repository's own for 0.73.1 and 1.6.0 under ``tests/conformance/corpus-<version>``, the others in
the cache ``$PI_MATRIX_DIR/corpus-<version>``, else the representative scenarios committed under
``tests/conformance/releases/``), and rebuilds the body of every agent request
twice: with the release the engine tells from the file (the default) and with the release chosen
(``--pi-version``); a request matches when the bytes are equal. ``python -m
tests.conformance.matrix`` (``make matrix``) records what is missing and prints the table.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextlab.pi import summaries
from contextlab.pi.dialects.release_table import RELEASES
from contextlab.pi.entries import Json
from contextlab.pi.jsutil import json_stringify
from contextlab.pi.request import PromptSource, steps_of
from contextlab.pi.resources.discovery import discover_resources
from contextlab.pi.session import parse_session_file
from contextlab.pi.turn import build_turn
from tests.conformance.recorder.record_versions import committed_corpus, corpus_dir

CACHE_RESULTS = "matrix.json"


@dataclass
class Row:
    release: str
    total: int = 0
    default: int = 0
    chosen: int = 0
    first_difference: str = ""
    detected: str = ""
    error: str = ""
    # Summarising requests (tagged with their user action), rebuilt with the release chosen.
    summaries: int = 0
    summaries_chosen: int = 0
    summary_difference: str = ""

    def line(self) -> str:
        if self.error:
            return f"| {self.release} | — | — | {self.error} |"
        return (
            f"| {self.release} | {self.default} / {self.total} | {self.chosen} / {self.total} | "
            f"{self.first_difference or ''} | {self.summaries_chosen} / {self.summaries} | "
            f"{self.summary_difference} |"
        )


def _restore_fs(manifest: Json, scenario_dir: Path) -> None:
    """Put a 0.x scenario's resource files back at the paths Pi read them from."""
    source = scenario_dir / "fs"
    if "scenarioRoot" not in manifest:  # a 1.x corpus: the prompt is in the session
        return
    root = Path(manifest["scenarioRoot"])
    for path in sorted(source.rglob("*")) if source.exists() else []:
        if path.is_file():
            target = root / path.relative_to(source)
            if not target.exists() or target.read_bytes() != path.read_bytes():
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(path.read_bytes())


def _difference(ours: str, theirs: str) -> str:
    a, b = json.loads(ours), json.loads(theirs)
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            if key == "messages":
                for i, (x, y) in enumerate(zip(a[key], b[key], strict=False)):
                    if x != y:
                        return f"messages[{i}] ({y.get('role')})"
                return f"messages: {len(a[key])} vs {len(b[key])}"
            return key
    return "bytes (same JSON)"


def models_of(manifest: Json) -> dict[str, Json]:
    """The models a recording used, by id, named by their id as the recorder registered them."""
    return {m["id"]: {**m, "name": m["id"]} for m in manifest["models"]}


def prompt_source_for(manifest: Json, request: Json) -> Callable[[Any], PromptSource]:
    """``build_turn``'s ``prompt_for`` for a recorded request: the resources a dialect discovers
    in the scenario's folders (0.x scenarios: restored by ``_restore_fs``), the request's tools,
    and the Pi package and date the recording ran with."""

    def prompt_for(dialect: Any) -> PromptSource:
        resources = discover_resources(
            cwd=manifest["cwd"],
            agent_dir=manifest["agentDir"],
            home=manifest.get("home"),
            dialect=dialect,
        )
        return PromptSource(
            cwd=manifest["cwd"],
            resources=resources,
            tools=request.get("tools"),
            pi_root=manifest["piPackageDir"],
            date=manifest["recordedDate"],
        )

    return prompt_for


def rebuild(
    manifest: Json, scenario_dir: Path, request: Json, chosen: str | None
) -> tuple[str, Any]:
    """The body the engine builds for a recorded agent request, and the release finding."""
    session = parse_session_file(scenario_dir / "session.jsonl")
    models = models_of(manifest)
    turn = build_turn(
        session.entries,
        request["leafId"],
        header=session.header,
        chosen=chosen,
        model_lookup=lambda provider, model_id: models.get(model_id),
        prompt_for=prompt_source_for(manifest, request),
    )
    model = models[request["model"]["id"]]
    body = steps_of(turn.dialect).request_body(turn, model)
    return body, turn.choice.release if turn.choice else None


def rebuild_summaries(
    manifest: Json, scenario_dir: Path, group: list[Json], chosen: str | None
) -> list[str]:
    """The bodies the engine builds for one recorded summarising action, in the order Pi sends
    them (a manual compaction: history and turn prefix; a tree navigation with a summary), by
    ``contextlab.pi.summaries`` as ``compact --dry-run`` / ``branch-summary --dry-run`` build
    them. The scenarios' settings:
    keepRecentTokens 150 (recorder/resources/agent/settings.json), reserveTokens 2000 in the 1.x
    ``length`` scenario (driver-1.6.0.mjs)."""
    session = parse_session_file(scenario_dir / "session.jsonl")
    operation, leaf = group[0]["operation"], group[0]["leafId"]
    model = models_of(manifest)[group[0]["model"]["id"]]
    reserve = 2000 if manifest["scenario"] == "length" else summaries.DEFAULT_RESERVE_TOKENS
    options = summaries.SummaryOptions(
        reserve_tokens=reserve,
        keep_recent_tokens=150,
        custom_instructions=operation.get("customInstructions"),
        replace_instructions=bool(operation.get("replaceInstructions")),
    )
    if operation["op"] == "compact":
        plan = summaries.plan_compaction(session.entries, leaf, options, model=model, chosen=chosen)
    else:
        plan = summaries.plan_branch_summary(
            session.entries, leaf, operation["targetId"], options, model=model, chosen=chosen
        )
    return [json_stringify(call.body(model)) for call in plan.calls]


def corpus_of(version: str) -> Path:
    """The recorded corpus of ``version``: the repository's own (0.73.1, 1.6.0), else the
    matrix cache's, else the representative scenarios committed for it."""
    own = corpus_dir(version)
    if own.exists() and version in ("1.6.0", "0.73.1"):
        return own
    cached = matrix_dir() / f"corpus-{version}"
    if not cached.exists() and committed_corpus(version).exists():
        return committed_corpus(version)
    return cached


def matrix_dir() -> Path:
    return Path(os.environ.get("PI_MATRIX_DIR", "/work/pi-matrix"))


def check_release(version: str) -> Row:
    row = Row(version)
    corpus = corpus_of(version)
    manifests = sorted(corpus.glob("*/manifest.json")) if corpus.exists() else []
    if not manifests:
        row.error = "not recorded"
        return row
    detected: set[str] = set()
    for path in manifests:
        manifest = json.loads(path.read_text())
        scenario_dir = path.parent
        _restore_fs(manifest, scenario_dir)
        if home := manifest.get("home"):
            os.environ["HOME"] = home  # ~/.agents/skills is read from HOME, as Pi does
        for request in manifest["requests"]:
            if request["kind"] != "agent":
                continue
            row.total += 1
            recorded = (scenario_dir / request["body"]).read_text()
            try:
                ours, found = rebuild(manifest, scenario_dir, request, None)
                chosen_body, _ = rebuild(manifest, scenario_dir, request, version)
            except Exception as error:  # a crash is a difference the table must show
                row.first_difference = row.first_difference or f"error: {error!r}"[:120]
                continue
            if found is not None:
                detected.add(f"{found.candidates[0]}–{found.candidates[-1]}→{found.chosen}")
            row.default += ours == recorded
            row.chosen += chosen_body == recorded
            if chosen_body != recorded and not row.first_difference:
                row.first_difference = (
                    f"{manifest['scenario']} {request['seq']}: {_difference(chosen_body, recorded)}"
                )
        groups: dict[tuple[Any, str], list[Json]] = {}
        for request in manifest["requests"]:
            if request["kind"] == "summary" and request.get("operation"):
                key = (request["leafId"], json.dumps(request["operation"], sort_keys=True))
                groups.setdefault(key, []).append(request)
        for group in groups.values():
            recorded_bodies = sorted((scenario_dir / r["body"]).read_text() for r in group)
            row.summaries += len(group)
            try:
                rebuilt = rebuild_summaries(manifest, scenario_dir, group, version)
                if manifest.get("rejectedSummary") and len(rebuilt) > len(group):
                    # Pi 1.x sends the history request first and stops when it is rejected.
                    rebuilt = rebuilt[: len(group)]
                rebuilt = sorted(rebuilt)
            except Exception as error:
                rebuilt = []
                row.summary_difference = row.summary_difference or f"error: {error!r}"[:100]
            matched = sum(a == b for a, b in zip(rebuilt, recorded_bodies, strict=False))
            row.summaries_chosen += matched if len(rebuilt) == len(recorded_bodies) else 0
            if rebuilt != recorded_bodies and not row.summary_difference:
                first = next(
                    (
                        _difference(a, b)
                        for a, b in zip(rebuilt, recorded_bodies, strict=False)
                        if a != b
                    ),
                    f"{len(rebuilt)} vs {len(recorded_bodies)} requests",
                )
                row.summary_difference = f"{manifest['scenario']} {group[0]['seq']}: {first}"
    row.detected = ", ".join(sorted(detected))
    return row


def main(argv: list[str]) -> int:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    django.setup()
    from tests.conformance.recorder import record_versions

    versions = argv or list(RELEASES)
    cache = matrix_dir() / CACHE_RESULTS
    results: dict[str, Any] = json.loads(cache.read_text()) if cache.exists() else {}
    rows = []
    for version in versions:
        corpus = corpus_of(version)
        if not corpus.exists() and not os.environ.get("MATRIX_NO_RECORD"):
            started = time.monotonic()
            try:
                record_versions.record_release(version)
            except SystemExit as error:
                print(f"{version}: recording failed: {str(error)[:300]}", file=sys.stderr)
            print(f"{version}: recorded in {time.monotonic() - started:.0f}s", file=sys.stderr)
        row = check_release(version)
        results[version] = row.__dict__
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(results, indent=1) + "\n")
        rows.append(row)
        print(row.line(), file=sys.stderr, flush=True)
    print(
        "| release | requests matched, default | with the chosen release | first difference "
        "| summaries, chosen | first summary difference |"
    )
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(row.line())
    total = sum(r.total for r in rows)
    default = sum(r.default for r in rows)
    chosen = sum(r.chosen for r in rows)
    print(f"\nall: {default} / {total} matched by default detection, {chosen} / {total} chosen")
    summed = sum(r.summaries for r in rows)
    print(f"summaries: {sum(r.summaries_chosen for r in rows)} / {summed} matched, chosen")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
