"""Slow clients (issue 18 item 8): a connection that sends nothing, or stops in the middle of
its headers, is closed after ``header_timeout``; requests, bodies and streams are not cut.

A real ``a2a-hub serve`` process and raw sockets; the only timing is hang guards.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from tests.support.processes import serve

HANG_GUARD = 30.0


def _connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=HANG_GUARD)
    return sock


def _closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a hang guard fails it)."""
    data = b""
    while True:
        chunk = sock.recv(4096)  # raises TimeoutError after HANG_GUARD seconds
        if not chunk:
            return data
        data += chunk


def _response(sock: socket.socket) -> bytes:
    """One whole response with a Content-Length (it may come in several reads)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(4096)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(4096)
    return head + b"\r\n\r\n" + body


def test_connections_without_complete_headers_are_closed(tmp_path: Path) -> None:
    with serve("--agent", "echo", "--header-timeout", "1", cwd=tmp_path) as url:
        silent = [_connect(url) for _ in range(20)]
        partial = [_connect(url) for _ in range(20)]
        for sock in partial:
            sock.sendall(b"POST /a2a/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty")
        kept = _connect(url)  # a kept-alive connection whose second request stalls
        kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        first = _response(kept)
        assert first.startswith(b"HTTP/1.1 200"), first
        kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        try:
            for sock in [*silent, *partial, kept]:
                assert _closed(sock) == b""  # closed, without an answer
        finally:
            for sock in [*silent, *partial, kept]:
                sock.close()
        # the hub still serves, and a request whose body comes slowly is not cut by the timer
        sock = _connect(url)
        body = (
            b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":'
            b'{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}'
        )
        try:
            sock.sendall(
                b"POST /a2a/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"A2A-Version: 1.0\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(body)
            )
            time.sleep(1.5)  # longer than the header timeout: only headers are timed
            sock.sendall(body)
            answer = _closed(sock)
        finally:
            sock.close()
        assert answer.startswith(b"HTTP/1.1 200") and b"TASK_STATE_COMPLETED" in answer
        assert httpx.get(f"{url}/healthz", timeout=HANG_GUARD).status_code == 200
