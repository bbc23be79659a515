"""compact / branch-summary without --dry-run: a job on a stored session, or a line for a file."""

from __future__ import annotations

import io
import json
import shutil

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from contextlab.jobs.models import Job
from contextlab.library.models import Entry
from contextlab.pi.writer import ENTRY_KEY_ORDER
from tests.conftest import CORPUS, corpus_entry_id


def _call(*args):
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_compact_on_a_file_prints_the_line_pi_would_append_and_leaves_the_file(
    tmp_path, offline_provider
):
    path = tmp_path / "tools.jsonl"
    shutil.copyfile(CORPUS / "tools" / "session.jsonl", path)
    before = path.read_bytes()
    leaf = json.loads(before.splitlines()[-1])["id"]
    line = _call("compact", str(path), "--keep-recent-tokens", "150")
    entry = json.loads(line)
    assert list(entry) == list(ENTRY_KEY_ORDER["compaction"])
    assert entry["parentId"] == leaf and entry["fromHook"] is False
    assert "offline summary" in entry["summary"]
    assert path.read_bytes() == before


def test_branch_summary_on_a_file_prints_a_branch_summary_line(tmp_path, offline_provider):
    path = tmp_path / "branches.jsonl"
    shutil.copyfile(CORPUS / "branches" / "session.jsonl", path)
    leaf = json.loads(path.read_bytes().splitlines()[-1])["id"]
    target = corpus_entry_id("branches", user="Suggest a name", reply=True)
    entry = json.loads(_call("branch-summary", str(path), "--from", leaf, "--to", target))
    assert entry["type"] == "branch_summary" and entry["parentId"] == entry["fromId"] == target


def test_compact_on_a_file_reports_pis_refusal(tmp_path, offline_provider):
    path = tmp_path / "tools.jsonl"
    shutil.copyfile(CORPUS / "tools" / "session.jsonl", path)
    with pytest.raises(CommandError, match="Nothing to compact"):
        _call("compact", str(path), "--keep-recent-tokens", "1000000")


@pytest.mark.django_db
def test_compact_on_a_stored_session_runs_the_job_and_appends(import_corpus, offline_provider):
    session, _ = import_corpus("tools")
    result = json.loads(
        _call("compact", session.session_id, "--keep-recent-tokens", "150", "--json")
    )
    job = Job.objects.get(pk=result["job"])
    assert result["status"] == "succeeded" and result["offline"] is True
    assert Entry.objects.filter(session=session, entry_id__in=result["entryIds"]).count() == 1
    assert job.parameters["keepRecentTokens"] == 150
    with pytest.raises(CommandError, match="Already compacted"):
        _call("compact", f"pk:{session.pk}")


@pytest.mark.django_db
def test_branch_summary_on_a_stored_session_moves_its_leaf(import_corpus, offline_provider):
    session, _ = import_corpus("branches")
    target = corpus_entry_id("branches", user="Why MIT", reply=True)
    result = json.loads(
        _call(
            "branch-summary",
            session.session_id,
            "--from",
            session.leaf_entry_id,
            "--to",
            target,
            "--instructions",
            "decisions",
            "--json",
        )
    )
    session.refresh_from_db()
    assert session.leaf_entry_id == result["entryIds"][0]
