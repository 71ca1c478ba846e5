"""Structured-memory benchmark: reflect over a year of daily logs, entity and graph lookups.

    python bench/bench_structured.py [--days 365] [--facts 5] [--entities 200] [--dir DIR]

Builds a workspace with one commit per daily log (each with a `## Retain` section of N facts
naming 1-3 of the entities; some opinions repeat and some contradict), indexes it, then times:
- `reflect` over everything (first run: every entity page and opinion written, one commit),
- `reflect` again (idempotent: nothing to change),
- `reflect --since 7d`-style run after one more day of facts (git blame of the touched files),
- `Memory.entity` and `neighbourhood(depth=2)` in-process (median of repeated runs, warm).
Targets (issue): reflect ≤ 10 s for ≈1,800 facts / 200 entities; entity and graph ≤ 50 ms.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

NAMES = ["Peter", "Ana", "Jorge", "Maria", "Wang-Wei", "Lisbon", "warelay", "Andy", "Sofia", "Luis"]
VERBS = ["met", "called", "reviewed the plan with", "had lunch with", "shipped a fix for", "visited"]
OPINIONS = ["prefers concise replies", "likes early meetings", "trusts the new deploy script",
            "prefers tea over coffee", "enjoys long walks"]


def git(root: Path, *args: str, date: str | None = None) -> None:
    env = dict(os.environ, GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="b@x", GIT_COMMITTER_NAME="bench",
               GIT_COMMITTER_EMAIL="b@x")
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def make(root: Path, days: int, per_day: int, n_entities: int, seed: int = 7) -> int:
    rng = random.Random(seed)
    entities = [f"{NAMES[i % len(NAMES)]}{'' if i < len(NAMES) else i}" for i in range(n_entities)]
    subprocess.run([sys.executable, "-m", "zmem", "init", "--no-hooks", str(root)], check=True, capture_output=True)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init", date="2024-12-31T09:00:00+00:00")
    start = dt.date(2025, 1, 1)
    total = 0
    for d in range(days):
        day = start + dt.timedelta(days=d)
        lines = [f"# {day}", "", "## Notes", "", f"- Worked on day {d}.", "", "## Retain"]
        for _ in range(per_day):
            who = rng.sample(entities, rng.choice((1, 1, 2, 3)))
            tags = " ".join("@" + w for w in who)
            r = rng.random()
            if r < 0.2:
                stmt = rng.choice(OPINIONS)
                neg = "no longer " if rng.random() < 0.2 else ""
                lines.append(f"- O(c={rng.choice((0.6, 0.7, 0.8, 0.9))}) @{who[0]}: {neg}{stmt}.")
            elif r < 0.3 and len(who) > 1:
                lines.append(f"- R @{who[0]} works_with @{who[1]}")
            else:
                lines.append(f"- {rng.choice('WBS')} {tags}: {rng.choice(VERBS)} {rng.choice(entities)} "
                             f"on {day:%b} {day.day} about item {rng.randrange(1000)}.")
            total += 1
        (root / "memory" / f"{day}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
        git(root, "add", "-A")
        git(root, "commit", "-qm", f"log {day}", date=f"{day}T20:00:00+00:00")
    return total


def timed(fn, *args, **kw):
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--facts", type=int, default=5)
    ap.add_argument("--entities", type=int, default=200)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--repeat", type=int, default=30)
    a = ap.parse_args()
    from zmem.query.entities import neighbourhood
    from zmem.memory import Memory
    from zmem.index.catchup import catch_up, open_index
    from zmem.reflect.run import reflect
    from zmem.workspace.core import find_workspace

    root = Path(a.dir or tempfile.mkdtemp(prefix="zmem-bench-structured-")) / "ws"
    _, t_make = timed(make, root, a.days, a.facts, a.entities)
    ws = find_workspace(str(root))
    _, t_index = timed(catch_up, ws)
    conn = open_index(ws)
    n_facts = conn.execute("SELECT count(*) FROM facts").fetchone()[0]
    n_ent = conn.execute("SELECT count(DISTINCT entity) FROM fact_entities").fetchone()[0]
    conn.close()
    print(f"workspace: {a.days} daily logs, {n_facts} facts, {n_ent} entities (built in {t_make:.1f} s, "
          f"indexed in {t_index:.2f} s)")

    first, t_first = timed(reflect, ws)
    print(f"reflect (first run):   {t_first:6.2f} s  {len(first.pages)} pages, {len(first.opinions)} opinions, "
          f"{len(first.proposals)} proposals, commit {first.commit and first.commit[:10]}")
    again, t_again = timed(reflect, ws)
    print(f"reflect (no new facts): {t_again:5.2f} s  files changed: {len(again.files)}")

    day = dt.date(2025, 1, 1) + dt.timedelta(days=a.days)
    (root / "memory" / f"{day}.md").write_text(
        f"# {day}\n\n## Retain\n- O(c=0.9) @Peter: prefers concise replies.\n- W @Ana @Jorge: met in Lisbon.\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "one more day")
    inc, t_inc = timed(reflect, ws)
    print(f"reflect (one new day): {t_inc:6.2f} s  {inc.new_facts} new facts, {len(inc.files)} files")

    conn = open_index(ws)
    keys = [k for k, in conn.execute("SELECT entity FROM fact_entities GROUP BY entity ORDER BY count(*) DESC")]
    targets = [keys[0], keys[len(keys) // 2], keys[-1]]
    t_entity, t_graph = [], []
    memory = Memory(ws.root)
    for i in range(a.repeat):
        key = targets[i % len(targets)]
        t_entity.append(timed(memory.entity, key)[1])
        t_graph.append(timed(neighbourhood, conn, key, 2)[1])
    memory.close()
    conn.close()
    print(f"Memory.entity:          median {statistics.median(t_entity) * 1000:6.1f} ms  "
          f"p90 {sorted(t_entity)[int(len(t_entity) * 0.9)] * 1000:6.1f} ms")
    print(f"graph depth 2:          median {statistics.median(t_graph) * 1000:6.1f} ms  "
          f"p90 {sorted(t_graph)[int(len(t_graph) * 0.9)] * 1000:6.1f} ms")


if __name__ == "__main__":
    main()
