"""The soak: the real `pi -p` (0.80.2 and 1.6.0, the extension installed as its README says) run
again and again against a live contextlab (gunicorn on PostgreSQL) that is stopped, SIGSTOPped,
killed -9 while Pi pushes, answers 500 or slowly, never answers, refuses the token and restarts;
new sessions, `--continue`, two Pi at once. At the end every session file Pi wrote is on the
server byte for byte, each line once; every Pi run exited 0, within 1.5 s of its last output.

`make test` runs 20 (CONTEXTLAB_SOAK_RUNS, default 20), `make soak` 100 and prints the figures.
What a run could not deliver before its bounded exit is delivered by a later start: the test
ends with `--no-session` runs, which resume every earlier file and write none of their own.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from contextlab.api.services import api_token_create
from contextlab.library.models import Session
from tests.gunicorn import Gunicorn
from tests.integrations.installed import require_pis
from tests.integrations.pi_print import (
    PI_DISTS,
    ModelServer,
    PiRun,
    PushProxy,
    agent_root,
    finish_pi,
    run_pi,
    session_files,
    session_id_of,
    start_pi,
)
from tests.waiting import wait_until

pytestmark = [
    pytest.mark.oracle,
    pytest.mark.django_db(transaction=True),
]

RUNS = int(os.environ.get("CONTEXTLAB_SOAK_RUNS") or 20)
EXIT_WITHIN = 1.5
VERSIONS = sorted(PI_DISTS)
# One step after another, cycled: each is one Pi run ("pair": two at once) under that condition.
STEPS = [
    "new",
    "continue",
    "500",
    "pair",
    "stopped",
    "continue",
    "kill9",
    "slow",
    "token",
    "sigstop",
    "big",
    "hang",
    "continue",
    "restart",
]


@pytest.fixture(autouse=True)
def _pis_installed() -> None:
    require_pis(PI_DISTS)


def _stored(client: Any, session_id: str) -> tuple[bytes | None, Session | None]:
    session = Session.objects.filter(session_id=session_id).first()
    if session is None:
        return None, None
    response = client.get(f"/sessions/{session.pk}/export.jsonl")
    data = b"".join(response.streaming_content) if response.streaming else response.content
    return data, session


class Soak:
    def __init__(self, tmp_path: Path, server: Gunicorn, proxy: PushProxy, token: str) -> None:
        self.model = ModelServer()
        self.server = server
        self.proxy = proxy
        self.roots = {
            version: agent_root(
                tmp_path / f"pi-{version}",
                version,
                self.model.port,
                {"url": proxy.url, "token": token},
            )
            for version in VERSIONS
        }
        self.runs: list[PiRun] = []
        self.steps: Counter[str] = Counter()
        self.random = random.Random(17)

    def run(self, version: str, args: list[str], env: dict[str, str] | None = None) -> PiRun:
        run = run_pi(version, self.roots[version], args, env)
        self.runs.append(run)
        return run

    def step(self, n: int, kind: str) -> None:
        # Every other cycle swaps the versions, so that each condition meets both Pis.
        version = VERSIONS[(n + n // len(STEPS)) % len(VERSIONS)]
        text = f"Run step {n} {kind}"
        fresh = not session_files(self.roots[version])
        args = ["-p", text] if fresh or kind in ("new", "500", "pair") else ["-c", "-p", text]
        self.steps[kind] += 1
        if kind in ("new", "continue", "restart"):
            if kind == "restart":
                self.server.kill()
                self.server.start()
            self.run(version, args)
        elif kind in ("500", "slow", "hang"):
            self.proxy.mode = kind
            self.run(version, args)
            self.proxy.mode = "up"
        elif kind == "stopped":
            self.proxy.stop()
            self.run(version, args)
            self.proxy.start()
        elif kind == "sigstop":
            assert self.server.proc is not None
            os.killpg(self.server.proc.pid, signal.SIGSTOP)
            try:
                self.run(version, args)
            finally:
                os.killpg(self.server.proc.pid, signal.SIGCONT)
        elif kind == "token":
            self.run(version, args, {"CONTEXTLAB_TOKEN": "refused-token"})
        elif kind == "big":
            self.run(version, ["-c", "-p", f"Run big {n}"] if not fresh else ["-p", f"Run big {n}"])
        elif kind == "kill9":
            self.kill9_mid_push(version, args)
        elif kind == "pair":
            other = ["-c", "-p", f"{text} b"] if not fresh else ["-p", f"{text} b"]
            first = start_pi(version, self.roots[version], args)
            second = start_pi(version, self.roots[version], other)
            self.runs += [finish_pi(first), finish_pi(second)]
        else:
            raise AssertionError(kind)

    def kill9_mid_push(self, version: str, args: list[str]) -> None:
        """contextlab killed -9 while Pi pushes: right after Pi writes its session file (a push
        follows within the debounce), then started again."""
        root = self.roots[version]
        before = {f: f.stat().st_mtime_ns for f in session_files(root)}
        run = start_pi(version, root, args)
        assert run.proc is not None

        def wrote() -> bool:
            now = {f: f.stat().st_mtime_ns for f in session_files(root)}
            return now != before or run.proc.poll() is not None  # type: ignore[union-attr]

        wait_until(wrote, timeout=60, what="Pi to write its session", interval=0.01)
        time.sleep(self.random.uniform(0.05, 0.3))
        self.server.kill()
        self.runs.append(finish_pi(run))
        self.server.start()

    def heal(self) -> None:
        """Pi runs with a working server until it holds every file: each start resumes the files
        earlier runs left behind. They run `--no-session`, so that they add no bytes of their own:
        on a loaded machine a short run may deliver only part of what is pending before its
        bounded exit, and a run writing a new session each time could leave a new tail behind
        every round; without one, each round only takes away."""
        self.proxy.mode = "up"
        deadline = time.monotonic() + 180
        attempt = 0
        while self.pending() and time.monotonic() < deadline:
            for version in VERSIONS:
                self.run(version, ["--no-session", "-p", f"Run final {attempt}"])
            attempt += 1

    def pending(self, client: Any = None) -> list[Path]:
        client = client or self.client
        files = [f for root in self.roots.values() for f in session_files(root)]
        return [f for f in files if _stored(client, session_id_of(f))[0] != f.read_bytes()]

    client: Any = None

    def explain(self, client: Any) -> str:
        """What the server and the extension's checkpoint say about each file not held: the
        assertion's message (xdist swallows printed output)."""
        lines = []
        for file in self.pending(client):
            data = file.read_bytes()
            stored, session = _stored(client, session_id_of(file))
            root = next(r for r in self.roots.values() if file.is_relative_to(r))
            checkpoints = [
                json.loads(p.read_text())
                for p in (root / "agent" / "contextlab" / "push-state").glob("*.json")
            ]
            mine = [c for c in checkpoints if c.get("file") == str(file)]
            prefix = stored is not None and data.startswith(stored)
            lines.append(
                f"{file.relative_to(root.parent)}: file {len(data)} B, {data.count(b'\\n')} lines;"
                f" server {None if stored is None else len(stored)} B (a prefix: {prefix},"
                f" revisions {session.revisions.count() if session else None});"
                f" checkpoint {mine}"
            )
        runs = [(r.version, r.args, r.code, r.stderr[-300:]) for r in self.runs[-6:]]
        return "\n".join(lines) + f"\nlast runs: {runs}"


@pytest.fixture
def soak(tmp_path, django_user_model, client):  # type: ignore[no-untyped-def]
    user = django_user_model.objects.create_user(username="alice", password="x" * 20)
    token = api_token_create(user=user, name="soak")[1]
    client.force_login(user)
    server = Gunicorn(tmp_path / "gunicorn.log", "--threads", "4")
    server.start()
    proxy = PushProxy(server.url)
    proxy.start()
    soak = Soak(tmp_path, server, proxy, token)
    soak.client = client
    yield soak
    proxy.stop()
    if server.proc is not None:
        os.killpg(server.proc.pid, signal.SIGCONT)
    server.kill()
    soak.model.stop()


def test_every_pi_run_exits_0_at_once_and_the_server_ends_with_every_file_byte_for_byte(
    soak, client
):
    started = time.monotonic()
    n = 0
    while len(soak.runs) < RUNS:  # the steps; the healing runs come on top
        soak.step(n, STEPS[n % len(STEPS)])
        n += 1
    soak.heal()
    try:
        wait_until(lambda: not soak.pending(client), timeout=60, what="the server to hold it all")
    except AssertionError as error:
        raise AssertionError(f"{error}\n{soak.explain(client)}") from None

    files = [f for root in soak.roots.values() for f in session_files(root)]
    identical = 0
    lines_once = 0
    revised = 0
    for file in files:
        data, session = _stored(client, session_id_of(file))
        identical += data == file.read_bytes()
        assert session is not None
        lines_once += session.entry_count == len(file.read_bytes().splitlines()) - 1
        revised += session.revisions.count() > 1
    figures = {
        "runs": len(soak.runs),
        "by_version": dict(Counter(r.version for r in soak.runs)),
        "steps": dict(soak.steps),
        "exit_codes": dict(Counter(r.code for r in soak.runs)),
        "max_exit_delay_s": round(max(r.exit_delay for r in soak.runs), 3),
        "mean_exit_delay_s": round(sum(r.exit_delay for r in soak.runs) / len(soak.runs), 3),
        "max_run_s": round(max(r.seconds for r in soak.runs), 2),
        "session_files": len(files),
        "byte_identical": identical,
        "each_line_once": lines_once,
        "sessions_with_a_new_revision": revised,
        "push_answers": dict(Counter(soak.proxy.seen)),
        "healing_runs": sum("--no-session" in r.args for r in soak.runs),
        "minutes": round((time.monotonic() - started) / 60, 1),
    }
    print("\nSOAK " + json.dumps(figures))
    bad = [(r.version, r.args, r.code, r.stderr[-2000:]) for r in soak.runs if r.code != 0]
    assert not bad, bad
    slow = [(r.version, r.args, round(r.exit_delay, 2)) for r in soak.runs]
    assert all(delay <= EXIT_WITHIN for *_, delay in slow), slow
    assert len(soak.runs) >= RUNS
    assert identical == len(files) and lines_once == len(files), figures
