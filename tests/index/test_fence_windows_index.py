"""The index embeds a chunk that starts inside a long code fence with the fence state the chunker had
(zmem.index.embedding via chunking.fences_at), and history's windows (as-of recall) are cut the
same way, when a blob is parsed and when they are recut after an upgrade. A real workspace, a
loopback embeddings server."""
from __future__ import annotations

import subprocess

from helpers.workspace import commit_all, run, use_server, write
from zmem.store import db
from zmem.text.chunking import chunk_text, note_windows

PATH = "bank/deploy.md"


def deploy_note() -> str:
    body = "\n".join(f"# step {i}\necho run {i} {'x' * 40}" for i in range(200))
    return f"# Deploy\n\nThe deploy script:\n\n```bash\n{body}\n```\n\n# After\n\n- the relay restarts after it\n"


def expected() -> list[tuple[int, int]]:
    return sorted((a, b) for ch in chunk_text(deploy_note())
                  for a, b, _, _ in note_windows(ch.text, ch.start_line, ch.heading, fence=ch.fence))


def rows(ws, sql: str) -> list[tuple[int, int]]:
    conn = db.connect(ws / ".zmem" / "index.sqlite")
    try:
        return sorted(conn.execute(sql).fetchall())
    finally:
        conn.close()


def test_vectors_of_chunks_inside_a_fence_are_cut_as_code(ws, server):
    write(ws, PATH, deploy_note())
    commit_all(ws)
    use_server(server)
    assert run(["-C", str(ws), "index", "--json"]).exit_code == 0
    got = rows(ws, "SELECT v.start_line, v.end_line FROM chunk_vectors v JOIN chunks c ON c.id = v.chunk_id "
                   f"WHERE c.path = '{PATH}'")
    assert got == expected()
    sent = [t for call in server.embedding_calls() for t in call["body"]["input"]]
    assert not any(t.startswith("Deploy > step") for t in sent)  # before: "Deploy > step 23\n\necho run 23 …"


def test_history_windows_are_cut_as_code_when_parsed_and_when_recut(ws, server):
    write(ws, PATH, deploy_note())
    commit_all(ws)
    use_server(server)
    assert run(["-C", str(ws), "index", "--json"]).exit_code == 0
    blob = subprocess.run(["git", "-C", str(ws), "rev-parse", f"HEAD:{PATH}"], capture_output=True, text=True,
                          check=True).stdout.strip()
    history = ("SELECT w.start_line, w.end_line FROM hist_windows w JOIN hist_chunks c ON c.id = w.chunk_id "
               f"WHERE c.blob = '{blob}'")
    assert run(["-C", str(ws), "recall", "relay", "--as-of", "HEAD", "--json"]).exit_code == 0
    assert rows(ws, history) == expected()
    conn = db.connect(ws / ".zmem" / "index.sqlite")
    try:  # windows cut by an older zmem: recut at the next as-of recall
        with db.write_transaction(conn):
            db.set_meta(conn, "hist_window_tokens", "notes128+64")
            conn.execute("DELETE FROM hist_windows")
    finally:
        conn.close()
    assert run(["-C", str(ws), "recall", "relay", "--as-of", "HEAD", "--json"]).exit_code == 0
    assert rows(ws, history) == expected()
