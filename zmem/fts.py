"""What goes into the FTS5 columns, and turning any user query into a safe MATCH expression."""
from __future__ import annotations

import re

from zmem.chunking import CJK_CLASS

_CJK_RUN = re.compile(f"[{CJK_CLASS}]+")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_PHRASE = re.compile(r'"([^"]+)"')

# Words too common to help an OR query (and slow on large indexes): English, Portuguese, Spanish.
STOPWORDS = frozenset("""
a an and are as at be been but by can could did do does for from had has have he her him his how i if in
into is it its me my no not of on or our she so than that the their them then there these they this to
us was we were what when where which who whom why will with would you your yes about after before
o os as um uma uns umas e é de do da dos das em no na nos nas por para com que se ao aos à às ou mas
el la los las un una unos unas y es del al en por para con que se lo le les su sus o pero como
""".split())


def cjk_columns(text: str) -> tuple[str, str]:
    """Space-separated bigrams and unigrams of every CJK run (unicode61 cannot segment CJK)."""
    bi: list[str] = []
    uni: list[str] = []
    for run in _CJK_RUN.findall(text):
        uni.extend(run)
        bi.extend(run[i:i + 2] for i in range(len(run) - 1))
    return " ".join(bi), " ".join(uni)


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def query_terms(query: str) -> list[str]:
    """Lower-cased non-CJK words of a query, without stopwords (kept if nothing else is left)."""
    text = _CJK_RUN.sub(" ", query)
    words = [w.lower() for w in _WORD.findall(text)]
    kept = [w for w in words if w not in STOPWORDS]
    return list(dict.fromkeys(kept or words))


def build_match(query: str) -> str | None:
    """An FTS5 MATCH expression that searches for the query's words; never a syntax error.

    Every term is quoted, so operators (AND, OR, NOT, NEAR), `*`, `-`, `:` and parentheses are
    searched as text rather than parsed. Terms are OR-ed and bm25 ranks chunks that match more
    of them higher. "Quoted phrases" in the query are kept as phrases.
    """
    parts: list[str] = []
    for phrase in _PHRASE.findall(query):
        words = [w for w in _WORD.findall(_CJK_RUN.sub(" ", phrase))]
        if len(words) > 1:
            parts.append(_quote(" ".join(words)))
    for w in query_terms(query):
        parts.append(_quote(w))
    for run in _CJK_RUN.findall(query):
        if len(run) == 1:
            parts.append("cjk_uni : " + _quote(run))
        else:
            grams = dict.fromkeys(run[i:i + 2] for i in range(len(run) - 1))
            parts.append("cjk_bi : (" + " OR ".join(_quote(g) for g in grams) + ")")
    if not parts:
        return None
    return " OR ".join(dict.fromkeys(parts))
