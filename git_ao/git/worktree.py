"""Verify, add and take away linked worktrees. Every deletion guard lives here.

Nothing outside a verified linked worktree is ever deleted: `verify` checks a
path against `git worktree list` of its repository and, from inside, against
`git rev-parse`; `take_away` refuses anything `verify` did not return.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from git_ao import git
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


def take_away(v: Verified, trash_dir: str, label: str,
              crash: Callable[[str], None] = lambda name: None, prune: bool = True) -> str:
    """Remove the verified worktree `v` and deregister it.

    The directory is renamed into `trash_dir` (one rename on the same
    filesystem; the trash keeps ignored files recoverable until `git ao-prune`),
    then `git worktree prune` deregisters it. Across filesystems it falls back
    to `git worktree remove --force`. Returns the trash path, or "" when git
    deleted the directory. prune=False leaves the `git worktree prune` to the
    caller (one per repository for a batch; until then git lists the worktree
    as prunable, which restore and `git ao-prune` handle). Raises Refused, GitError.
    """
    if not isinstance(v, Verified):
        raise Refused("refusing to remove an unverified path")
    target = os.path.join(trash_dir, f"{label}.{time.time_ns()}")
    try:
        os.rename(v.path, target)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise Refused(f"cannot move '{v.path}' to the trash: {exc.strerror}") from exc
        git.worktree_remove(v.common_dir, v.path, force=True)
        return ""
    crash("preserve:after-rename")
    if prune:
        git.worktree_prune(v.common_dir)
    return target


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
        try:
            with open(os.path.join(base, name, "gitdir"), encoding="utf-8",
                      errors="surrogateescape") as fh:
                named = fh.read().strip()
        except OSError:
            continue
        if named in want or os.path.normpath(named) in want:
            return os.path.join(base, name)
    return None
