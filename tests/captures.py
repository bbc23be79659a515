"""Recorded sessions as contextlab's Pi extension would have written them: a ``contextlab.prompt``
capture at each agent request's leaf, for the tests that compare the page, the API and the
``context`` command on captured prompts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contextlab.pi.captured import CAPTURE_TYPE

Json = dict[str, Any]


def write_with_captures(
    scenario: Path, out: Path, capture_data: Callable[[Json, Json], Json]
) -> None:
    """Write ``scenario``'s session to ``out`` with, before each agent request its manifest
    records, a capture entry appended at the request's leaf (so the reply is its child) holding
    ``capture_data(request_info, recorded_body)``."""
    manifest = json.loads((scenario / "manifest.json").read_text())
    lines = (scenario / "session.jsonl").read_text().splitlines()
    entries = [json.loads(line) for line in lines]
    captures: dict[str, Json] = {}
    for info in manifest["requests"]:
        if info["kind"] != "agent" or info["leafId"] in captures:
            continue
        body = json.loads((scenario / info["body"]).read_text())
        leaf = next(e for e in entries[1:] if e["id"] == info["leafId"])
        captures[info["leafId"]] = {
            "type": "custom",
            "customType": CAPTURE_TYPE,
            "data": capture_data(info, body),
            "id": f"cap{info['seq']}",
            "parentId": info["leafId"],
            "timestamp": leaf["timestamp"],
        }
    out_lines = [entries[0]]
    for entry in entries[1:]:
        if entry.get("parentId") in captures:
            entry = {**entry, "parentId": captures[entry["parentId"]]["id"]}
        out_lines.append(entry)
        if entry["id"] in captures:
            out_lines.append(captures[entry["id"]])
    out.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in out_lines))
