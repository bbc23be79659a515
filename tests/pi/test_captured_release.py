"""A captured prompt chooses the release (issue #18): where the file leaves candidate releases
that send differently, those whose own prompt for the turn is the captured one byte for byte are
kept, and detection chooses among them; a capture no candidate reproduces leaves detection's
choice, and says so. A caller's choice (``--pi-version``, a profile) still wins.

The sessions are committed representative corpora (``tests/conformance/releases``) with a
``contextlab.prompt`` capture appended as the request leaf's child, carrying the system message
of the request the release recorded (or a text no release writes).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from contextlab.pi.captured import CAPTURE_TYPE, captured_prompt_at
from contextlab.pi.request import steps_of
from contextlab.pi.session import SessionTree, parse_session_file
from contextlab.pi.turn import build_turn
from tests.conformance.matrix import _restore_fs, models_of, prompt_source_for

CORPORA = Path(__file__).resolve().parents[1] / "conformance" / "releases"


def _recorded(version: str, scenario: str, seq: str) -> tuple[dict[str, Any], Path, dict[str, Any]]:
    directory = CORPORA / f"corpus-{version}" / scenario
    manifest = json.loads((directory / "manifest.json").read_text())
    _restore_fs(manifest, directory)
    request = next(r for r in manifest["requests"] if r["seq"] == seq)
    return manifest, directory, request


def _body(version: str, scenario: str, seq: str) -> str:
    _, directory, request = _recorded(version, scenario, seq)
    return (directory / request["body"]).read_text()


def _system_text(body: str) -> str:
    messages = json.loads(body)["messages"]
    return str(next(m["content"] for m in messages if m["role"] in ("system", "developer")))


def _turn(
    version: str, scenario: str, seq: str, captured_text: str | None, chosen: str | None = None
):
    manifest, directory, request = _recorded(version, scenario, seq)
    session = parse_session_file(directory / "session.jsonl")
    entries = list(session.entries)
    leaf = request["leafId"]
    if captured_text is not None:
        entries.append(
            {
                "type": "custom",
                "customType": CAPTURE_TYPE,
                "id": "c0ffee00",
                "parentId": leaf,
                "timestamp": "2026-12-06T00:00:00.000Z",
                "data": {"systemPrompt": captured_text},
            }
        )
    tree = SessionTree(entries)
    path_ids = [str(e["id"]) for e in tree.path(leaf)]
    captured = captured_prompt_at(path_ids, tree.children(leaf), tree.by_id)
    assert (captured is not None) == (captured_text is not None)
    models = models_of(manifest)
    turn = build_turn(
        entries,
        leaf,
        header=session.header,
        chosen=chosen,
        model_lookup=lambda provider, model_id: models.get(model_id),
        prompt_for=prompt_source_for(manifest, request),
        captured=captured,
    )
    recorded = (directory / request["body"]).read_text()
    body = steps_of(turn.dialect).request_body(turn, models[request["model"]["id"]])
    assert turn.choice is not None and turn.choice.release is not None
    return turn.choice.release, body, recorded


def test_captured_prompt_narrows_the_candidates_and_chooses_among_them() -> None:
    # 0.80.3's turn: the file leaves 0.80.3–0.80.10 and detection takes 0.80.10 (of the most
    # alike); 0.80.3's captured prompt is 0.80.3's and 0.80.6's only.
    recorded = _body("0.80.3", "compaction", "007")
    before, _, _ = _turn("0.80.3", "compaction", "007", None)
    assert before.candidates == ("0.80.3", "0.80.6", "0.80.7", "0.80.10")
    assert before.chosen == "0.80.10"
    found, _, _ = _turn("0.80.3", "compaction", "007", _system_text(recorded))
    assert found.candidates == ("0.80.3", "0.80.6")
    assert found.chosen == "0.80.6"
    assert found.why.endswith("; the captured prompt fits 0.80.3–0.80.6")
    assert found.why.startswith("0.80.6, of the most candidates alike (0.80.6)")


def test_captured_prompt_chooses_a_release_that_rebuilds_the_request_byte_for_byte() -> None:
    # The first request: no reply yet, 0.80.2 assumed among 42 candidates and the body differs;
    # 0.80.7's captured prompt leaves 0.80.7–0.81.1, which send what 0.80.7 sent.
    recorded = _body("0.80.7", "compaction", "001")
    before, body, _ = _turn("0.80.7", "compaction", "001", None)
    assert before.chosen == "0.80.2" and body != recorded
    found, body, _ = _turn("0.80.7", "compaction", "001", _system_text(recorded))
    assert found.candidates == ("0.80.7", "0.80.10", "0.81.1")
    assert found.chosen == "0.81.1"
    assert found.why.endswith("the captured prompt fits 0.80.7–0.81.1")
    assert body == recorded


def test_captured_prompt_matching_no_candidate_keeps_detections_choice() -> None:
    before, before_body, _ = _turn("0.80.7", "compaction", "007", None)
    found, body, _ = _turn("0.80.7", "compaction", "007", "You are not Pi.")
    assert (found.candidates, found.chosen) == (before.candidates, before.chosen)
    assert found.why == f"{before.why}; the captured prompt matches none of 0.80.3–0.80.10"
    assert body == before_body


def test_a_chosen_release_wins_over_the_captured_prompt() -> None:
    recorded = _body("0.80.3", "compaction", "007")
    found, _, _ = _turn("0.80.3", "compaction", "007", _system_text(recorded), chosen="0.80.10")
    assert found.chosen == "0.80.10"
    assert found.why.startswith("chosen (--pi-version)")
    assert "captured prompt" not in found.why
