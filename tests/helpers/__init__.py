"""Helpers shared by the test modules (loopback servers, a tiny BERT, the MCP client, `zmem watch`
as a process). No tests here; a test module imports only conftest and these, never another test
module."""
