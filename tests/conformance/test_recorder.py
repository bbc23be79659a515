"""The recorder still drives the real Pi 0.80.2: a fresh recording is complete and consistent.

Records one scenario into a temporary corpus (the committed corpus is left alone) and checks that
every request Pi sent was captured with its leaf and context, and that the provider port rebuilds
each body from that context byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextlab.pi.providers.openai_completions import build_request_body, simple_options
from tests.conformance.conftest import oracle_available, rebuilt_1x_request
from tests.conformance.recorder.record import record_scenario
from tests.environment import unavailable

pytestmark = pytest.mark.oracle


def test_it_records_a_scenario_whose_requests_the_port_rebuilds(tmp_path: Path) -> None:
    if not oracle_available():
        unavailable("Node 24 or the Pi oracle is not installed")
    manifest = record_scenario("interactive", corpus=tmp_path / "corpus", base=tmp_path / "root")
    scenario = tmp_path / "corpus" / "interactive"
    lines = (scenario / "session.jsonl").read_text().splitlines()
    header = json.loads(lines[0])
    assert header["cwd"] == str(tmp_path / "root" / "interactive" / "work")
    assert manifest["entryCount"] == len(lines) - 1
    entry_ids = {json.loads(line)["id"] for line in lines[1:]}
    sent = json.loads((scenario / "sent.json").read_text())
    assert len(manifest["requests"]) == 8
    for request in manifest["requests"]:
        assert request["leafId"] in entry_ids
        index = sent["requests"][request["seq"]]
        model = next(m for m in manifest["models"] if m["id"] == request["model"]["id"])
        context = {
            "systemPrompt": sent["systemPrompts"][index["systemPrompt"]],
            "messages": [sent["messages"][i] for i in index["messages"]],
            "tools": manifest["toolDefinitions"],
        }
        options = simple_options(model, reasoning=request["reasoning"])
        body = (scenario / request["body"]).read_text()
        assert build_request_body(model, context, options) == body


def test_the_1_6_0_recorder_records_requests_the_1x_dialect_rebuilds(tmp_path: Path) -> None:
    """A fresh recording with the real Pi 1.6.0 (context edits from an extension, a split-turn
    compaction, a branch summary): every agent request is rebuilt from the new session file."""
    from contextlab.pi.session import parse_session_file
    from tests.conformance.recorder.record_versions import record_scenario as record_version

    if not oracle_available("1.6.0"):
        unavailable("Node 24 or the Pi 1.6.0 oracle is not installed")
    manifest = record_version("1.6.0", "edits", base=tmp_path / "root", corpus=tmp_path / "corpus")
    scenario = tmp_path / "corpus" / "edits"
    session = parse_session_file(scenario / "session.jsonl")
    agent = [r for r in manifest["requests"] if r["kind"] == "agent"]
    assert len(agent) == 7 and len(manifest["requests"]) == 10
    for request in agent:
        model = next(m for m in manifest["models"] if m["id"] == request["model"]["id"])
        rebuilt = rebuilt_1x_request(session.entries, request["leafId"], model)
        assert rebuilt.chat_completions_body() == (scenario / request["body"]).read_text(), request[
            "seq"
        ]
