"""A watcher that cannot start a thread (a pids cgroup or `ulimit -u` reached: RuntimeError "can't
start new thread") when a keyword search or a query to embed arrives: the asker gets "no" (it then
searches or embeds itself) and the serving loop, `zmem watch`'s own, goes on. Real Unix sockets."""
from __future__ import annotations

import os
import socket
import threading

import pytest

from zmem.index import fsmonitor

pytestmark = pytest.mark.skipif(os.name != "posix", reason="unix sockets")


def _no_threads(*_args, **_kwargs):
    raise RuntimeError("can't start new thread")


@pytest.mark.parametrize("request_", [b"bm25 1.2.ab 5 gatewai\n", b'embed ["fp", "text"]\n'])
def test_a_question_when_no_thread_can_start_gets_no_and_serving_goes_on(tmp_path, monkeypatch, request_):
    server = fsmonitor.VouchServer(tmp_path, embedder_for=lambda fingerprint: None)
    server.serve_searches(tmp_path / "index.sqlite")
    try:
        with socket.socket(socket.AF_UNIX) as s, socket.socket(socket.AF_UNIX) as after:
            s.settimeout(10)
            s.connect(str(server.path))
            s.sendall(request_)
            after.settimeout(10)
            after.connect(str(server.path))
            after.sendall(b"vouch 1\n")
            with monkeypatch.context() as m:
                m.setattr(threading.Thread, "start", _no_threads)
                server.serve(lambda snapshot: True)  # answers both, in this thread
            assert s.recv(64).startswith(b"no")
            assert after.recv(64) == b"yes\n"
    finally:
        server.close()
