"""Which half of an evaluation set a question belongs to: the tuning half (tune constants on it) or the
held-out half (report it). One split for bench/eval.py and bench/quality.py, so that a LoCoMo question
held out by one is held out by the other.

By the first byte of a SHA-1 (even: tuning, odd: held-out): stable across runs and machines,
independent of the order or the conversation of the questions. LoCoMo hashes the question id alone:
quality.py split it that way first, and the citation and fusion weights of sessions 12-13 were tuned
on that tuning half. Every other set hashes "set:question id".
"""
from __future__ import annotations

import hashlib


def half(set_name: str, qid: str) -> str:
    """"tuning" or "heldout"."""
    key = qid if set_name == "locomo" else f"{set_name}:{qid}"
    return "tuning" if hashlib.sha1(key.encode()).digest()[0] % 2 == 0 else "heldout"
