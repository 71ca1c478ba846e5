"""One error model: a library error carries what went wrong, the parameter involved and a hint, and
each front end names the parameter in its own terms from one place (errors.describe): the command
line by its flag, the MCP server by the tool's parameter, the Python API by its argument."""
from __future__ import annotations

import ast
import asyncio
import functools
import re
import sqlite3
from pathlib import Path

import click
import pytest

from helpers.workspace import run
from zmem.cli import app as cli
from zmem.cli.common import _flags
from zmem.index.append import format_entry
from zmem.errors import LIBRARY, CommandLine, ExitCode, ZmemError, arg, describe, example, render

PACKAGE = Path(__file__).resolve().parent.parent / "zmem"


def _confidence_without_opinion() -> ZmemError:
    with pytest.raises(ZmemError) as caught:
        format_entry("Prefers tea", retain="W", confidence=0.5)
    return caught.value


def test_a_library_error_carries_its_parameter_as_data():
    e = _confidence_without_opinion()
    assert e.param == "confidence" and e.exit_code == ExitCode.ERROR
    # the Python API names it as its argument
    assert (e.message, e.hint) == ("confidence applies only to opinions", 'use it with retain="O"')
    assert str(e) == e.message


def test_the_command_line_names_the_parameter_by_its_flag(ws):
    res = run(["-C", str(ws), "append", "--retain", "W", "--confidence", "0.5", "Prefers tea"])
    assert res.exit_code == 1
    assert res.stderr == "zmem: --confidence applies only to opinions\nhint: use it with --retain O\n"
    res = run(["-C", str(ws), "append", "--entity", " ", "x"])
    assert res.stderr == "zmem: an empty --entity name\nhint: e.g. --entity Peter\n"


def test_the_mcp_server_names_the_parameter_as_the_tool_does(ws):
    pytest.importorskip("mcp")
    from zmem.mcp.server import build_server
    server = build_server(str(ws))
    try:
        res = asyncio.run(server.call_tool("memory_append", {"text": "Prefers tea", "retain": "W",
                                                             "confidence": 0.5}))
        assert res.is_error
        assert res.content[0].text == 'confidence applies only to opinions\nhint: use it with retain="O"'
        res = asyncio.run(server.call_tool("memory_append", {"text": "x", "entities": [" "]}))
        assert res.content[0].text == 'an empty entities name\nhint: e.g. entities=["Peter"]'
    finally:
        server.memory.close()


def test_example_calls_read_as_each_front_end_takes_them(ws):
    e = ZmemError("the query is empty", hint=f"e.g. {example('recall', entity='Peter', query='where')}; "
                                                 f"{example('append', retain='W', entities=['Peter'], text='x')}")
    assert describe(e, _tool_parameters()).hint == describe(e).hint == \
         'e.g. entity="Peter", query="where"; retain="W", entities=["Peter"], text="x"'
    # the command line: options as flags, arguments quoted, a list as a repeated option, False as --no-X
    res = run(["-C", str(ws), "recall", "--kind", "world", " "])
    assert res.exit_code == 1
    assert res.stderr.splitlines()[1] == 'hint: say what to look for, e.g. zmem recall --entity Peter "where"'
    res = run(["-C", str(ws), "recall", " ", "--as-of", "HEAD"])
    assert res.stderr.splitlines()[1] == 'hint: say what to look for, e.g. zmem recall "Peter" --as-of 2025-11-30'
    ctx = click.Context(cli.cli, info_name="zmem")
    ctx.invoked_subcommand = "append"
    flags = CommandLine(functools.partial(_flags, ctx))
    assert render(f"{arg('commit', False)}; {arg('entities', ['A', 'B'])}; {arg('directory', 'DIR')}", flags) == \
        "--no-commit; --entity A --entity B; -C DIR"
    assert render(example("model import", out="x.gguf", force=True), flags) == "zmem model import --out x.gguf --force"


def test_a_server_option_is_named_as_the_command_that_starts_the_server():
    e = ZmemError("private", hint=f"read with {arg('scope', 'private')}; {arg('k')}, {arg('path_glob')}")
    assert describe(e, _tool_parameters()).hint == \
        "read with a server started with `zmem mcp --scope private`; max_results, path"


def test_an_error_without_a_parameter_renders_as_before(ws):
    plain = ZmemError("no entity named {x} at [1]", hint='use "quotes" and {braces}; run `zmem index --full`')
    assert plain.param is None
    for surface in (LIBRARY, _tool_parameters()):
        problem = describe(plain, surface)
        assert (problem.message, problem.hint, problem.exit_code) == (plain.message, plain.hint, 1)
    assert (plain.message, plain.hint) == ("no entity named {x} at [1]",
                                           'use "quotes" and {braces}; run `zmem index --full`')
    res = run(["-C", str(ws), "get", "memory/nope.md"])
    assert res.exit_code == 1 and res.stderr.startswith("zmem: ") and "\nhint: " in res.stderr


def test_what_is_not_a_zmem_error_is_described_the_same_way_everywhere():
    for surface in (LIBRARY, _tool_parameters()):
        broken = describe(sqlite3.DatabaseError("database disk image is malformed"), surface)
        assert broken.message == "the index could not be used: database disk image is malformed"
        assert "zmem index --full" in broken.hint and broken.exit_code == 1 and not broken.bug
        bug = describe(KeyError("x"), surface)
        assert bug.message == "internal error: KeyError: 'x'" and bug.bug and bug.exit_code == ExitCode.BUG
        assert describe(KeyboardInterrupt(), surface).exit_code == ExitCode.INTERRUPTED


def test_trying_again_is_said_as_each_front_end_does_it(ws):
    from zmem.errors import TRY_AGAIN
    e = ZmemError("another zmem process is updating the index", hint=TRY_AGAIN)
    assert describe(e, _tool_parameters()).hint == "call the tool again"
    assert e.hint == "call it again"


def test_no_regex_rewording_is_left_in_the_mcp_server():
    source = (PACKAGE / "mcp" / "server.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "re" not in imported and "re.sub" not in source and "_PARAMETER_WORDING" not in source


# the flags of library parameters that messages used to spell out
_PARAMETER_FLAGS = re.compile(r"--(confidence|retain|entity|kind|as-of|since|until|scope|lines|from|source|"
                              r"no-commit|out|force|dry-run)\b")


@pytest.mark.slow
def test_library_messages_do_not_hard_code_the_flags_of_parameters():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] == "cli":  # the command line (cli/, cli/commands/) spells its own flags
            continue
        source = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")).endswith("Error"):
                text = ast.get_source_segment(source, node)
                if _PARAMETER_FLAGS.search(text):
                    found.append(f"{path.name}:{node.lineno}: {text.splitlines()[0]}")
    assert found == []


def _tool_parameters():
    pytest.importorskip("mcp")
    from zmem.mcp.server import ToolParameters
    return ToolParameters()
