"""The engine is plain Python: importing every module of contextlab.pi never loads Django."""

import subprocess
import sys
from pathlib import Path

import contextlab.pi

ENGINE_DIR = Path(contextlab.pi.__file__).parent


def test_it_imports_every_engine_module_without_loading_django():
    modules = sorted(
        "contextlab.pi." + ".".join(p.relative_to(ENGINE_DIR).with_suffix("").parts)
        for p in ENGINE_DIR.rglob("*.py")
        if p.name != "__init__.py"
    )
    assert "contextlab.pi.jsutil" in modules
    package_path = str(ENGINE_DIR.parent)
    code = (
        "import importlib, sys, types\n"
        # Import the engine package without running contextlab/__init__.py (which loads Celery).
        "pkg = types.ModuleType('contextlab')\n"
        f"pkg.__path__ = [{package_path!r}]\n"
        "sys.modules['contextlab'] = pkg\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "bad = sorted(\n"
        "    m for m in sys.modules if m == 'django' or m.startswith(('django.', 'celery'))\n"
        ")\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
