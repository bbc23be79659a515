"""Commands that read a session file and print start light: `manage.py context`, `compact` and
`branch-summary` load neither the REST API (django-ninja builds its schema at import), nor the
URL configuration and views, nor Celery. Checked on the real `manage.py`, in a subprocess, by
the modules loaded when it exits."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import CORPUS, REPO

# Run manage.py as the shell would, then list the heavy modules that were loaded.
PROBE = """
import atexit, json, runpy, sys
HEAVY = ("ninja", "pydantic", "celery", "kombu", "contextlab.api.api", "contextlab.api.schemas",
         "contextlab.urls", "contextlab.jobs.tasks")
def report():
    loaded = sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in HEAVY)
                    or (m.startswith("contextlab.") and m.endswith(".views")))
    sys.__stderr__.write("\\nLOADED " + json.dumps(loaded) + "\\n")
atexit.register(report)
sys.argv = ["manage.py", *sys.argv[1:]]
runpy.run_path("manage.py", run_name="__main__")
"""


def _loaded(*args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    line = [x for x in done.stderr.splitlines() if x.startswith("LOADED ")][-1]
    return done, json.loads(line.removeprefix("LOADED "))


@pytest.mark.parametrize(
    "args",
    [
        ("context", str(CORPUS / "branches" / "session.jsonl"), "--json"),
        ("compact", str(CORPUS / "compaction" / "session.jsonl"), "--dry-run", "--json"),
        ("branch-summary", "--help"),
    ],
    ids=["context", "compact", "branch-summary"],
)
def test_file_commands_load_neither_the_api_nor_the_web_stack_nor_celery(args):
    done, loaded = _loaded(*args)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()
    assert loaded == [], done.stderr[-3000:]


def test_the_probe_sees_the_api_when_a_command_loads_it():
    # The same probe on a command that runs the system checks (they import the URLs, and with
    # them the API): a probe that could never see the API would prove nothing.
    done, loaded = _loaded("check")
    assert done.returncode == 0, done.stderr
    assert "contextlab.api.api" in loaded and "ninja" in loaded and "celery" in loaded
