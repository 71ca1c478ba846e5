"""Fixtures the fusion tests share (tests/query/test_fusion*.py)."""
from __future__ import annotations

import pytest

from helpers.fusion import FUSION_NOTES
from helpers.workspace import index_notes


@pytest.fixture
def fusion_ws(ws, server):
    """helpers.fusion's notes, indexed with the loopback server's concept vectors (helpers.embed_server:
    `computer`, `box` and `hosts` share a concept, `relay` and `proxy` another)."""
    return index_notes(ws, server, FUSION_NOTES)
