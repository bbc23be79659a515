"""The real `pi -p` (0.80.2 and 1.6.0) with the extension installed as its README says: whatever
the server does, Pi exits 0 within 1.5 s of its last output, and says once per run what is wrong.

The agent dirs here already hold the push state of several earlier sessions that were never
delivered, the state in which the extension used to crash Pi ("This extension ctx is stale…")
and print one line per earlier session.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.integrations.installed import require_pis
from tests.integrations.pi_print import (
    PI_DISTS,
    ModelServer,
    PiRun,
    agent_root,
    run_pi,
    session_files,
)

pytestmark = [pytest.mark.oracle]

EXIT_WITHIN = 1.5
EARLIER_SESSIONS = 6


@pytest.fixture(autouse=True)
def _pis_installed() -> None:
    require_pis(PI_DISTS)


@pytest.fixture
def model():  # type: ignore[no-untyped-def]
    server = ModelServer()
    yield server
    server.stop()
    assert not server.errors, server.errors


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _assert_clean(run: PiRun) -> None:
    assert run.code == 0, f"pi {run.args} exited {run.code}: {run.stderr[-3000:]}"
    assert "Done:" in run.stdout, run.stdout
    assert "stale" not in run.stderr, run.stderr
    assert not re.search(r"^\s+at ", run.stderr, re.MULTILINE), "a stack trace on stderr"
    assert run.exit_delay <= EXIT_WITHIN, f"exited {run.exit_delay:.2f} s after its last output"


def _contextlab_lines(run: PiRun) -> list[str]:
    return [line for line in run.stderr.splitlines() if line.startswith("contextlab:")]


class ScriptedPushServer:
    """Answers every push with one status (401: a refused token, 404: not a member), at once."""

    def __init__(self, status: int) -> None:
        self.requests = 0

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def do_POST(handler) -> None:
                handler.rfile.read(int(handler.headers.get("content-length") or 0))
                self.requests += 1
                handler.send_response(status)
                handler.send_header("content-type", "application/json")
                handler.send_header("content-length", "2")
                handler.end_headers()
                handler.wfile.write(b"{}")

        ThreadingHTTPServer.daemon_threads = True
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _silent_server() -> tuple[socket.socket, str]:
    """A server that accepts connections and never answers (a SIGSTOPped contextlab)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    return listener, f"http://127.0.0.1:{listener.getsockname()[1]}"


def _seed_earlier_sessions(root: Path, first: Path, url: str) -> None:
    """EARLIER_SESSIONS undelivered sessions for `url` in the push state (copies of the one Pi
    wrote, each with its own id), as after a week of Pi runs while contextlab was away."""
    lines = first.read_bytes().splitlines(keepends=True)
    header = json.loads(lines[0])
    state = root / "agent" / "contextlab" / "push-state"
    for n in range(EARLIER_SESSIONS - 1):
        session_id = str(uuid.uuid4())
        file = first.with_name(f"earlier-{session_id}.jsonl")
        file.write_bytes(
            json.dumps({**header, "id": session_id}).encode() + b"\n" + b"".join(lines[1:])
        )
        entry = {"file": str(file), "url": url, "sessionId": session_id, "offset": None}
        entry |= {"prefixHash": "", "updatedAt": f"2026-01-01T00:00:0{n}.000Z"}
        name = hashlib.sha256(str(file).encode()).hexdigest()[:32]
        (state / f"{name}.json").write_text(json.dumps(entry))


@pytest.mark.parametrize("version", sorted(PI_DISTS))
def test_pi_print_exits_0_at_once_and_says_once_what_is_wrong_with_the_server(
    version, tmp_path, model
):
    """Pi 0.80.2 exited 1 with "This extension ctx is stale…" in every one of these runs once the
    push state held about six sessions, waited up to 15 s for a hung push, printed nothing for a
    bad URL or an unreachable server, and one line per earlier session for a refused token."""
    closed = _closed_port()
    refused = f"http://127.0.0.1:{closed}"
    root = agent_root(tmp_path / "pi", version, model.port, {"url": refused, "token": "t"})
    first = run_pi(version, root, ["-p", "Run first"])
    _assert_clean(first)
    listener, silent = _silent_server()
    token_refused, not_member = ScriptedPushServer(401), ScriptedPushServer(404)
    (written,) = session_files(root)
    for url in (refused, token_refused.url, not_member.url, silent):
        _seed_earlier_sessions(root, written, url)
    cases = [
        (refused, f"cannot reach {refused} (connection refused)"),
        (
            f"https://127.0.0.1:{closed}",
            f"cannot reach https://127.0.0.1:{closed} (connection refused)",
        ),
        ("http://contextlab.invalid", "cannot reach http://contextlab.invalid ("),
        (f"127.0.0.1:{closed}", f'CONTEXTLAB_URL "127.0.0.1:{closed}" is not a URL'),
        ("localhost:8000", 'CONTEXTLAB_URL "localhost:8000" does not start with http://'),
        (token_refused.url, f"{token_refused.url} refused the token (HTTP 401)"),
        (not_member.url, f"{not_member.url} refused session "),
        (silent, None),  # a push that never gets an answer: abandoned at exit, nothing said
    ]
    try:
        for n, (url, says) in enumerate(cases):
            env = {"CONTEXTLAB_URL": url, "CONTEXTLAB_TOKEN": "t"}
            run = run_pi(
                version,
                root,
                ["-c", "-p", f"Run case {n}"] if n % 2 else ["-p", f"Run case {n}"],
                env,
            )
            _assert_clean(run)
            lines = _contextlab_lines(run)
            if says is None:
                assert all(f"cannot reach {url} (no answer within" in line for line in lines)
                assert len(lines) <= 1, lines
                continue
            assert len(lines) == 1, (url, run.stderr)
            assert lines[0].startswith(f"contextlab: {says}"), lines
    finally:
        listener.close()
        token_refused.stop()
        not_member.stop()
    # Each run tries its own session and the earlier ones (as many as its short life allows).
    assert token_refused.requests >= 1 and not_member.requests >= 1


def test_an_unconfigured_extension_prints_nothing(tmp_path, model):
    root = agent_root(tmp_path / "pi", "0.80.2", model.port, {})
    run = run_pi("0.80.2", root, ["-p", "Run quietly"])
    _assert_clean(run)
    assert _contextlab_lines(run) == []
    assert not (root / "agent" / "contextlab").exists()
    assert len(session_files(root)) == 1


class ContractServer:
    """The append endpoint's contract, scripted: offset 0 with a body replaces what is held, the
    held length appends the complete lines, any other offset is 409; every answer carries
    `offset`, `tailBytes` and `tailSha256` of the bytes held."""

    def __init__(self) -> None:
        self.held: dict[str, bytes] = {}
        self.requests: list[tuple[str, int, int, int]] = []  # (session, offset, bytes, status)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                url = urlsplit(self.path)
                session_id = url.path.split("/")[-2]
                offset = int(parse_qs(url.query)["offset"][0])
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                held = owner.held.get(session_id, b"")
                status = 200
                if offset == 0 and body:
                    held = body[: body.rfind(b"\n") + 1]
                elif offset == len(held):
                    joined = held + body
                    held = joined[: joined.rfind(b"\n") + 1]
                else:
                    status = 409
                owner.held[session_id] = held
                owner.requests.append((session_id, offset, len(body), status))
                tail = held[len(held) - min(len(held), 4096) :]
                answer = {
                    "sessionId": session_id,
                    "offset": len(held),
                    "tailBytes": len(tail),
                    "tailSha256": hashlib.sha256(tail).hexdigest(),
                }
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        ThreadingHTTPServer.daemon_threads = True
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize("version", sorted(PI_DISTS))
def test_a_409_mid_line_for_pi_s_file_makes_the_real_pi_resend_the_file_from_0(
    version, tmp_path, model
):
    """Another writer's line after the owner's first lines: the server's offset is a line end of
    its bytes but mid-line in the owner's file. The extension checks the answer's tail digest,
    sends the file again from 0 (never from the server's offset), and the server ends with it."""
    server = ContractServer()
    try:
        root = agent_root(tmp_path / "pi", version, model.port, {"url": server.url, "token": "t"})
        _assert_clean(run_pi(version, root, ["-p", "Run first"]))
        (file,) = session_files(root)
        session_id = file.name.rsplit("_", 1)[1].removesuffix(".jsonl")
        mine = file.read_bytes()
        assert server.held[session_id] == mine
        cut = mine.index(b"\n", len(mine) // 2) + 1
        theirs = mine[:cut] + b'{"type":"message","id":"bob-was-here","parentId":null}\n'
        assert mine[len(theirs) - 1 : len(theirs)] != b"\n", "mid-line in Pi's file"
        server.held[session_id] = theirs
        before = len(server.requests)

        _assert_clean(run_pi(version, root, ["-c", "-p", "Run second"]))
        assert server.held[session_id] == file.read_bytes()
        offsets = [offset for sid, offset, *_ in server.requests[before:] if sid == session_id]
        assert 0 in offsets and len(theirs) not in offsets, offsets
    finally:
        server.stop()
