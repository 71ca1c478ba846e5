"""An index this user cannot write (a read-only .zmem), with an embedding provider configured:
embedding and recall with vectors (current and as of a commit) answer from what the index holds,
write nothing, and say so in one warning; status says the index is read-only and why. Run as
`nobody` (unprivileged): as root, chmod does not stop writes."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from helpers.workspace import zmem_exe


def _state(root: Path) -> dict:
    """Every file under .zmem with its size and modification time."""
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in (root / ".zmem").iterdir()}


@pytest.mark.slow
def test_a_read_only_index_embeds_nothing_answers_from_its_vectors_and_says_so(server, unprivileged):
    root, as_user = unprivileged
    zmem = zmem_exe()

    def sh(*argv, check=True):
        return as_user(*argv, check=check)

    def note(rel, text):
        sh(sys.executable, "-c", "import sys; open(sys.argv[1], 'w').write(sys.argv[2])", str(root / rel), text)

    def commit(message):
        sh("git", "-C", str(root), "add", "-A")
        sh("git", "-C", str(root), "commit", "-qm", message)

    home = root.parent / "home"
    sh("mkdir", "-p", str(home / ".config" / "zmem"))
    sh(sys.executable, "-c", "import sys; open(sys.argv[1], 'w').write(sys.argv[2])",
       str(home / ".config" / "zmem" / "config.toml"),
       f'[embeddings]\nprovider = "openai"\nmodel = "fake-embed"\nbase_url = "{server.base_url}"\n')
    note("memory/2025-12-01.md", "# 2025-12-01\n\n- The gateway runs on the Mac Studio.\n")
    commit("gateway")
    sh(zmem, "-C", str(root), "index", "--history")
    assert server.embedding_calls()
    note("memory/2025-12-02.md", "# 2025-12-02\n\n- The relay box sits in the office.\n")
    commit("relay")
    sh("git", "-C", str(root), "checkout", "-q", "-b", "side")
    note("memory/2025-12-03.md", "# 2025-12-03\n\n- A quince orchard behind the office.\n")
    commit("side note")
    sh("git", "-C", str(root), "checkout", "-q", "main")
    sh(zmem, "-C", str(root), "index", "--no-embed")  # the relay note waits for its vector
    calls = len(server.embedding_calls())
    before = _state(root)
    os.chmod(root / ".zmem", 0o555)
    try:
        proc = sh(zmem, "-C", str(root), "embed", "--json")
        assert json.loads(proc.stdout)["pending"] == 1
        assert proc.stderr.count("warning:") == 1 and "nothing embedded: the index is read-only" in proc.stderr
        assert "1 chunk without a vector is found by keywords only" in proc.stderr, proc.stderr
        proc = sh(zmem, "-C", str(root), "index")
        assert proc.stderr.count("warning:") == 1 and "the index is read-only" in proc.stderr, proc.stderr

        out = json.loads(sh(zmem, "-C", str(root), "recall", "which computer hosts the relay", "--mode", "hybrid",
                            "--json").stdout)
        assert out["mode"] == "hybrid" and out["results"] and not out["stale"], out
        assert len(out["warnings"]) == 1 and "(the index is read-only: no permission to write in" in out["warnings"][0]

        out = json.loads(sh(zmem, "-C", str(root), "recall", "which computer runs the gateway", "--as-of", "HEAD",
                            "--mode", "hybrid", "--json").stdout)
        assert out["mode"] == "hybrid" and out["results"][0]["path"] == "memory/2025-12-01.md", out
        assert not any("read-only" in w or "could not" in w for w in out["warnings"]), out["warnings"]

        proc = sh(zmem, "-C", str(root), "recall", "quince orchard", "--as-of", "side", "--json")
        out = json.loads(proc.stdout)
        assert "Traceback" not in proc.stderr and not any("2025-12-03" in h["path"] for h in out["results"])
        assert [w for w in out["warnings"] if "read-only" in w or "cannot be written" in w] == [
            f"1 memory file as of {out['as_of']['commit'][:10]} is not in the history index, and the index cannot "
            f"be written (no permission to write in {root / '.zmem'}): answered without it"], out["warnings"]

        status = json.loads(sh(zmem, "-C", str(root), "status", "--json").stdout)
        assert status["read_only"] is True and status["read_only_reason"] == f"no permission to write in {root / '.zmem'}"
        text = sh(zmem, "-C", str(root), "status").stdout
        assert f"index access:   read-only (no permission to write in {root / '.zmem'})" in text
        assert "[WARN] index: read-only (no permission" in sh(zmem, "-C", str(root), "doctor").stdout

        assert _state(root) == before  # nothing written
        # only the queries were embedded: no note was sent to be embedded into nowhere
        assert [c["body"]["input"] for c in server.embedding_calls()[calls:]] == [
            ["which computer hosts the relay"], ["which computer runs the gateway"], ["quince orchard"]]
    finally:
        os.chmod(root / ".zmem", 0o755)
    out = json.loads(sh(zmem, "-C", str(root), "status", "--json").stdout)
    assert out["read_only"] is False and out["read_only_reason"] is None
    assert json.loads(sh(zmem, "-C", str(root), "embed", "--json").stdout)["pending"] == 0
