"""word_start tells a CJK character before a word without compiling CJK_RE (a class over ~40k code
points, ~3 ms to compile in a fresh process): what a hybrid recall or a snippet of a note mixing
scripts pays for a query without CJK. The answer must be CJK_RE's."""
from __future__ import annotations

import subprocess
import sys

from zmem.store.fts import _CJK_RANGES, word_start
from zmem.text.chunking import CJK_RE


def test_the_ranges_are_cjk_re_for_every_character_from_u3040():
    for code in range(0x3040, 0x10000):
        c = chr(code)
        assert any(a <= c <= b for a, b in _CJK_RANGES) == bool(CJK_RE.match(c)), hex(code)


def test_word_start_after_cjk_latin_and_punctuation():
    assert word_start("买了iphone", "iphone") == 2
    assert word_start("한국어iphone", "iphone") == 3
    assert word_start("abciphone iphone", "iphone") == 10
    assert word_start("ﾃiphone", "iphone") == -1  # half-width katakana (U+FF83) is outside CJK_CLASS: one token
    assert word_start("(iphone", "iphone") == 1
    assert word_start("phone", "iphone") == -1


def test_word_start_compiles_no_cjk_pattern_in_a_fresh_process():
    code = ("from zmem.store.fts import word_start; from zmem.text.chunking import CJK_RE\n"
            "assert word_start('买了iphone 和 iphone', 'iphone') == 2\n"
            "print(CJK_RE._compiled is None)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"
