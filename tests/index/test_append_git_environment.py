"""`zmem append` run with another repository's GIT_DIR in its environment (a git hook of that
repository calling `zmem -C ~/notes append …` inherits it): the note goes to the workspace's
repository, never into the other one, as the catch-up reads the workspace's. Real git."""
from __future__ import annotations

import os

from helpers.fresh import fresh
from helpers.workspace import git, recall_json


def test_an_inherited_git_dir_of_another_repository_is_not_where_the_note_goes(ws, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    git(other, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "other")
    before = git(other, "rev-parse", "HEAD")
    env = {**os.environ, "GIT_DIR": str(other / ".git"), "GIT_INDEX_FILE": str(other / ".git" / "index")}
    report, proc = fresh("-C", str(ws), "append", "The okapi moved to the north enclosure", env=env)
    assert report["code"] in (None, 0), proc.stderr
    assert git(other, "rev-parse", "HEAD") == before and git(other, "status", "--porcelain") == ""
    assert git(ws, "log", "-1", "--format=%s").startswith("zmem append: memory/")
    assert git(ws, "status", "--porcelain") == ""
    assert recall_json(ws, "okapi")["results"]
