"""Commands that read a session file and print start light: `manage.py context`, `compact` and
`branch-summary` load neither the REST API (django-ninja builds its schema at import), nor the
URL configuration and views, nor Celery. Checked on the real `manage.py`, in a subprocess, by
the modules loaded when it exits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from tests.conftest import CORPUS, REPO

# Run manage.py as the shell would, then list the heavy modules that were loaded, and whether the
# app registry was (with what django.setup() loads and `context` does not need: the apps' models,
# the admin, the PostgreSQL driver).
PROBE = """
import atexit, json, runpy, sys
HEAVY = ("ninja", "pydantic", "celery", "kombu", "contextlab.api.api", "contextlab.api.schemas",
         "contextlab.urls", "contextlab.jobs.tasks")
def report():
    from django.apps import apps
    heavy = sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in HEAVY)
                   or (m.startswith("contextlab.") and m.endswith(".views")))
    registry = sorted(m for m in sys.modules if m in ("django.contrib.admin", "psycopg")
                      or (m.startswith("contextlab.") and m.endswith(".models")
                          and not m.startswith("contextlab.pi.")))  # the engine's model catalog
    report = {"heavy": heavy, "ready": apps.ready, "registry": registry}
    sys.__stderr__.write("\\nLOADED " + json.dumps(report) + "\\n")
atexit.register(report)
sys.argv = ["manage.py", *sys.argv[1:]]
runpy.run_path("manage.py", run_name="__main__")
"""


def _probed(*args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
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


def _loaded(*args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    done, report = _probed(*args)
    return done, report["heavy"]


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


def test_context_runs_without_loading_the_app_registry_the_models_or_the_database_driver():
    done, report = _probed("context", str(CORPUS / "branches" / "session.jsonl"), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["leafId"]
    assert report["ready"] is False and report["registry"] == [], done.stderr[-3000:]
    # The probe sees them where the registry is loaded (a command that reads stored sessions).
    done, report = _probed(
        "compact", str(CORPUS / "compaction" / "session.jsonl"), "--dry-run", "--json"
    )
    assert done.returncode == 0, done.stderr
    assert report["ready"] is True and "contextlab.library.models" in report["registry"]


def test_context_as_a_process_prints_what_the_command_prints_in_process(tmp_path):
    """The shell's `manage.py context` (run without django.setup()) and the command run in a
    set-up process (call_command) print the same bytes, warnings and errors included."""
    import io

    from django.core.management import CommandError, call_command

    source = (CORPUS / "branches" / "session.jsonl").read_bytes().splitlines(keepends=True)
    path = tmp_path / "session.jsonl"
    # A line Pi skips (it is reported on stderr, the rest printed).
    path.write_bytes(b"".join([*source[:2], b"\xef\xbb\xbf{}\n", *source[2:]]))
    for args in (["--json"], [], ["--json", "--leaf", "line:5", "--dialect", "0.73"]):
        shell = subprocess.run(
            [sys.executable, "manage.py", "context", str(path), *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
        out, err = io.StringIO(), io.StringIO()
        call_command("context", str(path), *args, stdout=out, stderr=err)
        assert shell.returncode == 0, shell.stderr
        assert shell.stdout == out.getvalue() and out.getvalue()
        assert shell.stderr == err.getvalue() and "skipped" in err.getvalue()
    missing = tmp_path / "nope.jsonl"
    shell = subprocess.run(
        [sys.executable, "manage.py", "context", str(missing), "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    with pytest.raises(CommandError) as raised:
        call_command("context", str(missing), "--json")
    assert shell.returncode == 1 and shell.stdout == ""
    assert shell.stderr == f"CommandError: {raised.value}\n"
