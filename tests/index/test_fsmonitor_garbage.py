"""Garbage on .zmem/fsmonitor.sock: every malformed embed question is answered "no request" and the
server goes on answering (a question that killed its thread left every later recall to sweep alone,
and `zmem watch` to exit)."""
from __future__ import annotations

import os
import socket
import threading
import time

import pytest

from zmem.index import fsmonitor

pytestmark = pytest.mark.skipif(os.name != "posix", reason="unix sockets")


def _ask(path, request: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(str(path))
        try:
            s.sendall(request)
        except BrokenPipeError:  # an oversized question: the server answered and closed before reading it all
            pass
        reply = b""
        while not reply.endswith(b"\n") and (part := s.recv(64)):
            reply += part
        return reply


@pytest.mark.parametrize("payload", [
    b"[" * 60000,  # deeper than the JSON parser recurses
    b'{"fingerprint": 1, "text": 2}',  # two keys unpack like two strings
    b'["a", "b", "c"]', b"\xff\xfe", b"7", b"", b'["a"' + b" " * 200000 + b"]",
])
def test_a_malformed_embed_question_gets_no_and_the_server_keeps_answering(tmp_path, payload):
    server = fsmonitor.VouchServer(tmp_path, embedder_for=lambda fingerprint: None)
    stop = fsmonitor.serve_in_thread(server, lambda snapshot: True)
    try:
        assert _ask(server.path, b"embed " + payload + b"\n") == b"no request\n"
        assert _ask(server.path, b"vouch 1\n") == b"yes\n"
        assert _ask(server.path, b'embed ["fp", "text"]\n') == b"no model\n"
    finally:
        stop()


def test_a_question_trickled_byte_by_byte_is_dropped_and_others_are_answered(tmp_path):
    """The whole question has the ask timeout, not each byte: a client sending a byte every few ms
    held the serving loop (of `zmem watch`: its indexing too) until it stopped."""
    server = fsmonitor.VouchServer(tmp_path, embedder_for=lambda fingerprint: None)
    stop = fsmonitor.serve_in_thread(server, lambda snapshot: True)
    started, cut_off = threading.Event(), threading.Event()

    def trickle():
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(str(server.path))
            try:
                for _ in range(3000):  # 30 s at most
                    s.sendall(b"v")
                    started.set()
                    time.sleep(0.01)
            except OSError:
                cut_off.set()  # the server hung up on it

    thread = threading.Thread(target=trickle)
    try:
        thread.start()
        assert started.wait(30)
        assert _ask(server.path, b"vouch 1\n") == b"yes\n"
        thread.join(60)
        assert cut_off.is_set()
    finally:
        stop()
