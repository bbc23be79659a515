"""Each log line is printed once: the root logger's console handler is the only one on the way."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

SCRIPT = (
    "import logging;"
    "logging.getLogger('django.request').warning('marker-django');"
    "logging.getLogger('contextlab.jobs.tasks').warning('marker-app')"
)


@pytest.mark.parametrize("debug", ["true", "false"])
def test_it_prints_each_log_line_once(debug: str) -> None:
    # A fresh process, so that Django configures logging from the settings as it does in
    # production (pytest's own capture handlers are not in the way).
    env = {
        **os.environ,
        "DEBUG": debug,
        "SECRET_KEY": "x" * 50,
        "ALLOWED_HOSTS": "localhost",
        "DJANGO_SETTINGS_MODULE": "contextlab.settings",
    }
    done = subprocess.run(
        [sys.executable, str(REPO / "manage.py"), "shell", "-c", SCRIPT],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    output = done.stdout + done.stderr
    assert output.count("marker-django") == 1, output
    assert output.count("marker-app") == 1, output
