"""What the adapters ask git about a directory a tool names as a worktree."""

from __future__ import annotations

import os

from git_ao import git
from git_ao.errors import AoError


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
    try:
        dirs = git.repo_dirs(path)
    except AoError:
        return None
    if dirs.is_bare or not dirs.is_linked_worktree or dirs.toplevel is None:
        return None
    if os.path.realpath(dirs.toplevel) != os.path.realpath(path):
        return None
    return dirs.git_dir
