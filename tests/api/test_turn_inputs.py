"""One owner of a turn's server inputs (contextlab/inspector/turns.py): the date of the request,
the files as they were then, the Pi package dir and the resource profile reach every entry
point alike."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from contextlab.inspector import services
from contextlab.inspector.selectors import clear_cache, session_index
from contextlab.library.importer import import_session_file
from contextlab.pi.captured import CAPTURE_TYPE

pytestmark = pytest.mark.django_db

STAMP = "2026-01-05T10:00:00.000Z"
REQUEST_S = 1767607200  # STAMP in seconds


def _session(tmp_path: Path, *, capture: bool = False) -> tuple[object, Path]:
    clear_cache()
    work = tmp_path / "work"
    work.mkdir()
    agents = work / "AGENTS.md"
    agents.write_text("Rules written later.\n")
    lines = [
        {"type": "session", "version": 3, "id": "inputs-1", "timestamp": STAMP, "cwd": str(work)},
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": STAMP,
            "message": {"role": "user", "content": "hi", "timestamp": REQUEST_S * 1000},
        },
    ]
    if capture:
        lines.append(
            {
                "type": "custom",
                "customType": CAPTURE_TYPE,
                "data": {"v": 1, "systemPrompt": "What Pi sent.", "tools": None},
                "id": "c1",
                "parentId": "u1",
                "timestamp": STAMP,
            }
        )
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    session = import_session_file(path=path, index_search=False).session
    assert session is not None
    return session, agents


@pytest.fixture
def roots(settings, tmp_path, blob_dir):  # type: ignore[no-untyped-def]
    settings.CONTEXTLAB_SERVER_ROOTS = [str(tmp_path)]
    settings.PI_AGENT_DIR = str(tmp_path / "agent")
    settings.PI_PACKAGE_DIR = "/opt/pi"
    return settings


def test_a_context_file_changed_after_the_request_is_said_to_be_todays(roots, tmp_path):
    session, agents = _session(tmp_path)
    inspection = services.inspect_entry(session, session_index(session), "u1", tab="prompt")
    assert "Rules written later." in inspection.request.prompt.text
    said = [u for u in inspection.prompt_unknown if "changed on this server after" in u]
    assert said and str(agents) in said[0]
    # A file older than the request is what Pi read: nothing to say.
    os.utime(agents, (REQUEST_S - 3600, REQUEST_S - 3600))
    clear_cache()
    inspection = services.inspect_entry(session, session_index(session), "u1", tab="prompt")
    assert not [u for u in inspection.prompt_unknown if "changed on this server after" in u]


def test_a_captured_prompt_is_the_request_whatever_the_files_say_today(roots, tmp_path):
    session, _ = _session(tmp_path, capture=True)
    index = session_index(session)
    inspection = services.inspect_entry(session, index, "u1", tab="prompt")
    assert inspection.request.prompt.text == "What Pi sent."
    assert inspection.request.tools == []  # the payload declared none
    # The prompt tab still shows the rebuild beside the capture, with their differences.
    assert "Rules written later." in inspection.prompt.text
    assert inspection.captured_diff
    assert not [u for u in inspection.prompt_unknown if "changed on this server after" in u]
    context = services.turn_context(session, index, "u1")
    assert context["systemPrompt"] == "What Pi sent." and context["tools"] == []


def test_the_pi_package_dir_of_the_settings_replaces_the_placeholder_everywhere(roots, tmp_path):
    session, _ = _session(tmp_path)
    index = session_index(session)
    context = services.turn_context(session, index, "u1")
    assert "/opt/pi/README.md" in context["systemPrompt"]
    assert "<pi-package-dir>" not in context["systemPrompt"]
    inspection = services.inspect_entry(session, index, "u1", tab="json")
    assert inspection.request.prompt.text == context["systemPrompt"]
