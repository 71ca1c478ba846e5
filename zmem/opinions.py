"""bank/opinions.md: one section per opinion, with confidence and the evidence behind it.

    ## Prefers concise replies (<1500 chars) on WhatsApp.
    - entities: @Peter
    - confidence: 0.67
    - updated: 2025-12-01
    - evidence:
      - supports memory/2025-11-27.md#L12 (fact 3a9f1c2b07, c=0.95): Prefers concise replies …
      - contradicts memory/2025-12-03.md#L9 (fact 77ab0912aa, c=0.80): No longer prefers …

The heading is the statement. `zmem reflect` adds evidence from new `O` facts and moves confidence
by the rule in `update()`; people may edit any of it (their wording and lines it does not know are kept).
Parsing is pure and never raises; problems come back as warnings naming file and line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from zmem.markdown import ATX, split_lines
from zmem.retain import entity_key, mentions

OPINIONS_PATH = "bank/opinions.md"
HEADER = ("# Opinions\n\n"
          "One section per opinion: the heading is the statement. `zmem reflect` adds evidence from `O` facts\n"
          "and moves confidence in small steps; edit freely, your wording is kept.\n")

NEW_DEFAULT = 0.6         # confidence of a new opinion whose fact gives no c=
SUPPORT_RATE = 0.2        # a supporting fact of strength s moves c up by SUPPORT_RATE·s·(1 − c)
CONTRADICT_RATE = 0.3     # a contradicting fact moves c down by CONTRADICT_RATE·s·c
SIMILAR = 70.0            # rapidfuzz score above which two statements say the same thing

_FIELD = re.compile(r"^- ([a-z_]+):\s*(.*)$")
_EVIDENCE = re.compile(r"^\s+- (supports|contradicts) (\S+#L\d+(?:-\d+)?) \(fact ([0-9a-f]{6,40})"
                       r"(?:, c=([0-9.]+))?\)(?::\s*(.*))?$")

# Words that flip a statement: "prefers X" vs "no longer prefers X" (en, pt, es, zh).
_NEGATIONS = {"not", "no", "never", "don't", "doesn't", "didn't", "isn't", "aren't", "wasn't", "won't", "can't",
              "cannot", "longer", "stopped", "dislikes", "dislike", "hates", "hate", "não", "nunca", "jamais",
              "deixou", "jamás", "dejó", "ya"}
_ANTONYM = {"dislikes": "likes", "dislike": "like", "hates": "likes", "hate": "like"}
_CJK_NEGATIONS = ("不再", "没有", "不", "没", "别")


@dataclass
class Evidence:
    relation: str             # supports | contradicts
    citation: str             # path#Lnn
    fact: str                 # fact id
    strength: float | None
    text: str = ""

    def render(self) -> str:
        c = f", c={self.strength:.2f}" if self.strength is not None else ""
        return f"  - {self.relation} {self.citation} (fact {self.fact}{c})" + (f": {_short(self.text)}" if self.text else "")


@dataclass
class Opinion:
    statement: str
    entities: list[str] = field(default_factory=list)
    confidence: float = NEW_DEFAULT
    updated: str | None = None
    evidence: list[Evidence] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)   # lines a person wrote that zmem does not read
    line: int = 0                                     # the heading's line in the file (0: new)

    @property
    def entity_keys(self) -> set[str]:
        return {entity_key(e) for e in self.entities}

    def to_json(self) -> dict:
        return {"statement": self.statement, "entities": self.entities, "confidence": round(self.confidence, 2),
                "updated": self.updated, "source": f"{OPINIONS_PATH}#L{self.line}" if self.line else None,
                "evidence": [{"relation": e.relation, "source": e.citation, "fact": e.fact,
                              "strength": e.strength, "text": e.text} for e in self.evidence]}

    def render(self) -> str:
        out = [f"## {self.statement}",
               "- entities: " + (" ".join("@" + (f"[{e}]" if " " in e else e) for e in self.entities) or "(none)"),
               f"- confidence: {self.confidence:.2f}"]
        if self.updated:
            out.append(f"- updated: {self.updated}")
        out.append("- evidence:" if self.evidence else "- evidence: (none yet)")
        out += [e.render() for e in self.evidence]
        out += self.extra
        return "\n".join(out) + "\n"


@dataclass
class OpinionsFile:
    preamble: list[str]
    opinions: list[Opinion]
    sections: list[list[str]]  # each opinion's original lines (unchanged opinions are written back as they were)
    warnings: list[str]

    def render(self, changed: set[int]) -> str:
        parts = ["\n".join(self.preamble).rstrip("\n") + "\n" if self.preamble else HEADER]
        for i, op in enumerate(self.opinions):
            if i in changed or i >= len(self.sections):
                parts.append(op.render())
            else:
                parts.append("\n".join(self.sections[i]).rstrip("\n") + "\n")
        return "\n".join(parts)


def parse(text: str, path: str = OPINIONS_PATH) -> OpinionsFile:
    lines = split_lines(text)
    preamble: list[str] = []
    opinions: list[Opinion] = []
    sections: list[list[str]] = []
    warnings: list[str] = []
    in_fence = False
    for n, line in enumerate(lines, 1):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        m = None if in_fence else ATX.match(line)
        if m and len(m.group(1)) == 2 and (m.group(2) or "").strip():
            opinions.append(Opinion((m.group(2) or "").strip(), line=n))
            sections.append([line])
            continue
        if not opinions:
            preamble.append(line)
            continue
        op = opinions[-1]
        sections[-1].append(line)
        f = _FIELD.match(line)
        e = _EVIDENCE.match(line)
        if e:
            strength = _number(e.group(4))
            op.evidence.append(Evidence(e.group(1), e.group(2), e.group(3), strength, e.group(5) or ""))
        elif f and f.group(1) == "entities":
            op.entities = mentions(f.group(2))
        elif f and f.group(1) == "confidence":
            c = _number(f.group(2))
            if c is None or not 0.0 <= c <= 1.0:
                warnings.append(f"{path}:{n}: confidence {f.group(2)!r} is not a number in 0..1; kept at {op.confidence:.2f}")
            else:
                op.confidence = c
        elif f and f.group(1) == "updated":
            op.updated = f.group(2).strip() or None
        elif f and f.group(1) == "evidence":
            pass
        elif re.match(r"^\s+- (supports|contradicts)\b", line):
            warnings.append(f"{path}:{n}: cannot read this evidence line (expected "
                            "`  - supports PATH#Lnn (fact ID, c=0.9): text`)")
            op.extra.append(line)
        elif line.strip() or op.extra:
            op.extra.append(line)
    for op in opinions:  # blank lines at a section's end belong to the separator
        while op.extra and not op.extra[-1].strip():
            op.extra.pop()
    return OpinionsFile(preamble, opinions, sections, warnings)


def _number(s: str | None) -> float | None:
    try:
        return float(s) if s is not None else None
    except ValueError:
        return None


def _short(text: str, n: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n - 1] + "…"


# ----------------------------------------------------------------------------- matching and the rule


def polarity(text: str) -> tuple[bool, str]:
    """(negated?, the statement with negations removed and antonyms folded), for comparison."""
    words = re.findall(r"[\w'’]+", text.casefold().replace("’", "'"))
    negated = False
    kept = []
    for w in words:
        if w in _NEGATIONS:
            negated = not negated if w not in ("longer", "ya") else negated
            if w in _ANTONYM:
                kept.append(_ANTONYM[w])
            continue
        kept.append(w)
    plain = " ".join(kept)
    for neg in _CJK_NEGATIONS:
        if neg in plain:
            negated = not negated
            plain = plain.replace(neg, "")
            break
    return negated, plain


def similarity(a: str, b: str) -> float:
    from rapidfuzz import fuzz
    return max(fuzz.token_set_ratio(a, b), fuzz.ratio(a, b))


def match(opinions: list[Opinion], text: str, entity_keys: set[str]) -> tuple[int, bool] | None:
    """(index of the opinion a statement speaks to, does it contradict it?) or None.
    Same entities (at least one shared, or both none) and a similar statement once negations are removed."""
    negated, plain = polarity(text)
    best = None
    for i, op in enumerate(opinions):
        keys = op.entity_keys
        if (keys or entity_keys) and not (keys & entity_keys):
            continue
        op_neg, op_plain = polarity(op.statement)
        score = similarity(plain, op_plain)
        if score >= SIMILAR and (best is None or score > best[0]):
            best = (score, i, negated != op_neg)
    return (best[1], best[2]) if best else None


def update(confidence: float, strength: float, contradicts: bool) -> float:
    """Small steps, proportional to the room left: support adds SUPPORT_RATE·s·(1 − c); a
    contradiction removes CONTRADICT_RATE·s·c. From 0.60, a c=0.9 support gives 0.67; a c=0.9
    contradiction then gives 0.49. Reaching 0.9 from 0.6 takes about eight strong supports."""
    if contradicts:
        c = confidence - CONTRADICT_RATE * strength * confidence
    else:
        c = confidence + SUPPORT_RATE * strength * (1.0 - confidence)
    return round(min(max(c, 0.0), 1.0), 2)  # the file shows two decimals
