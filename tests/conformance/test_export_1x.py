"""An untouched Pi 1.x session exports as the very bytes Pi 1.6.0 wrote: system messages,
context edits, compactions with their ``systemMessage``, usage entries and all (the jobs'
``session_export_chunks`` and the export download both)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.urls import reverse

from contextlab.jobs import services
from contextlab.library.importer import import_session_file

pytestmark = pytest.mark.django_db

CORPUS_1X = Path(__file__).resolve().parent / "corpus-1.6.0"
SESSIONS = sorted(CORPUS_1X.glob("*/session.jsonl"))


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.parent.name)
def test_an_untouched_1x_session_exports_byte_for_byte(path, tmp_path, blob_dir, owner_client):
    copy = tmp_path / "session.jsonl"
    shutil.copyfile(path, copy)
    result = import_session_file(path=copy, index_search=False)
    assert result.session is not None and result.problems == []
    original = path.read_bytes()
    assert b"".join(services.session_export_chunks(result.session)) == original
    response = owner_client.get(reverse("jobs:export", args=[result.session.pk]))
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == original
