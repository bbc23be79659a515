"""``tools/gen_large_session.py`` (``tools/`` is not a package) as a module, for the benchmarks
that generate their sessions in process."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent


def large_session_generator() -> ModuleType:
    path = REPO / "tools" / "gen_large_session.py"
    spec = importlib.util.spec_from_file_location("gen_large_session", path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"{path} is missing")
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_large_session"] = module
    spec.loader.exec_module(module)
    return module
