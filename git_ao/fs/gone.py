"""Where a live session's worktree went when it is not at its recorded path:
moved by `git worktree move`, removed, or emptied. Read from the file system
alone while the worktree is in place, so a listing of sessions whose worktrees
are there imports and runs no more than it needs."""

from __future__ import annotations

import os

from git_ao.fs import is_empty_dir

TYPE_CHECKING = False  # mypy takes any name TYPE_CHECKING as true
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from git_ao.git.parse import WorktreeEntry
    from git_ao.store.records import Session


class Gone:
    """Why a live session's worktree is not at its recorded path. kind: "moved"
    (`git worktree move` took it to `moved_to`, which git's registration names now),
    "removed" (no directory there) or "emptied" (an empty directory there: a tmpfs
    cleared by a reboot, a `rm -rf` of its contents)."""

    __slots__ = ("kind", "moved_to", "path")

    def __init__(self, kind: str, path: str, moved_to: str | None = None) -> None:
        self.kind, self.path, self.moved_to = kind, path, moved_to

    def advice(self, s: Session, newest: Callable[[], str] | None = None) -> str:
        """What is true and what brings the worktree back, as one clause starting
        "live, but its worktree": the same words in list, restore and doctor.
        newest: when no preserve ref holds the last checkpoint, what names the
        newest history entry that holds work ("" for none; history.gone_advice)."""
        if self.kind == "moved":
            return (f"live, but its worktree {self.path} was moved to {self.moved_to} "
                    f"(git worktree move); git worktree move {self.moved_to} {self.path} "
                    "moves it back (git ao-preserve refuses it until then)")
        ref = s.save.preserve_ref if s.save and s.save.holds_ref else ""
        last = f" and its last checkpoint in {ref}" if ref else ""
        what = ("is gone (removed)" if self.kind == "removed"
                else "is empty (a tmpfs cleared by a reboot?)")
        note = newest() if newest is not None and not ref else ""
        return (f"live, but its worktree {self.path} {what}: git ao-preserve {s.id} records "
                f"that, then git ao-restore re-creates it from its branch{last}"
                + (f"; no preserve ref holds its last checkpoint, but {note}" if note else ""))


def moved_to(entries: Sequence[WorktreeEntry], s: Session) -> str | None:
    """The existing worktree git's registration names for the session's branch at
    another path than the recorded one (a `git worktree move`), else None. A branch
    is checked out in one worktree at a time, so that worktree is the session's."""
    if not s.branch:
        return None
    from git_ao.git.worktree import same_path
    for e in entries:
        if e.branch == f"refs/heads/{s.branch}" and not same_path(e.path, s.worktree_path) \
                and os.path.isdir(e.path):
            return e.path
    return None


def gone_worktree(s: Session, entries: Sequence[WorktreeEntry] | None = None) -> Gone | None:
    """Why a live session's worktree is not at its recorded path, or None when it is
    there (or the session is not live). entries: `git.worktree_list` of its
    repository, read here when None and the path is missing (a listing of sessions
    whose worktrees are in place runs no git)."""
    path = s.worktree_path
    if not s.live or not path:
        return None
    if os.path.lexists(path):
        return Gone("emptied", path) if is_empty_dir(path) else None
    if entries is None:
        from git_ao import git
        from git_ao.errors import AoError
        try:
            entries = git.worktree_list(s.common_dir) if os.path.isdir(s.common_dir) else []
        except AoError:
            entries = []
    where = moved_to(entries, s)
    return Gone("moved", path, where) if where else Gone("removed", path)
