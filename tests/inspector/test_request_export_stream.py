"""The request export (JSON body and curl command) is written out in pieces, byte for byte the
text it was when it was built as one string: every entry of every recorded session (the
conformance corpora) is compared with the digests taken from the one-string version
(``request_export_golden.json``), both when the answer is small enough to be kept whole and when
it is streamed (a threshold of 0 streams every answer).

CONTEXTLAB_WRITE_GOLDEN=1 writes the digests again (only with a version known to be right).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from django.urls import reverse

from contextlab.inspector import computed, views
from contextlab.inspector.selectors import clear_cache, session_index
from tests.conftest import REPO

pytestmark = pytest.mark.django_db

GOLDEN = Path(__file__).with_name("request_export_golden.json")
CORPORA = sorted((REPO / "tests" / "conformance").glob("corpus*/*/session.jsonl"))
# Of a session's entries, these many (spread over it) are exported in each format.
PER_SESSION = 12


def _names() -> list[str]:
    return [f"{p.parent.parent.name}/{p.parent.name}" for p in CORPORA]


def _entries(session) -> list[str]:  # type: ignore[no-untyped-def]
    ids = sorted(session_index(session).items)
    step = max(1, len(ids) // PER_SESSION)
    return [*ids[::step][:PER_SESSION], session.leaf_entry_id]


def _digests(client, import_corpus, name: str, streamed: bool = False) -> dict[str, str]:  # type: ignore[no-untyped-def]
    corpus, session_name = name.split("/")
    clear_cache()
    session, _ = import_corpus(session_name, REPO / "tests" / "conformance" / corpus)
    url = reverse("inspector:request", args=[session.pk])
    found = {}
    for entry in _entries(session):
        for kind in ("json", "curl"):
            response = client.get(url, {"entry": entry, "format": kind})
            assert response.status_code == 200, (name, entry, kind)
            assert response.streaming == streamed, (name, entry, kind)
            body = b"".join(response.streaming_content) if response.streaming else response.content
            note = response.get("X-Contextlab-Note", "")
            found[f"{entry}/{kind}"] = hashlib.sha256(body + b"|" + note.encode()).hexdigest()
    return found


@pytest.mark.parametrize("name", _names())
def test_the_request_export_is_the_same_text_kept_whole_or_streamed(
    owner_client, import_corpus, monkeypatch, name
):
    whole = _digests(owner_client, import_corpus, name)
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    if os.environ.get("CONTEXTLAB_WRITE_GOLDEN"):
        golden[name] = whole
        GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    # A corpus recorded after the digests were taken is held to the streamed export only.
    if name in golden:
        assert whole == golden[name]
    # Every answer streamed (none is small enough to be kept whole; none read from the cache).
    monkeypatch.setattr(views, "WHOLE_ANSWER_CHARS", 0)
    monkeypatch.setattr(computed, "found", lambda key: None)
    assert _digests(owner_client, import_corpus, name, streamed=True) == whole
