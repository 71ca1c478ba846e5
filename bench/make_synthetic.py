"""A deterministic synthetic workspace for benchmarks (stdlib only).

    python bench/make_synthetic.py --out /tmp/ws --files 10000 [--commits 200] [--seed 0] [--bytes-per-file N]

N daily logs (memory/YYYY/YYYY-MM-DD.md; one per day going back from 2026-11-01, with a -2, -3 …
suffix when N exceeds the days available), MEMORY.md, bank/ pages and ~200 entity pages, with
notes in English, Portuguese, Spanish and Chinese and a Retain section per log. History: M
commits in date order written with `git fast-import` (thousands of commits in seconds); later
commits sometimes append to earlier files.
"""
from __future__ import annotations

import argparse
import datetime as dt
import random
import subprocess
import time
from pathlib import Path

PEOPLE = ["Peter", "Ana", "Lucía", "Andy", "Wang-Wei", "Maria", "João", "Carlos", "Sofía", "Li-Na", "Tom", "Priya"]
PROJECTS = ["warelay", "gateway", "The-Castle", "backup-job", "notes-sync", "deploy-bot", "zmem", "billing"]
PLACES = ["Lisbon", "Marrakech", "Porto", "Madrid", "Beijing", "Berlin", "Cascais", "Valencia"]
THINGS = ["Mac Studio", "WhatsApp relay", "Baileys socket", "Postgres replica", "nightly backup", "CI runner",
          "vector index", "webhook", "rate limiter", "TLS certificate", "staging server", "cron job"]
EN = ["Fixed the {t} crash by wrapping the handlers in try/catch.", "Moved the {t} to the {p2} host.",
      "{p} asked for shorter replies about the {t}.", "Reviewed the {t} logs with {p}; nothing alarming.",
      "The {t} was slow again after the deploy; rolled back.", "{p} is travelling to {l} next week.",
      "Upgraded the {t} and re-ran the benchmarks.", "Talked with {p} about the {pr} roadmap.",
      "Noticed the {t} retries too aggressively on 429s.", "{p} prefers meetings in the morning."]
PT = ["O {p} está em {l} até sexta-feira.", "Corrigi o erro do {t} depois da reunião com a {p}.",
      "A {p} recomendou um restaurante de peixe em {l}.", "O backup do {t} falhou outra vez; investiguei os registos."]
ES = ["{p} prefiere reuniones por la mañana.", "El {t} se quedó sin disco; liberé espacio.",
      "Hablé con {p} sobre el proyecto {pr}.", "Mañana viajo a {l} para ver a {p}."]
ZH = ["{p}下周去北京出差，需要提前订酒店。", "部署脚本已经改成先备份数据库再迁移。", "今天修复了{t}的问题。",
      "和{p}讨论了{pr}项目的进度。"]
LANGS = [("en", EN, "Notes", "Retain"), ("pt", PT, "Notas", "Reter"), ("es", ES, "Notas", "Retener"),
         ("zh", ZH, "笔记", "保留")]
WEIGHTS = [65, 15, 10, 10]
CODE = ["```bash\nlaunchctl kickstart -k gui/501/com.warelay.gateway\n```",
        "```python\nretry(backoff=2.0, max_tries=5)\n```"]
TABLE = "| host | role |\n|---|---|\n| mac-studio | gateway |\n| nas | backups |"


def _sentence(r: random.Random, pool: list[str]) -> str:
    return r.choice(pool).format(p=r.choice(PEOPLE), p2=r.choice(PEOPLE), t=r.choice(THINGS),
                                 l=r.choice(PLACES), pr=r.choice(PROJECTS))


def daily_log(r: random.Random, day: dt.date, target_bytes: int) -> str:
    _, pool, notes, retain = r.choices(LANGS, WEIGHTS)[0]
    lines = [f"# {day.isoformat()}", "", f"## {notes}", ""]
    size = 0
    while size < target_bytes:
        roll = r.random()
        if roll < 0.04:
            block = r.choice(CODE)
        elif roll < 0.06:
            block = TABLE
        elif roll < 0.2:
            block = " ".join(_sentence(r, pool) for _ in range(r.randint(2, 4)))
        else:
            block = None
        if block:
            lines += ["", block, ""]
            size += len(block)
        else:
            s = "- " + _sentence(r, pool)
            lines.append(s)
            size += len(s)
        if r.random() < 0.05:
            lines += ["", f"## {r.choice(PROJECTS)}", ""]
    lines += ["", f"## {retain}", ""]
    for _ in range(5):
        kind = r.choice("WBOS")
        head = f"O(c={r.randint(50, 99) / 100:.2f})" if kind == "O" else kind
        lines.append(f"- {head} @{r.choice(PEOPLE)}: {_sentence(r, pool)}")
    return "\n".join(lines) + "\n"


def make_workspace(out: Path, files: int, commits: int | None = None, seed: int = 0,
                   bytes_per_file: int | None = None, git: bool = True) -> dict:
    t0 = time.perf_counter()
    r = random.Random(seed)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    target = bytes_per_file or 1800
    start = dt.date(2026, 11, 1)
    contents: dict[str, str] = {}
    for i in range(files):
        day = start - dt.timedelta(days=i % 20000)
        suffix = "" if i < 20000 else f"-{i // 20000 + 1}"
        rel = f"memory/{day.year}/{day.isoformat()}{suffix}.md"
        contents[rel] = daily_log(r, day, int(target * r.uniform(0.7, 1.3)))
    contents["MEMORY.md"] = "# Memory\n\n" + "\n".join(f"- {_sentence(r, EN)}" for _ in range(40)) + "\n"
    contents["bank/world.md"] = "# World\n\n" + "\n".join(f"- {_sentence(r, EN)}" for _ in range(30)) + "\n"
    contents["bank/opinions.md"] = "# Opinions\n\n" + "\n".join(
        f"- O(c={r.randint(40, 95) / 100:.2f}) @{r.choice(PEOPLE)}: {_sentence(r, EN)}" for _ in range(30)) + "\n"
    for name in sorted(set(PEOPLE + PROJECTS + PLACES)) + [f"Entity-{i}" for i in range(170)]:
        contents[f"bank/entities/{name}.md"] = f"# {name}\n\n" + "\n".join(f"- {_sentence(r, EN)}" for _ in range(4)) + "\n"
    contents["zmem.toml"] = "# synthetic benchmark workspace\n"
    for rel, text in contents.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    n_commits = 0
    if git:
        n_commits = _history(out, contents, commits if commits is not None else min(files, 200), r)
    total = sum(len(t.encode()) for t in contents.values())
    return {"files": len(contents), "bytes": total, "commits": n_commits, "seconds": time.perf_counter() - t0}


def _history(out: Path, contents: dict[str, str], commits: int, r: random.Random) -> int:
    """Commits in date order via git fast-import; the last commit's tree equals the files written."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(out)], check=True)
    (out / ".gitignore").write_text(".zmem/\n")
    logs = sorted((p for p in contents if p.startswith("memory/")), key=lambda p: p.split("/")[-1])
    others = [p for p in contents if not p.startswith("memory/")] + [".gitignore"]
    commits = max(1, commits)
    per = max(1, len(logs) // commits)
    batches = [logs[i:i + per] for i in range(0, len(logs), per)] or [[]]
    batches[-1] += others
    authors = ["agent <agent@example.org>", "Peter <peter@example.org>"]
    stream = []
    written: dict[str, str] = {}
    for n, batch in enumerate(batches):
        changes = {}
        for p in batch:
            text = (out / p).read_text(encoding="utf-8")
            if written and r.random() < 0.3:  # an earlier log first gets a shorter version, then the full one
                changes[p] = text.rsplit("\n", 3)[0] + "\n"
            changes[p] = text
        if written and n % 3 == 0:  # sometimes revisit an old file (its final content is restored later)
            old = r.choice(sorted(written))
            changes.setdefault(old, (out / old).read_text(encoding="utf-8"))
        written.update(changes)
        days = [p.split("/")[-1][:10] for p in batch if p.startswith("memory/")]
        day = dt.date.fromisoformat(max(days)) if days else dt.date(2026, 11, 1)
        when = int(dt.datetime(day.year, day.month, day.day, 18, tzinfo=dt.timezone.utc).timestamp()) + n
        stream.append(f"commit refs/heads/main\nauthor {authors[n % 2]} {when} +0000\n"
                      f"committer {authors[n % 2]} {when} +0000\n")
        msg = f"memory: {len(changes)} files\n".encode()
        stream.append(f"data {len(msg)}\n{msg.decode()}\n")
        for p, text in changes.items():
            data = text.encode("utf-8")
            stream.append(f"M 100644 inline {p}\ndata {len(data)}\n")
            stream.append(data.decode("utf-8") + "\n")
    payload = "".join(stream).encode("utf-8")
    subprocess.run(["git", "fast-import", "--quiet"], cwd=out, input=payload, check=True)
    subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=out, check=True)
    return len(batches)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--commits", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bytes-per-file", type=int, default=None)
    ap.add_argument("--no-git", action="store_true")
    a = ap.parse_args()
    info = make_workspace(a.out, a.files, a.commits, a.seed, a.bytes_per_file, git=not a.no_git)
    print(f"{info['files']} files, {info['bytes'] / 1e6:.1f} MB, {info['commits']} commits in {info['seconds']:.1f} s")


if __name__ == "__main__":
    main()
