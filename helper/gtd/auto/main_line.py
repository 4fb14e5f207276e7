"""Whether the branch checked out is the repository's main line: setup warns of
a set-up there, and the report's State says so while the loop commits on it."""

from __future__ import annotations

from gtd.git import Git

# Branch names that are, by convention, the one others build on: a loop's commits
# belong on a branch of their own (the README's first step), merged after review.
_MAINS = ("main", "master", "trunk")


def main_line(git: Git) -> str | None:
    """The branch checked out when it is the main line, else None."""
    branch = git.branch()
    return branch if branch is not None and is_main(git, branch) else None


def is_main(git: Git, branch: str) -> bool:
    """Whether ``branch`` is the repository's main line: a conventional name, or
    the branch the remote's HEAD names (``origin/HEAD`` → ``origin/develop``)."""
    if branch in _MAINS:
        return True
    remote = git.call("symbolic-ref", "-q", "--short", "refs/remotes/origin/HEAD").stdout
    return remote.strip() == f"origin/{branch}"
