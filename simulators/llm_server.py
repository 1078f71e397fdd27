"""An offline model server speaking the OpenAI chat-completions protocol, with fault injection.

``POST /v1/chat/completions`` answers with the real response schema (``id``, ``object``
``"chat.completion"``, ``created``, ``model``, ``choices[0].message {role, content}``,
``finish_reason``, ``usage``) from the deterministic ``offline_model``: the same request
gets the same content, id and usage. ``GET /v1/models`` lists the model.

Faults are chosen per request, two ways:

- a server-side queue, ``server.inject(Fault(...), ...)``: each request takes the next
  queued fault (so a client's retry sees the following entry, or a normal reply);
- a request header ``X-Procmem-Fault: <kind>[:<seconds>]``, applied to every request
  that carries it (e.g. ``rate_limit:0.2``, ``slow:1.5``).

Fault kinds (``FAULT_KINDS``): ``truncate`` (200, the reply cut in half,
``finish_reason="length"``), ``invalid_json`` (200, prose instead of JSON), ``reply``
(200 with ``Fault.content`` as the reply, for malformed-reply tables), ``bad_request``
(400), ``json_validate_failed`` (400 with Groq's code for a cut-off JSON reply),
``rate_limit`` (429 with ``Retry-After``), ``server_error`` (500), ``slow`` (the normal
reply after ``Fault.seconds``) and ``no_choices`` (200 with an empty ``choices`` list).

Start it from a context manager (``with OfflineServer() as server: server.base_url``) or
from the command line: ``python -m simulators.llm_server --port 8000``.
Standard library only (plus ``procmem_core`` through ``offline_model``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from procmem_core.errors import ParameterError
from simulators import offline_model

FAULT_KINDS = (
    "truncate",
    "invalid_json",
    "reply",
    "bad_request",
    "json_validate_failed",
    "rate_limit",
    "server_error",
    "slow",
    "no_choices",
)
FAULT_HEADER = "X-Procmem-Fault"
REQUEST_KINDS = ("extraction", "chat", "distill", "agent_rules", "judge", "revision")
DEFAULT_MODEL = "procmem-offline"


@dataclass(frozen=True)
class Fault:
    """One injected fault. ``seconds``: Retry-After for ``rate_limit``, delay for ``slow``.

    ``only``: one of ``REQUEST_KINDS`` makes a queued fault wait for the first request of
    that kind (requests of other kinds pass it by).
    """

    kind: str
    seconds: float = 0.0
    content: str | None = None
    only: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ParameterError("kind", self.kind, f"expected one of {list(FAULT_KINDS)}")
        if not self.seconds >= 0:
            raise ParameterError("seconds", self.seconds, "expected a number >= 0")
        if (self.kind == "reply") != (self.content is not None):
            raise ParameterError(
                "content", self.content, "a string for kind='reply', None for other kinds"
            )
        if self.only not in (None, *REQUEST_KINDS):
            raise ParameterError("only", self.only, f"expected None or one of {REQUEST_KINDS}")

    @classmethod
    def parse(cls, spec: str) -> Fault:
        """A fault from a header value ``kind[:seconds]``."""
        kind, _, seconds = spec.strip().partition(":")
        try:
            value = float(seconds) if seconds else 0.0
        except ValueError:
            raise ParameterError(FAULT_HEADER, spec, "expected '<kind>[:<seconds>]'") from None
        return cls(kind, value)


@dataclass(frozen=True)
class RequestRecord:
    """What the server saw and did for one request."""

    path: str
    kind: str  # one of REQUEST_KINDS or "invalid"
    fault: str | None
    status: int
    max_tokens: int | None
    body: dict = field(repr=False)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms stall
    timeout = 30  # idle keep-alive connections end after this many seconds
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            model = {"id": DEFAULT_MODEL, "object": "model", "created": 0, "owned_by": "procmem"}
            self._send(200, {"object": "list", "data": [model]})
        else:
            self._send_error(404, f"no route GET {self.path}", "not_found")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send_error(404, f"no route POST {self.path}", "not_found")
            return
        try:
            body = json.loads(raw or b"{}")
            messages = body["messages"]
            if not isinstance(messages, list) or not messages:
                raise ValueError
            if not all(isinstance(m, dict) for m in messages):
                raise ValueError
        except (ValueError, KeyError, TypeError):
            self.server.record(RequestRecord(self.path, "invalid", None, 400, None, {}))
            self._send_error(400, "body must be JSON with a non-empty 'messages' list of objects")
            return
        kind = offline_model.request_kind(messages)
        fault = self.server.next_fault(kind, self.headers.get(FAULT_HEADER))
        self._answer(body, messages, kind, fault)

    def _answer(self, body: dict, messages: list, kind: str, fault: Fault | None) -> None:
        max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
        status = {
            "bad_request": 400,
            "json_validate_failed": 400,
            "rate_limit": 429,
            "server_error": 500,
        }.get(fault.kind if fault else "", 200)
        self.server.record(
            RequestRecord(self.path, kind, fault.kind if fault else None, status, max_tokens, body)
        )
        if fault is None or fault.kind in ("truncate", "invalid_json", "reply", "slow"):
            if fault is not None and fault.kind == "slow":
                self.server.stopping.wait(fault.seconds)
            self._send(200, completion(body, messages, fault, self.server.extraction))
        elif fault.kind == "no_choices":
            empty = completion(body, messages, None, self.server.extraction)
            self._send(200, {**empty, "choices": []})
        elif fault.kind == "bad_request":
            self._send_error(400, "injected fault: bad request", "invalid_request")
        elif fault.kind == "json_validate_failed":
            failed = offline_model.reply_content(messages, self.server.extraction)[:40]
            self._send_error(
                400,
                "Failed to generate JSON. Please adjust your prompt.",
                "json_validate_failed",
                failed_generation=failed,
            )
        elif fault.kind == "rate_limit":
            self._send_error(
                429,
                "injected fault: rate limit reached",
                "rate_limit_exceeded",
                headers={"Retry-After": f"{fault.seconds:g}"},
                error_type="rate_limit_error",
            )
        else:
            self._send_error(
                500, "injected fault: internal server error", error_type="server_error"
            )

    def _send_error(
        self,
        status: int,
        message: str,
        code: str | None = None,
        headers: dict[str, str] | None = None,
        error_type: str = "invalid_request_error",
        **extra: Any,
    ) -> None:
        error = {"message": message, "type": error_type, "param": None, "code": code, **extra}
        self._send(status, {"error": error}, headers)

    def _send(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout); nothing left to tell it


def completion(
    body: dict, messages: list, fault: Fault | None = None, extraction: str = "user_requests"
) -> dict:
    """The chat-completion response for a request body (deterministic in the body)."""
    if fault is not None and fault.kind == "reply":
        full = fault.content or ""
    elif fault is not None and fault.kind == "invalid_json":
        full = "Sure! Here are the procedures I found: worst case first, then a list."
    else:
        full = offline_model.reply_content(messages, extraction)
    budget = body.get("max_completion_tokens", body.get("max_tokens"))
    effort = body.get("reasoning_effort")
    reasoning = offline_model.REASONING_TOKENS.get(effort, 0) if effort else 0
    content, finish = full, "stop"
    if isinstance(budget, int) and reasoning + offline_model.count_tokens(full) > budget:
        content = offline_model.truncate_to_tokens(full, budget - reasoning)
        finish = "length"
    if fault is not None and fault.kind == "truncate":
        content = offline_model.truncate_to_tokens(full, offline_model.count_tokens(full) // 2)
        finish = "length"
    prompt = offline_model.prompt_tokens(messages)
    produced = reasoning + offline_model.count_tokens(content)
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()
    return {
        "id": f"chatcmpl-{digest[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model") or DEFAULT_MODEL,
        "system_fingerprint": "procmem-offline-1",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "logprobs": None,
                "finish_reason": finish,
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": produced,
            "total_tokens": prompt + produced,
            "completion_tokens_details": {"reasoning_tokens": reasoning},
        },
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], verbose: bool, extraction: str) -> None:
        super().__init__(address, _Handler)
        self.verbose = verbose
        self.extraction = extraction
        self.stopping = threading.Event()
        self.faults: deque[Fault] = deque()
        self.requests: list[RequestRecord] = []
        self.lock = threading.Lock()

    def next_fault(self, kind: str, header: str | None) -> Fault | None:
        with self.lock:
            for i, fault in enumerate(self.faults):
                if fault.only in (None, kind):
                    del self.faults[i]
                    return fault
        if header:
            try:
                return Fault.parse(header)
            except ParameterError:
                return Fault("bad_request")
        return None

    def record(self, rec: RequestRecord) -> None:
        with self.lock:
            self.requests.append(rec)


class OfflineServer:
    """The offline server on a loopback port (``port=0``: a free one), in a background thread.

    Use as a context manager; ``base_url`` is what ``OpenAI(base_url=...)`` needs.
    ``extraction``: the offline model's extraction behaviour (``offline_model.EXTRACTION_MODES``).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        verbose: bool = False,
        extraction: str = "user_requests",
    ) -> None:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ParameterError("port", port, "expected an integer in [0, 65535] (0: free port)")
        self._address = (host, port)
        self._verbose = verbose
        self.extraction = offline_model.check_extraction(extraction)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> OfflineServer:
        """Bind and serve in a daemon thread; returns self."""
        if self._server is None:
            self._server = _Server(self._address, self._verbose, self.extraction)
            self._thread = threading.Thread(
                target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (slow replies in flight are cut short)."""
        if self._server is not None:
            self._server.stopping.set()
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> OfflineServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def _live(self) -> _Server:
        if self._server is None:
            raise RuntimeError("the offline server is not running: call start() first")
        return self._server

    @property
    def port(self) -> int:
        return self._live.server_address[1]

    @property
    def base_url(self) -> str:
        host = self._live.server_address[0]
        return f"http://{host}:{self.port}/v1"

    def inject(self, *faults: Fault | str) -> None:
        """Queue faults; each following request takes the next one (a str is a kind)."""
        parsed = [f if isinstance(f, Fault) else Fault(f) for f in faults]
        with self._live.lock:
            self._live.faults.extend(parsed)

    @property
    def requests(self) -> list[RequestRecord]:
        """Every request served so far, in arrival order."""
        with self._live.lock:
            return list(self._live.requests)

    @property
    def pending_faults(self) -> int:
        with self._live.lock:
            return len(self._live.faults)


def main(argv: list[str] | None = None) -> None:
    """Command line: serve until interrupted."""
    parser = argparse.ArgumentParser(description="procmem offline chat-completions server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    parser.add_argument("--quiet", action="store_true", help="do not log requests")
    parser.add_argument(
        "--extraction", choices=offline_model.EXTRACTION_MODES, default="user_requests",
        help="what the model turns into procedures",
    )  # fmt: skip
    args = parser.parse_args(argv)
    server = OfflineServer(args.host, args.port, not args.quiet, args.extraction).start()
    print(f"procmem offline model at {server.base_url} (Ctrl-C to stop)", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
