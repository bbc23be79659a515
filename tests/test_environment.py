"""tests/environment.py: a missing requirement skips a test, except under CI where it fails."""

from __future__ import annotations

import pytest

from tests.environment import in_ci, postgres_tool, unavailable


@pytest.mark.parametrize(
    ("value", "ci"), [("true", True), ("1", True), ("", False), ("false", False), ("0", False)]
)
def test_ci_is_read_from_the_environment(monkeypatch, value, ci):
    monkeypatch.setenv("CI", value)
    assert in_ci() is ci


def test_a_missing_requirement_skips_locally_and_fails_under_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception):
        unavailable("no Redis at redis://127.0.0.1:6379/13")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"no Redis at .* \(CI is set"):
        unavailable("no Redis at redis://127.0.0.1:6379/13")


def test_postgres_server_programs_are_found_off_path(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on PATH
    found = postgres_tool("initdb")
    assert found is None or found.startswith("/usr/lib/postgresql/")
