"""A captured prompt chooses the release on the page, in the API's /context and in
``manage.py context`` alike (issue #18): Pi 0.80.7's recorded session with the extension's
captures appended, its resources given by the project's resource profile (the command: the same
files by its options)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from contextlab.inspector.models import ResourceProfile
from contextlab.inspector.selectors import clear_cache
from contextlab.library.importer import import_session_file
from tests.captures import write_with_captures
from tests.conformance.matrix import _restore_fs
from tests.conftest import CORPUS
from tests.inspector.release_pages import api_context, inspector_page, text_by_testid

pytestmark = pytest.mark.django_db

SCENARIO = CORPUS.parent / "releases" / "corpus-0.80.7" / "compaction"


@pytest.fixture
def captured_session(settings, tmp_path, blob_dir):  # type: ignore[no-untyped-def]
    clear_cache()
    manifest = json.loads((SCENARIO / "manifest.json").read_text())
    _restore_fs(manifest, SCENARIO)
    settings.PI_AGENT_DIR = manifest["agentDir"]
    settings.PI_PACKAGE_DIR = manifest["piPackageDir"]
    settings.CONTEXTLAB_SERVER_ROOTS = [str(tmp_path), "/tmp/contextlab-corpus-versions"]

    def make(system_of: Any) -> tuple[Any, Path, dict[str, Any]]:
        def capture(info: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
            return {"v": 1, "systemPrompt": system_of(body), "tools": body.get("tools")}

        path = tmp_path / "captured.jsonl"
        write_with_captures(SCENARIO, path, capture)
        session = import_session_file(path=path, index_search=False).session
        assert session is not None
        ResourceProfile.objects.create(
            project=session.project,
            agent_dir=manifest["agentDir"],
            pi_root=manifest["piPackageDir"],
            home=manifest["home"],
            tools=manifest["activeTools"],
        )
        return session, path, manifest

    yield make
    clear_cache()


def _used(client: Any, session: Any, leaf: str) -> str:
    """The page's line saying which release built the turn and why."""
    return text_by_testid(inspector_page(client, session, leaf), "pi-release-used")


def _command(path: Path, leaf: str, manifest: dict[str, Any], monkeypatch: Any) -> dict[str, Any]:
    """The command's object, with the profile's files (its home: the process's HOME)."""
    monkeypatch.setenv("HOME", manifest["home"])
    out = io.StringIO()
    call_command(
        "context",
        str(path),
        "--json",
        "--leaf",
        leaf,
        "--agent-dir",
        manifest["agentDir"],
        "--pi-root",
        manifest["piPackageDir"],
        "--tools",
        ",".join(manifest["activeTools"]),
        stdout=out,
        stderr=io.StringIO(),
    )
    return json.loads(out.getvalue())  # type: ignore[no-any-return]


def _first_leaf(manifest: dict[str, Any]) -> str:
    return str(next(r["leafId"] for r in manifest["requests"] if r["seq"] == "001"))


def test_the_captured_prompt_chooses_the_release_on_the_api_and_the_command(
    captured_session, owner_client, owner, monkeypatch
):
    session, path, manifest = captured_session(lambda body: body["messages"][0]["content"])
    leaf = _first_leaf(manifest)
    api = api_context(owner_client, owner, session, leaf)
    assert api["piRelease"]["candidates"] == ["0.80.7", "0.80.10", "0.81.1"]
    assert api["piRelease"]["chosen"] == "0.81.1"
    assert api["piRelease"]["why"].endswith("; the captured prompt fits 0.80.7–0.81.1")
    assert _used(owner_client, session, leaf).startswith("Pi 0.81.1 used: 0.81.1, of the most")
    assert _command(path, leaf, manifest, monkeypatch)["piRelease"] == api["piRelease"]


def test_a_captured_prompt_no_release_writes_leaves_detections_choice(
    captured_session, owner_client, owner, monkeypatch
):
    session, path, manifest = captured_session(lambda body: "You are not Pi.")
    leaf = _first_leaf(manifest)
    api = api_context(owner_client, owner, session, leaf)
    assert api["piRelease"]["chosen"] == "0.80.2"
    assert _used(owner_client, session, leaf).startswith("Pi 0.80.2 used: 0.80.2 assumed")
    assert "; the captured prompt matches none of 0.70.0–0.85.1" in api["piRelease"]["why"]
    assert _command(path, leaf, manifest, monkeypatch)["piRelease"] == api["piRelease"]
