"""entity_key skips the work a name does not need (no control character, no slash, no `..`), and
entities._fold reads ASCII without Unicode's tables: a fresh recall computes the key of every entity
page's name (named_in_query). The keys must be exactly those of the full computation."""
from __future__ import annotations

import random
import re
import unicodedata

from zmem.query.entities import _fold
from zmem.text.retain import _safe_name, entity_key


def reference_safe_name(name: str) -> str:
    """_safe_name as it was before the shortcuts."""
    name = unicodedata.normalize("NFC", name.strip().lstrip("@"))
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1].strip()
    name = "".join(" " if unicodedata.category(c) in ("Cc", "Cs") else c for c in name)
    return re.sub(r"\.{2,}", ".", re.sub(r"[/\\]+", "-", name))


def reference_fold(s: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", s.casefold()) if not unicodedata.combining(c))


PIECES = ["Peter", "José", "e\u0301", "@", "[", "]", " ", "\t", "\n", "\x00", "\x7f", "\x85", "\ud800", "/", "\\",
          ".", "..", "-", "_", "’", "'", "王伟", "ß", "İ", "ﬁ", "\u200b", "\u2028", "Ⅻ", "Ａ", "1", "Ol\u00e1"]


def test_safe_names_and_keys_are_the_full_computations():
    rng = random.Random(14)
    names = ["Peter", "The-Castle", "@[João Silva]", "a/b", "../../x", "Wang Wei", "x..y", "tab\there", "ß"]
    names += ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, 6))) for _ in range(5000)]
    for name in names:
        assert _safe_name(name) == reference_safe_name(name), repr(name)
        assert entity_key(name) == re.sub(r"[\s\-_]+", "-", reference_safe_name(name).casefold()).strip("-."), repr(name)


def test_fold_of_ascii_and_other_text():
    rng = random.Random(7)
    texts = ["Peter", "PETER-lisbon", "", "a\x00b\x7f", "José", "ǅ", "ﬁ"]
    texts += ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, 5))) for _ in range(3000)]
    texts += [chr(c) for c in range(128)]
    for text in texts:
        assert _fold(text) == reference_fold(text), repr(text)
