"""The projection for EVERY entry as leaf, byte for byte against the real Pi 0.80.2.

For each session (the real large session, every recorded corpus session found at test time, and
synthesised edge cases written below) and each entry as leaf, we compare:

- ``raw``: ``build_session_context(...).messages`` vs Pi's ``buildSessionContext().messages``;
- ``llm``: ``convert_to_llm`` vs Pi's ``convertToLlm``;
- ``sent``: ``transform_messages`` for the leaf's model vs pi-ai's ``transformMessages`` (model
  resolved by Pi's ``ModelRegistry`` from the session's agent dir ``models.json`` and the built-in
  catalog; synthetic results stamped with a pinned ``Date.now()``);
- the thinking level and model.

Texts are compared as SHA-256 of their ``JSON.stringify`` (Node) and ``json_stringify`` (ours); a
mismatch re-runs that leaf in "full" mode to show the first differing character. All leaves of a
session go through ONE Node process.

Legacy (v1/v2) files: Pi draws random ids when it migrates, ours are deterministic, so leaves are
addressed by position (the n-th entry of the file) and the migrated entries are compared after
mapping Pi's ids onto ours by position. Projected messages carry no migrated ids, so their texts
are compared exactly.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from contextlab.pi.context import (
    build_session_context,
    convert_to_llm,
    model_for_transform,
    transform_messages,
)
from contextlab.pi.jsutil import json_stringify
from contextlab.pi.models import find_model
from contextlab.pi.request import build_request, iter_leaf_projections
from contextlab.pi.session import SessionTree, parse_session_file
from tests.conformance import projection_sessions as edge_sessions
from tests.conformance.conftest import CORPUS_DIR, corpus_sessions, run_oracle
from tests.conftest import REAL_SESSION

pytestmark = pytest.mark.oracle

NOW_MS = 1_767_225_600_123


def corpus_cases() -> list[tuple[str, Path, Path | None]]:
    cases: list[tuple[str, Path, Path | None]] = []
    if REAL_SESSION.exists():
        cases.append(("real-large", REAL_SESSION, None))
    for path in corpus_sessions():
        agent = path.parent / "fs" / "agent"
        name = str(path.relative_to(CORPUS_DIR).with_suffix(""))
        cases.append((f"corpus:{name}", path, agent if agent.exists() else None))
    return cases


class _Hasher:
    """SHA-256 of a list's JSON text, serialising each (shared) message object once."""

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Any, bytes]] = {}

    def text(self, obj: Any) -> bytes:
        hit = self._memo.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        encoded = json_stringify(obj).encode("utf-8")
        self._memo[id(obj)] = (obj, encoded)  # keeps obj alive: its id cannot be reused
        return encoded

    def digest(self, items: list[Any]) -> str:
        h = hashlib.sha256(b"[")
        for i, item in enumerate(items):
            if i:
                h.update(b",")
            h.update(self.text(item))
        h.update(b"]")
        return h.hexdigest()


def _copy(path: Path, tmp_path: Path) -> Path:
    target = tmp_path / path.name
    shutil.copyfile(path, target)
    target.chmod(0o644)
    return target


def _first_difference(ours: str, theirs: str) -> str:
    for i, (a, b) in enumerate(zip(ours, theirs, strict=False)):
        if a != b:
            lo = max(0, i - 80)
            return f"at char {i}: ours ...{ours[lo : i + 80]!r}\n pi ...{theirs[lo : i + 80]!r}"
    return f"lengths differ: ours {len(ours)}, pi {len(theirs)}"


def check_session(
    path: Path, agent_dir: Path | None, tmp_path: Path, *, version: str = "0.80.2"
) -> dict[str, int]:
    """Every leaf of ``path`` projected by us and by the installed Pi ``version`` (its
    ``project.mjs``); fails on the first difference."""
    copy = _copy(path, tmp_path)
    parsed = parse_session_file(copy)
    payload = {"file": str(copy), "nowMs": NOW_MS, "mode": "hash", "withEntries": True}
    if agent_dir is not None:
        payload["agentDir"] = str(agent_dir)
    pi = run_oracle("project.mjs", payload, version=version)

    assert pi["header"] == json_stringify(parsed.header)  # version set to 3 where Pi sets it
    # Same entries, in the same order; legacy ids mapped by position.
    assert len(pi["ids"]) == len(parsed.entries), "Pi and we keep different lines"
    ours_ids = [e["id"] for e in parsed.entries]
    legacy = parsed.original_version < 3
    if legacy:
        mapping = dict(zip(pi["ids"], ours_ids, strict=True))
        pi_entries = json.loads(pi["migrated"])
        for entry in pi_entries:
            for key in ("id", "parentId", "firstKeptEntryId"):
                if entry.get(key) in mapping:
                    entry[key] = mapping[entry[key]]
        assert json_stringify(pi_entries) == json_stringify(parsed.entries)
    else:
        assert pi["ids"] == ours_ids
        assert pi["migrated"] == json_stringify(parsed.entries)

    lookup = (lambda p, m: find_model(p, m, agent_dir)) if agent_dir else None
    hasher = _Hasher()
    ours: dict[str, dict[str, Any]] = {}
    for projection in iter_leaf_projections(parsed.entries, now_ms=NOW_MS, catalog_lookup=lookup):
        ours[projection.leaf_id] = {
            "raw": hasher.digest(projection.context.messages),
            "llm": hasher.digest(projection.llm),
            "sent": hasher.digest(projection.sent or []),
            "thinkingLevel": projection.context.thinking_level,
            "model": projection.context.model,
        }
    counts = {"leaves": 0, "raw": 0, "llm": 0, "sent": 0, "pi_hangs": 0}
    mismatches: list[str] = []
    for result in pi["results"]:
        leaf = ours_ids[result["index"]]
        if result.get("cycle"):
            counts["pi_hangs"] += 1  # a parentId cycle: Pi never returns, nothing to compare
            continue
        mine = ours[leaf]
        counts["leaves"] += 1
        for kind in ("raw", "llm", "sent"):
            if mine[kind] == result[kind]:
                counts[kind] += 1
            else:
                mismatches.append(f"{kind} of leaf #{result['index']} ({leaf})")
        assert mine["thinkingLevel"] == result["thinkingLevel"], leaf
        assert mine["model"] == result["model"], leaf
    if mismatches:
        detail = _explain(parsed, mismatches[0], copy, agent_dir, lookup, version)
        pytest.fail(f"{len(mismatches)} mismatches, first: {mismatches[0]}\n{detail}")

    # The one-leaf API gives the same answer as the shared walk (a sample of leaves).
    by_id = {e["id"]: e for e in parsed.entries}
    step = max(1, len(parsed.entries) // 25)
    for index in range(0, len(parsed.entries), step):
        leaf = ours_ids[index]
        request = build_request(
            parsed.entries, leaf, by_id=by_id, model_lookup=lookup, now_ms=NOW_MS
        )
        assert hasher.digest(request.agent_messages) == ours[leaf]["raw"]
        assert hasher.digest(request.messages) == ours[leaf]["llm"]
        assert hasher.digest(request.sent) == ours[leaf]["sent"]
    return counts


def _explain(parsed, mismatch: str, copy: Path, agent_dir: Path | None, lookup, version) -> str:
    index = int(mismatch.split("#")[1].split(" ")[0])
    kind = mismatch.split(" ")[0]
    payload = {"file": str(copy), "nowMs": NOW_MS, "mode": "full", "leaves": [index]}
    if agent_dir is not None:
        payload["agentDir"] = str(agent_dir)
    theirs = run_oracle("project.mjs", payload, version=version)["results"][0][kind]
    leaf = parsed.entries[index]["id"]
    context = build_session_context(parsed.entries, leaf)
    llm = convert_to_llm(context.messages)
    model = model_for_transform(context.model, messages=context.messages, catalog_lookup=lookup)
    mine = {"raw": context.messages, "llm": llm, "sent": transform_messages(llm, model, NOW_MS)}
    return _first_difference(json_stringify(mine[kind]), theirs)


@pytest.mark.parametrize(("name", "path", "agent_dir"), corpus_cases(), ids=lambda v: str(v))
def test_it_projects_every_leaf_of_the_corpus_like_pi(name, path, agent_dir, tmp_path):
    counts = check_session(path, agent_dir, tmp_path)
    print(f"{name}: {counts}")
    assert counts["leaves"] > 0


def check_edge_session(name: str, tmp_path: Path, *, version: str = "0.80.2") -> dict[str, int]:
    """``check_session`` on the hand-written edge-case session ``name``."""
    source = tmp_path / "source"
    source.mkdir()
    path = source / f"{name}.jsonl"
    path.write_bytes(edge_sessions.SESSIONS[name]())
    return check_session(path, None, tmp_path, version=version)


@pytest.mark.parametrize("name", sorted(edge_sessions.SESSIONS))
def test_it_projects_every_leaf_of_edge_case_sessions_like_pi(name, tmp_path):
    counts = check_edge_session(name, tmp_path)
    print(f"{name}: {counts}")
    assert counts["leaves"] > 0


def _tree_cases() -> list[tuple[str, Any]]:
    cases: list[tuple[str, Any]] = [(n, p) for n, p, _ in corpus_cases()]
    cases += [(f"edge:{n}", n) for n in sorted(edge_sessions.SESSIONS)]
    return cases


@pytest.mark.parametrize(("name", "source"), _tree_cases(), ids=lambda v: str(v))
def test_it_orders_the_tree_and_finds_leaf_labels_and_name_like_pi(name, source, tmp_path):
    if isinstance(source, Path):
        copy = _copy(source, tmp_path)
    else:
        copy = tmp_path / f"{source}.jsonl"
        copy.write_bytes(edge_sessions.SESSIONS[source]())
    parsed = parse_session_file(copy)  # before Pi rewrites the copy
    pi = run_oracle("project.mjs", {"file": str(copy), "mode": "tree"})
    tree = SessionTree(parsed.entries)
    mapping = dict(zip(pi["ids"], [e["id"] for e in parsed.entries], strict=True))

    def m(value: Any) -> Any:
        return mapping.get(value, value)

    assert [m(r) for r in pi["roots"]] == tree.roots
    pi_nodes = [(m(n["id"]), n["depth"], [m(c) for c in n["children"]]) for n in pi["nodes"]]
    ours = [(i, d, tree.children(i)) for i, d in tree.walk()]
    assert ours == pi_nodes
    assert m(pi["leafId"]) == tree.leaf_id
    assert {m(k): v for k, v in pi["labels"].items()} == tree.labels
    assert {m(k): v for k, v in pi["labelTimestamps"].items()} == tree.label_timestamps
    assert pi["name"] == tree.name
    assert [m(i) for i in pi["branchOfLeaf"]] == tree.path_ids(tree.leaf_id)


def _messy_file() -> bytes:
    header = b'{"type":"session","version":3,"id":"messy","timestamp":"2025-01-01T00:00:00.000Z"}'
    good = [
        b'{"type":"custom","id":"a","parentId":null,"timestamp":"t",'
        b'"s":"caf\xc3\xa9 \xf0\x9f\x98\x80"}',
        b'{"type":"custom","id":"b","parentId":"a","timestamp":"t","bad":"\xff|\xe2\x82|\xc0\xaf|'
        b'\xed\xa0\x80|\xf4\x90\x80\x80|\xe2\x82\xac"}',
        b'  {"type":"custom","id":"c","parentId":"b","timestamp":"t","k":{"b":1,"10":2,"2":3}}  ',
        b'{"type":"custom","id":"d","parentId":"c","timestamp":"t","big":12345678901234567890}\r',
    ]
    garbage = [b"{oops", b"", b"   ", b"\xe2\x80\xa8", b"\xef\xbb\xbf{}", b"NaN", b"0", b"null"]
    lines = [b"not json before the header", header]
    for g, line in zip(garbage, good + [b""] * 4, strict=False):
        lines += [g, line]
    # A long line puts a multi-byte character across Pi's 1 MiB read-buffer boundary.
    head = b"\n".join(lines) + b'\n{"type":"custom","id":"e","parentId":"d","timestamp":"t","p":"'
    pad = b"x" * (1024 * 1024 - 1 - len(head))
    lines.append(head.rsplit(b"\n", 1)[1] + pad + b'\xe2\x82\xac\xe2\x82\xac"}')
    return b"\n".join(lines)


def test_it_reads_lines_as_pi_does(tmp_path):
    """Garbage before the header, blank and Unicode-blank lines, BOM, CRLF, invalid UTF-8 of
    every kind (replaced by U+FFFD exactly as Node's decoder does), integer-like keys, huge
    integers, a character across Pi's 1 MiB buffer boundary: we keep exactly the objects Pi
    keeps, with the same JSON text, and report every line Pi skips."""
    path = tmp_path / "messy.jsonl"
    path.write_bytes(_messy_file())
    parsed = parse_session_file(path)
    pi = run_oracle("project.mjs", {"file": str(path), "mode": "load"})
    assert pi["loaded"] == json_stringify([parsed.header, *parsed.entries])
    reported = {p.line for p in parsed.problems}
    assert {1, 3, 11, 13, 15} <= reported  # garbage, {oops, BOM, NaN, 0 ...}
    assert any("invalid UTF-8" in p.reason for p in parsed.problems)
