"""A scripted OpenAI-compatible chat-completions server for recording real Pi sessions offline.

Pi (pi-ai's ``openai-completions`` provider, through the ``openai`` npm SDK) POSTs to
``/v1/chat/completions`` with ``stream: true`` and reads Server-Sent Events. Every request body is
kept byte for byte, because those bytes are what the conformance suite must reproduce.

Answers come from a FIFO queue that the driver fills through ``POST /__queue`` before each step, so
the scenario script lives in one place (the Node driver). Summarisation requests (compaction, turn
prefix, branch summary) are answered automatically instead: a split-turn compaction sends two of
them in parallel, so their order is not deterministic and they must not consume the queue.

Request bodies are saved as ``<log_dir>/<seq>.body.json`` where ``seq`` is the value of the
``x-contextlab-seq`` header that the driver adds when it forwards a request (headers are not part of
what we compare; the body is untouched).

Pi 1.x's cache warming replays the last request with a one-token output cap, headers included: a
second request with a seq already seen and ``max_completion_tokens`` (or ``max_tokens``) 1 is such
a replay, kept as ``<seq>.warm-<n>.body.json`` and answered automatically.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SUMMARISER_PREFIX = "You are a context summarization assistant."
# What a cache-warming replay is answered with: one output token, the prompt read from the cache.
WARM_USAGE = {
    "prompt_tokens": 1000,
    "completion_tokens": 1,
    "prompt_tokens_details": {"cached_tokens": 1000},
}


class ScriptError(RuntimeError):
    pass


class FakeChatServer:
    def __init__(self, log_dir: Path, *, accept_untagged: bool = False) -> None:
        self.log_dir = log_dir
        self.accept_untagged = accept_untagged
        self.untagged = 0
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.queue: deque[dict[str, Any]] = deque()
        # Scripted summary answers (e.g. one cut by the token cap); when empty, summaries are
        # answered automatically.
        self.summary_queue: deque[dict[str, Any]] = deque()
        self.lock = threading.Lock()
        self.summary_count = 0
        self.call_count = 0
        self.seen: set[str] = set()
        self.warm_count = 0
        self.errors: list[str] = []
        handler = type("Handler", (_Handler,), {"owner": self})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def start(self) -> FakeChatServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def next_answer(self, request: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.call_count += 1
            messages = request.get("messages") or []
            first = messages[0] if messages else {}
            if isinstance(first.get("content"), str) and first["content"].startswith(
                SUMMARISER_PREFIX
            ):
                self.summary_count += 1
                if self.summary_queue:
                    return self.summary_queue.popleft()
                return {"text": _summary_text(request, self.summary_count)}
            if not self.queue:
                raise ScriptError(f"request {self.call_count}: script queue is empty")
            return self.queue.popleft()


def _summary_text(request: dict[str, Any], n: int) -> str:
    prompt = request["messages"][-1]["content"]
    if isinstance(prompt, list):
        prompt = "".join(part.get("text", "") for part in prompt)
    if "PREFIX of a turn" in prompt:
        kind = "turn prefix"
    elif "<previous-summary>" in prompt:
        kind = "updated compaction"
    elif "conversation branch" in prompt:
        kind = "branch"
    else:
        kind = "compaction"
    return (
        f"## Goal\nSummary {n} ({kind}): keep working on the demo project.\n\n"
        f"## Progress\n### Done\n- [x] Recorded step {n}\n\n"
        "## Next Steps\n1. Continue with the user's last request"
    )


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def sse_chunks(answer: dict[str, Any], model: str, seq: str) -> list[dict[str, Any]]:
    """Translate a scripted answer into the chunks a chat-completions stream would carry.

    An answer is ``{"thinking"?: str, "text"?: str, "tool_calls"?: [{"name", "arguments"}],
    "finish"?: str}``. Text and thinking are split into two deltas each so that Pi's stream
    accumulation is exercised; tool-call arguments likewise.
    """
    chunks = [_chunk(model, {"role": "assistant", "content": ""})]
    thinking = answer.get("thinking")
    if thinking:
        half = len(thinking) // 2
        for piece in (thinking[:half], thinking[half:]):
            chunks.append(_chunk(model, {"reasoning_content": piece}))
    text = answer.get("text")
    if text:
        half = len(text) // 2
        for piece in (text[:half], text[half:]):
            chunks.append(_chunk(model, {"content": piece}))
    calls = answer.get("tool_calls") or []
    for index, call in enumerate(calls):
        arguments = json.dumps(call["arguments"], ensure_ascii=False)
        half = len(arguments) // 2
        call_id = call.get("id") or f"call_{seq}_{index}"
        chunks.append(
            _chunk(
                model,
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": call["name"], "arguments": arguments[:half]},
                        }
                    ]
                },
            )
        )
        chunks.append(
            _chunk(
                model,
                {"tool_calls": [{"index": index, "function": {"arguments": arguments[half:]}}]},
            )
        )
    finish = answer.get("finish") or ("tool_calls" if calls else "stop")
    chunks.append(_chunk(model, {}, finish))
    usage = answer.get("usage") or {"prompt_tokens": 1000, "completion_tokens": 50}
    usage = {**usage, "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"]}
    chunks.append({**_chunk(model, {}), "choices": [], "usage": usage})
    return chunks


class _Handler(BaseHTTPRequestHandler):
    owner: FakeChatServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _read_body(self) -> bytes:
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length)

    def _reply_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        body = self._read_body()
        if self.path == "/__queue":
            answers = json.loads(body)
            with self.owner.lock:
                self.owner.queue.extend(answers)
            self._reply_json(200, {"queued": len(answers)})
            return
        if self.path == "/__queue_summaries":
            answers = json.loads(body)
            with self.owner.lock:
                self.owner.summary_queue.extend(answers)
            self._reply_json(200, {"queued": len(answers)})
            return
        if self.path == "/__status":
            with self.owner.lock:
                self._reply_json(200, {"pending": len(self.owner.queue)})
            return
        if not self.path.endswith("/chat/completions"):
            self._reply_json(404, {"error": {"message": f"unknown path {self.path}"}})
            return
        seq = self.headers.get("x-contextlab-seq")
        if not seq and self.owner.accept_untagged:
            # Pi 0.73 sends summaries through pi-ai's completeSimple, past the driver's tap.
            with self.owner.lock:
                self.owner.untagged += 1
                seq = f"untagged-{self.owner.untagged:03d}"
        if not seq:
            self.owner.errors.append("request without x-contextlab-seq header")
            self._reply_json(400, {"error": {"message": "missing x-contextlab-seq"}})
            return
        request = json.loads(body)
        with self.owner.lock:
            repeated = seq in self.owner.seen
            self.owner.seen.add(seq)
            if repeated:
                self.owner.warm_count += 1
                warm = self.owner.warm_count
        if repeated:
            if 1 not in (request.get("max_completion_tokens"), request.get("max_tokens")):
                self.owner.errors.append(f"request {seq} sent twice (not a cache-warming replay)")
                self._reply_json(500, {"error": {"message": f"request {seq} repeated"}})
                return
            (self.owner.log_dir / f"{seq}.warm-{warm}.body.json").write_bytes(body)
            self._stream({"text": "ok", "finish": "length", "usage": WARM_USAGE}, request, seq)
            return
        (self.owner.log_dir / f"{seq}.body.json").write_bytes(body)
        try:
            answer = self.owner.next_answer(request)
        except ScriptError as error:
            self.owner.errors.append(str(error))
            self._reply_json(500, {"error": {"message": str(error)}})
            return
        if "error" in answer:
            # A provider error, e.g. a context overflow: `{"error": message, "status": code}`.
            status = int(answer.get("status", 400))
            self._reply_json(status, {"error": {"message": answer["error"]}})
            return
        self._stream(answer, request, seq)

    def _stream(self, answer: dict[str, Any], request: dict[str, Any], seq: str) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        for chunk in sse_chunks(answer, request.get("model", ""), seq):
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True
