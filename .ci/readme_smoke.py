#!/usr/bin/env python3
"""Docs smoke test: run every command the docs show as runnable, against a workspace made by
`zmem demo`, in order, as a new user would type them.

A runnable block is a ```sh block right after a line `<!-- smoke … -->`, in README.md or in any
docs/*.md page (docs/commands.md holds the list of every command). Each file's blocks run in a
workspace of their own, made fresh by `zmem demo`, so a page's examples do not depend on another's.

Each command must exit 0, or 1/2 with the documented two lines (`zmem: …`, `hint: …`) when it is
listed in EXPECTED_ERRORS with the reason; never 3, never a traceback, and `--json` output must
parse. The commands come from the docs themselves: `# comments` are dropped, `a; b` are two commands,
`[--opt x]` and `[DIR]` are optional parts, `a|b|c` alternatives. A line runs once without its
optional parts and once with all of them for each alternative, e.g. `zmem mcp [--scope private|group]`
runs `zmem mcp`, `zmem mcp --scope private` and `zmem mcp --scope group`.

    python .ci/readme_smoke.py --zmem .venv/bin/zmem [--check-man] [--doc FILE ...]

Runs offline: a fresh HOME and config (no provider, no API key), stdin closed.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# commands that would not end by themselves, and how they are bounded (stdin is closed for all)
BOUNDED = {
    "watch": (["--exit-after", "1"], "runs until interrupted: stopped by its own --exit-after"),
    "mcp": ([], "serves MCP on stdin until end of input: stdin is closed, so it answers nothing and exits"),
}
# commands whose documented example cannot succeed here: command words -> (whether it fails with the zmem under
# test, why); each must still fail cleanly, with the two documented lines
EXPECTED_ERRORS = {
    ("model", "import"): (lambda python: True,
                          "the docs' ./all-MiniLM-L6-v2 is a model directory the smoke test does not have"),
    ("mcp",): (lambda python: not _importable(python, "mcp"),
               "the `mcp` package is an extra (pip install '.[mcp]' in a checkout), not in this install"),
    ("sync",): (lambda python: True, "the demo workspace has no git remote (tests/test_sync.py syncs real clones)"),
    ("model", "pull"): (lambda python: True,
                        "downloads from the Hugging Face Hub, and this test runs offline (HF_HUB_OFFLINE=1); "
                        "tests/embedders/test_model_pull.py runs the real download against a loopback hub"),
}
# optional positional arguments in [BRACKETS]: what to pass for them (fresh directories)
PLACEHOLDERS = {"DIR": lambda base, n: str(base / f"dir-{n}")}
TIMEOUT = 300  # seconds; a command that takes longer is reported as hung


class ReadmeError(Exception):
    """The docs' runnable blocks are not in a form this script understands (fix one or the other)."""


MARK = re.compile(r"^<!--\s*smoke\b.*-->\s*$")


def command_blocks(text: str) -> list[list[str]]:
    """The non-blank lines of every ```sh block right after a `<!-- smoke … -->` line."""
    lines, blocks, i = text.split("\n"), [], 0
    while i < len(lines):
        if MARK.match(lines[i].strip()):
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j >= len(lines) or lines[j].strip() != "```sh":
                raise ReadmeError(f"line {i + 1}: a `<!-- smoke -->` mark is not followed by a ```sh block")
            k = j + 1
            while k < len(lines) and lines[k].strip() != "```":
                k += 1
            if k >= len(lines):
                raise ReadmeError(f"line {j + 1}: the ```sh block after a smoke mark never ends")
            blocks.append([line for line in lines[j + 1:k] if line.strip()])
            i = k
        i += 1
    return blocks


def strip_comment(line: str) -> str:
    """The line without its shell comment: a # outside quotes, at the start or after a blank."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def _tokens(text: str) -> list[str]:
    lex = shlex.shlex(text, posix=True, punctuation_chars=";|")
    lex.whitespace_split = True
    lex.commenters = ""
    return list(lex)


def parse(line: str) -> list[list]:
    """A documented line -> its commands, each a list of parts: ("word", [alternatives]) or
    ("optional", [parts])."""
    commands, current, group, pending_alt = [], [], None, False
    for tok in _tokens(strip_comment(line)):
        if tok == ";":
            if group is not None:
                raise ReadmeError(f"unclosed [ in {line!r}")
            commands.append(current)
            current = []
            continue
        if tok == "|":
            pending_alt = True
            continue
        opens, closes = tok.startswith("["), tok.endswith("]")
        word = tok[1 if opens else 0:len(tok) - (1 if closes else 0)]
        if opens:
            if group is not None:
                raise ReadmeError(f"nested [ in {line!r}")
            group = []
        target = group if group is not None else current
        if pending_alt:
            if not target or target[-1][0] != "word":
                raise ReadmeError(f"| without a word before it in {line!r}")
            target[-1][1].append(word)
            pending_alt = False
        elif word:
            target.append(("word", [word]))
        if closes:
            if group is None:
                raise ReadmeError(f"] without [ in {line!r}")
            current.append(("optional", group))
            group = None
    if group is not None or pending_alt:
        raise ReadmeError(f"unclosed [ or dangling | in {line!r}")
    commands.append(current)
    return [c for c in commands if c]


def _alternatives(parts) -> int:
    return max([len(alts) if kind == "word" else _alternatives(alts) for kind, alts in parts] or [1])


def _render(parts, k: int, optional: bool) -> list[str]:
    out = []
    for kind, value in parts:
        if kind == "word":
            out.append(value[min(k, len(value) - 1)])
        elif optional:
            out += [("\0" + w if re.fullmatch(r"[A-Z][A-Z_]+", w) else w) for w in _render(value, k, optional)]
    return out


def variants(parts) -> list[list[str]]:
    """The argument lists one documented command stands for: without its optional parts, then with all of
    them for each alternative. A word of an optional part in CAPITALS is a placeholder, marked "\\0"."""
    out = []
    for argv in [_render(parts, 0, False)] + [_render(parts, k, True) for k in range(_alternatives(parts))]:
        if argv not in out:
            out.append(argv)
    return out


def commands_of(text: str) -> list[list[str]]:
    """Every argument list the runnable blocks of one Markdown file stand for, in order."""
    cmds = []
    for block in command_blocks(text):
        for line in block:
            for parts in parse(line):
                for argv in variants(parts):
                    if argv[0] != "zmem":
                        raise ReadmeError(f"a command of a runnable block does not start with zmem: {line!r}")
                    cmds.append(argv)
    return cmds


def default_docs() -> list[Path]:
    """README.md, then docs/*.md by name."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def documented_commands(files: list[Path]) -> list[tuple[Path, list[list[str]]]]:
    """(file, its commands) for each file that has runnable blocks; an error when none has any."""
    out = []
    for f in files:
        try:
            cmds = commands_of(f.read_text(encoding="utf-8"))
        except ReadmeError as e:
            raise ReadmeError(f"{_shown(f)}: {e}") from None
        if cmds:
            out.append((f, cmds))
    if not out:
        raise ReadmeError("no runnable block (a ```sh block after `<!-- smoke -->`) in " +
                          ", ".join(_shown(f) for f in files))
    return out


def _shown(f: Path) -> str:
    try:
        return str(f.resolve().relative_to(ROOT))
    except ValueError:
        return str(f)


# ----------------------------------------------------------------------------- running


def _env(base: Path) -> dict:
    home = base / "home"
    (home / ".config").mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH", "TERM")}
    return env | {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
                  "GIT_AUTHOR_NAME": "Smoke Test", "GIT_AUTHOR_EMAIL": "smoke@example.org",
                  "GIT_COMMITTER_NAME": "Smoke Test", "GIT_COMMITTER_EMAIL": "smoke@example.org",
                  "GIT_CONFIG_NOSYSTEM": "1", "HF_HUB_OFFLINE": "1"}


def _python_of(zmem: Path) -> str:
    """The interpreter of a console script (its #! line)."""
    with open(zmem, "rb") as f:
        first = f.readline().decode(errors="replace")
    return first[2:].strip() if first.startswith("#!") else sys.executable


def _importable(python: str, module: str) -> bool:
    code = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
    return subprocess.run([python, "-c", code], env=os.environ, capture_output=True).returncode == 0


def _expected_errors(zmem: Path) -> dict[tuple[str, ...], str]:
    python = _python_of(zmem)
    return {words: why for words, (fails, why) in EXPECTED_ERRORS.items() if fails(python)}


def _subcommand(argv: list[str]) -> tuple[str, ...]:
    return tuple(w for w in argv[1:3] if not w.startswith("-"))


def _problems(argv: list[str], proc: subprocess.CompletedProcess, expected_errors: dict) -> list[str]:
    out = []
    if "Traceback (most recent call last)" in proc.stdout + proc.stderr:
        out.append("printed a traceback")
    expected = next((why for words, why in expected_errors.items() if _subcommand(argv)[:len(words)] == words), None)
    if proc.returncode == 0:
        if expected:
            out.append(f"exits 0 now: remove it from EXPECTED_ERRORS ({expected})")
        if "--json" in argv:
            try:
                json.loads(proc.stdout)
            except ValueError as e:
                out.append(f"--json output is not JSON: {e}")
    elif proc.returncode in (1, 2):
        lines = proc.stderr.splitlines()
        if not any(x.startswith("zmem: ") for x in lines) or not any(x.startswith("hint: ") for x in lines):
            out.append(f"exit {proc.returncode} without the `zmem: …` and `hint: …` lines")
        if not expected:
            out.append(f"exit {proc.returncode}: the docs show it as working (if it cannot work here, list it in "
                       "EXPECTED_ERRORS with the reason)")
    else:
        out.append(f"exit {proc.returncode} (only 0, and 1/2 for an expected error, are allowed)")
    return out


def check_man(zmem: Path, env: dict) -> list[str]:
    """`man zmem` and `git zmem --help` (git runs `man git-zmem`) with this zmem's bin directory on PATH."""
    env = env | {"PATH": f"{zmem.parent}{os.pathsep}{env.get('PATH', '')}", "MANPAGER": "cat", "MANWIDTH": "80"}
    env.pop("MANPATH", None)
    problems = []
    for argv in (["man", "zmem"], ["git", "zmem", "--help"]):
        proc = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        ok = proc.returncode == 0 and "zmem recall" in proc.stdout
        print(f"{'ok  ' if ok else 'FAIL'} {proc.returncode}  {' '.join(argv)}", flush=True)
        if not ok:
            problems.append(f"{' '.join(argv)}: exit {proc.returncode}: {proc.stderr.strip()[:300]}")
    return problems


def _run_file(zmem: Path, env: dict, base: Path, commands: list[list[str]], expected_errors: dict,
              failures: list[str]) -> None:
    """One file's commands, in order, in a fresh `zmem demo` workspace under base."""
    ws = base / "zmem-demo"
    demo = subprocess.run([str(zmem), "demo", str(ws)], env=env, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=TIMEOUT)
    if demo.returncode:
        print(f"FAIL zmem demo {ws}: exit {demo.returncode}", flush=True)
        failures.append(f"zmem demo {ws}: exit {demo.returncode}\n  stderr: {demo.stderr.strip()[-1500:]}")
        return
    n = 0
    for argv in commands:
        args = []
        for w in argv[1:]:
            if w.startswith("\0"):
                if w[1:] not in PLACEHOLDERS:
                    raise ReadmeError(f"the docs use the placeholder [{w[1:]}], unknown to PLACEHOLDERS")
                n += 1
                w = PLACEHOLDERS[w[1:]](base, n)
            elif re.search(r"@[0-9a-f]{7,40}(#|$)", w):  # the docs' example commit: this workspace's HEAD
                head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ws, env=env, capture_output=True, text=True)
                w = re.sub(r"@[0-9a-f]{7,40}(?=#|$)", "@" + head.stdout.strip()[:10], w)
            args.append(w)
        args += BOUNDED.get(args[0], ([], ""))[0] if args else []
        shown = shlex.join(["zmem", *args])
        try:
            proc = subprocess.run([str(zmem), *args], cwd=ws, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                                  text=True, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            print(f"FAIL hung  {shown}", flush=True)
            failures.append(f"{shown}: still running after {TIMEOUT} s")
            continue
        problems = _problems(argv, proc, expected_errors)
        first = next((x for x in proc.stderr.splitlines() if x.startswith("zmem: ")), "")
        print(f"{'FAIL' if problems else 'ok  '} {proc.returncode}  {shown}" + (f"   ({first})" if first else ""),
              flush=True)
        if problems:
            failures.append(f"{shown}: {'; '.join(problems)}\n  stderr: {proc.stderr.strip()[-1500:]}")


def run_all(zmem: Path, docs: list[Path], base: Path, check_man_pages: bool = False) -> int:
    env = _env(base)
    per_file = documented_commands(docs)
    for name, (extra, why) in BOUNDED.items():
        print(f"note: zmem {name} {' '.join(extra)}".rstrip() + f": {why}")
    expected_errors = _expected_errors(zmem)
    for words, why in expected_errors.items():
        print(f"note: zmem {' '.join(words)} must fail cleanly: {why}")
    failures: list[str] = []
    for i, (f, commands) in enumerate(per_file):
        print(f"\n== {_shown(f)}: {len(commands)} commands, in a fresh `zmem demo` workspace", flush=True)
        where = base / f"file-{i}"
        where.mkdir()
        _run_file(zmem, env, where, commands, expected_errors, failures)
    if check_man_pages:
        if shutil.which("man"):
            failures += check_man(zmem, env)
        else:
            print("SKIPPED man zmem / git zmem --help: man is not installed on this machine")
    total = sum(len(c) for _, c in per_file)
    files = f"{len(per_file)} file" + ("s" if len(per_file) != 1 else "")
    print(f"\n{total} documented commands run ({files}), {len(failures)} failed")
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--zmem", type=Path, default=Path(sys.executable).with_name("zmem"),
                    help="the zmem executable to test (default: the one beside this Python)")
    ap.add_argument("--doc", "--readme", dest="docs", type=Path, action="append",
                    help="a Markdown file whose runnable blocks to run (repeatable; default: README.md and docs/*.md)")
    ap.add_argument("--check-man", action="store_true", help="also check `man zmem` and `git zmem --help`")
    ap.add_argument("--list", action="store_true", help="print the commands and exit")
    a = ap.parse_args()
    docs = a.docs or default_docs()
    try:
        if a.list:
            for f, commands in documented_commands(docs):
                print(f"# {_shown(f)}")
                for argv in commands:
                    print(shlex.join([w.lstrip("\0") for w in argv]))
            return 0
        if not a.zmem.is_file():
            print(f"readme_smoke: no zmem at {a.zmem} (pass --zmem PATH)", file=sys.stderr)
            return 2
        with tempfile.TemporaryDirectory(prefix="zmem-docs-smoke-") as tmp:
            return run_all(a.zmem.absolute(), docs, Path(tmp), a.check_man)
    except ReadmeError as e:
        print(f"readme_smoke: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
