"""Facts, entities and their graph, read from the index (retain.py fills it at catch-up).

Entities come from `@Name` mentions in Retain facts and from pages `bank/entities/<Slug>.md`.
Spellings that differ only in case, spaces, dashes or underscores are one entity (retain.entity_key);
names that are merely similar (`@Jose` / `@José`, `@warelay` / `@warelai`) are reported as suspected
duplicates, never merged silently. Relations: co-mention in a fact (weighted by count and recency)
and explicit `- R @A predicate @B` facts.
"""
from __future__ import annotations

import bisect
import datetime as dt
import math
import re
import unicodedata
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from zmem.text.dates import commit_time
from zmem.text.markdown import fence_closes, fence_marker
from zmem.errors import ZmemError, example
from zmem.text.kinds import KIND_CODES, KINDS
from zmem.text.retain import entity_key, entity_slug, is_long_name
from zmem.workspace.core import Workspace

TYPE_CHECKING = False  # as typing's, without importing typing (~3 ms of a fresh recall); checkers know the name
if TYPE_CHECKING:
    from zmem.text.opinions import OpinionsFile

ENTITY_DIR = "bank/entities/"
# the block of an entity page that `zmem reflect` manages (reflect writes it, page_text leaves it out)
BEGIN = "<!-- zmem:begin (written by `zmem reflect`; edits inside this block are replaced on the next run) -->"
END = "<!-- zmem:end -->"
HALF_LIFE_DAYS = 90.0  # a co-mention's weight halves every 90 days before the newest fact


def fact_citation(path: str, start: int, end: int, rev: str | None = None) -> str:
    """`path[@rev]#La[-Lb]`: where a fact stands, now or in a commit."""
    at = f"@{rev[:10]}" if rev else ""
    return f"{path}{at}#L{start}" + (f"-L{end}" if end != start else "")


@dataclass
class FactRow:
    row: int
    id: str
    path: str
    start_line: int
    end_line: int
    kind: str
    confidence: float | None
    text: str
    entities: list[str]
    day: str | None
    event: tuple[str, str] | None
    commit: str | None = None     # filled by history.attach_origins (git blame)
    author: str | None = None
    time: int | None = None       # when the line was committed (Unix seconds)

    @property
    def source(self) -> str:
        return fact_citation(self.path, self.start_line, self.end_line)

    def to_json(self) -> dict:
        out = {"id": self.id, "kind": self.kind, "text": self.text, "entities": self.entities,
               "confidence": self.confidence, "day": self.day, "source": self.source, "path": self.path,
               "start_line": self.start_line, "end_line": self.end_line,
               "event": {"start": self.event[0], "end": self.event[1]} if self.event else None}
        if self.commit is not None:
            out.update(commit=self.commit, author=self.author,
                       timestamp=commit_time(self.time).isoformat() if self.time else None)
        return out


_FACT_COLUMNS = "f.id, f.fid, f.path, f.start_line, f.end_line, f.kind, f.confidence, f.text, f.names, f.day, " \
                "f.event_start, f.event_end"


def _fact(row) -> FactRow:
    rid, fid, path, start, end, kind, conf, text, names, day, ev_start, ev_end = row
    return FactRow(rid, fid, path, start, end, kind, conf, text, names.split("\t") if names else [], day,
                   (ev_start, ev_end) if ev_start else None)


def normalize_kind(kind: str | None) -> str | None:
    """`W`, `world`, `opinion`, `o` -> the stored kind name; None passes through."""
    if kind is None:
        return None
    k = kind.strip()
    if k.upper() in KINDS:
        return KINDS[k.upper()]
    if k.lower() in KIND_CODES:
        return k.lower()
    raise ZmemError(f"unknown fact kind {kind!r}",
                    hint="use world (W), experience (B), opinion (O), observation (S) or relation (R)")


def _fact_filter(entity: str | None, kind: str | None, since: str | None, until: str | None,
                 path_glob: str | None, ids: list[int] | None) -> tuple[str, list]:
    """The FROM ... WHERE part of a query over the facts `f` that pass these filters, and its arguments."""
    where, args = [], []
    join = ""
    if entity is not None:
        join = "JOIN fact_entities e ON e.fact_id = f.id AND e.entity = ?"
        args.append(entity)
    if kind:
        where.append("f.kind = ?")
        args.append(kind)
    if since:
        where.append("(coalesce(f.event_end, f.day) >= ? OR f.day IS NULL AND f.event_end IS NULL)")
        args.append(since)
    if until:
        where.append("(coalesce(f.event_start, f.day) <= ? OR f.day IS NULL AND f.event_start IS NULL)")
        args.append(until)
    if path_glob:
        where.append("f.path GLOB ?")
        args.append(path_glob)
    if ids is not None:
        where.append(f"f.id IN ({','.join('?' * len(ids))})")
        args.extend(ids)
    return f"FROM facts f {join} {'WHERE ' + ' AND '.join(where) if where else ''}", args


def query_facts(conn, *, entity: str | None = None, kind: str | None = None, since: str | None = None,
                until: str | None = None, path_glob: str | None = None, ids: list[int] | None = None,
                limit: int | None = None) -> list[FactRow]:
    """Facts newest first (by day, then file and line). entity: an entity key; since/until: ISO days,
    compared with the daily log's day and with dates written inside the fact."""
    source, args = _fact_filter(entity, kind, since, until, path_glob, ids)
    sql = (f"SELECT {_FACT_COLUMNS} {source} "  # the order of the facts_newest index (migrations)
           "ORDER BY coalesce(f.day, f.event_start, '') DESC, f.path DESC, f.start_line DESC")
    if limit:
        sql += f" LIMIT {int(limit)}"
    return [_fact(r) for r in conn.execute(sql, args)]


def count_facts(conn, *, entity: str | None = None, kind: str | None = None, since: str | None = None,
                until: str | None = None, path_glob: str | None = None, ids: list[int] | None = None) -> int:
    """How many facts query_facts returns without a limit."""
    source, args = _fact_filter(entity, kind, since, until, path_glob, ids)
    return conn.execute(f"SELECT count(*) {source}", args).fetchone()[0]


def awaiting_reflect(conn, parsed: OpinionsFile, entity: str | None = None) -> int:
    """`O` facts of the notes (about the entity with this key) that no opinion has as evidence yet:
    what `zmem reflect` turns into opinions, or into evidence for them."""
    known = {e.fact for o in parsed.opinions for e in o.evidence}
    if entity is None:
        fids = conn.execute("SELECT fid FROM facts WHERE kind = 'opinion'")
    else:
        fids = conn.execute("SELECT f.fid FROM facts f JOIN fact_entities e ON e.fact_id = f.id AND e.entity = ? "
                            "WHERE f.kind = 'opinion'", (entity,))
    return sum(fid not in known for (fid,) in fids)


# ----------------------------------------------------------------------------- entities


@dataclass
class Entity:
    key: str
    name: str                 # the entity page's title, else the most frequent spelling
    page: str | None          # bank/entities/<Slug>.md when it exists
    facts: int = 0
    first_day: str | None = None
    last_day: str | None = None
    spellings: list[str] = field(default_factory=list)

    @property
    def slug(self) -> str:
        return self.page[len(ENTITY_DIR):-3] if self.page else entity_slug(self.name)

    def to_json(self) -> dict:
        return {"key": self.key, "name": self.name, "slug": self.slug, "page": self.page, "facts": self.facts,
                "first_day": self.first_day, "last_day": self.last_day, "spellings": self.spellings}


def all_entities(ws: Workspace, conn) -> dict[str, Entity]:
    spellings: dict[str, Counter] = defaultdict(Counter)
    stats: dict[str, list] = {}  # key -> [facts, first day, last day]
    keys: dict[str, str] = {}
    # facts name the same entities over and over: each list of names once, with how many facts have it
    # and their days, in the order of the first fact naming it (the entities' order, as a scan of every
    # fact gives it). fact_entities holds a fact's keys of these names, each once: the stats are theirs.
    for names, n, _, first, last in conn.execute(
            "SELECT names, count(*), min(id), min(day), max(day) FROM facts WHERE names != '' "
            "GROUP BY names ORDER BY 3"):
        named = set()
        for name in names.split("\t"):
            key = keys.get(name)
            if key is None:
                key = keys[name] = entity_key(name)
            spellings[key][name] += n
            named.add(key)
        for key in named:
            s = stats.setdefault(key, [0, None, None])
            s[0] += n
            if first is not None and (s[1] is None or first < s[1]):
                s[1] = first
            if last is not None and (s[2] is None or last > s[2]):
                s[2] = last
    out: dict[str, Entity] = {}
    for key, counts in spellings.items():
        n, first, last = stats[key]
        name = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
        out[key] = Entity(key, name, None, n, first, last, sorted(counts))
    # a name too long for a file name has a page named by a cut slug (retain.entity_slug): back to its key
    cut = {entity_key(entity_slug(name)): key for key, counts in spellings.items() for name in counts
           if is_long_name(name)}
    for (path,) in conn.execute("SELECT path FROM files WHERE path GLOB ?", (ENTITY_DIR + "*.md",)):
        stem = path[len(ENTITY_DIR):-3]
        if "/" in stem:
            continue
        key = cut.get(entity_key(stem), entity_key(stem))
        title = _page_title(ws, path) or stem.replace("-", " ")
        ent = out.setdefault(key, Entity(key, title, None))
        ent.page, ent.name = path, title
    return out


def _page_title(ws: Workspace, rel: str) -> str | None:
    try:
        with open(ws.root / rel, encoding="utf-8", errors="replace") as f:
            for _, line in zip(range(20), f):
                m = re.match(r"^#\s+(.+?)\s*#*\s*$", line)
                if m:
                    return m.group(1)
    except OSError:
        pass
    return None


def block_lines(text: str) -> tuple[list[int], list[int]]:
    """The offsets of the lines that open (BEGIN) and close (END) reflect's block: a marker counts only
    as a line of its own outside code fences, so a page that quotes `<!-- zmem:begin -->` in its prose
    or in a fenced example keeps that text (reflect took such a quote for its block and wrote over it)."""
    opens, closes = [], []
    fence, pos = "", 0
    begin = BEGIN.split(" (")[0]
    for line in text.splitlines(keepends=True):
        bare = line.rstrip("\r\n").removeprefix("\ufeff")
        if fence:
            if fence_closes(bare, fence[0], len(fence)):
                fence = ""
        elif fence_marker(bare):
            fence = fence_marker(bare)
        elif bare.rstrip() == END:
            closes.append(pos)
        elif bare.startswith(begin) and bare.rstrip().endswith("-->"):
            opens.append(pos)
        pos += len(line)
    return opens, closes


def page_text(ws: Workspace, rel: str | None) -> str | None:
    """An entity page's own text: everything outside the block `zmem reflect` manages, trimmed
    (the whole page when its markers are broken); None without a page."""
    if not rel:
        return None
    try:
        text = (ws.root / rel).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    opens, closes = block_lines(text)
    if len(opens) == 1 and len(closes) == 1 and opens[0] < closes[0]:
        begin, end = opens[0], closes[0]
        text = text[:begin].rstrip() + "\n\n" + text[end + len(END):].lstrip()
    return text.strip()


def resolve_entity(ws: Workspace, conn, name: str, entities: dict[str, Entity] | None = None) -> Entity:
    """The entity a user means by NAME (@ optional); a clear error with suggestions otherwise."""
    entities = entities if entities is not None else all_entities(ws, conn)
    key = entity_key(name)
    if key in entities:
        return entities[key]
    titled = [e for e in entities.values() if e.page and entity_key(e.name) == key]  # `# Zed Page` in Zed.md
    if titled:
        return sorted(titled, key=lambda e: e.key)[0]
    from rapidfuzz import process
    close = process.extract(_fold(key), {k: _fold(k) for k in entities}, limit=3, score_cutoff=70)
    hint = ("did you mean " + ", ".join("@" + entities[k].name for _, _, k in close) + "?") if close else \
        "entities come from `@Name` mentions in `## Retain` facts and from bank/entities/<Name>.md pages; " \
        "`zmem facts` lists the facts"
    mention = "@" + name.lstrip("@")
    # a plain note that names it (`zmem append TEXT --entity Bob` without --retain writes `- @Bob: TEXT`)
    notes = 0 if close or not mention[1:].strip() else conn.execute(
        "SELECT count(DISTINCT path) FROM chunks WHERE instr(text, ?) > 0", (mention,)).fetchone()[0]
    if notes:
        hint = (f"{mention} is in {notes} note{'s' if notes != 1 else ''} ({example('recall', query=mention)}) but in "
                "no `## Retain` fact: an entity comes from facts "
                f"({example('append', retain='W', entities=[name.lstrip('@')], text='…')}) and bank/entities pages")
    raise ZmemError(f"no entity named {name!r}", hint=hint)


def _fold(s: str) -> str:
    """Lower case without accents, for similarity only (never for identity)."""
    if s.isascii():  # what the rest does to ASCII, without Unicode's tables
        return s.lower()
    return "".join(c for c in unicodedata.normalize("NFKD", s.casefold()) if not unicodedata.combining(c))


def suspected_duplicates(entities: dict[str, Entity], threshold: float = 88.0, *, name: str | None = None
                         ) -> list[tuple[str, str, float]]:
    """Pairs of entity names that look like one entity spelled two ways (not merged); with name,
    only the pairs where one of the two entities is named so (what `zmem entity` shows)."""
    keys = [k for k in sorted(entities) if len(_fold(k)) >= 3]  # shorter names are too alike to tell
    folded = [_fold(k).replace("-", " ") for k in keys]
    # fuzz.ratio(a, b) <= 2*len(a)/(len(a)+len(b)): in length order, each name is compared only with the
    # names that can reach the threshold. process.extract, not process.cdist: cdist needs numpy.
    order = sorted(range(len(keys)), key=lambda i: len(folded[i]))
    lengths = [len(folded[i]) for i in order]
    named = None if name is None else {i for i, k in enumerate(keys) if entities[k].name == name}
    compared = []  # (i, the names compared with it)
    for pos, i in enumerate(order):
        end = bisect.bisect_right(lengths, lengths[pos] * (200 - threshold) / threshold)
        later = order[pos + 1:end]
        if named is not None:  # the pairs holding a named entity, which can reach the threshold
            later = [j for j in (later if i in named else sorted(named.intersection(later)))
                     if _can_reach(folded[i], folded[j], threshold)]
        if later:
            compared.append((i, later))
    if not compared:
        return []  # and no rapidfuzz to import (~7 ms): the usual answer for one entity
    from rapidfuzz import fuzz, process
    pairs = []
    for i, later in compared:
        for _, score, n in process.extract(folded[i], [folded[j] for j in later], scorer=fuzz.ratio,
                                           score_cutoff=threshold, limit=None):
            pairs.append((*sorted((i, later[n])), score))
    return [(entities[keys[i]].name, entities[keys[j]].name, round(float(score), 1)) for i, j, score in sorted(pairs)]


def _can_reach(a: str, b: str, threshold: float) -> bool:
    """Could fuzz.ratio(a, b) reach threshold? It is 200 * LCS / (len(a) + len(b)), and the longest common
    subsequence holds no more of a character than both strings have."""
    common = sum((Counter(a) & Counter(b)).values())
    return 200 * common >= threshold * (len(a) + len(b))


def duplicate_message(a: str, b: str, score: float) -> str:
    return f"@{a} and @{b} look like one entity spelled two ways ({score:.0f}% similar); not merged"


def duplicate_warnings(directory=None, ws: Workspace | None = None, conn=None) -> list[str]:
    """Every suspected duplicate entity name of the index, as warnings (for doctor and reflect)."""
    from zmem.index.catchup import open_index
    own = conn is None
    try:
        if ws is None:
            from zmem.workspace.core import find_workspace
            ws = find_workspace(directory)
        if own:
            conn = open_index(ws)
    except ZmemError:
        return []  # doctor says why on its own
    try:
        return [duplicate_message(a, b, score) for a, b, score in suspected_duplicates(all_entities(ws, conn))]
    finally:
        if own:
            conn.close()


# ----------------------------------------------------------------------------- entities a query names


@dataclass
class Named:
    """An entity a query names (recall ranks its page and its facts first)."""
    key: str                      # entity_key folded (lower case, no accents)
    words: tuple[int, int]        # which query words name it: [start, end)
    spelled: str                  # those words, as the query spells them
    page: str | None = None       # bank/entities/<Slug>.md
    keys: set[str] = field(default_factory=set)  # the entity keys of its facts (fact_entities.entity)
    possessed: list[str] = field(default_factory=list)  # the words the query gives it (possessed_words)


MAX_NAME_WORDS = 4
MAX_CJK_NAME = 6  # characters of a name written in CJK (a question written in CJK has no spaces to cut it at)
# how a question gives a noun to a name: after its possessive ("Ana's sibling"; an adjective may come first:
# "Ana's older sibling"), before of/de ("the sibling of Ana", "la hermana de Ana", "a irmã da Ana"), after
# 的 or 之 ("李雷的姐姐": the characters that follow)
POSSESSED_AFTER = 2
OF = frozenset({"of", "de", "da", "do", "das", "dos", "del"})
# words before of/de that place or count rather than name a thing of the name's ("near Ana", "instead of Ana",
# "perto da Ana", "antes de Ana", "all of ...")
NOT_GIVEN = frozenset("""instead because out ahead front behalf spite regardless all each both one some many any several
most none either neither kind sort lot lots part top antes después despues depois perto cerca lejos longe dentro fuera
fora além alem acerca através atraves través traves junto encima embaixo debajo abajo detrás detras atrás atras cada
todo toda todos todas uno una um uma alguno alguna algum alguma ninguno ninguna nenhum nenhuma más mais menos""".split())
CJK_OF = frozenset("的之")
POSSESSED_CJK = 3
ACCENT_PROBE = 50  # facts read to find a name spelled with other accents than the query's


def possessed_words(words: list[str], at: tuple[int, int], run_of: list[int | None] | None = None) -> list[str]:
    """The words a question gives the name at words[at[0]:at[1]] (words as written, possessives kept; with
    run_of, a CJK character is a word of its own and run_of[i] the number of its run, None for others)."""
    from zmem.store.fts import _POSSESSIVE
    a, b = at
    run_of = run_of or [None] * len(words)
    if run_of[b - 1] is not None:  # 李雷的姐姐: the characters after 的 in the same run, as one word
        after = [w for w, r in zip(words[b + 1:b + 1 + POSSESSED_CJK], run_of[b + 1:]) if r == run_of[b - 1]]
        given = b < len(words) and words[b] in CJK_OF and run_of[b] == run_of[b - 1]
        return ["".join(after)] if given and after else []
    if _POSSESSIVE.search(words[b - 1]):
        return [w for w, r in zip(words[b:b + POSSESSED_AFTER], run_of[b:]) if r is None]
    before = words[a - 2] if a >= 2 and words[a - 1].lower() in OF and run_of[a - 2] is None else None
    return [before] if before and before.lower() not in NOT_GIVEN else []


def question_words(query: str) -> tuple[list[str], list[int | None]]:
    """The query's words as written (possessives kept), each CJK character a word of its own, and for each
    word the number of the CJK run it is in (None for a word outside CJK)."""
    from zmem.store.fts import _CJK_SPLIT, _WORD, nfc
    words: list[str] = []
    run_of: list[int | None] = []
    for p, part in enumerate(_CJK_SPLIT.split(nfc(query))):
        found = list(part) if p % 2 else _WORD.findall(part)  # the split puts each CJK run at an odd place
        words += found
        run_of += [p if p % 2 else None] * len(found)
    return words, run_of


def named_in_query(conn, query: str, past=None) -> tuple[list[Named], list[str]]:
    """The known entities a query names, and the query's other words (a CJK run's characters left over
    as one word each stretch). A name is matched whole, in any case and with or without accents (`peter`,
    `@Peter`, `Peter's`, `jose` for `José`, `the castle` for `@[The Castle]`, `李雷` inside `李雷住在哪里`),
    against the names facts mention and entity pages' file names and titles.
    Index lookups only, none growing with the facts an entity has: fact_entities' primary key, then
    (for a spelling with other accents) a few facts whose names FTS matches, and the bank/entities/
    range of the files and chunks tables. past: the names as memory stood at a commit instead (as-of
    recall: history.asof.PastEntities.names, ([(entity page, its title)], {folded key: entity keys}))."""
    from zmem.store.fts import _POSSESSIVE, STOPWORDS, _quote
    written, run_of = question_words(query)
    words = [_POSSESSIVE.sub("", w) if r is None else w for w, r in zip(written, run_of)]
    folded = [_fold(w) for w in words]  # a word holds letters, digits and marks: its key is itself, folded

    def spell(a: int, b: int, parts: list[str]) -> str:
        return ("" if run_of[a] is not None else " ").join(parts[a:b])

    grams: dict[str, tuple[int, int]] = {}  # folded key (as _fold(entity_key(name))) -> the first words that spell it
    for n in range(min(max(MAX_NAME_WORDS, MAX_CJK_NAME), len(words)), 0, -1):
        for i in range(len(words) - n + 1):
            run = run_of[i]
            if run is None:
                if n > MAX_NAME_WORDS or any(r is not None for r in run_of[i:i + n]) or (
                        n == 1 and folded[i] in STOPWORDS):
                    continue
                grams.setdefault("-".join(folded[i:i + n]), (i, i + n))
            elif n > 1 and all(r == run for r in run_of[i:i + n]):  # a name of CJK characters in one run
                grams.setdefault(spell(i, i + n, folded), (i, i + n))
    if not grams:
        return [], _other(words, run_of, set())
    found: dict[str, Named] = {}

    def named(key: str) -> Named:
        return found.setdefault(key, Named(key, grams[key], spell(*grams[key], words)))

    end = ENTITY_DIR[:-1] + chr(ord("/") + 1)  # every path under bank/entities/, through the primary key
    pages, past_keys = past if past is not None else (conn.execute(
        "SELECT f.path, (SELECT c.heading FROM chunks c WHERE c.path = f.path AND c.start_line = 1) "
        "FROM files f WHERE f.path >= ? AND f.path < ?", (ENTITY_DIR, end)), None)
    for path, title in pages:
        stem = path[len(ENTITY_DIR):-3]
        if "/" in stem or not path.endswith(".md"):
            continue
        for name in dict.fromkeys((stem, (title or "").split(" > ")[0])):  # a title as the stem: one key
            key = _fold(entity_key(name)) if name else ""
            if key in grams:
                named(key).page = path
                break
    if past_keys is not None:  # every name the commit's facts mention, by its folded key: no lookup needed
        for key in grams.keys() & past_keys.keys():
            named(key).keys.update(past_keys[key])
        return _chosen(found, written, words, run_of)
    exact = {key: entity_key(spell(a, b, words)) for key, (a, b) in grams.items()}
    known: set[str] = set()
    wanted = list(set(exact.values()))
    for i in range(0, len(wanted), 500):  # a CJK run is ~5 grams per character: one lookup for them all
        batch = wanted[i:i + 500]
        known.update(r[0] for r in conn.execute(
            f"SELECT DISTINCT entity FROM fact_entities WHERE entity IN ({','.join('?' * len(batch))})", batch))
    missing = []
    for key, (a, b) in grams.items():
        if exact[key] in known:
            named(key).keys.add(exact[key])
        elif run_of[a] is None:
            missing.append((a, b))
    if missing:  # spelled with other accents than the facts' (`jose`, `José`): FTS folds them
        match = "names : (" + " OR ".join(_quote(" ".join(words[a:b])) for a, b in missing) + ")"
        for (names,) in conn.execute("SELECT names FROM facts WHERE id IN (SELECT rowid FROM facts_fts WHERE "
                                     "facts_fts MATCH ? LIMIT ?)", (match, ACCENT_PROBE)):
            for name in names.split("\t"):
                key = _fold(entity_key(name))
                if key in grams:
                    named(key).keys.add(entity_key(name))
    return _chosen(found, written, words, run_of)


def _chosen(found: dict[str, Named], written: list[str], words: list[str], run_of: list[int | None]
            ) -> tuple[list[Named], list[str]]:
    """named_in_query's answer from the names found: the longest first; a name inside a longer one the query
    also names is that one's."""
    chosen: list[Named] = []
    for e in sorted(found.values(), key=lambda e: (e.words[0] - e.words[1], e.words[0])):
        if not any(a < e.words[1] and e.words[0] < b for a, b in (c.words for c in chosen)):
            chosen.append(e)
            e.possessed = possessed_words(written, e.words, run_of)
    return chosen, _other(words, run_of, {i for c in chosen for i in range(*c.words)})


def _other(words: list[str], run_of: list[int | None], taken: set[int]) -> list[str]:
    """The words no name took, the CJK characters standing together in a run joined back into one."""
    out: list[str] = []
    for i, w in enumerate(words):
        if i in taken:
            continue
        if i and run_of[i] is not None and run_of[i - 1] == run_of[i] and i - 1 not in taken:
            out[-1] += w
        else:
            out.append(w)
    return out


def facts_about(conn, keys: set[str], *, match: str | None = None, since: str | None = None,
                until: str | None = None, path_glob: str | None = None, limit: int | None = None) -> list[tuple]:
    """(path, start_line, end_line, day, text, names, kind) of facts about any of the entity keys: all those
    the FTS expression `match` finds, or the last `limit` by path (a daily log's path holds its day:
    the newest, read backwards through the facts_path index rather than sorting all of a common
    entity's facts). since/until: the daily log's day; path_glob: an SQL GLOB."""
    marks = ",".join("?" * len(keys))
    where = [f"EXISTS (SELECT 1 FROM fact_entities e WHERE e.entity IN ({marks}) AND e.fact_id = f.id)"]
    args = list(keys)
    if match:
        where.append("f.id IN (SELECT rowid FROM facts_fts WHERE facts_fts MATCH ?)")
        args.append(match)
    for cond, value in (("f.day >= ?", since), ("f.day <= ?", until), ("f.path GLOB ?", path_glob)):
        if value:
            where.append(cond)
            args.append(value)
    sql = (f"SELECT f.path, f.start_line, f.end_line, f.day, f.text, f.names, f.kind FROM facts f WHERE {' AND '.join(where)} "
           "ORDER BY f.path DESC, f.start_line DESC")
    if limit:
        sql += f" LIMIT {int(limit)}"
    return conn.execute(sql, args).fetchall()


# ----------------------------------------------------------------------------- the graph


@dataclass
class Edge:
    source: str
    target: str
    type: str                 # "co-mentioned" or the relation's predicate
    weight: float
    count: int
    last_day: str | None
    evidence: list[str]       # path#Lnn of the facts behind the edge

    def to_json(self, entities: dict[str, Entity]) -> dict:
        return {"source": self.source, "target": self.target, "source_name": _name(entities, self.source),
                "target_name": _name(entities, self.target), "type": self.type, "weight": round(self.weight, 3),
                "count": self.count, "last_day": self.last_day, "evidence": self.evidence}


def _name(entities: dict[str, Entity], key: str) -> str:
    return entities[key].name if key in entities else key


def edges(conn, keys: set[str] | None = None) -> list[Edge]:
    """Edges touching any of `keys` (all edges when None): explicit relations, then co-mentions."""
    filt, args = "", []
    if keys is not None:
        marks = ",".join("?" * len(keys))
        filt, args = f"WHERE r.subject IN ({marks}) OR r.object IN ({marks})", [*keys, *keys]
    relations = conn.execute(
        "SELECT r.subject, r.predicate, r.object, f.path, f.start_line, f.end_line, f.day FROM relations r "
        f"JOIN facts f ON f.id = r.fact_id {filt} ORDER BY f.day, f.path, f.start_line", args).fetchall()
    where, args = "WHERE f.kind != 'relation'", []
    if keys is not None:
        # from the facts naming the keys (CROSS JOIN keeps that order): a pass over every mention otherwise
        marks = ",".join("?" * len(keys))
        where += (f" AND (a.entity IN ({marks}) OR b.entity IN ({marks}))"
                  f" AND a.fact_id IN (SELECT fact_id FROM fact_entities WHERE entity IN ({marks}))")
        args = [*keys, *keys, *keys]
    mentions = conn.execute(
        "SELECT a.entity, b.entity, f.path, f.start_line, f.end_line, f.day FROM fact_entities a "
        "CROSS JOIN fact_entities b ON b.fact_id = a.fact_id AND b.entity > a.entity "
        f"CROSS JOIN facts f ON f.id = a.fact_id {where} ORDER BY f.day, f.path, f.start_line", args).fetchall()
    if not relations and not mentions:
        return []
    # the newest fact's day is a pass over every fact: read only when there is an edge to weigh
    ref = _day(conn.execute("SELECT max(coalesce(day, event_start)) FROM facts").fetchone()[0])
    rel: dict[tuple, Edge] = {}
    for subject, predicate, obj, path, start, end, day in relations:
        e = rel.setdefault((subject, predicate, obj), Edge(subject, obj, predicate, 0.0, 0, None, []))
        _add_evidence(e, path, start, end, day, ref)
    co: dict[tuple, Edge] = {}
    for a, b, path, start, end, day in mentions:
        e = co.setdefault((a, b), Edge(a, b, "co-mentioned", 0.0, 0, None, []))
        _add_evidence(e, path, start, end, day, ref)
    return [*rel.values(), *co.values()]


def _add_evidence(e: Edge, path: str, start: int, end: int, day: str | None, ref: dt.date | None) -> None:
    e.count += 1
    age = (ref - _day(day)).days if ref and _day(day) else 0
    e.weight += math.pow(0.5, max(age, 0) / HALF_LIFE_DAYS)
    e.last_day = max(filter(None, (e.last_day, day)), default=None)
    e.evidence.append(f"{path}#L{start}" + (f"-{end}" if end != start else ""))


def _day(s: str | None) -> dt.date | None:
    try:
        return dt.date.fromisoformat(s) if s else None
    except ValueError:
        return None


def neighbourhood(conn, key: str, depth: int = 1) -> tuple[set[str], list[Edge]]:
    """Entities within `depth` hops of key, and the edges among what was reached (breadth first)."""
    seen, frontier, found = {key}, {key}, {}
    for _ in range(max(depth, 0)):
        if not frontier:
            break
        nxt = set()
        for e in edges(conn, frontier):
            found[(e.source, e.target, e.type)] = e
            for k in (e.source, e.target):
                if k not in seen:
                    nxt.add(k)
        seen |= nxt
        frontier = nxt
    return seen, sorted(found.values(), key=lambda e: (-e.weight, e.source, e.target, e.type))


def export_graph(ws: Workspace, conn) -> dict:
    """The whole graph: nodes (entities) and edges, for other tools to load."""
    entities = all_entities(ws, conn)
    return {"nodes": [e.to_json() for e in sorted(entities.values(), key=lambda e: e.key)],
            "edges": [e.to_json(entities) for e in sorted(edges(conn), key=lambda e: (e.source, e.target, e.type))]}
