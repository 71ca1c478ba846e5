"""The history index's catch-up reads new commits with `git log` and `git diff-tree`
(gitstatus.CommandRepo), porcelain that follows the user's git config and `git replace`, and prints
a message as written: its answers must still be pygit2's, as the first build stores them."""
from __future__ import annotations

import subprocess

from helpers.signing import sign_commits
from helpers.workspace import commit_all, git, write

from zmem.git.gitstatus import open_command_repo
from zmem.git.repo import open_repo


def test_signed_commits_with_log_show_signature_are_read_without_pygit2(ws, tmp_path):
    """log.showSignature (set by many who sign their commits) printed the signature check into each
    signed commit's sha: with the known commit unsigned (signing turned on later) the history index
    stored `Good "git" signature for ...\\n<sha>` as the new commit's id."""
    sign_commits(ws, tmp_path)
    base = git(ws, "rev-parse", "HEAD")
    write(ws, "memory/2025-11-24.md", "# 2025-11-24\n\n- signed edit\n")
    commit_all(ws, "a signed edit")
    assert "signature" in git(ws, "log", "-1")  # the config is in effect
    command = open_command_repo(ws)
    assert command.first_parent_chain({base}) == open_repo(ws).first_parent_chain({base})
    assert command._repo is None  # read from git log alone


def test_authors_and_summaries_in_utf_8_whatever_the_log_output_encoding(ws):
    """i18n.logOutputEncoding=ISO-8859-1 re-encoded names and messages: the catch-up stored
    "Jo\ufffdo M\ufffdller" where a first build by pygit2 stores "João Müller"."""
    base = git(ws, "rev-parse", "HEAD")
    git(ws, "config", "i18n.logOutputEncoding", "ISO-8859-1")
    write(ws, "memory/2025-11-24.md", "# 2025-11-24\n\n- edit\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "délete", env={"GIT_AUTHOR_NAME": "João Müller"})
    chain = open_command_repo(ws).first_parent_chain({base})
    assert (chain[0].author, chain[0].summary) == ("João Müller", "délete")
    assert chain == open_repo(ws).first_parent_chain({base})


def test_a_replaced_commit_is_read_as_pygit2_reads_it(ws):
    """`git replace` shows another commit's message and tree under a commit's id to git log and
    diff-tree, not to pygit2: the catch-up stored the replacement, a rebuild the commit itself."""
    base = git(ws, "rev-parse", "HEAD")
    write(ws, "memory/2025-11-24.md", "# 2025-11-24\n\n- in Porto\n")
    replaced = commit_all(ws, "Porto")
    write(ws, "memory/2025-11-24.md", "# 2025-11-24\n\n- in Faro\n")
    commit_all(ws, "Faro")
    git(ws, "checkout", "-q", "-b", "other", base)
    write(ws, "memory/2025-11-24.md", "# 2025-11-24\n\n- in Madrid\n")
    replacement = commit_all(ws, "Madrid")
    git(ws, "checkout", "-q", "main")
    git(ws, "replace", replaced, replacement)
    command, pygit = open_command_repo(ws), open_repo(ws)
    assert command.first_parent_chain({base}) == pygit.first_parent_chain({base})
    assert command.tree_changes(base, replaced) == pygit.tree_changes(base, replaced)
    assert command.changed_paths(base, replaced) == pygit.changed_paths(base, replaced)


def test_a_message_beginning_with_blank_lines_has_pygit2s_summary(ws):
    """`git commit --cleanup=verbatim` keeps a message's leading blank lines; pygit2's message (and so
    the first build's summary) starts after them, git log's %B did not: the catch-up stored ""."""
    base = git(ws, "rev-parse", "HEAD")
    write(ws, "memory/2025-11-24.md", "# 2025-11-24\n\n- edit\n")
    git(ws, "add", "-A")
    subprocess.run(["git", "commit", "-q", "--cleanup=verbatim", "-F", "-"], cwd=ws, check=True,
                   input=b"\n\n  spaced first line\nsecond\n")
    chain = open_command_repo(ws).first_parent_chain({base})
    assert chain[0].summary == "  spaced first line"
    assert chain == open_repo(ws).first_parent_chain({base})
