"""A minimal foreign OpenAI-compatible server for the live loop's tests, and its tasks.

Written apart from procmem's offline model (``simulators``), it implements only what the
issue says a foreign endpoint has: ``POST /v1/chat/completions`` (with ``response_format``
JSON mode) and ``GET /v1/models``. Its behaviour is known to the tests:

- a chat request passes the worst-case checker with probability 0.9 when the system
  prompt holds the procedure ``GOOD`` and 0.3 otherwise; the draw is a hash of the
  request's messages, so the server is deterministic;
- a JSON-mode request (an extraction) answers ``GOOD`` at 0.7 and ``NEUTRAL`` at 0.6;
- ``completion_tokens`` is the reply's word count plus ``padding`` (to spend a budget);
- ``burst``: that many chat requests answered 429 with ``Retry-After: 0.01`` first;
- ``block_after``: the POST of that number (1-based) waits until ``release`` is set,
  and ``blocked`` is set meanwhile (a test kills its client there);
- ``hurt``: a chat request whose system prompt holds this text passes with probability
  0.05 whatever else it holds (a revision step that harms, so the gate reverts it).
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

GOOD = "Quantify the worst case"
NEUTRAL = "Mention inflation"
PASS_REPLY = "Worst case: you could lose about 4% of it in a bad year."
FAIL_REPLY = "It depends on the market; nobody can say."
CHECK = {"regex": "worst[- ]case[^\\n]*\\d", "ignore_case": True}
EXTRACTED = {
    "procedures": [
        {
            "title": GOOD,
            "trigger": "The user asks what could go wrong",
            "description": "State the worst case with a number before anything else.",
            "confidence": 0.7,
        },
        {
            "title": NEUTRAL,
            "trigger": "The user plans for years",
            "description": "Mention that inflation erodes cash over time.",
            "confidence": 0.6,
        },
    ]
}


class ForeignServer:
    """The server on a free 127.0.0.1 port (``base_url``); a context manager."""

    def __init__(
        self,
        burst: int = 0,
        block_after: int | None = None,
        padding: int = 0,
        usage: bool = True,
        hurt: str | None = None,
    ):
        self.burst = burst
        self.hurt = hurt
        self.usage = usage  # False: replies carry no ``usage`` (some endpoints send none)
        self.block_after = block_after
        self.padding = padding
        self.posts = 0
        self.rate_limited = 0
        self.blocked = threading.Event()
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ForeignServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def answer(self, body: dict) -> tuple[int, dict, dict]:
        """Status, payload and headers for one chat-completions body."""
        with self.lock:
            self.posts += 1
            number = self.posts
            limited = self.rate_limited < self.burst
            self.rate_limited += int(limited)
        if number == self.block_after:
            self.blocked.set()
            self.release.wait(60)
        if limited:
            return (
                429,
                {"error": {"message": "slow down", "type": "rate_limit"}},
                {"Retry-After": "0.01"},
            )
        messages = body["messages"]
        if (body.get("response_format") or {}).get("type") == "json_object":
            content = json.dumps(EXTRACTED)
        else:
            system = " ".join(m["content"] for m in messages if m["role"] == "system")
            digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).digest()
            u = int.from_bytes(digest[:8], "big") / 2**64
            p = 0.9 if GOOD in system else 0.3
            if self.hurt is not None and self.hurt in system:
                p = 0.05
            content = PASS_REPLY if u < p else FAIL_REPLY
        prompt = sum(len(str(m["content"]).split()) for m in messages)
        completion = len(content.split()) + self.padding
        return 200, {
            "id": "chatcmpl-" + hashlib.sha256(content.encode()).hexdigest()[:12],
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "foreign"),
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content},
                 "finish_reason": "stop"}
            ],
            **({"usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                          "total_tokens": prompt + completion}} if self.usage else {}),
        }, {}  # fmt: skip

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    self._send(
                        200, {"object": "list", "data": [{"id": "foreign", "object": "model"}]}, {}
                    )
                else:
                    self._send(404, {"error": {"message": "not found"}}, {})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": "not found"}}, {})
                    return
                self._send(*server.answer(body))

            def _send(self, status: int, payload: dict, headers: dict) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client was killed while this request waited

        return Handler


def write_tasks(path: Path, n: int = 60) -> Path:
    """``n`` tasks asking what could go wrong with different amounts; the worst-case check."""
    lines = [
        json.dumps({
            "id": f"t{i:03d}",
            "situation": "The user asks what could go wrong with an investment",
            "user_turns": [f"I have ₹{(i + 1) * 1000} to invest. What could go wrong?"],
            "check": CHECK,
        }, ensure_ascii=False)
        for i in range(n)
    ]  # fmt: skip
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def foreign_overrides(
    server: ForeignServer, tasks: Path, journal: Path, **live: object
) -> list[str]:
    """Overrides for ``experiment=live`` against ``server``."""
    base = [
        "llm.endpoint=remote",
        f"llm.base_url={server.base_url}",
        "llm.model=foreign",
        "llm.reasoning_effort=null",
        f"live.tasks={tasks}",
        f"live.journal={journal}",
    ]
    return base + [f"live.{k}={v}" for k, v in live.items()]
