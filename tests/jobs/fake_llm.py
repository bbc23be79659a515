"""A real HTTP server on 127.0.0.1 speaking OpenAI chat-completions and Anthropic messages.

Both Pi (under Node) and contextlab (through the official Python SDKs) are pointed at it, so the
bodies they send can be compared byte for byte. It streams Server-Sent Events exactly as the two
APIs do, and can be scripted to fail (HTTP status), stall (to kill a worker mid-request) or answer
with a given text.

    with FakeLLMServer() as server:
        server.script.append(Reply(text="## Goal\\n..."))
        ... base_url = server.openai_base_url / server.anthropic_base_url ...
        server.requests[0].json
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer. ``status`` other than 200 answers with an API error body."""

    text: str = "## Goal\nSummarised by the fake server."
    status: int = 200
    stall_seconds: float = 0.0
    stop_reason: str = "stop"  # "stop" or "length"
    input_tokens: int = 1200
    output_tokens: int = 34
    retry_after: str | None = None
    thinking_tokens: int | None = None  # Anthropic: output_tokens_details in message_delta
    # Anthropic: a signed thinking block before the text, and tool_use blocks after it
    # (``{"id", "name", "input"}``; the reply then stops on ``tool_use``).
    thinking: str | None = None
    signature: str = "sig-fake"
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class FakeLLMServer:
    script: deque[Reply] = field(default_factory=deque)
    requests: list[Recorded] = field(default_factory=list)
    received: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def openai_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def point_at(
        self,
        settings: Any,
        provider: str = "openai",
        *,
        max_retries: int = 0,
        timeout: float | None = None,
        **options: Any,
    ) -> None:
        """Point contextlab's configured provider (pytest-django's ``settings``) at this server,
        with a test key and no SDK retries unless given; ``options`` override the provider's own
        settings (model, limits)."""
        conf = settings.CONTEXTLAB_LLM
        settings.CONTEXTLAB_LLM = {
            **conf,
            **({"timeout": timeout} if timeout is not None else {}),
            "provider": provider,
            "max_retries": max_retries,
            provider: {
                **conf[provider],
                **(
                    {"base_url": self.anthropic_base_url, "api_key": "sk-ant-test"}
                    if provider == "anthropic"
                    else {"base_url": self.openai_base_url, "api_key": "sk-test"}
                ),
                **options,
            },
        }

    def next_reply(self) -> Reply:
        with self._lock:
            return self.script.popleft() if self.script else Reply()

    def record(self, recorded: Recorded) -> None:
        with self._lock:
            self.requests.append(recorded)
        self.received.set()


def _make_handler(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            return

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length)
            server.record(
                Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            )
            reply = server.next_reply()
            if reply.stall_seconds:
                # Wait for the test to release us (or give up): lets a test kill a worker while
                # its request is in flight.
                server.release.wait(reply.stall_seconds)
            # The query is not part of the route: the SDK's beta.messages.create (pi-ai 1.x) posts
            # to /v1/messages?beta=true.
            route = self.path.split("?", 1)[0]
            if route.endswith("/chat/completions"):
                self._openai(reply, body)
            elif route.endswith("/messages"):
                self._anthropic(reply, body)
            else:
                self._send_json(404, {"error": {"message": f"no route {self.path}"}})

        def _send_json(self, status: int, payload: Any, extra: dict[str, str] | None = None):
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for key, value in (extra or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def _error(self, reply: Reply, anthropic: bool) -> None:
            extra = {"retry-after": reply.retry_after} if reply.retry_after else {}
            message = f"fake server error {reply.status}"
            if anthropic:
                payload = {"type": "error", "error": {"type": "api_error", "message": message}}
            else:
                payload = {"error": {"message": message, "type": "server_error", "code": None}}
            self._send_json(reply.status, payload, extra)

        def _stream(self, events: list[str]) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            self.close_connection = True
            try:
                for event in events:
                    self.wfile.write(event.encode())
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return  # the client went away mid-stream (a test killed it, or it timed out)

        def _openai(self, reply: Reply, body: bytes) -> None:
            if reply.status != 200:
                return self._error(reply, anthropic=False)
            request = json.loads(body)
            model = request.get("model", "fake")
            base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0}
            base["model"] = model

            def chunk(choices: list[Any], **extra: Any) -> str:
                return "data: " + json.dumps({**base, "choices": choices, **extra}) + "\n\n"

            finish = "length" if reply.stop_reason == "length" else "stop"
            half = len(reply.text) // 2
            events = [
                chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}}]),
                chunk([{"index": 0, "delta": {"content": reply.text[:half]}}]),
                chunk([{"index": 0, "delta": {"content": reply.text[half:]}}]),
                chunk([{"index": 0, "delta": {}, "finish_reason": finish}]),
                chunk(
                    [],
                    usage={
                        "prompt_tokens": reply.input_tokens,
                        "completion_tokens": reply.output_tokens,
                        "total_tokens": reply.input_tokens + reply.output_tokens,
                    },
                ),
                "data: [DONE]\n\n",
            ]
            self._stream(events)

        def _anthropic(self, reply: Reply, body: bytes) -> None:
            if reply.status != 200:
                return self._error(reply, anthropic=True)
            request = json.loads(body)

            def event(name: str, data: Any) -> str:
                return f"event: {name}\ndata: {json.dumps(data)}\n\n"

            if reply.tool_calls:
                stop = "tool_use"
            else:
                stop = "max_tokens" if reply.stop_reason == "length" else "end_turn"
            message = {
                "id": "msg_fake",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": request.get("model", "fake"),
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": reply.input_tokens, "output_tokens": 1},
            }
            events = [event("message_start", {"type": "message_start", "message": message})]
            # Each block: its start, its deltas (text and thinking in two halves), its stop.
            blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
            if reply.thinking is not None:
                half = len(reply.thinking) // 2
                blocks.append(
                    (
                        {"type": "thinking", "thinking": ""},
                        [
                            {"type": "thinking_delta", "thinking": reply.thinking[:half]},
                            {"type": "thinking_delta", "thinking": reply.thinking[half:]},
                            {"type": "signature_delta", "signature": reply.signature},
                        ],
                    )
                )
            if reply.text or not (reply.thinking is not None or reply.tool_calls):
                half = len(reply.text) // 2
                blocks.append(
                    (
                        {"type": "text", "text": ""},
                        [
                            {"type": "text_delta", "text": reply.text[:half]},
                            {"type": "text_delta", "text": reply.text[half:]},
                        ],
                    )
                )
            for call in reply.tool_calls:
                start = {"type": "tool_use", "id": call["id"], "name": call["name"], "input": {}}
                arguments = json.dumps(call.get("input") or {})
                blocks.append((start, [{"type": "input_json_delta", "partial_json": arguments}]))
            for index, (start, deltas) in enumerate(blocks):
                events.append(
                    event(
                        "content_block_start",
                        {"type": "content_block_start", "index": index, "content_block": start},
                    )
                )
                events.extend(
                    event(
                        "content_block_delta",
                        {"type": "content_block_delta", "index": index, "delta": delta},
                    )
                    for delta in deltas
                )
                events.append(
                    event("content_block_stop", {"type": "content_block_stop", "index": index})
                )
            usage: dict[str, Any] = {"output_tokens": reply.output_tokens}
            if reply.thinking_tokens is not None:
                usage["output_tokens_details"] = {"thinking_tokens": reply.thinking_tokens}
            events.append(
                event(
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": stop, "stop_sequence": None},
                        "usage": usage,
                    },
                )
            )
            events.append(event("message_stop", {"type": "message_stop"}))
            self._stream(events)

    return Handler


def serve_forever_in_process(port_file: str) -> None:  # pragma: no cover - used by subprocess tests
    """Entry point when a test needs the server in another process (writes its port)."""
    server = FakeLLMServer().start()
    with open(port_file, "w") as fh:
        fh.write(str(server.port))
    while True:
        time.sleep(3600)
