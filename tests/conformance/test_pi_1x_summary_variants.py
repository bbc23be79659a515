"""Summary jobs in the 1.0 / 1.3 / 1.5 variants, against the real Pi 1.0.3, 1.3.0 and 1.5.2.

A compaction job (a split turn with custom instructions) and a branch-summary job on the
corpus-1.6.0 ``edits`` session (thinking replies, context edits), with the project's resource
profile choosing the release's variant, send over HTTP to the fake server on 127.0.0.1 the bodies
that release's own summarisers send for the same summary (``oracle-*/jobs_summarise.mjs``:
prepareCompaction + compact, collectEntriesForBranchSummary + generateBranchSummary, with the
session's thinking level), byte for byte, to a chat-completions model and to an Anthropic one (the
same path and betas). What differs between the releases shows in those bodies: 1.0.3 and 1.3.0
give each summary a budget of its own (0.8 x reserve, 0.5 for the turn prefix, 4096 for a branch
summary) and leave the custom instructions out of the turn prefix; 1.0.3 serialises thinking
(on ``clamp``, whose replies think); before 1.5 a branch summary ignores context edits and the
thinking level. The bodies of 1.3.0 and 1.5.2 also differ from those of the variant after them
(the variants are not 1.6.0's; 1.0.3 differs from 1.3.0 only by the thinking, shown apart).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from contextlab.inspector.models import ResourceProfile
from contextlab.jobs import providers, services
from contextlab.jobs.parameters import JobParameters
from contextlab.library.importer import import_session_file
from tests.conformance.conftest import run_oracle
from tests.jobs.fake_llm import FakeLLMServer, Reply

pytestmark = [pytest.mark.django_db, pytest.mark.oracle]

CORPUS_1X = Path(__file__).resolve().parent / "corpus-1.6.0"
KEEP_RECENT_TOKENS = 150  # the recorded agent dir's settings.json
VERSIONS = {"1.0.3": "1.0", "1.3.0": "1.3", "1.5.2": "1.5", "1.6.0": "1.6"}
OPS = ("compact", "branch")
APIS = ("openai", "anthropic")


def _manifest() -> dict[str, Any]:
    return json.loads((CORPUS_1X / "edits" / "manifest.json").read_text())


def _operation(op: str) -> dict[str, Any]:
    name = "compact" if op == "compact" else "navigateTree"
    return next(
        r
        for r in _manifest()["requests"]
        if r["kind"] == "summary" and (r["operation"] or {}).get("op") == name
    )


def _point(settings, server, api: str) -> providers.ProviderConfig:  # type: ignore[no-untyped-def]
    model = next(m for m in _manifest()["models"] if m["id"] == "fake-reasoner")
    # A window the budgets and the clamp both bind in.
    limits = {"context_window": 24000, "max_tokens": model["maxTokens"]}
    if api == "anthropic":
        server.script.extend(Reply(thinking_tokens=7) for _ in range(4))
        server.point_at(settings, "anthropic", model="fake-claude", reasoning=True, **limits)
    else:
        server.point_at(
            settings,
            model=model["id"],
            provider_name=model["provider"],
            reasoning=True,
            **limits,
        )
    return providers.active_provider()


def _ours(session, op: str):  # type: ignore[no-untyped-def]
    request = _operation(op)
    if op == "compact":
        job = services.job_create(
            session=session,
            kind="compaction",
            enqueue=False,
            leaf_entry_id=request["leafId"],
            parameters=JobParameters(
                keep_recent_tokens=KEEP_RECENT_TOKENS,
                custom_instructions=request["operation"]["customInstructions"],
            ),
        )
    else:
        job = services.job_create(
            session=session,
            kind="branch_summary",
            enqueue=False,
            leaf_entry_id=request["operation"]["oldLeafId"],
            target_entry_id=request["operation"]["targetId"],
        )
    return services.job_execute(job_id=job.pk)


def _theirs(version: str, op: str, config, tmp_path: Path) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    copy = tmp_path / f"pi-{version}-{op}.jsonl"
    shutil.copyfile(CORPUS_1X / "edits" / "session.jsonl", copy)
    request = _operation(op)
    common = {"model": config.pi_model(), "apiKey": config.api_key, "sessionFile": str(copy)}
    if op == "compact":
        payload = {
            **common,
            "mode": "compact",
            "leafId": request["leafId"],
            "keepRecentTokens": KEEP_RECENT_TOKENS,
            "customInstructions": request["operation"]["customInstructions"],
        }
    else:
        operation = request["operation"]
        payload = {
            **common,
            "mode": "branch",
            "fromId": operation["oldLeafId"],
            "targetId": operation["targetId"],
        }
    result: dict[str, Any] = run_oracle("jobs_summarise.mjs", payload, timeout=60, version=version)
    return result


@pytest.fixture
def server():  # type: ignore[no-untyped-def]
    with FakeLLMServer() as s:
        yield s


@pytest.fixture
def import_edits(tmp_path, blob_dir):  # type: ignore[no-untyped-def]
    def _import(variant: str):  # type: ignore[no-untyped-def]
        copy = tmp_path / f"edits-{variant}.jsonl"
        shutil.copyfile(CORPUS_1X / "edits" / "session.jsonl", copy)
        session = import_session_file(path=copy, index_search=False).session
        assert session is not None
        ResourceProfile.objects.create(project=session.project, dialect=variant)
        return session

    return _import


def _sent(server: FakeLLMServer, start: int, end: int | None = None) -> list[Any]:
    return list(server.requests[start:end])


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("version", VERSIONS)
def test_a_summary_job_in_a_releases_variant_sends_what_that_release_sends(
    version, op, api, server, settings, import_edits, tmp_path
):
    config = _point(settings, server, api)
    session = import_edits(VERSIONS[version])
    job = _ours(session, op)
    assert job.status == "succeeded", job.error
    ours = _sent(server, 0)
    pi = _theirs(version, op, config, tmp_path)
    theirs = _sent(server, len(ours))
    assert len(ours) == len(theirs) == (2 if op == "compact" else 1)
    for mine, pis in zip(ours, theirs, strict=True):
        assert json.loads(mine.body, object_pairs_hook=list) == json.loads(
            pis.body, object_pairs_hook=list
        )
        assert mine.body == pis.body
        assert mine.path == pis.path
        assert mine.headers.get("anthropic-beta") == pis.headers.get("anthropic-beta")
    if op == "compact":
        assert pi["isSplitTurn"]


@pytest.mark.parametrize("version", ["1.0.3", "1.3.0"])
def test_1_0_3_alone_serialises_thinking_into_a_summary(
    version, server, settings, tmp_path, blob_dir
):
    """``clamp``'s replies think: 1.0.3 writes ``[Assistant thinking]`` into the compaction
    prompt, 1.3.0 does not; each variant sends its release's bytes."""
    config = _point(settings, server, "openai")
    copy = tmp_path / "clamp.jsonl"
    shutil.copyfile(CORPUS_1X / "clamp" / "session.jsonl", copy)
    session = import_session_file(path=copy, index_search=False).session
    assert session is not None
    ResourceProfile.objects.create(project=session.project, dialect=VERSIONS[version])
    job = services.job_create(
        session=session,
        kind="compaction",
        enqueue=False,
        parameters=JobParameters(keep_recent_tokens=KEEP_RECENT_TOKENS),
    )
    job = services.job_execute(job_id=job.pk)
    assert job.status == "succeeded", job.error
    ours = [r.body for r in _sent(server, 0)]
    pi_copy = tmp_path / "pi-clamp.jsonl"
    shutil.copyfile(CORPUS_1X / "clamp" / "session.jsonl", pi_copy)
    payload = {
        "mode": "compact",
        "model": config.pi_model(),
        "apiKey": config.api_key,
        "sessionFile": str(pi_copy),
        "leafId": session.leaf_entry_id,
        "keepRecentTokens": KEEP_RECENT_TOKENS,
    }
    run_oracle("jobs_summarise.mjs", payload, timeout=60, version=version)
    theirs = [r.body for r in _sent(server, len(ours))]
    assert ours == theirs
    assert any(b"[Assistant thinking]: " in body for body in ours) == (version == "1.0.3")


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("version", ["1.3.0", "1.5.2"])
def test_a_releases_summary_is_not_the_next_variants(
    version, op, server, settings, import_edits, tmp_path
):
    """On ``edits``, each release's summary bodies differ from those of the variant after it."""
    newer = list(VERSIONS.values())[list(VERSIONS).index(version) + 1]
    config = _point(settings, server, "openai")
    job = _ours(import_edits(newer), op)
    assert job.status == "succeeded", job.error
    ours = [r.body for r in _sent(server, 0)]
    _theirs(version, op, config, tmp_path)
    theirs = [r.body for r in _sent(server, len(ours))]
    assert ours != theirs
