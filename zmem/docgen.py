"""man/zmem.1, man/git-zmem.1 and completions/ generated from the click definitions (`python -m zmem.docgen`).

Completions are static scripts (no call back into Python on TAB, so they are instant); a test
fails when the committed files drift from what this module renders for the current CLI.
"""
from __future__ import annotations

from pathlib import Path

import click

SHELLS = ("bash", "zsh", "fish")
EXIT_STATUS = [("0", "Success."), ("1", "An expected error: a `zmem: ...' line and a `hint: ...' line on stderr."),
               ("2", "Usage error (bad command line)."), ("3", "Internal error (a bug); ZMEM_DEBUG=1 shows the traceback."),
               ("130", "Interrupted.")]
ENVIRONMENT = [("ZMEM_WORKSPACE", "Workspace directory when -C is not given."),
               ("ZMEM_DEBUG", "Set to 1 to show tracebacks of internal errors."),
               ("XDG_CONFIG_HOME", "Where the user config lives: $XDG_CONFIG_HOME/zmem/config.toml (default ~/.config).")]
FILES = [("zmem.toml", "Committed workspace settings (no secrets)."),
         ("~/.config/zmem/config.toml", "User settings; trusted for [embeddings]."),
         (".zmem/index.sqlite", "The derived index; delete it any time, `zmem index --full' rebuilds it.")]


def commands(group: click.Group, prefix: tuple[str, ...] = ()):
    """(path, command) for every visible command, depth first, in definition order."""
    for name, cmd in group.commands.items():
        if cmd.hidden:
            continue
        yield (*prefix, name), cmd
        if isinstance(cmd, click.Group):
            yield from commands(cmd, (*prefix, name))


def _visible_params(cmd: click.Command):
    return [p for p in cmd.params if not getattr(p, "hidden", False)]


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
    for p in _visible_params(group):
        names, text = _param_line(p)
        out += [".TP", f".B {_opt(names)}", _esc(text)]
    out += [".TP", ".B \\-h, \\-\\-help", "Show help for zmem or any command."]
    out.append(".SH COMMANDS")
    for path, cmd in commands(group):
        out += [".SS " + _esc(" ".join(path)), f".B {prog} {_opt(' '.join(path))}",
                _opt(_esc(_usage(path, cmd, prog))), ".PP"]
        for para in _help_paragraphs(cmd.help or ""):
            out += [_esc(para), ".PP"]
        for p in _visible_params(cmd):
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


def _options(cmd: click.Command) -> list[click.Option]:
    return [p for p in _visible_params(cmd) if isinstance(p, click.Option)]


def _words(cmd: click.Command) -> list[str]:
    words = [o for p in _options(cmd) for o in p.opts + p.secondary_opts] + ["--help"]
    if isinstance(cmd, click.Group):
        words = [n for n, c in cmd.commands.items() if not c.hidden] + words
    return words


def _value_kind(p: click.Parameter) -> str:
    """choices:a b c | dir | file | none (a flag) | any."""
    if isinstance(p, click.Option) and p.is_flag:
        return "none"
    if isinstance(p.type, click.Choice):
        return "choices:" + " ".join(p.type.choices)
    if isinstance(p.type, click.Path):
        return "dir" if not p.type.file_okay else "file"
    return "any"


def _bash(group: click.Group, prog: str) -> str:
    cases, values = [], []
    for path, cmd in [((), group), *commands(group)]:
        key = " ".join(path)
        cases.append(f'        "{key}") words="{" ".join(_words(cmd))}" ;;')
        for p in _options(cmd):
            kind = _value_kind(p)
            if kind != "none":
                for o in p.opts + p.secondary_opts:
                    values.append(f'        "{key}|{o}") kind="{kind}" ;;')
        args = [p for p in _visible_params(cmd) if isinstance(p, click.Argument)]
        if args and _value_kind(args[0]) != "any":
            values.append(f'        "{key}|ARG") kind="{_value_kind(args[0])}" ;;')
    return f'''# bash completion for {prog} (generated by zmem.docgen; do not edit)
_zmem() {{
    local cur prev path="" i w words kind=""
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    local first=1
    [ "${{COMP_WORDS[0]}}" = git ] && first=2
    for ((i = first; i < COMP_CWORD; i++)); do
        w="${{COMP_WORDS[i]}}"
        case "$w" in
            -C) ((i++)) ;;
            -*) ;;
            *) case " $(_zmem_words "$path") " in *" $w "*) path="${{path:+$path }}$w" ;; esac ;;
        esac
    done
    case "$path|$prev" in
{chr(10).join(values)}
    esac
    if [ -z "$kind" ] && [ "$prev" = -C ]; then kind=dir; fi
    if [ -z "$kind" ] && [[ "$cur" != -* ]]; then
        case "$path|ARG" in
{chr(10).join(v for v in values if "|ARG" in v)}
        esac
    fi
    case "$kind" in
        choices:*) COMPREPLY=($(compgen -W "${{kind#choices:}}" -- "$cur")); return ;;
        dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
        file) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        any) return ;;
    esac
    COMPREPLY=($(compgen -W "$(_zmem_words "$path")" -- "$cur"))
}}
_zmem_words() {{
    local words=""
    case "$1" in
{chr(10).join(cases)}
    esac
    echo "$words"
}}
_git_zmem() {{ _zmem; }}
complete -o default -F _zmem {prog} git-zmem
'''


def _zsh(group: click.Group, prog: str) -> str:
    lines = [f"#compdef {prog} git-zmem", "# zsh completion for zmem (generated by zmem.docgen; do not edit)", "",
             "_zmem() {", "  local -a cmds", "  local path=\"\" w i", "  for ((i = 2; i < CURRENT; i++)); do",
             "    w=${words[i]}", "    case $w in", "      -C) ((i++)) ;;", "      -*) ;;",
             "      *) if (( ${${(s: :)$(_zmem_subcommands \"$path\")}[(Ie)$w]} )); then path=\"${path:+$path }$w\"; fi ;;",
             "    esac", "  done", "  case $path in"]
    for path, cmd in [((), group), *commands(group)]:
        specs = []
        for p in _options(cmd):
            kind = _value_kind(p)
            action = {"none": "", "dir": ":dir:_files -/", "file": ":file:_files", "any": ":value: "}.get(
                kind, f":value:({kind[8:]})" if kind.startswith("choices:") else "")
            help_text = (p.help or "").replace("'", "'\\''").replace("[", "\\[").replace("]", "\\]").replace(":", "\\:")
            for o in p.opts + p.secondary_opts:
                specs.append(f"'{o}[{help_text}]{action}'")
        lines.append(f'    "{" ".join(path)}")')
        if isinstance(cmd, click.Group):
            subs = [f"'{n}:{(c.get_short_help_str(60) or '').replace(chr(39), '')}'"
                    for n, c in cmd.commands.items() if not c.hidden]
            lines.append(f"      cmds=({' '.join(s.replace(':', ':', 1) for s in subs)})")
            lines.append(f"      _arguments -s {' '.join(specs)} '*::command:->cmd' && return")
            lines.append("      _describe command cmds ;;")
        else:
            args = [p for p in _visible_params(cmd) if isinstance(p, click.Argument)]
            arg_spec = ""
            if args:
                kind = _value_kind(args[0])
                arg_spec = {"dir": "'*:dir:_files -/'", "file": "'*:file:_files'"}.get(
                    kind, f"'*:value:({kind[8:]})'" if kind.startswith("choices:") else "'*:value: '")
            lines.append(f"      _arguments -s {' '.join(specs)} {arg_spec} ;;")
    lines += ["  esac", "}", "", "_zmem_subcommands() {", "  case $1 in"]
    for path, cmd in [((), group), *commands(group)]:
        if isinstance(cmd, click.Group):
            lines.append(f'    "{" ".join(path)}") echo "{" ".join(n for n, c in cmd.commands.items() if not c.hidden)}" ;;')
    lines += ["  esac", "}", "", '_zmem "$@"', ""]
    return "\n".join(lines)


def _fish(group: click.Group, prog: str) -> str:
    lines = ["# fish completion for zmem (generated by zmem.docgen; do not edit)"]
    all_groups = [((), group)] + [(p, c) for p, c in commands(group) if isinstance(c, click.Group)]
    for path, cmd in [((), group), *commands(group)]:
        if path:
            parent = path[:-1]
            siblings = " ".join(n for n, c in dict(all_groups)[parent].commands.items() if not c.hidden)
            cond = _fish_cond(parent, siblings)
            desc = (cmd.get_short_help_str(60) or "").replace("'", "\\'")
            lines.append(f"complete -c {prog} -f -n '{cond}' -a {path[-1]} -d '{desc}'")
        own_cond = _fish_cond(path, " ".join(n for n, c in cmd.commands.items() if not c.hidden)
                              if isinstance(cmd, click.Group) else "", leaf=not isinstance(cmd, click.Group))
        for p in _options(cmd):
            kind = _value_kind(p)
            flags = " ".join(f"-l {o[2:]}" if o.startswith("--") else f"-s {o[1:]}" for o in p.opts + p.secondary_opts)
            extra = {"none": "", "dir": " -r -a '(__fish_complete_directories)'", "file": " -r -F", "any": " -r"}.get(
                kind, f" -r -f -a '{kind[8:]}'" if kind.startswith("choices:") else "")
            desc = (p.help or "").replace("'", "\\'")
            lines.append(f"complete -c {prog} -n '{own_cond}' {flags}{extra} -d '{desc}'")
        args = [p for p in _visible_params(cmd) if isinstance(p, click.Argument)]
        if args and _value_kind(args[0]).startswith("choices:"):
            lines.append(f"complete -c {prog} -f -n '{own_cond}' -a '{_value_kind(args[0])[8:]}'")
    return "\n".join(lines) + "\n"


def _fish_cond(path: tuple[str, ...], siblings: str, leaf: bool = False) -> str:
    if not path:
        return "__fish_use_subcommand" if siblings else "true"
    seen = " and ".join(f"__fish_seen_subcommand_from {p}" for p in path)
    if leaf or not siblings:
        return seen
    return f"{seen}; and not __fish_seen_subcommand_from {siblings}"


def render_completion(group: click.Group, shell: str, prog: str = "zmem") -> str:
    return {"bash": _bash, "zsh": _zsh, "fish": _fish}[shell](group, prog)


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
    from zmem import __version__
    from zmem.cli import cli
    paths = []
    for rel, content in rendered(cli, __version__).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        paths.append(path)
    return paths


if __name__ == "__main__":
    for p in write_all(Path(__file__).resolve().parent.parent):
        print(f"wrote {p}")
