"""Helpers shared by the test modules: real workspaces driven through git and the CLI (workspace.py),
loopback servers, a tiny BERT, the MCP client, `zmem watch` as a process. No tests here; a test module
imports these (and gets fixtures from conftest.py by name), never another test module or conftest."""
