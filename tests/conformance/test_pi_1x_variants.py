"""The Pi 1.x request variants (``1.0``, ``1.3``, ``1.5``, ``1.6``) against the real 1.0.3, 1.3.0,
1.5.2 and 1.6.0.

A session file does not say which 1.x wrote it, and the session side did not change over 1.x;
pi-ai's request shaping did (docs/pi-dialects.md, "Where 1.0.3, 1.3.0 and 1.5.2 differ"). For
every entry of every ``corpus-1.6.0`` session as leaf, each installed version's own
``buildSessionProjection`` + ``convertToLlm`` and its pi-ai ``streamSimple`` body (captured from
``fetch``, ``oracle-<version>/request_bodies.mjs``) are compared with the engine, for both corpus
models at small windows (12 000 / 20 000 tokens: the clamp binds and thinking crosses models):

1. the projection equals ours (the 1.6.0 rules) in every version;
2. the body equals the engine's for that version's variant byte for byte;
3. it differs from the body of the variant before it on some leaf (the variants are not
   interchangeable on this corpus).

Pi 1.6.0 is installed with the dev oracles; 1.0.3, 1.3.0 and 1.5.2 only by
``make oracle-1.x-variants``: without them their cases skip (as every oracle test does without
its oracle). Releases between these are not compared.
"""

from __future__ import annotations

import json
import shutil
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from contextlab.pi.dialects import pi_1_x
from contextlab.pi.jsutil import json_stringify
from contextlab.pi.session import parse_session_file
from tests.conformance.conftest import rebuilt_1x_request, run_oracle

pytestmark = pytest.mark.oracle

CORPUS_1X = Path(__file__).resolve().parent / "corpus-1.6.0"
SESSIONS = sorted(CORPUS_1X.glob("*/session.jsonl"))
# Each compared release and the engine variant that follows it, oldest first.
VERSIONS = {"1.0.3": "1.0", "1.3.0": "1.3", "1.5.2": "1.5", "1.6.0": "1.6"}
WINDOWS = (12000, 20000)


def _models() -> list[dict[str, Any]]:
    manifest = json.loads((CORPUS_1X / "edits" / "manifest.json").read_text())
    return [
        {
            **model,
            "name": model["id"],
            "contextWindow": window,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        }
        for model in manifest["models"]
        for window in WINDOWS
    ]


MODELS = _models()


@cache
def _theirs(version: str, path: Path, tmp: Path) -> dict[str, Any]:
    copy = tmp / f"{version}-{path.parent.name}.jsonl"
    shutil.copyfile(path, copy)
    result: dict[str, Any] = run_oracle(
        "request_bodies.mjs", {"file": str(copy), "models": MODELS}, version=version
    )
    assert result["version"] == version
    return result


@cache
def _ours(variant: str, path: Path) -> dict[str, list[str]]:
    session = parse_session_file(path)
    return {
        entry["id"]: [
            rebuilt_1x_request(
                session.entries, entry["id"], model, header=session.header, variant=variant
            ).chat_completions_body()
            for model in MODELS
        ]
        for entry in session.entries
    }


@pytest.fixture(scope="module")
def oracle_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("variants")


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.parent.name)
def test_each_1x_release_projects_the_session_as_1_6_0_does(version, path, oracle_tmp):
    session = parse_session_file(path)
    by_id = {e.get("id"): e for e in session.entries}
    for leaf in _theirs(version, path, oracle_tmp)["leaves"]:
        projection = pi_1_x.build_session_projection(session.entries, leaf["leafId"], by_id)
        messages = pi_1_x.convert_to_llm(projection.messages)
        assert json_stringify(messages) == leaf["messages"], leaf["leafId"]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.parent.name)
def test_each_1x_release_sends_the_body_of_its_variant(version, path, oracle_tmp):
    ours = _ours(VERSIONS[version], path)
    for leaf in _theirs(version, path, oracle_tmp)["leaves"]:
        for model, mine, pi in zip(MODELS, ours[leaf["leafId"]], leaf["bodies"], strict=True):
            assert mine == pi, (leaf["leafId"], model["id"], model["contextWindow"])


@pytest.mark.parametrize("version", list(VERSIONS)[1:])
def test_each_variant_differs_from_the_one_before_it(version, oracle_tmp):
    """On the corpus, a release's bodies are not those of the variant before it."""
    previous = list(VERSIONS.values())[list(VERSIONS).index(version) - 1]
    differ = 0
    for path in SESSIONS:
        older = _ours(previous, path)
        for leaf in _theirs(version, path, oracle_tmp)["leaves"]:
            differ += sum(
                a != b for a, b in zip(older[leaf["leafId"]], leaf["bodies"], strict=True)
            )
    assert differ > 0
