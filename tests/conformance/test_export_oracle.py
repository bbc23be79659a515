"""The real Pi 0.80.2 opens what contextlab exports and sees the context contextlab projects.

Sessions are imported, summaries appended by real jobs (offline summariser: no network), then
exported; Pi's SessionManager.open reads a private copy of the export and its buildSessionContext
must equal contextlab's projection of the stored session at its leaf.
"""

# ruff: noqa: E501 - the legacy session below is written as its file lines, which are long
from __future__ import annotations

import pytest

from contextlab.jobs import services
from contextlab.jobs.parameters import JobParameters
from contextlab.library.selectors import engine_entries
from contextlab.pi.context import build_session_context
from tests.conformance.conftest import run_oracle
from tests.conftest import corpus_entry_id

pytestmark = [pytest.mark.oracle, pytest.mark.django_db]


def _export(session, tmp_path):
    session.refresh_from_db()
    path = tmp_path / f"export-{session.pk}-{session.entry_count}.jsonl"
    path.write_bytes(b"".join(services.session_export_chunks(session)))
    return path


def _ours(session):
    session.refresh_from_db()
    return build_session_context(engine_entries(session), session.leaf_entry_id).as_dict()


def _run(session, kind, **kw):
    job = services.job_create(session=session, kind=kind, enqueue=False, **kw)
    job = services.job_execute(job_id=job.pk)
    assert job.status == "succeeded", job.error
    return job


def _assert_pi_sees_ours(session, tmp_path):
    exported = _export(session, tmp_path)
    pi = run_oracle("jobs_export_open.mjs", {"file": str(exported)}, timeout=60)
    assert pi["sessionId"] == session.session_id
    assert pi["leafId"] == session.leaf_entry_id
    assert pi["context"] == _ours(session)
    return pi


@pytest.mark.parametrize("corpus", ["tools", "branches", "compaction", "interactive"])
def test_pi_opens_an_untouched_export_and_sees_our_projection(import_corpus, tmp_path, corpus):
    session, _ = import_corpus(corpus)
    _assert_pi_sees_ours(session, tmp_path)


@pytest.mark.parametrize("corpus", ["tools", "compaction", "interactive"])
def test_pi_opens_an_export_with_an_added_compaction(
    import_corpus, offline_provider, tmp_path, corpus
):
    session, _ = import_corpus(corpus)
    job = _run(session, "compaction", parameters=JobParameters(keep_recent_tokens=60))
    pi = _assert_pi_sees_ours(session, tmp_path)
    assert pi["context"]["messages"][0]["role"] == "compactionSummary"
    assert pi["entryIds"][-1] == job.result_entry_ids[0]


def test_pi_opens_an_export_that_left_a_compacted_branch(import_corpus, offline_provider, tmp_path):
    session, _ = import_corpus("tools")
    compacted = _run(session, "compaction", parameters=JobParameters(keep_recent_tokens=60))
    # Navigate back above the compaction: the branch summary covers the compaction entry too.
    target = compacted.preview["firstKeptEntryId"]
    job = _run(session, "branch_summary", target_entry_id=target)
    assert compacted.result_entry_ids[0] in job.preview["entryIds"]
    pi = _assert_pi_sees_ours(session, tmp_path)
    assert pi["context"]["messages"][-1]["role"] == "branchSummary"


def test_pi_opens_an_export_with_added_branch_summaries(import_corpus, offline_provider, tmp_path):
    session, _ = import_corpus("branches")
    _run(
        session,
        "branch_summary",
        target_entry_id=corpus_entry_id("branches", user="Suggest a name", reply=True),
    )
    pi = _assert_pi_sees_ours(session, tmp_path)
    assert pi["context"]["messages"][-1]["role"] == "branchSummary"
    # Then compact the new branch, and summarise back to a user message (leaf = its parent).
    _run(session, "compaction", parameters=JobParameters(keep_recent_tokens=10))
    _assert_pi_sees_ours(session, tmp_path)
    job = _run(
        session, "branch_summary", target_entry_id=corpus_entry_id("branches", user="Why MIT")
    )
    pi = _assert_pi_sees_ours(session, tmp_path)
    assert pi["leafId"] == job.result_entry_ids[0]


USAGE = (
    '{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,'
    '"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}'
)
# A version-1 file (no ids; firstKeptEntryIndex; a hookMessage), one JSON object per line.
LEGACY_V1 = "\n".join(
    [
        '{"type":"session","id":"legacy-v1-session","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/tmp/legacy"}',
        '{"type":"message","timestamp":"2024-01-01T00:00:01.000Z","message":{"role":"user","content":"hello","timestamp":1704067201000}}',
        '{"type":"message","timestamp":"2024-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"api":"openai-completions","provider":"x","model":"m","usage":'
        + USAGE
        + ',"stopReason":"stop","timestamp":1704067202000}}',
        '{"type":"message","timestamp":"2024-01-01T00:00:03.000Z","message":{"role":"user","content":"more ☃","timestamp":1704067203000}}',
        '{"type":"message","timestamp":"2024-01-01T00:00:04.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"api":"openai-completions","provider":"x","model":"m","usage":'
        + USAGE
        + ',"stopReason":"stop","timestamp":1704067204000}}',
        '{"type":"compaction","timestamp":"2024-01-01T00:00:05.000Z","summary":"old summary","firstKeptEntryIndex":3,"tokensBefore":100}',
        '{"type":"message","timestamp":"2024-01-01T00:00:06.000Z","message":{"role":"hookMessage","customType":"note","content":"hook text","display":true,"timestamp":1704067206000}}',
        '{"type":"message","timestamp":"2024-01-01T00:00:07.000Z","message":{"role":"user","content":"after","timestamp":1704067207000}}',
        "",
    ]
)


def _positional(lines):
    """Entries with ids replaced by their line position (Pi's migration ids are random)."""
    import json

    parsed = [json.loads(line) for line in lines]
    index = {e.get("id"): f"#{i}" for i, e in enumerate(parsed) if e.get("type") != "session"}
    out = []
    for entry in parsed:
        renamed = dict(entry)
        for key in ("id", "parentId", "firstKeptEntryId"):
            if key in renamed and entry.get("type") != "session":
                renamed[key] = index.get(renamed[key], renamed[key])
        out.append(list(renamed.items()))
    return out


def test_a_legacy_file_exports_as_pi_rewrites_it_when_it_migrates(import_corpus, tmp_path):
    from contextlab.library.importer import import_session_file

    original = tmp_path / "legacy.jsonl"
    original.write_text(LEGACY_V1, encoding="utf-8")
    result = import_session_file(path=original, index_search=False)
    session = result.session
    exported = _export(session, tmp_path).read_bytes().decode()
    # Pi rewrites a private copy of the original when it opens (and migrates) it.
    pi_copy = tmp_path / "pi-migrated.jsonl"
    pi_copy.write_text(LEGACY_V1, encoding="utf-8")
    pi_original = run_oracle("jobs_export_open.mjs", {"file": str(pi_copy)}, timeout=60)
    rewritten = pi_copy.read_text(encoding="utf-8")
    assert exported.endswith("\n") and rewritten.endswith("\n")
    assert _positional(exported.splitlines()) == _positional(rewritten.splitlines())
    # Pi opens our export as is (already v3) and sees the same context as from the original.
    pi_export = _assert_pi_sees_ours(session, tmp_path)
    assert pi_export["context"] == pi_original["context"]
