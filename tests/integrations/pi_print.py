"""The real Pi CLI in print mode (`pi -p`, 0.80.2 and 1.6.0) with the contextlab extension installed
as its README says, for the print-mode tests and the soak (`make soak`).

- `ModelServer`: an OpenAI-compatible chat-completions server whose answer follows from the
  request alone ("Run N" -> a bash call `echo N`, a tool result -> a short text), so any number of
  Pi processes can use it at once without a shared script.
- `PushProxy`: a proxy in front of contextlab the test switches between up, 500, slow (answers
  after a delay), hang (never answers), and stopped (connections refused).
- `agent_root()`: an agent dir with the fake provider and the extension installed by `pi install`.
- `run_pi()`: one `pi -p` run, timed: its exit code, output, and the seconds from its last byte of
  output to its exit.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.conformance.conftest import node_binary
from tests.conformance.recorder.fake_server import sse_chunks
from tests.conformance.recorder.record import prepare_root

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "integrations" / "pi-extension"
PI_DISTS = {
    "0.80.2": REPO / "tests/conformance/oracle/node_modules/@earendil-works/pi-coding-agent/dist",
    "1.6.0": REPO
    / "tests/conformance/oracle-1.6.0/node_modules/@earendil-works/pi-coding-agent/dist",
}


# --- the model ---------------------------------------------------------------------------------


def _text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def answer_for(request: dict[str, Any]) -> dict[str, Any]:
    """A tool call for a user's "Run ..." (its words become the command's argument; "Run big ..."
    prints 3,000 numbers, a tool result of about 14 KB), a text after a tool result."""
    messages = request.get("messages") or []
    last = messages[-1] if messages else {}
    if last.get("role") == "tool" or last.get("role") == "toolResult":
        return {"text": f"Done: {_text_of(last)[:40].strip()}"}
    words = _text_of(last).split()
    if words[:2] == ["Run", "big"]:
        return {"tool_calls": [{"name": "bash", "arguments": {"command": "seq 1 3000"}}]}
    if words[:1] == ["Run"]:
        argument = "-".join(w for w in words[1:] if w.isalnum()) or "nothing"
        return {"tool_calls": [{"name": "bash", "arguments": {"command": f"echo {argument}"}}]}
    return {"text": "Hello."}


class ModelServer:
    def __init__(self) -> None:
        self.requests = 0
        self.errors: list[str] = []
        self.lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                if not self.path.endswith("/chat/completions"):
                    owner.errors.append(f"unknown path {self.path}")
                    self.send_response(404)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                request = json.loads(body)
                with owner.lock:
                    owner.requests += 1
                    seq = f"{owner.requests:04d}"
                answer = answer_for(request)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                for chunk in sse_chunks(answer, request.get("model", ""), seq):
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        ThreadingHTTPServer.daemon_threads = True
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# --- a proxy in front of contextlab ------------------------------------------------------------


class PushProxy:
    """A proxy in front of contextlab, in one of these modes:

    - "up" forwards;
    - "500" answers 500 without forwarding;
    - "slow" forwards, then answers after `slow_seconds` (unless the client gave up first);
    - "hang" accepts the request and never answers;
    - "store-then-drop" forwards (contextlab stores the lines), then closes the connection
      without an answer; "store-then-500" forwards and answers 500 instead of contextlab's answer.

    `stop()`/`start()` take it down (connections refused) and back on the same port. `seen` holds
    the statuses answered (0: the connection was dropped), `stored` contextlab's statuses of the
    requests whose answer was lost, `hung`/`most_hanging` how many were held unanswered (in all,
    at once)."""

    def __init__(self, target: str) -> None:
        self.target = target.removeprefix("http://")
        self.mode = "up"
        self.slow_seconds = 3.0
        self.port = 0
        self.seen: list[int] = []
        self.stored: list[int] = []
        self.hung = 0
        self.hanging = 0
        self.most_hanging = 0
        self.lock = threading.Lock()
        self.httpd: ThreadingHTTPServer | None = None

    def start(self) -> None:
        proxy = self

        class Forward(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return

            def _relay(self, method: str) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                mode = proxy.mode
                if mode == "hang":
                    with proxy.lock:
                        proxy.hung += 1
                        proxy.hanging += 1
                        proxy.most_hanging = max(proxy.most_hanging, proxy.hanging)
                    try:
                        self._hold(lambda: proxy.mode == "hang")
                    finally:
                        with proxy.lock:
                            proxy.hanging -= 1
                    self.close_connection = True
                    return
                if mode == "500":
                    status, data = 500, b'{"detail": "injected"}'
                else:
                    try:
                        connection = http.client.HTTPConnection(proxy.target, timeout=60)
                        headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                        connection.request(method, self.path, body=body, headers=headers)
                        answer = connection.getresponse()
                        status, data = answer.status, answer.read()
                    except OSError:
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    if mode in ("store-then-drop", "store-then-500"):
                        with proxy.lock:
                            proxy.stored.append(status)
                    if mode == "store-then-drop":
                        with proxy.lock:
                            proxy.seen.append(0)
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    if mode == "store-then-500":
                        status, data = 500, b'{"detail": "injected after storing"}'
                    if mode == "slow":
                        until = time.monotonic() + proxy.slow_seconds
                        if not self._hold(lambda: time.monotonic() < until):
                            return  # the client gave up first
                with proxy.lock:
                    proxy.seen.append(status)
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    self.close_connection = True  # the client gave up (Pi exited): its loss

            def _hold(self, holding: Any) -> bool:
                """Waits while `holding()`; False when the client closed the connection first."""
                self.connection.settimeout(0.05)
                try:
                    while holding() and proxy.httpd is not None:
                        try:
                            if self.connection.recv(1, socket.MSG_PEEK) == b"":
                                self.close_connection = True
                                return False
                        except TimeoutError:
                            continue
                        except OSError:
                            self.close_connection = True
                            return False
                finally:
                    self.connection.settimeout(None)
                if proxy.mode == "hang" or proxy.httpd is None:
                    self.close_connection = True
                    return False
                return True

            def do_POST(self) -> None:
                self._relay("POST")

            def do_GET(self) -> None:
                self._relay("GET")

        ThreadingHTTPServer.allow_reuse_address = True
        ThreadingHTTPServer.daemon_threads = True
        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Forward)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self.httpd is not None:
            httpd, self.httpd = self.httpd, None
            httpd.shutdown()
            httpd.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


# --- Pi ----------------------------------------------------------------------------------------


def pi_env(root: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root / "home"),
        "TZ": "UTC",
        "LANG": "C.UTF-8",
        "PI_CODING_AGENT_DIR": str(root / "agent"),
        "PI_OFFLINE": "1",
        "PI_SKIP_VERSION_CHECK": "1",
        # Short backoff so that a run's retries happen within the run.
        "CONTEXTLAB_PUSH_MIN_BACKOFF_MS": "100",
        "CONTEXTLAB_PUSH_MAX_BACKOFF_MS": "400",
    }


def agent_root(root: Path, version: str, model_port: int, contextlab: dict[str, Any]) -> Path:
    """An agent dir for `version` using the model server, with the extension installed by the
    documented step (`pi install <folder>`) and `contextlab` as its settings."""
    prepare_root(root, model_port)
    settings_file = root / "agent" / "settings.json"
    data = json.loads(settings_file.read_text())
    data["defaultThinkingLevel"] = "off"
    if version.startswith("1."):
        data["cacheWarming"] = "off"
    if contextlab:
        data["contextlab"] = contextlab
    settings_file.write_text(json.dumps(data, indent=2))
    node = node_binary()
    assert node is not None
    installed = subprocess.run(
        [node, str(PI_DISTS[version] / "cli.js"), "install", str(EXTENSION)],
        cwd=root,
        env=pi_env(root),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert installed.returncode == 0, installed.stderr
    return root


@dataclass
class PiRun:
    version: str
    args: list[str]
    code: int | None = None
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    exit_delay: float = 0.0  # from the last byte Pi wrote to stdout to its exit
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)


def start_pi(version: str, root: Path, args: list[str], env: dict[str, str] | None = None) -> PiRun:
    node = node_binary()
    assert node is not None
    run = PiRun(version, args)
    run.proc = subprocess.Popen(
        [node, str(PI_DISTS[version] / "cli.js"), *args],
        cwd=root / "work",
        env={**pi_env(root), **(env or {})},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    return run


def finish_pi(run: PiRun, timeout: float = 60) -> PiRun:
    """Reads the run to its end: stdout piece by piece, so that the time of its last output is
    known to the millisecond."""
    proc = run.proc
    assert proc is not None and proc.stdout is not None and proc.stderr is not None
    started = time.monotonic()
    last_output = started
    out: list[bytes] = []
    err: list[bytes] = []
    reader = threading.Thread(target=lambda: err.append(proc.stderr.read()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    while piece := os.read(proc.stdout.fileno(), 65536):
        out.append(piece)
        last_output = time.monotonic()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    exited = time.monotonic()
    reader.join(timeout=10)
    run.code = proc.returncode
    run.stdout = b"".join(out).decode(errors="replace")
    run.stderr = b"".join(err).decode(errors="replace")
    run.exit_delay = exited - last_output
    run.seconds = exited - started
    return run


def run_pi(version: str, root: Path, args: list[str], env: dict[str, str] | None = None) -> PiRun:
    return finish_pi(start_pi(version, root, args, env))


def session_files(root: Path) -> list[Path]:
    return sorted((root / "agent" / "sessions").rglob("*.jsonl"))


def session_id_of(file: Path) -> str:
    with file.open("rb") as handle:
        return str(json.loads(handle.readline())["id"])
