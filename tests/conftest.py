"""Shared fixtures: personas (owner, teammate, outsider) and paths to the corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
REAL_SESSION = SHARED / "fixtures" / "real" / "large-session.jsonl"


@pytest.fixture
def real_session_path() -> Path:
    if not REAL_SESSION.exists():
        pytest.skip(f"{REAL_SESSION} is not on this machine")
    return REAL_SESSION
