"""GET /sessions/{id}/context answers `manage.py context --json`'s object given the same inputs,
byte for byte (piRelease included: both tell the release from the path as the request reads it)."""

from __future__ import annotations

import io
import json
import shutil

import pytest
from django.core.management import call_command

from contextlab.library.importer import import_session_file
from tests.conftest import CORPUS

pytestmark = pytest.mark.django_db

# Every recorded session: Pi 0.80.2's, Pi 1.6.0's (prompt kept in the session, context edits,
# a 0.80.2 session resumed under 1.6.0) and Pi 0.73.1's.
CORPORA = [CORPUS, CORPUS.parent / "corpus-1.6.0", CORPUS.parent / "corpus-0.73.1"]
NAMES = sorted(
    f"{corpus.name}/{p.name}"
    for corpus in CORPORA
    for p in corpus.iterdir()
    if (p / "session.jsonl").exists()
)


def command_json(path, leaf: str | None) -> bytes:  # type: ignore[no-untyped-def]
    out, err = io.StringIO(), io.StringIO()
    args = [str(path), "--json"] + (["--leaf", leaf] if leaf is not None else [])
    call_command("context", *args, stdout=out, stderr=err)
    return out.getvalue().rstrip("\n").encode("utf-8")


@pytest.mark.parametrize("name", NAMES)
def test_the_context_endpoint_equals_the_context_command_on_every_entry(
    name, owner_api, blob_dir, owner, settings, tmp_path
):
    settings.PI_AGENT_DIR = str(tmp_path / "agent")  # the same agent dir for both
    # The API reads server files only under the roots; the command reads what it is given.
    settings.CONTEXTLAB_SERVER_ROOTS = [
        str(tmp_path),
        "/tmp/contextlab-corpus",
        "/tmp/contextlab-corpus-versions",
    ]
    path = tmp_path / f"{name.replace('/', '-')}.jsonl"
    shutil.copyfile(CORPUS.parent / name / "session.jsonl", path)
    session = import_session_file(path=path, index_search=False).session
    assert session is not None
    lines = path.read_bytes().splitlines()
    ids = [json.loads(line)["id"] for line in lines[1:]]
    assert len(ids) == session.entry_count
    url = f"/sessions/{session.session_id}/context"
    for leaf in [None, *ids, "line:2", f"line:{len(lines)}"]:
        response = owner_api.get(url, **({} if leaf is None else {"leaf": leaf}))
        assert response.status_code == 200, leaf
        assert response["Content-Type"] == "application/json"
        assert b"".join(response.streaming_content) == command_json(path, leaf), leaf


def test_an_unknown_leaf_is_404(owner_api, import_corpus):
    session, _ = import_corpus("tools")
    url = f"/sessions/{session.session_id}/context"
    assert owner_api.get(url, leaf="nope").status_code == 404
    assert owner_api.get(url, leaf="line:1").status_code == 404  # the header is no entry
    assert owner_api.get(url, leaf="line:x").status_code == 404
