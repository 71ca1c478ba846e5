"""`## Retain` sections -> typed facts (pure functions; never raises on any text).

    ## Retain                       (also Reter, Retener, 保留; any level, any case, optional colon)
    - W @Peter: Currently in Marrakech (Nov 27–Dec 1, 2025) for Andy's birthday.
    - B @warelay: Fixed the Baileys WS crash.
    - O(c=0.95) @Peter: Prefers concise replies (<1500 chars) on WhatsApp.
    - S: Mornings are the most productive time.
    - R @Peter lives_in @Lisbon: since 2024
    - W @[The Castle]: multi-word names go in brackets

Kinds: W world, B experience, O opinion (optional `c=` confidence in [0, 1]), S observation,
R relation (`@Subject predicate @Object`, an optional `: note`). `@Name` mentions anywhere in the text
link the fact to entities. A bullet that does not fit is a warning naming file and line, not a fact;
so is a fact bullet inside a `>` quote (quoted text is never read as a fact).
"""
from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass, field

from zmem.text.dates import context_day, event_range
from zmem.text.kinds import KINDS
from zmem.text.lazyre import LazyPattern
from zmem.text.markdown import LIST_ITEM, QUOTE, Block, scan_blocks, split_lines

RETAIN_VERSION = 5  # bump when parsing changes: the index re-reads every file

RETAIN_HEADINGS = ("retain", "reter", "retener", "保留")

# @Name: letters/digits (any script) with inner - _ . ' ; or @[Several Words]
# Combining marks, which \w does not match: Latin typed decomposed (e + U+0301), the vowel signs
# of Indic scripts (राहुल), Thai, Hebrew and Arabic points. Without them a name stops at its first mark.
_MARKS = ("\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed"
          "\u0900-\u0dff\u0e31-\u0e3a\u0e47-\u0e4e\u0eb1-\u0ebc\u0ec8-\u0ecd\u0f18-\u0fbc\u1ab0-\u1aff"
          "\u1dc0-\u1dff\u20d0-\u20ff\u3099\u309a\ufe20-\ufe2f")
MENTION = LazyPattern(rf"(?<![\w@])@(?:\[([^\[\]\n]{{1,80}})\]|([^\W_](?:[\w\-.'’{_MARKS}]*[\w{_MARKS}])?))")
_HEAD = LazyPattern(r"^([A-Za-z])(?=[\s(:]|$)")  # parsing facts only: not compiled by recall
_ARG = LazyPattern(r"^\s*(c|confidence)\s*=\s*([0-9]*\.?[0-9]+)\s*$", re.IGNORECASE)
_RELATION = LazyPattern(r"^(@\S+|@\[[^\]]+\])\s+([^\W\d][\w\-]*)\s+(@\S+|@\[[^\]]+\])\s*(?::\s*(.*))?$")


@dataclass
class Fact:
    start_line: int
    end_line: int
    kind: str                      # world | experience | opinion | observation | relation
    text: str
    entities: list[str] = field(default_factory=list)  # display names, first mention first
    confidence: float | None = None
    relation: tuple[str, str, str] | None = None  # (subject, predicate, object) display names
    event: tuple[str, str] | None = None           # ISO days written inside the fact

    def fact_id(self, path: str) -> str:
        """Stable while the fact's file, kind, text and entities stay the same (not its line number)."""
        return fact_id(path, self.kind, self.text, self.entities)


def fact_id(path: str, kind: str, text: str, entities=()) -> str:
    """A fact's id: its file, kind, text (spacing aside) and the entities it is about (their keys,
    sorted: spelling and order aside), so the same words about @Peter and about @Ana in one file are
    two facts. A fact about no entity keeps the id it had before entities were named (legacy_fact_id)."""
    keys = "\t".join(sorted({entity_key(name) for name in entities}))
    base = f"{path}\0{kind}\0{' '.join(text.split())}"
    import hashlib  # loads OpenSSL (~15 ms): not at import, recall never hashes
    return hashlib.sha1((f"{base}\0{keys}" if keys else base).encode()).hexdigest()[:10]


def legacy_fact_id(path: str, kind: str, text: str) -> str:
    """The id zmem gave a fact before ids named its entities (schema step fact_ids_with_entities),
    which evidence recorded then in bank/opinions.md still cites: index.facts.legacy_fid, reflect
    and blame resolve it."""
    return fact_id(path, kind, text)


def _safe_name(name: str) -> str:
    """A name that is safe as one file name: no path separators (`/`, `\\` become `-`), no `..`,
    no control characters (they become spaces). Leading dots are stripped by the callers."""
    name = unicodedata.normalize("NFC", name.strip().lstrip("@"))
    if name.startswith("[") and name.endswith("]"):  # `@[João Silva]` typed as an argument
        name = name[1:-1].strip()
    if not name.isprintable():  # only then can it hold a Cc or Cs character (a C* category is never printable)
        name = "".join(" " if unicodedata.category(c) in ("Cc", "Cs") else c for c in name)
    if "/" in name or "\\" in name:
        name = re.sub(r"[/\\]+", "-", name)
    return re.sub(r"\.{2,}", ".", name) if ".." in name else name


@functools.lru_cache(maxsize=65536)  # called per mention of every fact when entities are listed
def entity_key(name: str) -> str:
    """One key for the spellings of one entity: `@The-Castle`, `@the castle`, `@The_Castle`.
    entity_key(entity_slug(name)) == entity_key(name), so a page and its mentions are one entity
    (but for a name too long for a file name: entities.all_entities maps its cut slug back)."""
    return re.sub(r"[\s\-_]+", "-", _safe_name(name).casefold()).strip("-.")


MAX_SLUG_BYTES = 120  # a page name is at most this + ".md": under every file system's limit (255, eCryptfs 143)


def entity_slug(name: str) -> str:
    """The page name of an entity: bank/entities/<Slug>.md (spaces become dashes). Always one safe
    file name: `@[a/b]` -> `a-b`, `@[../../x]` -> `x`; never a path, never a hidden file. A slug
    longer than MAX_SLUG_BYTES (UTF-8) is cut to fit and ends in `-` and 8 hex digits of a hash of
    the entity's key: every spelling of one long name gives the same hash, two long names that
    begin alike give different pages (is_long_slug tells a page named so back to its entity)."""
    slug = re.sub(r"[\s_]+", "-", _safe_name(name)).strip("-. ") or "_"
    if len(slug.encode("utf-8")) <= MAX_SLUG_BYTES:
        return slug
    head = slug.encode("utf-8")[:MAX_SLUG_BYTES - 9].decode("utf-8", "ignore").rstrip("-. ")
    import hashlib
    return f"{head}-{hashlib.sha1(entity_key(name).encode('utf-8')).hexdigest()[:8]}"


def is_long_name(name: str) -> bool:
    """Whether entity_slug(name) may be cut (then entity_key(entity_slug(name)) != entity_key(name))."""
    return len(name.encode("utf-8")) > MAX_SLUG_BYTES


def mentions(text: str) -> list[str]:
    """Entity names mentioned as @Name or @[Two Words], first occurrence first, one per key."""
    seen: dict[str, str] = {}
    for m in MENTION.finditer(text):
        name = m.group(1) or m.group(2)
        if m.group(1) is None and name.endswith(("'s", "’s")):  # @Andy's -> Andy
            name = name[:-2]
        name = name.strip()
        key = entity_key(name) if name else ""
        if key and key not in seen:
            seen[key] = name
    return list(seen.values())


def is_retain_heading(title: str) -> bool:
    return title.strip().rstrip(":：").strip().casefold() in RETAIN_HEADINGS


def may_hold_facts(lines: list[str]) -> bool:
    """Whether a line of the note could head a Retain section (an ATX heading's text or a setext
    heading's line): a note without one holds no facts, and is not worth parsing (a log of 300,000
    lines took seconds)."""
    return any(len(line) < 64 and is_retain_heading(line.strip().strip("#")) for line in lines)


def parse_facts(text: str, path: str = "", day: str | None = None) -> tuple[list[Fact], list[str]]:
    """All facts of a note's Retain sections, and warnings as `path:line: problem`."""
    lines = split_lines(text)
    return facts_of_blocks(lines, scan_blocks(lines), path, day)


def facts_of_blocks(lines: list[str], blocks: list[Block], path: str = "",
                    day: str | None = None) -> tuple[list[Fact], list[str]]:
    """parse_facts of a note already split into lines and blocks (the indexer chunks the same blocks)."""
    default_year = context_day(day)  # the log's day: a date without a year is taken nearest it
    facts: list[Fact] = []
    warnings: list[str] = []
    section_level = 0  # >0 while inside a Retain section of this heading level
    for block in blocks:
        if block.kind == "heading":
            if section_level and block.level <= section_level:
                section_level = 0
            if not section_level and is_retain_heading(block.title):
                section_level = block.level
            continue
        if not section_level:
            continue
        if block.kind == "item":
            for start, end, body in _bullets(lines, block.start, block.end):
                fact, problem = parse_bullet(body, start, end, default_year)
                if fact:
                    facts.append(fact)
                elif problem:
                    warnings.append(f"{path}:{start}: {problem}; not stored as a fact")
        elif block.kind == "quote":
            for n in range(block.start, block.end + 1):
                if _quoted_fact(lines[n - 1], n, default_year):
                    warnings.append(f"{path}:{n}: a quoted bullet (`> - …`) is not read as a fact; "
                                    "remove the `> ` to store it")
        elif block.kind == "paragraph" and not lines[block.start - 1].lstrip().startswith("<!--"):
            warnings.append(f"{path}:{block.start}: text in a Retain section that is not a `- W|B|O|S|R …` bullet; "
                            "not stored as a fact")
    return facts, warnings


def _quoted_fact(line: str, n: int, default_year) -> bool:
    """Is this `>` line (any quote depth) a bullet that would be a fact without its `>`?"""
    if not QUOTE.match(line):
        return False  # a lazy continuation line of the quote
    while QUOTE.match(line):
        line = line.lstrip()[1:].lstrip()
    m = LIST_ITEM.match(line)
    return bool(m) and parse_bullet(line[m.end():].strip(), n, n, default_year, dates=False)[0] is not None


def _bullets(lines: list[str], start: int, end: int):
    """(first line, last line, text) of each bullet in a list item block, nested bullets included;
    continuation lines join their bullet's text."""
    current: list | None = None
    for n in range(start, end + 1):
        line = lines[n - 1]
        stripped = line.strip()
        m = LIST_ITEM.match(line.lstrip()) if stripped else None
        if m:
            if current:
                yield tuple(current)
            current = [n, n, line.lstrip()[m.end():].strip()]
        elif stripped and current:
            if stripped.startswith("```") or stripped.startswith("~~~"):
                continue
            current[1] = n
            current[2] = (current[2] + " " + stripped).strip()
    if current:
        yield tuple(current)


def parse_bullet(body: str, start: int, end: int, default_year=None, *, dates: bool = True
                 ) -> tuple[Fact | None, str | None]:
    """One bullet's text (after `- `) -> (fact, None) or (None, why it is not one). dates=False
    leaves the event range out (None), for callers that never read it: reading the dates compiles
    their patterns (~7 ms) in a process that has not yet."""
    if not body:
        return None, "empty bullet"
    m = _HEAD.match(body)
    if not m:
        return None, f"expected a kind letter (W, B, O, S or R) at the start of {_quote(body)}"
    code = m.group(1).upper()
    if code not in KINDS:
        return None, f"unknown fact kind {m.group(1)!r} (use W world, B experience, O opinion, S observation, R relation)"
    rest = body[1:]
    confidence = None
    stripped = rest.lstrip()
    if stripped.startswith("("):
        close = stripped.find(")")
        if close < 0:
            return None, "unbalanced parenthesis after the kind letter (write e.g. O(c=0.8))"
        arg = stripped[1:close]
        am = _ARG.match(arg)
        if not am:
            return None, f"unknown argument ({arg}) after the kind letter (only c=0.0..1.0 is understood)"
        confidence = float(am.group(2))
        if not 0.0 <= confidence <= 1.0:
            return None, f"confidence c={am.group(2)} is outside 0.0..1.0"
        rest = stripped[close + 1:]
    elif ")" in stripped.split(":", 1)[0] and "(" not in stripped.split(":", 1)[0]:
        return None, "unbalanced parenthesis after the kind letter"
    rest = rest.strip()
    if code == "R":
        return _relation(rest, start, end, confidence, default_year, dates)
    # leading @mentions, then an optional colon, then the text
    lead = re.match(r"^((?:@(?:\[[^\]]*\]|[^\s:：,，]+)[\s,，]*)*)[:：]?\s*", rest)
    head_mentions = lead.group(1) if lead else ""
    text = rest[lead.end():].strip() if lead else rest
    if not text:
        return None, "a fact with no text (write `- W @Name: what is true`)"
    if text.count("(") != text.count(")"):
        return None, f"unbalanced parentheses in {_quote(text)}"
    names = mentions(head_mentions + " " + text)
    if head_mentions.strip() and not mentions(head_mentions):
        return None, f"cannot read the entity names in {_quote(head_mentions.strip())}"
    return Fact(start, end, KINDS[code], text, names, confidence, None,
                event_range(text, default_year) if dates else None), None


def _relation(rest: str, start: int, end: int, confidence: float | None, default_year, dates: bool):
    m = _RELATION.match(rest)
    if not m:
        return None, "a relation is written `- R @Subject predicate @Object` (e.g. `- R @Peter lives_in @Lisbon`)"
    subject, obj = mentions(m.group(1)), mentions(m.group(3))
    if not subject or not obj:
        return None, "a relation needs an @Subject and an @Object"
    predicate = m.group(2)
    note = (m.group(4) or "").strip()
    text = f"{subject[0]} {predicate} {obj[0]}" + (f": {note}" if note else "")
    names = mentions(rest)
    return Fact(start, end, "relation", text, names, confidence, (subject[0], predicate, obj[0]),
                event_range(note, default_year) if note and dates else None), None


def _quote(s: str, n: int = 40) -> str:
    s = " ".join(s.split())
    return repr(s if len(s) <= n else s[:n - 1] + "…")
