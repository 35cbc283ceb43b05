"""What the adapters ask git about a directory a tool names as a worktree, and
whether an agent ran there."""

from __future__ import annotations

import os
from collections.abc import Callable

from git_ao import git, gitfiles
from git_ao.errors import AoError


def ran_in(path: str) -> Callable[[str], bool]:
    """The test of whether an agent whose recorded cwd is the argument ran in
    directory `path`: the cwd is `path` or inside it, `path` taken as given and
    with its symbolic links resolved (what a process's cwd records). The one rule
    the importers match a Claude Code transcript or a Codex rollout to a worktree
    by, never the name of the directory the tool files it under."""
    tops = tuple(t.rstrip(os.sep) for t in dict.fromkeys(
        (os.path.normpath(os.path.abspath(path)), os.path.realpath(path))))
    return lambda cwd: any(cwd == t or cwd.startswith(t + os.sep) for t in tops)


def linked_root(path: str) -> bool:
    """Is `path` the top directory of a linked worktree (not a main worktree, a bare
    repository, a plain directory or a directory inside a worktree)?"""
    info = admin_dir(path)
    return info is not None


def admin_dir(path: str) -> str | None:
    """The git admin dir (`<common dir>/worktrees/<name>`) of the linked worktree whose
    top directory is `path`, or None when `path` is not one (see linked_root)."""
    if not os.path.isdir(path):
        return None
    if "\n" in os.path.abspath(path):
        # git-ao runs no git there (git.repo_dirs refuses it), yet the worktree is
        # one: so said, registering it is refused for the true reason, the newline.
        return _admin_dir_from_files(os.path.abspath(path))
    try:
        dirs = git.repo_dirs(path)
    except AoError:
        return None
    if dirs.is_bare or not dirs.is_linked_worktree or dirs.toplevel is None:
        return None
    if os.path.realpath(dirs.toplevel) != os.path.realpath(path):
        return None
    return dirs.git_dir


def _admin_dir_from_files(path: str) -> str | None:
    """admin_dir read from the files git reads: `<path>/.git` naming the admin dir
    (`gitfiles.read_gitfile`), the admin dir holding `commondir`, and its `gitdir`
    naming `<path>/.git` back (relative to the admin dir when not absolute)."""
    admin = gitfiles.read_gitfile(os.path.join(path, ".git"))
    if admin is None:
        return None
    back = gitfiles.admin_gitdir(admin)
    if not os.path.isfile(os.path.join(admin, "commondir")) or back is None \
            or os.path.realpath(back) != os.path.realpath(os.path.join(path, ".git")):
        return None
    return os.path.normpath(admin)
