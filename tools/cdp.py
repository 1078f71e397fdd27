"""A minimal Chrome DevTools Protocol client over a standard-library WebSocket.

Only what ``tools/mlflow_screenshot.py`` needs, loopback only: the RFC 6455 opening
handshake (``Sec-WebSocket-Accept`` = base64(SHA-1(key + GUID)), RFC 6455 §4.2.2),
masked client text frames (§5.3) and unmasked server frames with 7-bit, 16-bit (126)
and 64-bit (127) payload lengths (§5.2), continuation frames joined, pings answered.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import socket
import struct
import time
import urllib.parse
import urllib.request
from typing import Any

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


class WebSocket:
    """A blocking client WebSocket (text frames only) on a ``ws://`` loopback URL."""

    def __init__(self, url: str, timeout: float = 30.0) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "ws" or parts.hostname not in LOOPBACK:
            raise ValueError(f"url={url!r}: only ws:// on loopback is allowed")
        self.sock = socket.create_connection((parts.hostname, parts.port or 80), timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        request = (
            f"GET {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n"
        )
        try:
            self._handshake(request, key)
        except BaseException:
            self.sock.close()
            raise

    def _handshake(self, request: str, key: str) -> None:
        """Send the upgrade; the reply must be 101 with base64(SHA-1(key + GUID))."""
        self.sock.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise ConnectionError("websocket handshake: connection closed")
            head += chunk
        accept = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
        if b" 101 " not in head.split(b"\r\n", 1)[0] or accept.encode() not in head:
            raise ConnectionError(f"websocket handshake refused: {head[:200]!r}")

    def _exact(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("websocket closed mid-frame")
            data += chunk
        return data

    def _frame(self, opcode: int, payload: bytes) -> None:
        """Send one final frame, masked as a client must (RFC 6455 §5.3)."""
        n = len(payload)
        if n < 126:
            header = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
        elif n < 1 << 16:
            header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
        else:
            header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
        mask = os.urandom(4)
        body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + body)

    def send(self, text: str) -> None:
        self._frame(0x1, text.encode())

    def recv(self) -> str:
        """The next whole text message (pings answered, continuations joined)."""
        message = b""
        while True:
            b0, b1 = self._exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._exact(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._exact(8))[0]
            mask = self._exact(4) if b1 & 0x80 else b""
            payload = self._exact(n)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            opcode = b0 & 0x0F
            if opcode == 0x8:
                raise ConnectionError("websocket closed by the browser")
            if opcode == 0x9:
                self._frame(0xA, payload)
                continue
            if opcode in (0x0, 0x1, 0x2):
                message += payload
                if b0 & 0x80:
                    return message.decode()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._frame(0x8, b"")
        self.sock.close()


class Cdp:
    """DevTools commands on one page target: ``call`` waits for the reply to its id."""

    def __init__(self, ws_url: str) -> None:
        self.ws = WebSocket(ws_url)
        self.next_id = 0

    @classmethod
    def page(cls, port: int, seconds: float = 30.0) -> Cdp:
        """Connect to the first page target listed at ``http://127.0.0.1:port/json``."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json", timeout=2) as r:
                    targets = json.load(r)
                pages = [t for t in targets if t.get("type") == "page"]
                if pages:
                    return cls(pages[0]["webSocketDebuggerUrl"])
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"no DevTools page target on port {port} in {seconds} s")
            time.sleep(0.3)

    def call(self, method: str, **params: Any) -> dict:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            reply = json.loads(self.ws.recv())
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def evaluate(self, expression: str) -> Any:
        """The JSON value of ``expression`` in the page (promises awaited)."""
        result = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_until(self, expression: str, seconds: float, step: float = 0.5) -> Any:
        """Poll ``expression`` until it is truthy; its value, or None after ``seconds``."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(step)
        return None

    def close(self) -> None:
        self.ws.close()
