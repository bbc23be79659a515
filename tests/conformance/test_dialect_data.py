"""The dialect's Pi strings are exactly what tools/extract_pi_strings.mjs reads from the installed
Pi 0.80.2 (kept in the generated release table, never retyped or edited by hand)."""

import json
import subprocess
from pathlib import Path

import pytest

from contextlab.pi.dialects.release_table import ReleaseTexts
from tests.conformance.conftest import ORACLE_DIR, node_binary, oracle_available
from tests.environment import unavailable

EXTRACTOR = Path(__file__).resolve().parents[2] / "tools" / "extract_pi_strings.mjs"


@pytest.mark.oracle
def test_it_keeps_the_strings_the_extractor_reads_from_pi():
    node = node_binary()
    if node is None or not oracle_available():
        unavailable("Node 24 or the pinned Pi oracle (tests/conformance/oracle) is not installed")
    out = subprocess.run(
        [node, str(EXTRACTOR)], cwd=ORACLE_DIR, capture_output=True, check=True, timeout=120
    )
    extracted = json.loads(out.stdout)
    assert len(extracted) > 60
    for name, value in extracted.items():
        assert getattr(ReleaseTexts("0.80.2"), name) == value, name


@pytest.mark.oracle
def test_it_keeps_the_1x_strings_the_extractor_reads_from_pi_1_6_0():
    from tests.conformance.conftest import ORACLES

    node = node_binary()
    if node is None or not oracle_available("1.6.0"):
        unavailable("Node 24 or the pinned Pi 1.6.0 oracle is not installed")
    out = subprocess.run(
        [node, str(EXTRACTOR.with_name("extract_pi_1x_strings.mjs"))],
        cwd=ORACLES["1.6.0"][0],
        capture_output=True,
        check=True,
        timeout=120,
    )
    extracted = json.loads(out.stdout)
    assert len(extracted) >= 13
    for name, value in extracted.items():
        assert getattr(ReleaseTexts("1.6.0"), name) == value, name
