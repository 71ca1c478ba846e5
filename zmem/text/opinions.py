"""bank/opinions.md: one section per opinion, with confidence and the evidence behind it.

    ## Prefers concise replies (<1500 chars) on WhatsApp.
    - entities: @Peter
    - confidence: 0.67
    - updated: 2025-12-01
    - evidence:
      - supports memory/2025-11-27.md#L12 (fact 3a9f1c2b07, c=0.95): Prefers concise replies …
      - contradicts memory/2025-12-03.md#L9 (fact 77ab0912aa, c=0.80): No longer prefers …
      - supports memory/2025-11-20.md@1a2b3c4d5e#L4 (fact 0c1d2e3f4a, c=0.60, retracted): Prefers short …

The heading is the statement. `zmem reflect` adds evidence from new `O` facts and moves confidence
by the rule in `update()`; people may edit any of it (their wording and lines it does not know are kept).
An opinion may also be written by hand as one bullet in the Retain syntax, outside a `## Retain`
section (inside one it is a fact, which reflect turns into an opinion):

    - O(c=0.7) @Peter: Prefers tea over coffee.

It is an opinion like a section (its own section: lines below it up to the next opinion belong to
it), at its c (0.6 when unstated); when reflect gives it evidence it is written anew as a section.
Evidence whose fact is gone from the notes stays, marked `retracted` and cited where it last was
(`path@commit#Lnn`), and no longer counts (derive()).
Parsing is pure and never raises; problems come back as warnings naming file and line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from zmem.text.markdown import ATX, split_lines
from zmem.text.retain import entity_key, is_retain_heading, mentions, parse_bullet

OPINIONS_PATH = "bank/opinions.md"
HEADER = ("# Opinions\n\n"
          "One section per opinion: the heading is the statement. `zmem reflect` adds evidence from `O` facts\n"
          "and moves confidence in small steps; edit freely, your wording is kept.\n")

NEW_DEFAULT = 0.6         # confidence of a new opinion whose fact gives no c=
SUPPORT_RATE = 0.2        # a supporting fact of strength s moves c up by SUPPORT_RATE·s·(1 − c)
CONTRADICT_RATE = 0.3     # a contradicting fact moves c down by CONTRADICT_RATE·s·c

_FIELD = re.compile(r"^- ([a-z_]+):\s*(.*)$")
_BULLET = re.compile(r"^[-*+][ \t]+(O(?=[\s(:]).*)$")  # an opinion in the Retain syntax, not indented
_EVIDENCE = re.compile(r"^\s+- (supports|contradicts) (\S+#L\d+(?:-\d+)?) \(fact ([0-9a-f]{6,40})"
                       r"(?:, c=([0-9.]+))?(, retracted)?\)(?::\s*(.*))?$")



@dataclass
class Evidence:
    relation: str             # supports | contradicts
    citation: str             # path#Lnn (path@commit#Lnn once retracted: where the fact last was)
    fact: str                 # fact id
    strength: float | None
    text: str = ""
    retracted: bool = False   # the fact is gone from the notes: kept for the record, no longer counts
    line: int = 0             # its line in the file (0: new)

    def render(self) -> str:
        c = f", c={self.strength:.2f}" if self.strength is not None else ""
        r = ", retracted" if self.retracted else ""
        return f"  - {self.relation} {self.citation} (fact {self.fact}{c}{r})" + (f": {_short(self.text)}" if self.text else "")


@dataclass
class Opinion:
    statement: str
    entities: list[str] = field(default_factory=list)
    confidence: float = NEW_DEFAULT
    updated: str | None = None
    evidence: list[Evidence] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)   # lines a person wrote that zmem does not read
    line: int = 0                                     # the heading's line in the file (0: new)
    confidence_line: int = 0                          # the line of a readable `- confidence:` (0: none)
    bullet: bool = False                              # written by hand as `- O(c=…) @Name: statement`

    @property
    def entity_keys(self) -> set[str]:
        return {entity_key(e) for e in self.entities}

    @property
    def retracted(self) -> bool:
        """Every fact behind it is gone from the notes (an opinion written by hand, with no evidence, is not)."""
        return bool(self.evidence) and all(e.retracted for e in self.evidence)

    @property
    def follows_evidence(self) -> bool:
        """Is its confidence the one its evidence gives (derive())? False when a person set it by hand
        or wrote the opinion with a confidence of their own."""
        return bool(self.evidence) and abs(self.confidence - derive(self.evidence)) < 0.005

    def to_json(self) -> dict:
        return {"statement": self.statement, "entities": self.entities, "confidence": round(self.confidence, 2),
                "updated": self.updated, "source": f"{OPINIONS_PATH}#L{self.line}" if self.line else None,
                "evidence": [{"relation": e.relation, "source": e.citation, "fact": e.fact,
                              "strength": e.strength, "text": e.text, "retracted": e.retracted}
                             for e in self.evidence]}

    def render(self) -> str:
        out = [f"## {self.statement}",
               _entities_field(self.entities),
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
    raw_preamble: list[str] = field(default_factory=list)        # the same lines with their endings,
    raw_sections: list[list[str]] = field(default_factory=list)  # byte for byte as in the file
    eol: str = "\n"   # the file's line ending (its first line's): lines zmem writes take it
    bom: str = ""      # a byte order mark the file starts with, written back

    def render(self, changed: set[int], patched: set[int] = frozenset()) -> str:
        """changed: opinions written anew from the model; patched: only their evidence lines and
        confidence that differ are rewritten. Every other line stays as the person wrote it, with
        its line ending and the blank lines around it; the header is added only to a new (or blank) file."""
        if self.raw_sections or any(line.strip() for line in self.preamble):
            out = "".join(self.raw_preamble)
        else:
            out = HEADER.replace("\n", self.eol)
        for i, op in enumerate(self.opinions):
            # a bullet's confidence is its c=, in the line itself: a bullet that changes becomes a section
            if i < len(self.raw_sections) and i not in changed and not (op.bullet and i in patched):
                out += "".join(self._patched(i) if i in patched else self.raw_sections[i])
                continue
            placed = self._in_place(i) if i < len(self.raw_sections) and not op.bullet else None
            if placed is not None:  # new evidence among the person's lines, which stay where they are
                out += "".join(placed)
                continue
            tail: list[str] = []
            if i < len(self.raw_sections):  # written anew in its place, with the blank lines after it
                raw = self.raw_sections[i]
                k = len(raw)
                while k and not raw[k - 1].strip():
                    k -= 1
                tail = raw[k:]
                out = _terminated(out, self.eol)
                if op.bullet:  # a bullet becomes a section: set apart by blank lines
                    out = _blank_line_after(out, self.eol)
                    if not tail and i + 1 < len(self.opinions):
                        tail = [self.eol]
            else:  # a new opinion: after a blank line
                out = _blank_line_after(_terminated(out, self.eol), self.eol)
            out += op.render().replace("\n", self.eol) + "".join(tail)
        return self.bom + out

    def _in_place(self, i: int) -> list[str] | None:
        """An opinion section that gained evidence (and a new confidence, date or entity), with only those
        lines rewritten and the new evidence after the last evidence line: what a person wrote in the
        section (a remark, an evidence line of their own) stays where it was. None when the section
        lacks a field line to put them at (it is written anew then)."""
        op, lines = self.opinions[i], self.sections[i]
        fields = {}
        for k, line in enumerate(lines):
            f = _FIELD.match(line)
            if f and f.group(1) not in fields:
                fields[f.group(1)] = k
        if not {"entities", "evidence"} <= set(fields) or not op.confidence_line:
            return None
        raw = self._patched(i)

        def put(k: int, text: str) -> None:
            raw[k] = text + raw[k][len(lines[k]):]
        if mentions(_FIELD.match(lines[fields["entities"]]).group(2)) != op.entities:
            put(fields["entities"], _entities_field(op.entities))
        if op.evidence and _FIELD.match(lines[fields["evidence"]]).group(2).strip():  # `- evidence: (none yet)`
            put(fields["evidence"], "- evidence:")
        inserts: list[tuple[int, str]] = []
        new = [e.render() for e in op.evidence if not e.line]
        if new:
            last = max([e.line - op.line for e in op.evidence if e.line] or [fields["evidence"]])
            inserts.append((last + 1, "".join(t + self.eol for t in new)))
        if op.updated and "updated" in fields:
            if _FIELD.match(lines[fields["updated"]]).group(2).strip() != op.updated:
                put(fields["updated"], f"- updated: {op.updated}")
        elif op.updated:
            inserts.append((op.confidence_line - op.line + 1, f"- updated: {op.updated}{self.eol}"))
        for k, text in sorted(inserts, reverse=True):
            if k == len(raw) and raw and not raw[-1].endswith("\n"):
                raw[-1] += self.eol
            raw.insert(k, text)
        return raw

    def _patched(self, i: int) -> list[str]:
        op, lines, raw = self.opinions[i], self.sections[i], list(self.raw_sections[i])

        def put(k: int, text: str) -> None:  # a new line in place of line k, with k's line ending
            raw[k] = text + raw[k][len(lines[k]):]

        for e in op.evidence:
            m = _EVIDENCE.match(lines[e.line - op.line]) if e.line else None
            if m and (m.group(2), bool(m.group(5))) != (e.citation, e.retracted):
                put(e.line - op.line, e.render())
        if op.confidence_line:
            k = op.confidence_line - op.line
            if _number(_FIELD.match(lines[k]).group(2)) != round(op.confidence, 2):
                put(k, f"- confidence: {op.confidence:.2f}")
        return raw


def _entities_field(entities: list[str]) -> str:
    """An opinion's `- entities:` line, as render writes it and _in_place rewrites it."""
    return "- entities: " + (" ".join("@" + (f"[{e}]" if " " in e else e) for e in entities) or "(none)")


def _terminated(text: str, eol: str) -> str:
    return text if not text or text.endswith("\n") else text + eol


def _blank_line_after(text: str, eol: str) -> str:
    """Terminated text, ending in a blank line unless it is empty."""
    return text + eol if text and text[:-1].removesuffix("\r").rsplit("\n", 1)[-1].strip() else text


def read(root: Path) -> OpinionsFile:
    """bank/opinions.md of a workspace as the indexer reads it (undecodable bytes as U+FFFD, lines
    split on \n only), or an empty file when there is none."""
    try:
        text = (root / OPINIONS_PATH).read_bytes().decode("utf-8", "replace")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        text = ""
    return parse(text)


def parse(text: str, path: str = OPINIONS_PATH) -> OpinionsFile:
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    text = text[len(bom):]
    lines = split_lines(text)  # lines as the indexer and `zmem get` count them: split on \n only
    raw_lines = re.findall(r"[^\n]*\n|[^\n]+\Z", text)  # the same lines with their endings
    eol = "\r\n" if raw_lines and raw_lines[0].endswith("\r\n") else "\n"
    preamble: list[str] = []
    raw_preamble: list[str] = []
    opinions: list[Opinion] = []
    sections: list[list[str]] = []
    raw_sections: list[list[str]] = []
    warnings: list[str] = []
    in_fence = False
    retain_level = 0  # >0 inside a Retain section of that heading level
    for n, (line, raw) in enumerate(zip(lines, raw_lines), 1):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        m = None if in_fence else ATX.match(line)
        if m and retain_level and len(m.group(1)) <= retain_level:
            retain_level = 0
        if m and not retain_level and is_retain_heading(m.group(2) or ""):  # where retain.py reads facts
            retain_level = len(m.group(1))
        # a `## Retain` section holds facts (retain.py), as in any bank/ page: it is no opinion, and
        # its lines stay where they are, in the section before it
        if m and len(m.group(1)) == 2 and (m.group(2) or "").strip() and not is_retain_heading(m.group(2)):
            opinions.append(Opinion((m.group(2) or "").strip(), line=n))
            sections.append([line])
            raw_sections.append([raw])
            continue
        b = None if in_fence or retain_level else _BULLET.match(line)
        if b:
            fact, problem = parse_bullet(b.group(1).strip(), n, n, dates=False)  # an opinion has no event range
            if fact is not None and fact.kind == "opinion":
                c = NEW_DEFAULT if fact.confidence is None else fact.confidence
                opinions.append(Opinion(fact.text, fact.entities, c, line=n, bullet=True))
                sections.append([line])
                raw_sections.append([raw])
                continue
            warnings.append(f"{path}:{n}: {problem or 'not an opinion'}; this `- O` line is not read as an opinion "
                            "(write `- O(c=0.7) @Name: statement`)")
        if not opinions:
            preamble.append(line)
            raw_preamble.append(raw)
            continue
        op = opinions[-1]
        sections[-1].append(line)
        raw_sections[-1].append(raw)
        f = _FIELD.match(line)
        e = _EVIDENCE.match(line)
        if e:
            strength = _number(e.group(4))
            if e.group(4) and (strength is None or not 0.0 <= strength <= 1.0):
                warnings.append(f"{path}:{n}: evidence strength c={e.group(4)} is not a number in 0..1")
            op.evidence.append(Evidence(e.group(1), e.group(2), e.group(3), strength, e.group(6) or "",
                                        bool(e.group(5)), n))
        elif f and f.group(1) == "entities":
            op.entities = mentions(f.group(2))
            if not op.entities and f.group(2).strip() not in ("", "(none)"):
                warnings.append(f"{path}:{n}: cannot read entity names in {f.group(2).strip()!r} "
                                "(write `- entities: @Peter @[Two Words]`); the opinion has none")
        elif f and f.group(1) == "confidence":
            c = _number(f.group(2))
            if c is None or not 0.0 <= c <= 1.0:
                warnings.append(f"{path}:{n}: confidence {f.group(2)!r} is not a number in 0..1; kept at {op.confidence:.2f}")
            else:
                op.confidence, op.confidence_line = c, n
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
    return OpinionsFile(preamble, opinions, sections, warnings, raw_preamble, raw_sections, eol, bom)


def _number(s: str | None) -> float | None:
    try:
        return float(s) if s is not None else None
    except ValueError:
        return None


def _short(text: str, n: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n - 1] + "…"


# ----------------------------------------------------------------------------- matching and the rule


def _fold(s: str) -> str:
    """Lower case without accents: `Não` -> `nao`."""
    import unicodedata
    return "".join(c for c in unicodedata.normalize("NFKD", s.casefold().replace("’", "'"))
                   if not unicodedata.combining(c))


# Words that flip a statement: "prefers X" vs "no longer prefers X" (en, pt, es; folded). Words in
# _NEUTRAL_NEGATIONS mark a negation without flipping it again ("no longer", "ya no", "deixou de").
_NEGATIONS = {_fold(w) for w in (
    "not", "no", "never", "don't", "doesn't", "didn't", "isn't", "aren't", "wasn't", "won't", "can't", "cannot",
    "longer", "stopped", "dislikes", "dislike", "disliked", "hates", "hate", "hated", "não", "nunca", "jamais",
    "deixou", "jamás", "dejó", "ya", "nem", "ni", "nao")}
_NEUTRAL_NEGATIONS = {"longer", "ya"}
_ANTONYM = {"dislikes": "like", "dislike": "like", "disliked": "like", "hates": "like", "hate": "like",
            "hated": "like"}   # a negation word that also says what is negated
_CJK_NEGATIONS = ("不再", "没有", "不", "没", "别")
_ANTONYM_PREFIXES = ("un", "in", "im", "ir", "il", "dis", "non", "non-")
_STOPWORDS = {_fold(w) for w in (
    # en
    "a", "an", "the", "is", "are", "was", "were", "be", "been", "being", "am", "i", "he", "she", "it", "they", "we",
    "you", "his", "her", "its", "their", "our", "my", "your", "him", "them", "me", "us", "this", "that", "these",
    "those", "to", "of", "in", "on", "at", "for", "with", "by", "from", "as", "and", "or", "but", "so", "than",
    "then", "over", "about", "into", "very", "really", "much", "more", "most", "also", "just", "still", "any",
    "some", "all", "do", "does", "did", "has", "have", "had", "will", "would", "should", "can", "could", "may",
    "might", "s", "when", "while", "if", "there", "here", "what", "which", "who",
    # pt / es
    "o", "os", "as", "um", "uma", "de", "do", "da", "dos", "das", "em", "no", "na", "nos", "nas", "por", "para",
    "com", "e", "ou", "que", "se", "é", "el", "la", "los", "las", "un", "una", "del", "en", "y", "con", "es",
    "muito", "mais", "muy", "más")} - _NEGATIONS
FUZZY_TOKEN = 85.0        # two words (≥ 4 letters) are one word above this rapidfuzz ratio: plurals, typos


def _stem(w: str) -> str:
    """Plural / third person: replies -> reply, prefers -> prefer (not: class, is)."""
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def _words(text: str) -> list[tuple[str, str | None]]:
    """(word, content token or None) per word: negation words and stopwords carry no token;
    `dislikes` is a negation whose token is `like`. CJK runs become one token per character."""
    out: list[tuple[str, str | None]] = []
    for raw in re.findall(r"[\w']+", _fold(text)):
        if re.search(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]", raw):
            for neg in _CJK_NEGATIONS:
                while neg in raw:
                    out.append(("not", None))
                    raw = raw.replace(neg, " ", 1)
            out += [(c, c) for c in raw if not c.isspace()]
            continue
        w = raw.strip("'")
        if w.endswith("'s"):
            w = w[:-2]
        if not w:
            continue
        if w in _NEGATIONS:
            out.append((w, _ANTONYM.get(w)))
        elif w not in _STOPWORDS:
            out.append((w, _stem(w)))
    return out


def _negations(words: list[tuple[str, str | None]]) -> int:
    return sum(1 for w, _ in words if (w in _NEGATIONS and w not in _NEUTRAL_NEGATIONS) or w == "not")


def _antonyms(x: str, y: str) -> bool:
    return any(x == p + y or y == p + x for p in _ANTONYM_PREFIXES)


def _same(x: str, y: str) -> bool:
    if x == y:
        return True
    if min(len(x), len(y)) < 4 or _antonyms(x, y):
        return False
    from rapidfuzz import fuzz
    return fuzz.ratio(x, y) >= FUZZY_TOKEN


def compare(a: str, b: str) -> tuple[str | None, float]:
    """How statement b speaks to statement a: ("supports" | "contradicts" | None, overlap in 0..1).

    Content tokens (lower case, accents folded, stopwords and negation words left out; `dislikes`/`hates`
    are a negation plus `like`; plurals and typos match) are compared:
    - both have tokens the other lacks: different statements (None) — unless every difference is an
      antonym-by-prefix pair (`reliable`/`unreliable`, `honest`/`dishonest`: un- in- im- ir- il- dis- non-);
    - same tokens: contradicts iff the negations plus antonym pairs are odd in number;
    - one has more (an extra clause): supports, unless a negation in the longer one sits within two
      words before a shared token (or is one, like `dislikes`) — then that negation counts as above.
    """
    wa, wb = _words(a), _words(b)
    ta, tb = list(dict.fromkeys(t for _, t in wa if t)), list(dict.fromkeys(t for _, t in wb if t))
    if not ta or not tb:
        return None, 0.0
    only_a, only_b = [t for t in ta if t not in tb], [t for t in tb if t not in ta]
    shared = {t for t in ta if t in tb}
    flips = 0
    for x in list(only_a):   # antonym pairs first ("reliable" is close to "unreliable" by spelling too)
        y = next((y for y in only_b if _antonyms(x, y)), None)
        if y is not None:
            only_a.remove(x), only_b.remove(y)
            shared |= {x, y}
            flips += 1
    for x in list(only_a):
        y = next((y for y in only_b if _same(x, y)), None)
        if y is not None:
            only_a.remove(x), only_b.remove(y)
            shared |= {x, y}
    if only_a and only_b:
        return None, 0.0
    if not shared - set(only_a) - set(only_b):
        return None, 0.0
    overlap = len([t for t in ta if t in shared]) / max(len(ta), len(tb))
    if not only_a and not only_b:
        flips += _negations(wa) + _negations(wb)
    else:
        short, long_ = (wa, wb) if only_b else (wb, wa)
        flips += _negations(short) + _attached_negations(long_, shared)
    return ("contradicts" if flips % 2 else "supports"), overlap


def _attached_negations(words: list[tuple[str, str | None]], shared: set[str]) -> int:
    """Negations that bear on a shared token: the negation word is one (`dislikes` -> like) or a
    shared token follows within two words (other negation words skipped: `no longer prefers`)."""
    n = 0
    for i, (w, t) in enumerate(words):
        if not ((w in _NEGATIONS and w not in _NEUTRAL_NEGATIONS) or w == "not"):
            continue
        following = [t2 for w2, t2 in words[i + 1:] if w2 not in _NEGATIONS][:2]
        if t in shared or any(t2 in shared for t2 in following):
            n += 1
    return n


def match(opinions: list[Opinion], text: str, entity_keys: set[str]) -> tuple[int, bool] | None:
    """(index of the opinion a statement speaks to, does it contradict it?) or None.
    Same entities (at least one shared, or both none) and compare() finds it supports or contradicts;
    the opinion with the largest token overlap wins."""
    best = None
    for i, op in enumerate(opinions):
        keys = op.entity_keys
        if (keys or entity_keys) and not (keys & entity_keys):
            continue
        relation, overlap = compare(op.statement, text)
        if relation and (best is None or overlap > best[0]):
            best = (overlap, i, relation == "contradicts")
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


def derive(evidence: list[Evidence]) -> float:
    """The confidence the evidence that counts gives, in the order it was recorded: the first fact
    sets it (its strength — how reflect starts an opinion — or 1 − strength when it contradicts),
    each later one moves it by update(). Retracted evidence is left out, exactly as if it had never
    been applied; with none left the opinion has nothing behind it: 0.0."""
    c = None
    for e in evidence:
        if e.retracted:
            continue
        s = e.strength if e.strength is not None else NEW_DEFAULT
        if c is None:
            c = round(s if e.relation == "supports" else 1.0 - s, 2)
        else:
            c = update(c, s, e.relation == "contradicts")
    return 0.0 if c is None else c
