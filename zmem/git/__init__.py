"""Git: repositories (pygit2), the git command, hooks, and creating workspaces."""
