"""The one /health probe of a tracking server, against real sockets on loopback."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from procmem_core.probe import NOT_MLFLOW, ServerProblem, server_problem


def _server(status: int) -> ThreadingHTTPServer:
    class Health(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status if self.path == "/health" else 404)
            self.end_headers()
            self.wfile.write(b"OK")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize(("status", "problem"), [(200, None), (503, "HTTP 503")])
def test_a_server_answers_health(status: int, problem: str | None) -> None:
    server = _server(status)
    try:
        found = server_problem(f"http://127.0.0.1:{server.server_port}/", timeout=5)
    finally:
        server.shutdown()
    if problem is None:
        assert found is None
    else:
        assert (str(found), found.reachable) == (f"answered /health with {problem}", True)
        assert found.hint("start it") == NOT_MLFLOW


def test_a_closed_port_cannot_be_reached() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    found = server_problem(f"http://127.0.0.1:{port}", 5)
    assert found == ServerProblem("cannot be reached (ConnectionRefusedError)", False)
    assert found.hint("start it") == "start it"


def test_a_silent_server_is_given_up_after_its_timeout() -> None:
    with socket.socket() as silent:  # accepts connections (the backlog), never replies
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        uri = f"http://127.0.0.1:{silent.getsockname()[1]}"
        found = server_problem(uri, 0.3)
        assert found == ServerProblem("cannot be reached (no answer in 0.3 s)", False)
        assert found.hint("start it") == "start it"
