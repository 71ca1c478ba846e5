"""--scope group never returns MEMORY.md or configured private paths: recall (notes, facts, as-of) and get."""
from __future__ import annotations

import json

from helpers.workspace import commit_all, run, write


def _paths(ws, *args):
    res = run(["-C", str(ws), "recall", *args, "--json"])
    assert res.exit_code == 0, res.output + res.stderr
    return {r["path"] for r in json.loads(res.stdout)["results"]}


def test_group_scope_hides_private_files(ws):
    write(ws, "MEMORY.md", "# Memory\n\n- Ana's salary is confidential: lighthouse\n\n## Retain\n- W @Ana: lighthouse secret\n")
    write(ws, "bank/people/ana.md", "# Ana\n\n- lighthouse phone number\n")
    write(ws, "memory/2025-11-25.md", "# 2025-11-25\n\n## Retain\n- W @Ana: visited the lighthouse\n")
    (ws / "zmem.toml").write_text('[scopes]\nprivate = ["bank/people/**"]\n')
    commit_all(ws, "private and public")
    assert _paths(ws, "lighthouse") == {"MEMORY.md", "bank/people/ana.md", "memory/2025-11-25.md"}
    assert _paths(ws, "lighthouse", "--scope", "group") == {"memory/2025-11-25.md"}
    assert _paths(ws, "lighthouse", "--scope", "group", "--entity", "Ana") == {"memory/2025-11-25.md"}
    assert _paths(ws, "lighthouse", "--entity", "Ana") == {"MEMORY.md", "memory/2025-11-25.md"}
    assert _paths(ws, "lighthouse", "--scope", "group", "--as-of", "HEAD") == {"memory/2025-11-25.md"}
    res = run(["-C", str(ws), "get", "MEMORY.md#L3", "--scope", "group"])
    assert res.exit_code == 1 and "private" in res.stderr and "hint:" in res.stderr
    assert run(["-C", str(ws), "get", "MEMORY.md#L3"]).stdout.startswith("- Ana's salary")
    assert run(["-C", str(ws), "get", "memory/2025-11-25.md#L4", "--scope", "group"]).exit_code == 0


def test_private_directory_entries_without_globs_protect_everything_below(ws):
    write(ws, "bank/people/ana.md", "# Ana\n\n- lighthouse phone number\n")
    write(ws, "bank/people/team/bo.md", "# Bo\n\n- lighthouse keeper\n")
    write(ws, "bank/peoplex.md", "# Other\n\n- lighthouse public page\n")
    write(ws, "memory/2025-11-25.md", "# 2025-11-25\n\n- visited the lighthouse\n")
    commit_all(ws, "pages")
    for entry in ("bank/people", "bank/people/", "./bank/people"):
        (ws / "zmem.toml").write_text(f'[scopes]\nprivate = ["{entry}"]\n')
        assert _paths(ws, "lighthouse", "--scope", "group") == {"bank/peoplex.md", "memory/2025-11-25.md"}, entry
        res = run(["-C", str(ws), "get", "bank/people/team/bo.md", "--scope", "group"])
        assert res.exit_code == 1 and "private" in res.stderr, entry
    assert len(_paths(ws, "lighthouse")) == 4
    # a file entry protects that file only
    (ws / "zmem.toml").write_text('[scopes]\nprivate = ["bank/people/ana.md"]\n')
    assert _paths(ws, "lighthouse", "--scope", "group") == {"bank/people/team/bo.md", "bank/peoplex.md",
                                                             "memory/2025-11-25.md"}
