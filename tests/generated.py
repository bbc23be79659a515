"""Large session files made by ``tools/gen_large_session.py`` (the benchmarks' generator), for
tests that need more entries, branches and compactions than the recorded corpora hold."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from tests.conftest import REPO


def large_session_generator() -> ModuleType:
    """``tools/gen_large_session.py`` as a module (``tools/`` is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "gen_large_session", REPO / "tools" / "gen_large_session.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
