"""Regenerate man/zmem.1, man/git-zmem.1 and completions/ from the click definitions of the zmem in
this checkout (not part of the installed package):

    .venv/bin/python tools/docgen.py

tests/project/test_docs.py fails when the committed files drift from what this renders for the current CLI.
"""
from __future__ import annotations

import sys
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # document this checkout's CLI, whichever zmem is installed

from zmem import __version__  # noqa: E402
from zmem.cli.app import cli  # noqa: E402
from zmem.cli.completion import commands, render_completion, visible_params  # noqa: E402

EXIT_STATUS = [("0", "Success."), ("1", "An expected error: a `zmem: ...' line and a `hint: ...' line on stderr."),
               ("2", "Usage error (bad command line)."), ("3", "Internal error (a bug); ZMEM_DEBUG=1 shows the traceback."),
               ("130", "Interrupted.")]
ENVIRONMENT = [("ZMEM_WORKSPACE", "Workspace directory when -C is not given."),
               ("ZMEM_DEBUG", "Set to 1 to show tracebacks of internal errors."),
               ("XDG_CONFIG_HOME", "Where the user config lives: $XDG_CONFIG_HOME/zmem/config.toml (default ~/.config).")]
FILES = [("zmem.toml", "Committed workspace settings (no secrets)."),
         ("~/.config/zmem/config.toml", "User settings; trusted for [embeddings]."),
         (".zmem/index.sqlite", "The derived index; delete it any time, `zmem index --full' rebuilds it.")]


def _esc(text: str) -> str:
    """Escape text for roff: backslashes, and a leading dot or quote."""
    text = text.replace("\\", "\\e")
    text = "".join(c if ord(c) < 128 else f"\\[u{ord(c):04X}]" for c in text)  # groff wants ASCII input
    lines = []
    for line in text.split("\n"):
        if line.startswith((".", "'")):
            line = "\\&" + line
        lines.append(line)
    return "\n".join(lines)


def _opt(s: str) -> str:
    return s.replace("-", "\\-")


def _help_paragraphs(text: str) -> list[str]:
    paras = [" ".join(line.strip() for line in p.strip().splitlines()) for p in text.strip().split("\n\n")]
    return [p for p in paras if p]


def _usage(path, cmd: click.Command, prog: str) -> str:
    ctx = click.Context(cmd, info_name=" ".join((prog, *path)))
    return " ".join(cmd.collect_usage_pieces(ctx))


def _param_line(p: click.Parameter) -> tuple[str, str]:
    if isinstance(p, click.Option):
        names = ", ".join(p.opts + p.secondary_opts)
        if not p.is_flag:
            mv = p.metavar or (("[" + "|".join(p.type.choices) + "]") if isinstance(p.type, click.Choice) else p.type.name.upper())
            names += " " + mv
        text = p.help or ""
        if p.show_default and p.default is not None and not p.is_flag:
            text += f" (default: {p.default})"
        return names, text
    mv = p.human_readable_name.upper()
    if isinstance(p.type, click.Choice):
        return mv, "One of: " + ", ".join(p.type.choices) + "."
    return mv, ""


def render_man(group: click.Group, prog: str = "zmem", version: str = "") -> str:
    out = [f'.TH ZMEM 1 "" "{prog} {version}" "User Commands"', ".SH NAME",
           f"{prog} \\- {_esc(_help_paragraphs(group.help or '')[0].split(': ', 1)[-1])}",
           ".SH SYNOPSIS", f".B {prog}", "[\\fIGLOBAL OPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]...", ".SH DESCRIPTION"]
    for para in _help_paragraphs(group.help or "")[1:]:
        out += [_esc(para), ".PP"]
    out.append(".SH GLOBAL OPTIONS")
    for p in visible_params(group):
        names, text = _param_line(p)
        out += [".TP", f".B {_opt(names)}", _esc(text)]
    out += [".TP", ".B \\-h, \\-\\-help", "Show help for zmem or any command."]
    out.append(".SH COMMANDS")
    for path, cmd in commands(group):
        out += [".SS " + _esc(" ".join(path)), f".B {prog} {_opt(' '.join(path))}",
                _opt(_esc(_usage(path, cmd, prog))), ".PP"]
        for para in _help_paragraphs(cmd.help or ""):
            out += [_esc(para), ".PP"]
        for p in visible_params(cmd):
            names, text = _param_line(p)
            out += [".TP", f".B {_opt(_esc(names))}", _esc(text) or "\\&"]
    out.append(".SH EXIT STATUS")
    for code, text in EXIT_STATUS:
        out += [".TP", f".B {code}", _esc(text)]
    out.append(".SH ENVIRONMENT")
    for name, text in ENVIRONMENT:
        out += [".TP", f".B {name}", _esc(text)]
    out.append(".SH FILES")
    for name, text in FILES:
        out += [".TP", f".I {_esc(name)}", _esc(text)]
    out += [".SH SEE ALSO", "git(1), git\\-hooks(5)", ""]
    return "\n".join(out)


COMPLETION_FILES = {"bash": "completions/zmem.bash", "zsh": "completions/_zmem", "fish": "completions/zmem.fish"}
# `git zmem --help` runs `man git-zmem`: the page is zmem's, by a roff include that man resolves within the
# installed man tree (pyproject.toml installs both into share/man/man1)
GIT_ZMEM_MAN = ".so man1/zmem.1\n"


def rendered(group: click.Group, version: str) -> dict[str, str]:
    """Relative path -> content of every generated file."""
    out = {"man/zmem.1": render_man(group, version=version), "man/git-zmem.1": GIT_ZMEM_MAN}
    for shell, rel in COMPLETION_FILES.items():
        out[rel] = render_completion(group, shell)
    return out


def write_all(root: Path) -> list[Path]:
    paths = []
    for rel, content in rendered(cli, __version__).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        paths.append(path)
    return paths


if __name__ == "__main__":
    for p in write_all(ROOT):
        print(f"wrote {p}")
