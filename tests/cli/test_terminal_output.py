"""What the terminal shows: a note's escape sequences are shown escaped on a terminal (a real
pseudo-terminal here) and passed through unchanged to a pipe; recall's text and table output; the
order of `zmem log`."""
from __future__ import annotations

import json
import os
import pty
import re
import subprocess

import pytest

from helpers.workspace import commit_all, run, run_json, write, zmem_exe, zmem_proc

# what a hostile note may hold: set the window title (OSC), clear the screen (CSI), a C1 CSI, a
# right-to-left override, a carriage return that would hide what comes before it, a tab (kept)
HOSTILE = "title\x1b]0;pwned\x07 clear\x1b[2J csi\u009b31m rtl\u202eevil\u202c cr\rhidden\ttabbed"
SHOWN = "title\\x1b]0;pwned\\x07 clear\\x1b[2J csi\\x9b31m rtl\\u202eevil\\u202c cr\\x0dhidden\ttabbed"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
BOLD = re.compile(r"\x1b\[(1|0)m")  # zmem's own styling of citations on a terminal


def on_terminal(*args) -> str:
    """Run zmem with its stdout on a pseudo-terminal; what it wrote there (the terminal's \\r\\n
    read back as \\n). Fails on a non-zero exit."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([zmem_exe(), *args], stdout=slave, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    os.close(slave)
    out = read_terminal(master)
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    return out.decode("utf-8").replace("\r\n", "\n")


def read_terminal(master: int) -> bytes:
    """All a process wrote to the pseudo-terminal until it closed it; closes master."""
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: every writer to the terminal has closed it
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return b"".join(chunks)


def assert_safe(out: str) -> None:
    """Nothing in out can act on a terminal but zmem's own bold."""
    left = RAW.findall(BOLD.sub("", out))
    assert not left, (left, out)


@pytest.fixture
def hostile(ws):
    write(ws, "memory/2025-11-25.md", f"# 2025-11-25\n\n## Notes\n\n- zebracrossing {HOSTILE}\n\n## Retain\n\n"
          f"- W @Peter: zebrafact {HOSTILE}\n- O(c=0.8) @Peter: zebraopinion {HOSTILE}\n"
          "- R @Peter knows @Ana\n")
    commit_all(ws, "hostile notes", date="2025-11-25T10:00:00+00:00")
    return ws


def test_get_piped_is_the_file_byte_for_byte(hostile):
    rel = "memory/2025-11-25.md"
    proc = subprocess.run([zmem_exe(), "-C", str(hostile), "get", rel], capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (hostile / rel).read_bytes()  # `zmem get FILE | cmp - FILE`
    cited = subprocess.run([zmem_exe(), "-C", str(hostile), "get", f"{rel}#L5"], capture_output=True)
    assert cited.stdout == f"- zebracrossing {HOSTILE}\n".encode()


@pytest.mark.slow
def test_get_on_a_terminal_shows_control_characters_escaped(hostile):
    out = on_terminal("-C", str(hostile), "get", "memory/2025-11-25.md#L5")
    assert out == f"- zebracrossing {SHOWN}\n"
    as_json = on_terminal("-C", str(hostile), "get", "memory/2025-11-25.md#L5", "--json")
    assert_safe(as_json)
    assert json.loads(as_json)["text"] == f"- zebracrossing {HOSTILE}"  # the same value, escaped as JSON


@pytest.mark.parametrize("fmt", ["text", "md", "table", "json"])
@pytest.mark.slow
def test_recall_on_a_terminal_in_every_format(hostile, fmt):
    out = on_terminal("-C", str(hostile), "recall", "zebracrossing", "--format", fmt)
    assert_safe(out)
    if fmt == "json":
        assert f"zebracrossing {HOSTILE}" in json.loads(out)["results"][0]["snippet"]
    elif fmt == "table":
        assert "zebracrossing title\\x1b]0;pwned\\x07" in out
    else:
        assert SHOWN in out


def test_recall_piped_keeps_the_notes_characters(hostile):
    proc = subprocess.run([zmem_exe(), "-C", str(hostile), "recall", "zebracrossing"], capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert f"zebracrossing {HOSTILE}".encode() in proc.stdout  # click no longer strips colour codes from a pipe
    assert b"\x1b[1m" not in proc.stdout  # and zmem adds none of its own


@pytest.mark.parametrize("args", [
    ["facts"], ["facts", "--format", "text"], ["facts", "--format", "md"], ["facts", "--json"],
    ["recall", "zebrafact", "--entity", "Peter"], ["entity", "Peter"], ["entity", "Peter", "--json"],
    ["log", "@Peter"], ["log", "memory/2025-11-25.md"], ["blame", "memory/2025-11-25.md#L5"],
    ["diff", "HEAD~1", "HEAD"], ["reflect", "--dry-run"]])
@pytest.mark.slow
def test_every_command_that_prints_notes_escapes_them_on_a_terminal(hostile, args):
    out = on_terminal("-C", str(hostile), *args)
    assert_safe(out)
    assert "pwned" in out, out  # the note's text is shown, escaped
    if "--json" not in args:
        assert "\\x1b]0;pwned\\x07" in out, out


def test_graph_escapes_a_hostile_file_name_on_a_terminal(ws):
    """Names of files are the user's too: graph's evidence cites them."""
    write(ws, "memory/evil\x1b]0;pwned\x07.md", "# evil\n\n## Retain\n\n- R @Peter knows @Ana\n")
    commit_all(ws, "a hostile file name")
    out = on_terminal("-C", str(ws), "graph", "Peter")
    assert_safe(out)
    assert "memory/evil\\x1b]0;pwned\\x07.md" in out, out


@pytest.mark.slow
def test_opinions_on_a_terminal(hostile):
    assert zmem_proc("-C", str(hostile), "reflect").returncode == 0
    out = on_terminal("-C", str(hostile), "opinions")
    assert_safe(out)
    assert "zebraopinion title\\x1b]0;pwned\\x07" in out


def test_warnings_on_stderr_are_escaped_on_a_terminal(ws):
    """A malformed Retain bullet is quoted in a warning: stderr on a terminal escapes it too."""
    write(ws, "memory/bad\x1b[2J.md", "# bad\n\n## Retain\n\n- X @Peter: bad kind\n")
    commit_all(ws, "bad bullet")
    master, slave = pty.openpty()
    proc = subprocess.Popen([zmem_exe(), "-C", str(ws), "facts"], stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    err = read_terminal(master)
    proc.wait(timeout=120)
    text = err.decode()
    assert "warning: memory/bad\\x1b[2J.md:5: unknown fact kind" in text and "\x1b" not in text, text


def test_text_output_shows_the_day_once(ws):
    write(ws, "memory/2025-09-15.md", "# 2025-09-15\n\n- Ordered the quokka plushie for Ana.\n")
    commit_all(ws, "day")
    res = run(["-C", str(ws), "recall", "quokka"])
    assert res.exit_code == 0, res.stderr
    head = res.stdout.splitlines()[0]
    assert head.startswith("memory/2025-09-15.md#L") and head.count("2025-09-15") == 2, head  # path and day
    assert head.endswith(" · 2025-09-15"), head
    filler = "- Walked the dog along the river, then met the neighbours for coffee at the corner.\n" * 60
    write(ws, "memory/2025-09-16.md", "# 2025-09-16\n\n## Errands\n\n" + filler + "- Picked up the wombat costume.\n")
    commit_all(ws, "day 2")
    head = run(["-C", str(ws), "recall", "wombat"]).stdout.splitlines()[0]
    assert head.endswith("· 2025-09-16 > Errands") and head.count("2025-09-16") == 2, head
    # a heading that is not the day is still shown
    write(ws, "bank/world.md", "# World\n\n- The kangaroo costume is in the attic.\n")
    commit_all(ws, "world")
    head = run(["-C", str(ws), "recall", "kangaroo"]).stdout.splitlines()[0]
    assert head.startswith("bank/world.md#L") and head.endswith(" · World"), head


def test_table_shows_the_matching_line_not_the_top_of_the_chunk(ws):
    filler = [f"- Routine entry number {i} about the weekly groceries and the usual chores." for i in range(7)]
    write(ws, "memory/2025-10-01.md", "# 2025-10-01\n\n" + "\n".join(filler)
          + "\n- The capybara sanctuary opens on Friday at nine in the morning.\n")
    commit_all(ws, "long log")
    res = run(["-C", str(ws), "recall", "capybara", "--format", "table"])
    assert res.exit_code == 0, res.stderr
    row = next(line for line in res.stdout.splitlines() if line.startswith("memory/2025-10-01.md"))
    assert "capybara sanctuary" in row, row
    snippet = row.split("  ")[-1].strip()
    # at most 70 characters, around the match: not the chunk's first entries
    assert len(snippet) <= 70 and "Routine entry number 0" not in snippet, snippet
    # the JSON snippet is the same centred one the table shortened
    hit = json.loads(run(["-C", str(ws), "recall", "capybara", "--json"]).stdout)["results"][0]
    assert "capybara" in hit["snippet"]


def _log_ws(ws):
    for day, fact in [("2025-11-01", "Lives in Lisbon."), ("2025-11-05", "Works on warelay."),
                      ("2025-11-09", "Moved to Porto.")]:
        write(ws, f"memory/{day}.md", f"# {day}\n\n## Retain\n\n- W @Peter: {fact}\n")
        commit_all(ws, f"log {day}", date=f"{day}T12:00:00+00:00")
    write(ws, "memory/2025-11-01.md", "# 2025-11-01\n\n## Retain\n\n- W @Peter: Lives in Lisbon.\n- note two\n")
    commit_all(ws, "log again", date="2025-11-10T12:00:00+00:00")
    return ws


def test_log_is_newest_first_for_entities_and_files_and_reverse_flips_both(ws):
    root = _log_ws(ws)
    ent, _ = run_json(["-C", str(root), "log", "@Peter", "--json"])
    days = [e["date"][:10] for e in ent["events"]]
    assert days == sorted(days, reverse=True) and days[0] == "2025-11-09", days
    fil, _ = run_json(["-C", str(root), "log", "memory/2025-11-01.md", "--json"])
    fdays = [e["date"][:10] for e in fil["events"]]
    assert fdays == ["2025-11-10", "2025-11-01"], fdays
    rent, _ = run_json(["-C", str(root), "log", "@Peter", "--json", "--reverse"])
    assert [e["date"][:10] for e in rent["events"]] == days[::-1]
    rfil, _ = run_json(["-C", str(root), "log", "memory/2025-11-01.md", "--json", "--reverse"])
    assert [e["date"][:10] for e in rfil["events"]] == fdays[::-1]
    text = run(["-C", str(root), "log", "@Peter"]).stdout.splitlines()
    assert text[0].startswith("2025-11-09") and text[-1].startswith("2025-11-01"), text
    text = run(["-C", str(root), "log", "@Peter", "--reverse"]).stdout.splitlines()
    assert text[0].startswith("2025-11-01") and text[-1].startswith("2025-11-09"), text


def test_table_columns_stay_aligned_around_escaped_cells(ws):
    write(ws, "memory/evil\x1b]0;pwned\x07.md", "# evil\n\n- The zebu grazes here.\n")
    write(ws, "bank/world.md", "# World\n\n- A zebu is a humped cattle.\n")
    commit_all(ws, "zebu")
    out = BOLD.sub("", on_terminal("-C", str(ws), "recall", "zebu", "--format", "table"))
    assert_safe(out)
    header, _, *rows = out.splitlines()
    assert len(rows) == 2 and any("evil\\x1b]0;pwned\\x07" in r for r in rows), out
    at = header.index("snippet")
    for r in rows:  # escapes counted when the columns were measured: the snippets start under their header
        assert r[at:at + 2] == "- " and r[at - 2:at] == "  ", out


def test_an_error_naming_a_hostile_symlink_target_is_escaped_on_a_terminal(ws):
    """A cloned repository chooses its symlinks' targets: the refusal quoting one is escaped too."""
    import datetime as dt
    os.symlink("/tmp/\x1b]0;pwned\x07", ws / "memory" / f"{dt.date.today().isoformat()}.md")
    master, slave = pty.openpty()
    proc = subprocess.Popen([zmem_exe(), "-C", str(ws), "append", "a note"], stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    err = read_terminal(master)
    assert proc.wait(timeout=120) == 1
    assert "-> /tmp/\\x1b]0;pwned\\x07; nothing was written" in err.decode() and "\x1b" not in err.decode(), err
