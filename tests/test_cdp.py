"""tools/cdp.py's WebSocket against a loopback echo server written to RFC 6455: the
handshake's accept key, masked client frames, 7/16/64-bit lengths, pings, fragments."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import importlib.util
import socket
import struct
import threading
from pathlib import Path

import pytest

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
_spec = importlib.util.spec_from_file_location("cdp", ROOT / "tools" / "cdp.py")
cdp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cdp)


def _exact(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError("client went away")
        data += chunk
    return data


def _server_frame(opcode: int, payload: bytes, fin: bool = True) -> bytes:
    n = len(payload)
    first = (0x80 if fin else 0) | opcode
    if n < 126:
        return struct.pack("!BB", first, n) + payload
    if n < 1 << 16:
        return struct.pack("!BBH", first, 126, n) + payload
    return struct.pack("!BBQ", first, 127, n) + payload


def _serve(listener: socket.socket, accept_ok: bool, seen: list) -> None:
    """Accept one client; echo each text message as a ping, then two fragments."""
    conn, _ = listener.accept()
    with conn, contextlib.suppress(ConnectionError):
        head = b""
        while b"\r\n\r\n" not in head:
            head += conn.recv(1)
        key = next(
            line.split(b":", 1)[1].strip()
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"sec-websocket-key")
        )
        digest = hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest()
        accept = base64.b64encode(digest if accept_ok else digest[::-1])
        conn.sendall(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n"
        )
        while True:
            b0, b1 = _exact(conn, 2)
            if b0 & 0x0F == 0x8:
                return
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", _exact(conn, 2))[0]
            elif n == 127:
                n = struct.unpack("!Q", _exact(conn, 8))[0]
            mask = _exact(conn, 4)
            payload = bytes(b ^ mask[i % 4] for i, b in enumerate(_exact(conn, n)))
            seen.append((b0, bool(b1 & 0x80), payload))
            if b0 & 0x0F == 0xA:  # the client's pong: continue with the echo
                continue
            half = len(payload) // 2
            conn.sendall(
                _server_frame(0x9, b"hi")
                + _server_frame(0x1, payload[:half], fin=False)
                + _server_frame(0x0, payload[half:])
            )


@pytest.fixture
def echo():
    servers = []

    def start(accept_ok: bool = True):
        listener = socket.create_server(("127.0.0.1", 0))
        seen: list = []
        thread = threading.Thread(target=_serve, args=(listener, accept_ok, seen))
        thread.start()
        servers.append((listener, thread))
        url = f"ws://127.0.0.1:{listener.getsockname()[1]}/devtools/page/X"
        return url, seen, thread

    yield start
    for listener, thread in servers:
        thread.join(10)
        listener.close()


@pytest.mark.parametrize("size", [0, 5, 125, 126, 300, 65535, 65536, 70000])
def test_round_trip_every_length_form(echo, size):
    url, seen, server = echo()
    ws = cdp.WebSocket(url)
    text = ("abcdefg" * size)[:size] if size != 5 else "é€ü"  # 5: multi-byte UTF-8
    ws.send(text)
    assert ws.recv() == text
    ws.close()
    server.join(10)  # the server has read every frame up to the close
    assert not server.is_alive()
    first, masked, payload = seen[0]
    assert (first, masked, payload.decode()) == (0x81, True, text)
    assert seen[1] == (0x8A, True, b"hi")  # the ping answered with a masked pong


def test_wrong_accept_key_is_refused(echo):
    url, _, _ = echo(accept_ok=False)
    with pytest.raises(ConnectionError, match="handshake refused"):
        cdp.WebSocket(url)


@pytest.mark.parametrize("url", ["ws://example.com:9222/x", "wss://127.0.0.1:9222/x"])
def test_only_ws_on_loopback(url):
    with pytest.raises(ValueError, match="only ws:// on loopback"):
        cdp.WebSocket(url)
