"""The Pi extension (integrations/pi-extension) inside the real Pi, pushing to a live contextlab.

Each test runs the real Pi (0.80.2 and 1.6.0, through its SDK, `drive-pi.mjs`) with the extension
installed the way the README says (the agent dir's settings.json names its folder), against the
scripted chat-completions server on 127.0.0.1 and a live contextlab behind a small proxy that the
test can take down, bring back on the same port, make answer 500, make lose contextlab's answer
after contextlab stored the lines, or make hang; or against contextlab as its own gunicorn process
that is killed and started again. What contextlab stores must be byte for byte the file Pi wrote,
whatever happened in between, Pi's turns must not wait for the extension, and for Pi 0.x the
captured prompts must be the request bodies Pi sent.
"""

from __future__ import annotations

import base64
import json
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest

from contextlab.api.services import api_token_create
from contextlab.library.models import Session
from tests.conformance.conftest import node_binary
from tests.conformance.recorder.fake_server import FakeChatServer, _Handler
from tests.conformance.recorder.record import prepare_root
from tests.gunicorn import Gunicorn
from tests.integrations.installed import require_pis
from tests.integrations.pi_print import EXTENSION, PI_DISTS, PushProxy
from tests.waiting import wait_until

pytestmark = [pytest.mark.oracle, pytest.mark.django_db(transaction=True)]

DRIVER = EXTENSION / "test" / "drive-pi.mjs"
CAPTURE_TYPE = "contextlab.prompt"


# --- the scripted model server, numbering requests itself (the driver adds no header) ----------


class _NumberingHandler(_Handler):
    def do_POST(self) -> None:
        if self.path.endswith("/chat/completions") and not self.headers.get("x-contextlab-seq"):
            with self.owner.lock:
                self.owner.auto_seq = getattr(self.owner, "auto_seq", 0) + 1
                self.headers["x-contextlab-seq"] = f"{self.owner.auto_seq:03d}"
        super().do_POST()


@pytest.fixture
def model_server(tmp_path):  # type: ignore[no-untyped-def]
    server = FakeChatServer(tmp_path / "bodies")
    server.httpd.RequestHandlerClass = type("H", (_NumberingHandler,), {"owner": server})
    server.start()
    yield server
    server.stop()
    assert not server.errors, server.errors


# --- a proxy in front of contextlab (its modes: PushProxy) ------------------------------------


@pytest.fixture
def proxy(live_server):  # type: ignore[no-untyped-def]
    proxy = PushProxy(live_server.url)
    proxy.start()
    yield proxy
    proxy.stop()


# --- the real Pi with the extension -----------------------------------------------------------


class Pi:
    running: ClassVar[list[Pi]] = []  # killed at the end of each test, whatever happened

    def __init__(self, version: str, root: Path, port: int, env: dict[str, str]) -> None:
        dist = PI_DISTS[version]
        self.root = root
        Pi.running.append(self)
        self.proc = subprocess.Popen(
            [node_binary(), str(DRIVER)],
            cwd=DRIVER.parent,
            env={
                **_pi_env(root),
                "PI_DIST": str(dist),
                "FAKE_PORT": str(port),
                "SCENARIO_CWD": str(root / "work"),
                # Short backoff so the test does not wait a minute for a retry.
                "CONTEXTLAB_PUSH_MIN_BACKOFF_MS": "100",
                "CONTEXTLAB_PUSH_MAX_BACKOFF_MS": "500",
                **env,
            },
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def send(self, op: str, **fields: Any) -> dict[str, Any]:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(
                f"Pi exited: {self.proc.stderr.read() if self.proc.stderr else ''}"
            )
        answer = json.loads(line)
        assert answer.pop("ok"), answer.get("error")
        return answer

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def quit(self) -> None:
        self.send("quit")
        self.proc.wait(timeout=10)


def _agent_root(tmp_path: Path, model_port: int, version: str, settings: dict[str, Any]) -> Path:
    root = tmp_path / "pi"
    prepare_root(root, model_port)
    settings_file = root / "agent" / "settings.json"
    data = json.loads(settings_file.read_text())
    if version.startswith("1."):
        data["cacheWarming"] = "off"
    data.update(settings)
    settings_file.write_text(json.dumps(data, indent=2))
    # The documented install step, with the CLI of the Pi under test.
    installed = subprocess.run(
        [node_binary(), str(PI_DISTS[version] / "cli.js"), "install", str(EXTENSION)],
        cwd=root,
        env=_pi_env(root),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert installed.returncode == 0, installed.stderr
    data = json.loads(settings_file.read_text())
    assert len(data["packages"]) == 1 and data.get("contextlab") == settings.get("contextlab")
    (root / "work" / "notes.txt").write_text("alpha\nbeta\n")
    return root


def _pi_env(root: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root / "home"),
        "TZ": "UTC",
        "LANG": "C.UTF-8",
        "PI_CODING_AGENT_DIR": str(root / "agent"),
        "PI_OFFLINE": "1",
        "PI_SKIP_VERSION_CHECK": "1",
    }


@pytest.fixture(autouse=True)
def _no_pi_left_running():  # type: ignore[no-untyped-def]
    yield
    while Pi.running:
        pi = Pi.running.pop()
        if pi.proc.poll() is None:
            pi.kill()


@pytest.fixture(autouse=True)
def _pis_installed() -> None:
    require_pis(PI_DISTS)  # skips, or under CI fails, when a Pi or Node is missing


@pytest.fixture
def token(django_user_model) -> str:  # type: ignore[no-untyped-def]
    alice = django_user_model.objects.create_user(username="alice", password="x" * 20)
    return api_token_create(user=alice, name="laptop")[1]


def _stored_bytes(client, session_id: str) -> bytes | None:  # type: ignore[no-untyped-def]
    session = Session.objects.filter(session_id=session_id).first()
    if session is None:
        return None
    response = client.get(f"/sessions/{session.pk}/export.jsonl")
    return b"".join(response.streaming_content) if response.streaming else response.content


def _wait_identical(client, session_id: str, file: Path, what: str) -> None:  # type: ignore[no-untyped-def]
    wait_until(
        lambda: _stored_bytes(client, session_id) == file.read_bytes(),
        timeout=30,
        what=f"contextlab to hold {file.name} byte for byte ({what})",
    )


def _pushing_pi(
    version: str, tmp_path: Path, model_server: FakeChatServer, url: str, token: str, **env: str
) -> tuple[Pi, Path, str]:
    """The real Pi with the extension installed and pushing to `url`, its session started:
    (the Pi, its session file, the session's id)."""
    settings = {"contextlab": {"url": url, "token": token}}
    root = _agent_root(tmp_path, model_server.port, version, settings)
    pi = Pi(version, root, model_server.port, env)
    first = pi.send("start")
    return pi, Path(first["sessionFile"]), first["sessionId"]


def _turn(n: int) -> list[dict[str, Any]]:
    return [
        {"tool_calls": [{"name": "bash", "arguments": {"command": f"echo turn {n}"}}]},
        {"text": f"Turn {n} done."},
    ]


@pytest.mark.parametrize("version", ["0.80.2", "1.6.0"])
def test_the_extension_delivers_what_pi_wrote_through_outages_500s_and_restarts(
    version, tmp_path, model_server, proxy, token, client, django_user_model
):
    client.force_login(django_user_model.objects.get(username="alice"))
    pi, file, session_id = _pushing_pi(version, tmp_path, model_server, proxy.url, token)

    pi.send("prompt", text="Run the first command.", answers=_turn(1))
    _wait_identical(client, session_id, file, "first turn")

    proxy.mode = "500"
    pi.send("prompt", text="Run the second command.", answers=_turn(2))
    wait_until(lambda: 500 in proxy.seen, timeout=30, what="a push answered 500")
    proxy.mode = "up"
    _wait_identical(client, session_id, file, "after the 500s")

    proxy.stop()  # contextlab unreachable: connections refused
    pi.send("prompt", text="Run the third command.", answers=_turn(3))
    proxy.start()  # back on the same port
    _wait_identical(client, session_id, file, "after the outage")

    # Offline, then Pi dies: the next Pi run resumes the old file from the server's offset.
    proxy.stop()
    pi.send("prompt", text="Run the fourth command.", answers=_turn(4))
    pi.kill()
    assert _stored_bytes(client, session_id) != file.read_bytes()
    proxy.start()
    pi = Pi(version, pi.root, model_server.port, {})
    second = pi.send("start")
    assert second["sessionId"] != session_id
    _wait_identical(client, session_id, file, "resumed by the next Pi run")
    pi.send("prompt", text="A new session.", answers=[{"text": "Hello."}])
    _wait_identical(client, second["sessionId"], Path(second["sessionFile"]), "second session")
    pi.quit()

    session = Session.objects.get(session_id=session_id)
    assert session.project.memberships.filter(user__username="alice", role="owner").exists()
    assert list(session.revisions.values_list("number", flat=True)) == [1], (
        "no push ever restarted the file at offset 0"
    )


@pytest.mark.parametrize("version", ["0.80.2", "1.6.0"])
def test_a_line_longer_than_a_chunk_is_delivered_whole_without_a_request_loop(
    version, tmp_path, model_server, proxy, token, client, django_user_model
):
    """A pasted base64 dump (or image) makes one line of several MiB, beyond the extension's 1 MiB
    chunk: it goes in one request that ends at its newline, and the lines after it follow."""
    client.force_login(django_user_model.objects.get(username="alice"))
    pi, file, session_id = _pushing_pi(version, tmp_path, model_server, proxy.url, token)
    dump = base64.b64encode(random.Random(13).randbytes(2_500_000)).decode()
    pi.send("prompt", text=f"What is in this dump?\n{dump}", answers=[{"text": "Noise."}])
    assert max(len(line) for line in file.read_bytes().splitlines()) > 3 * 1024 * 1024
    _wait_identical(client, session_id, file, "the long line")
    pi.send("prompt", text="Run the first command.", answers=_turn(1))
    _wait_identical(client, session_id, file, "the lines after it")
    pi.quit()
    # A handful of requests (one per kick at most), not hundreds of resends of the same bytes.
    assert len(proxy.seen) < 25, proxy.seen
    assert set(proxy.seen) <= {200, 409}, proxy.seen


@pytest.mark.parametrize("version", ["0.80.2", "1.6.0"])
def test_lines_stored_whose_answer_was_lost_are_not_sent_twice(
    version, tmp_path, model_server, proxy, token, client, django_user_model
):
    """contextlab stores the lines, then the answer never reaches Pi (the connection drops, or a
    500 comes back instead): the next push starts where the extension thinks the server is, the
    server answers 409 with what it holds, and the push resumes from there."""
    client.force_login(django_user_model.objects.get(username="alice"))
    pi, file, session_id = _pushing_pi(version, tmp_path, model_server, proxy.url, token)
    pi.send("prompt", text="Run the first command.", answers=_turn(1))
    _wait_identical(client, session_id, file, "first turn")

    for n, mode in ((2, "store-then-drop"), (3, "store-then-500")):
        stored_before, seen_before = proxy.stored.count(200), len(proxy.seen)
        proxy.mode = mode
        pi.send("prompt", text=f"Run command {n}.", answers=_turn(n))
        wait_until(
            lambda before=stored_before: proxy.stored.count(200) > before,
            timeout=30,
            what=f"contextlab to store lines whose answer is lost ({mode})",
        )
        proxy.mode = "up"
        # The retry offers the same bytes again; contextlab answers 409 with what it holds.
        wait_until(
            lambda before=seen_before: 409 in proxy.seen[before:],
            timeout=30,
            what=f"the retry after {mode} to learn the server's offset",
        )
        _wait_identical(client, session_id, file, f"after {mode}")
        pi.send("prompt", text=f"And command {n}b.", answers=_turn(n))
        _wait_identical(client, session_id, file, f"the turn after {mode}")
    pi.quit()

    assert 0 in proxy.seen and 500 in proxy.seen
    session = Session.objects.get(session_id=session_id)
    assert list(session.revisions.values_list("number", flat=True)) == [1]
    lines = file.read_bytes().splitlines()
    assert session.entry_count == len(lines) - 1, "every line stored once (the header aside)"


@pytest.fixture
def server_process(tmp_path):  # type: ignore[no-untyped-def]
    server = Gunicorn(tmp_path / "gunicorn.log", "--threads", "4")
    server.start()
    yield server
    server.kill()


@pytest.mark.parametrize("version", ["0.80.2", "1.6.0"])
def test_the_extension_resumes_after_contextlab_itself_crashed_and_restarted(
    version, tmp_path, model_server, server_process, token, client, django_user_model
):
    client.force_login(django_user_model.objects.get(username="alice"))
    pi, file, session_id = _pushing_pi(version, tmp_path, model_server, server_process.url, token)
    pi.send("prompt", text="Run the first command.", answers=_turn(1))
    _wait_identical(client, session_id, file, "first turn")

    # Killed while Pi works (possibly in the middle of a push), then started again.
    pi.send("prompt", text="Run the second command.", answers=_turn(2))
    server_process.kill()
    pi.send("prompt", text="Run the third command.", answers=_turn(3))
    server_process.start()
    _wait_identical(client, session_id, file, "after contextlab's restart")
    pi.send("prompt", text="Run the fourth command.", answers=_turn(4))
    _wait_identical(client, session_id, file, "the turn after")
    pi.quit()
    session = Session.objects.get(session_id=session_id)
    assert list(session.revisions.values_list("number", flat=True)) == [1]


def _timed(pi: Pi, op: str, **fields: Any) -> float:
    started = time.monotonic()
    pi.send(op, **fields)
    return time.monotonic() - started


@pytest.mark.parametrize("version", ["0.80.2", "1.6.0"])
def test_a_server_that_never_answers_does_not_slow_the_agent(
    version, tmp_path, model_server, proxy, token, client, django_user_model
):
    """contextlab accepts the connection and never answers. Pi's turns take as long as with a
    working server, the extension holds one request at a time (timed out after 2 s here, then
    retried with backoff), Pi quits within the shutdown budget, and the next Pi run delivers."""
    client.force_login(django_user_model.objects.get(username="alice"))
    timeout_ms = 2000
    pi, file, session_id = _pushing_pi(
        version,
        tmp_path,
        model_server,
        proxy.url,
        token,
        CONTEXTLAB_PUSH_TIMEOUT_MS=str(timeout_ms),
    )
    pi.send("prompt", text="Warm up.", answers=_turn(0))
    _wait_identical(client, session_id, file, "warm-up")
    baseline = [_timed(pi, "prompt", text=f"Run {n}.", answers=_turn(n)) for n in (1, 2, 3)]
    _wait_identical(client, session_id, file, "baseline turns")

    # A turn that waited for a push would take at least the request timeout.
    slowest_allowed = min(max(baseline) + 1.0, timeout_ms / 1000)
    proxy.mode = "hang"
    hung = [_timed(pi, "prompt", text="Run 4.", answers=_turn(4))]
    assert hung[0] < slowest_allowed, (baseline, hung)
    wait_until(lambda: proxy.hanging, timeout=10, what="a push held by the hung server")
    # The turns while a push hangs, and across its timeout and retry.
    for n in range(5, 12):
        hung.append(_timed(pi, "prompt", text=f"Run {n}.", answers=_turn(n)))
        time.sleep(0.3)
    assert proxy.hung >= 2, "the push timed out and was retried"
    assert max(hung) < slowest_allowed, (baseline, hung)
    assert proxy.most_hanging == 1, "one request in flight at a time, not a growing queue"
    quit_seconds = _timed(pi, "quit")
    pi.proc.wait(timeout=10)
    assert quit_seconds < 1.5 + 1.5, f"quitting took {quit_seconds:.1f} s"
    assert _stored_bytes(client, session_id) != file.read_bytes()

    proxy.mode = "up"
    pi = Pi(version, pi.root, model_server.port, {})
    pi.send("start")
    _wait_identical(client, session_id, file, "resumed by the next Pi run")
    pi.quit()


def _captures(file: Path) -> list[dict[str, Any]]:
    entries = [json.loads(line) for line in file.read_text().splitlines()]
    return [e for e in entries if e.get("type") == "custom" and e.get("customType") == CAPTURE_TYPE]


def test_captured_prompts_are_the_request_bodies_pi_080_sent(tmp_path, model_server, proxy, token):
    root = _agent_root(
        tmp_path, model_server.port, "0.80.2", {"contextlab": {"url": proxy.url, "token": token}}
    )
    pi = Pi("0.80.2", root, model_server.port, {})
    file = Path(pi.send("start")["sessionFile"])
    pi.send("prompt", text="Run the first command.", answers=_turn(1))
    pi.send("prompt", text="And again.", answers=_turn(2))
    pi.send("tools", names=["read", "bash"])
    pi.send("prompt", text="Fewer tools now.", answers=[{"text": "Fine."}])
    pi.quit()

    captures = _captures(file)
    bodies = [json.loads(p.read_text()) for p in sorted((tmp_path / "bodies").glob("*.body.json"))]
    assert len(bodies) == 5
    # One capture while the prompt stayed the same, a second one once the tool set changed.
    assert len(captures) == 2
    for body in bodies:
        matching = [
            c
            for c in captures
            if c["data"]["system"] == body["messages"][0] and c["data"]["tools"] == body["tools"]
        ]
        assert len(matching) == 1, "every request's prompt and tools are one captured prompt"
        assert matching[0]["data"]["systemPrompt"] == body["messages"][0]["content"]
    options = captures[0]["data"]["options"]
    assert any(f["path"].endswith("AGENTS.md") and f["content"] for f in options["contextFiles"])
    assert [t["function"]["name"] for t in captures[1]["data"]["tools"]] == ["read", "bash"]


def test_pi_1x_persists_its_prompt_so_nothing_is_captured(tmp_path, model_server, proxy, token):
    root = _agent_root(
        tmp_path, model_server.port, "1.6.0", {"contextlab": {"url": proxy.url, "token": token}}
    )
    pi = Pi("1.6.0", root, model_server.port, {})
    file = Path(pi.send("start")["sessionFile"])
    pi.send("prompt", text="Run the first command.", answers=_turn(1))
    pi.quit()
    assert _captures(file) == []


def test_unconfigured_the_extension_sends_nothing_and_writes_nothing(tmp_path, model_server, proxy):
    root = _agent_root(tmp_path, model_server.port, "0.80.2", {})
    pi = Pi("0.80.2", root, model_server.port, {})
    file = Path(pi.send("start")["sessionFile"])
    pi.send("prompt", text="Run the first command.", answers=_turn(1))
    pi.quit()
    assert proxy.seen == []
    assert _captures(file) == []
    assert not (root / "agent" / "contextlab").exists()
    shutil.rmtree(root)
