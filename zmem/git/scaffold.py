"""`zmem init` (the workspace layout) and `zmem demo` (a small example workspace)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from zmem.workspace.config import DEFAULT_TOML
from zmem.errors import ZmemError
from zmem.git.gitcmd import run_git
from zmem.workspace.core import symlink_on_path, write_file_in

LAYOUT = {
    "MEMORY.md": "# Memory\n\nCurated long-term memory: durable facts, preferences and decisions.\n",
    "memory/.gitkeep": "",
    "bank/world.md": "# World\n\nObjective facts about the world.\n",
    "bank/experience.md": "# Experience\n\nWhat the agent did.\n",
    "bank/opinions.md": "# Opinions\n\nBeliefs with confidence and evidence.\n",
    "bank/entities/.gitkeep": "",
    "zmem.toml": DEFAULT_TOML,
}


@dataclass
class InitReport:
    root: Path
    git_init: bool = False
    created: list[str] = field(default_factory=list)
    gitignore_updated: bool = False
    gitattributes_updated: bool = False  # added the union merge line for the daily logs
    skipped: list[str] = field(default_factory=list)  # why a file was not created (a symlink on its way)
    checked_out: str | None = None  # the remote branch an empty clone was started from (adopt_remote_branch)


def init_layout(root: Path) -> InitReport:
    """Create what is missing of the layout; never overwrite. Idempotent. File system errors (a
    path under a regular file, no permission, a full disk) are a ZmemError naming the path."""
    try:
        return _init_layout(root)
    except OSError as e:
        where = f" ({e.filename})" if e.filename is not None and str(e.filename) != str(root) else ""
        raise ZmemError(f"cannot create the workspace {root}: {e.strerror or e}{where}",
                        hint="pass a directory that can be created and written (not a path under a file)") from e


def _init_layout(root: Path) -> InitReport:
    if root.exists() and not root.is_dir():
        raise ZmemError(f"not a directory: {root}", hint="pass a directory to `zmem init`")
    root.mkdir(parents=True, exist_ok=True)
    report = InitReport(root=root.resolve())
    from zmem.git.repo import init_repo  # pygit2 (~100 ms): not for doctor's logs_merge_driver
    report.git_init = init_repo(root)
    if not report.git_init:
        report.checked_out = adopt_remote_branch(root)
    if (root / "memory.md").exists() and not (root / "MEMORY.md").exists():
        skip = {"MEMORY.md"}  # an OpenClaw workspace with lower-case memory.md: keep just that one
    else:
        skip = set()
    links: dict[str, list[str]] = {}
    for rel, content in LAYOUT.items():
        path = root / rel
        if rel in skip:
            continue
        link = symlink_on_path(root, rel)  # never into a symlinked memory/ or bank/: outside the workspace
        if link is not None:
            links.setdefault(link, []).append(rel)
            continue
        if path.exists():
            continue
        if rel.endswith(".gitkeep") and path.parent.exists() and any(path.parent.iterdir()):
            continue
        write_file_in(root, rel, content.encode("utf-8"))
        report.created.append(rel)
    for link, rels in links.items():
        report.skipped.append(f"{link} is a symlink (to {os.readlink(root / link)}); zmem writes nothing through "
                              f"it: {', '.join(rels)} not created")
    report.gitignore_updated = _ignore_state_dir(root, report)
    report.gitattributes_updated = _union_merge_logs(root, report)
    return report


# Daily logs are append-only: git's union driver keeps both sides' new lines when two clones append
# to the same day, instead of a conflict. The pattern is relative to the workspace's own
# .gitattributes (git reads one in any directory), so a workspace in a subdirectory works too.
UNION_LOGS = "memory/**/*.md merge=union"


def logs_merge_driver(root: Path) -> str | None:
    """The merge attribute git applies to a daily log here ("union", "unspecified", a user's own
    driver...), whichever .gitattributes sets it; None when git cannot say."""
    proc = run_git(["check-attr", "merge", "--", "memory/2000-01-01.md"], cwd=root, capture_output=True, text=True)
    return proc.stdout.strip().rpartition(": merge: ")[2] or None if proc.returncode == 0 else None


def _union_merge_logs(root: Path, report: InitReport) -> bool:
    path = root / ".gitattributes"
    if path.is_symlink():
        report.skipped.append(f".gitattributes is a symlink (to {os.readlink(path)}); zmem writes nothing through "
                              f"it: add `{UNION_LOGS}` to it yourself, or two clones appending to one day conflict")
        return False
    driver = logs_merge_driver(root)
    if driver != "unspecified":  # union already, or the user's own choice: never override it
        return False
    text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
    sep = "" if not text or text.endswith("\n") else "\n"
    write_file_in(root, ".gitattributes", (sep + "# zmem: daily logs are append-only; a merge keeps both sides' lines\n"
                                           + UNION_LOGS + "\n").encode("utf-8"), append=True)
    return True


def _ignore_state_dir(root: Path, report: InitReport) -> bool:
    path = root / ".gitignore"
    if path.is_symlink():  # git reads it, but zmem writes nothing through a symlink
        report.skipped.append(f".gitignore is a symlink (to {os.readlink(path)}); zmem writes nothing through "
                              "it: add `.zmem/` to it yourself, or git shows the index as untracked")
        return False
    text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
    if any(line.strip() in (".zmem", ".zmem/", "/.zmem", "/.zmem/") for line in text.splitlines()):
        return False
    sep = "" if not text or text.endswith("\n") else "\n"
    write_file_in(root, ".gitignore", (sep + "# zmem's derived index\n.zmem/\n").encode("utf-8"), append=True)
    return True


DEMO_DAYS = [
    ("2025-11-24", {
        "## Notes": [
            "- Set up the gateway on the Mac Studio in the office; it runs the WhatsApp relay.",
            "- Peter asked for shorter answers on WhatsApp, ideally under 1500 characters.",
        ],
        "## Retain": [
            "- W @Peter: Lives in Lisbon and works on the warelay project.",
            "- O(c=0.9) @Peter: Prefers concise replies (<1500 chars) on WhatsApp.",
        ],
    }),
    ("2025-11-26", {
        "## Notes": [
            "- Fixed the Baileys WebSocket crash: wrapped the connection.update handlers in try/catch.",
            "- The nightly backup of the notes repository now runs at 03:00.",
            "",
            "```bash",
            "launchctl kickstart -k gui/501/com.warelay.gateway",
            "```",
        ],
        "## Retain": [
            "- B @warelay: Fixed the Baileys WS crash by wrapping connection.update handlers in try/catch.",
        ],
    }),
    ("2025-11-27", {
        "## Notas": [
            "- O Peter está em Marrakech até 1 de dezembro para o aniversário do Andy.",
            "- Ana recomendou um restaurante de peixe em Cascais.",
        ],
        "## Reter": [
            "- W @Peter: Em Marrakech (27 nov – 1 dez 2025) para o aniversário do Andy.",
        ],
    }),
    ("2025-11-28", {
        "## Notas": [
            "- Lucía prefiere reuniones por la mañana; las tardes son para programar.",
            "- El servidor de pruebas se quedó sin disco; liberé 20 GB de registros viejos.",
        ],
        "## 笔记": [
            "- 王伟下周去北京出差，需要提前订酒店。",
            "- 部署脚本已经改成先备份数据库再迁移。",
        ],
    }),
]

DEMO_QUERIES = ["which machine runs the gateway", "Peter WhatsApp replies", "aniversário Marrakech", "北京出差"]


def write_demo(root: Path) -> list[str]:
    """Create the example workspace as a git repository with one commit per day. A demo made before is
    reused as it is (nothing written: its MEMORY.md may hold the user's own lines by now); any other
    directory with files in it, a workspace above all, is refused."""
    if root.exists() and any(p.name != ".git" for p in root.iterdir()):
        if _is_demo(root):
            return []
        raise ZmemError(f"{root} exists and is not empty" + (": it is a zmem workspace, not a demo (the demo "
                        "would overwrite its MEMORY.md and commit its files)" if (root / "zmem.toml").exists() else ""),
                        hint="pass a new directory: zmem demo /tmp/zmem-demo")
    if (root / ".git").exists() and run_git(["rev-parse", "-q", "--verify", "HEAD"], cwd=root,
                                             capture_output=True).returncode == 0:
        raise ZmemError(f"{root} is a git repository with history", hint="pass a new directory: zmem demo /tmp/zmem-demo")
    init_layout(root)
    write_file_in(root, "MEMORY.md", (
        "# Memory\n\n## People\n\n- Peter: the human I work for; based in Lisbon.\n"
        "- Ana: Peter's colleague; recommends restaurants.\n\n## Infrastructure\n\n"
        "- The gateway host is the Mac Studio in the office.\n").encode("utf-8"))
    from zmem.git.commit import git_env
    from zmem.git.repo import open_repo
    repo = open_repo(root)
    env = git_env(repo)
    written = []
    for day, sections in DEMO_DAYS:
        lines = [f"# {day}", ""]
        for heading, body in sections.items():
            lines += [heading, "", *body, ""]
        rel = f"memory/{day}.md"
        write_file_in(root, rel, "\n".join(lines).encode("utf-8"))
        written.append(rel)
        date = f"{day}T18:00:00+00:00"
        _git(root, env | {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}, "add", "-A")
        _git(root, env | {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date},
             "commit", "--quiet", "-m", f"memory: {day}")
    return written


def _is_demo(root: Path) -> bool:
    """Whether root is a workspace `zmem demo` made: zmem.toml, and the demo's first day as the first commit."""
    if not (root / "zmem.toml").is_file():
        return False
    proc = run_git(["log", "--reverse", "--format=%s", "HEAD"], cwd=root, capture_output=True, text=True)
    first = proc.stdout.splitlines()[0] if proc.returncode == 0 and proc.stdout else None
    return first == f"memory: {DEMO_DAYS[0][0]}"


def own_command() -> tuple[str, Path | None]:
    """How a shell runs this zmem from any directory: `zmem` when PATH finds this very program, else
    its absolute path (after the README's Try-it install, zmem is only in .venv/bin); and the
    directory to put on PATH to type just `zmem` (None when that is not needed or not known)."""
    import shlex
    import shutil
    import sys
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path()
    on_path = shutil.which("zmem")
    if script.name not in ("zmem", "git-zmem"):  # `python -m zmem`
        return ("zmem" if on_path else f"{shlex.quote(sys.executable)} -m zmem"), None
    mine = script.with_name("zmem") if script.with_name("zmem").is_file() else script  # git zmem runs git-zmem
    if on_path and Path(on_path).resolve() == mine.resolve():
        return "zmem", None
    return shlex.quote(str(mine.absolute())), mine.absolute().parent


def _git(root: Path, env: dict, *args: str) -> None:
    proc = run_git(list(args), cwd=root, env=env, capture_output=True, text=True)
    if proc.returncode:
        raise ZmemError(f"git {args[0]} failed: {proc.stderr.strip().splitlines()[-1:]}",
                        hint="check that git works here: git status")


def adopt_remote_branch(root: Path) -> str | None:
    """In a clone that has no commit of its own while its remote has branches, check out the
    remote's memory branch first, and return it ("origin/main"). `git clone` of a hub whose HEAD
    names a branch it does not have (a `git init --bare` hub names master; zmem pushes main) leaves
    an empty clone on master: the layout written there, and synced, started a second memory that
    shares no history with the first, on a branch of its own, and nobody was told. None when HEAD
    has a commit, or there is no remote branch."""
    def git(*args):
        return run_git(list(args), cwd=root, capture_output=True, text=True)
    if git("rev-parse", "--verify", "-q", "HEAD").returncode == 0:
        return None
    refs = [r for r in git("for-each-ref", "--format=%(refname:short)", "refs/remotes/").stdout.split()
            if not r.endswith("/HEAD") and "/" in r]
    if not refs:
        return None
    current = git("symbolic-ref", "--short", "-q", "HEAD").stdout.strip()
    remote = "origin" if any(r.startswith("origin/") for r in refs) else refs[0].split("/", 1)[0]
    mine = [r for r in refs if r.startswith(remote + "/")]
    pick = next((f"{remote}/{b}" for b in (current, "main", "master") if f"{remote}/{b}" in mine), None)
    if pick is None and len(mine) == 1:
        pick = mine[0]
    if pick is None:
        raise ZmemError(f"this clone has no commit yet and {remote} has several branches ({', '.join(mine)}); "
                        "zmem would start a second memory beside them",
                        hint=f"check out the memory's branch first, e.g. `git checkout --track {mine[0]}`, "
                             "then `zmem init` again")
    branch = pick.split("/", 1)[1]
    proc = git("checkout", "-q", "-b", branch, "--track", pick)
    if proc.returncode != 0:
        raise ZmemError(f"this clone has no commit yet; checking out {pick} failed: "
                        f"{proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else proc.returncode}",
                        hint=f"`git checkout --track {pick}` (move aside the files it names), then `zmem init` again")
    return pick
