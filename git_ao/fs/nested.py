"""Judge the repositories and worktrees the walk found inside a worktree.

A directory holding a `.git` inside a session's worktree is not the outer
repository's content: the outer preserve commit cannot hold its files or its
commits. Taking the outer directory away is safe only when each of them is
safe elsewhere:

- a registered submodule is judged by the capture (its own rules);
- a linked worktree (a `.git` file naming a worktree admin dir) is never safe
  to carry away: a session living there is preserved first (inner first),
  any other one blocks;
- a nested repository (a `.git` directory, or a gitlink the superproject
  does not know as a submodule) is safe when it is clean and every commit of
  its branches, tags, HEAD and stash is on one of its remote-tracking refs,
  like a `pip install -e` clone under `.venv/src/`; otherwise it blocks.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from git_ao import git, gitfiles
from git_ao.fs.walk import Blocker
from git_ao.git import query


def _common_dir_of(admin: str) -> str | None:
    """The common dir a worktree admin dir names in its `commondir` file, or None
    when `admin` is not a linked worktree's admin dir."""
    if not os.path.isfile(os.path.join(admin, "commondir")):
        return None
    return os.path.realpath(gitfiles.common_dir(admin))


def unsafe_reason(path: str) -> str | None:
    """Why the repository whose worktree is `path` holds something that exists
    nowhere else, or None when it is clean and all its commits are on a remote.
    Runs `git status` and `git rev-list` inside it."""
    st = query.status_porcelain(path)
    if st.status != 0:
        return f"git cannot read it ({st.errtext.strip().splitlines()[-1:] or ['?']})"
    if st.out:
        return "it has uncommitted or untracked work"
    head = git.rev_parse(path, "HEAD")
    if head is None:
        return None  # no commit at all, and nothing untracked: nothing to lose
    if query.has_unpushed_work(path):
        return "it has commits or a stash that no remote-tracking ref holds"
    return None


def linked_worktree_of(full: str) -> str | None:
    """The common git dir of the repository whose linked worktree the directory
    `full` is (its `.git` file names an admin dir under `worktrees/`), else None."""
    dotgit = os.path.join(full, ".git")
    if not os.path.isfile(dotgit):
        return None
    target = gitfiles.read_gitfile(dotgit)
    return _common_dir_of(target) if target else None


def judge(root: str, nested: Iterable[str], *, sessions: dict[str, str],
          submodules: set[str]) -> list[Blocker]:
    """The blockers among the nested repositories and worktrees `nested` (paths
    relative to the worktree `root`, from the walk).

    sessions: {real path: session id} of the sessions git-ao knows, so a nested
    session can be named. submodules: the registered submodule paths of the
    outer worktree, judged elsewhere."""
    out = []
    for rel in nested:
        if rel in submodules:
            continue
        full = os.path.join(root, rel)
        real = os.path.realpath(full)
        if real in sessions:
            out.append(Blocker(rel, f"session '{sessions[real]}' lives here and is still "
                                    "there; it is preserved first, or it blocks this one"))
            continue
        common = linked_worktree_of(full)
        if common:
            out.append(Blocker(rel, f"a linked worktree of {common} that no session holds; "
                                    "it would break if this directory went away "
                                    "(git worktree remove it, or git ao add it)"))
            continue
        why = unsafe_reason(full)
        if why:
            out.append(Blocker(rel, f"a nested repository: {why}"))
    return out
