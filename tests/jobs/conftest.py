"""Stored sessions for job tests: real Pi 0.80.2 recordings imported through the library."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parent.parent / "conformance" / "corpus"


@pytest.fixture
def blob_dir(tmp_path, settings):
    settings.CONTEXTLAB_BLOB_DIR = tmp_path / "blobs"
    return settings.CONTEXTLAB_BLOB_DIR


@pytest.fixture
def import_corpus(tmp_path, blob_dir):
    """Import corpus/<name>/session.jsonl (a private copy) and return the stored Session."""
    from contextlab.library.services import import_session_file

    def _import(name: str):
        copy = tmp_path / f"{name}.jsonl"
        shutil.copyfile(CORPUS / name / "session.jsonl", copy)
        result = import_session_file(path=copy, index_search=False)
        assert result.session is not None, result
        result.session.refresh_from_db()
        return result.session, copy

    return _import


@pytest.fixture
def offline_provider(settings):
    settings.CONTEXTLAB_LLM = {**settings.CONTEXTLAB_LLM, "provider": "offline"}
