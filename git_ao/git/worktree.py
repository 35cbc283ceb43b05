"""Verify linked worktrees and find their registrations. Every deletion guard lives here.

Nothing outside a verified linked worktree is ever deleted: `verify` checks a
path against `git worktree list` of its repository and, from inside, against
`git rev-parse`; the one removal, `store/trash.move_in`, takes only the `Verified`
that `verify` returns.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from git_ao import git, gitfiles
from git_ao.errors import Refused


def same_path(a: str, b: str) -> bool:
    """Do two paths name the same place once symlinks are resolved?"""
    return os.path.realpath(a) == os.path.realpath(b)


def unheld(entries: Iterable[git.WorktreeEntry], held: Iterable[str]) -> list[str]:
    """Paths of the linked worktrees in `entries` (`git worktree list`) that no
    path of `held` names, symlinks resolved; the main worktree, a bare
    repository and prunable registrations (their directory is gone) left out."""
    held = list(held)  # walked once per entry
    return [e.path for e in entries
            if not e.is_main and not e.prunable and not e.bare
            and not any(same_path(e.path, h) for h in held)]


def find(entries: list[git.WorktreeEntry], path: str) -> git.WorktreeEntry | None:
    """The WorktreeEntry of `entries` at `path`, or None."""
    real = os.path.realpath(path)
    for e in entries:
        if os.path.realpath(e.path) == real:
            return e
    return None


def free_by_files(common_dir: str, path: str, branch: str | None) -> bool:
    """Do the repository's own files prove that no worktree is registered at `path`
    and that no worktree has `branch` checked out? Read, with no process, from the
    files `git worktree list` reads: each `worktrees/<id>/gitdir` (the worktree's
    `.git`) and `HEAD`, and the main worktree's `HEAD`. False whenever they do not
    prove it (a match, a bare repository's HEAD, a relative or unreadable gitdir,
    a reftable, whose HEAD files name no branch): the caller then asks git."""
    if os.path.exists(os.path.join(common_dir, "reftable")):
        return False
    real = os.path.realpath(path)
    if os.path.realpath(os.path.dirname(common_dir)) == real:
        return False  # the main worktree's own path
    heads = [os.path.join(common_dir, "HEAD")]
    admins = git.admin_dirs(common_dir)
    if admins is None:
        return False
    for admin, named in admins:
        if named is None or not os.path.isabs(named) or os.path.basename(named) != ".git":
            return False
        if os.path.realpath(os.path.dirname(named)) == real:
            return False
        heads.append(os.path.join(admin, "HEAD"))
    if branch is None:
        return True
    want = f"ref: refs/heads/{branch}".encode()
    for head in heads:
        try:
            with open(head, "rb") as fh:
                if fh.readline().strip() == want:
                    return False
        except OSError:
            return False
    return True


def main_path(entries: list[git.WorktreeEntry]) -> str | None:
    """The main worktree's path (None for a bare repository)."""
    if entries and entries[0].is_main and not entries[0].bare:
        return entries[0].path
    return None


@dataclass
class Verified:
    """A path proven to be a linked worktree of `common_dir`, with its private git dir."""

    path: str
    git_dir: str
    common_dir: str
    entry: git.WorktreeEntry


def verify(common_dir: str, path: str,
           entries: list[git.WorktreeEntry] | None = None) -> Verified:
    """Prove that `path` is a linked worktree (never the main one) of the repository
    whose common git dir is `common_dir`.

    entries: a `git.worktree_list` already read for this repository, if any.
    Raises Refused naming what is wrong. Runs `git worktree list` (unless given)
    and `git rev-parse` inside the path.
    """
    entries = entries if entries is not None else git.worktree_list(common_dir)
    entry = find(entries, path)
    if entry is None:
        raise Refused(f"'{path}' is not a worktree of {common_dir}")
    if entry.is_main:
        raise Refused(f"'{path}' is the main worktree of its repository; it is never removed")
    dirs = git.repo_dirs(path)
    if not same_path(dirs.common_dir, common_dir) or dirs.toplevel is None \
            or not same_path(dirs.toplevel, path) or not dirs.is_linked_worktree:
        raise Refused(f"'{path}' does not resolve to a linked worktree of {common_dir}")
    real = os.path.realpath(path)
    for guarded in (common_dir, main_path(entries) or common_dir, os.path.expanduser("~"), "/"):
        g = os.path.realpath(guarded)
        if g == real or g.startswith(real.rstrip("/") + "/"):
            raise Refused(f"'{path}' contains {guarded}; refusing to remove it")
    return Verified(path, dirs.git_dir, common_dir, entry)


def admin_dir_of(common_dir: str, path: str) -> str | None:
    """The admin dir under `<common dir>/worktrees/` whose `gitdir` file names
    `path` (its `.git`), or None: the registration of a worktree whose directory
    may be gone or moved."""
    base = os.path.join(common_dir, "worktrees")
    try:
        names = os.listdir(base)
    except OSError:
        return None
    want = (os.path.join(os.path.realpath(path), ".git"), os.path.join(path, ".git"))
    for name in names:
        if gitfiles.admin_gitdir(os.path.join(base, name)) in want:
            return os.path.join(base, name)
    return None
