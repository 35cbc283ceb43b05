"""Where a live session's worktree went when it is not at its recorded path
(moved by `git worktree move`, removed, emptied, moved by hand while its
registration holds staged work) or its repository went, and what brings it
back, naming only commands that will not be refused. Read from the file system
alone while the worktree and its repository are in place, so a listing of
sessions whose worktrees are there imports and runs no more than it needs."""

from __future__ import annotations

import os

from git_ao.fs import is_empty_dir
from git_ao.gitfiles import read_gitfile

# context.REF_PREFIX's preserve refs: this layer is below the context.
PRESERVED = "refs/ao/preserved/"

TYPE_CHECKING = False  # mypy takes any name TYPE_CHECKING as true
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from git_ao.git.parse import WorktreeEntry
    from git_ao.store.records import Session


def repo_gone_advice(s: Session, others: Sequence[Session] = ()) -> str:
    """What brings a live session whose repository is gone (moved, or deleted) back
    under git-ao's care, keeping its id and facts: `git ao add` of its worktree
    where it is now, with its id, re-points the record (a preserve would refuse
    it, having no repository to save in, and a prune keeps its record). The
    worktree's link to the moved repository is repaired first when it is broken
    (`git ao add` needs it), as `git worktree repair` does. others: the sessions
    recorded; one of them registered at the worktree where it is now (`duplicate_of`)
    is forgotten first, since `git ao add` refuses a worktree another session holds."""
    path = s.worktree_path
    dup = duplicate_of(s, others)
    if dup is not None:
        return (f"if the repository moved, its worktree is {dup.worktree_path}, registered "
                f"again as session '{dup.id}': git ao forget {dup.id}, then git ao add "
                f"{dup.worktree_path} --id {s.id} re-points session '{s.id}' there, keeping "
                f"its id and facts; else git ao forget {s.id} drops the record")
    here = path if path and os.path.lexists(path) else "NEWPATH"
    add = f"git ao add {here} --id {s.id}"
    if not _linked(path):
        add = f"git worktree repair {here} run in it, then {add}"
    where = " (NEWPATH: its worktree where the repository is now)" if here != path else ""
    return (f"if the repository moved, {add} re-points the session at its worktree"
            f"{where}, keeping its id and facts; else git ao forget {s.id} drops the record")


def missing_repo_advice(sid: str) -> str:
    """What to do with pending session `sid` whose repository is missing (moved, or
    on a disk not mounted): the one wording restore, doctor and prune print. The
    record is what `git ao doctor --recover -C` re-points (with the worktrees that
    were inside the repository: `moved_with`), so forgetting it first would lose
    where those were."""
    return ("move the repository back (or mount its disk), or run git ao doctor --recover "
            f"-C NEWPATH where it is now (the record follows it there), or drop the record "
            f"with git ao forget --force {sid}")


def moved_tops(old_common: str, new_common: str) -> tuple[str, str] | None:
    """(old, new): the directory that moved with a repository whose common git dir
    was `old_common` and is `new_common` now, and where it is now; None when no
    moved directory is proven. A directory is taken as moved only when it is gone
    (`not os.path.lexists`): the one holding the git dir when the git dir has the
    same name in the new one (`app` for `app/.git` and `app/.bare` after `mv app
    app2`; `proj` for the bare `proj/app.git` with worktrees beside it after `mv
    proj proj2`), else the git dir itself. The home directory that held a bare
    `~/.dotfiles` moved to `~/.config/dotfiles` is still there, so only the git
    dir moved. Reads the file system (lstat of the old paths)."""
    old = os.path.normpath(old_common)
    new = os.path.normpath(new_common)
    if old == new or os.path.lexists(old):
        return None
    old_up, new_up = os.path.dirname(old), os.path.dirname(new)
    if os.path.basename(old) == os.path.basename(new) and old_up != new_up \
            and not os.path.lexists(old_up):
        return old_up, new_up
    return old, new


def moved_with(path: str, old_common: str, new_common: str) -> str:
    """Where `path`, recorded for a worktree of the repository whose common git dir was
    `old_common`, is now that the repository is at `new_common`: the same relative
    path under the new place of the directory that moved with it (`moved_tops`)
    when it was inside it (`app/.claude/worktrees/feat` -> `app2/.claude/worktrees/feat`),
    else `path` unchanged (a worktree outside it did not move with the repository).
    Reads the file system (`moved_tops`)."""
    tops = moved_tops(old_common, new_common) if path else None
    if tops is None:
        return path
    old_top, new_top = tops
    rel = os.path.relpath(path, old_top)
    if rel == "." or rel == ".." or rel.startswith("../") or os.path.isabs(rel):
        return path
    return os.path.join(new_top, rel)


def same_place(s: Session, common_dir: str, worktree: str) -> bool:
    """Is `worktree`, a linked worktree of the repository at `common_dir`, where the
    worktree of session `s` is now, its repository having moved (`mv`) with the
    worktree inside the directory that moved (`moved_with`): the same path under
    it (`.claude/worktrees/feat`, `.conductor/fix`, `feat` beside `app.git`)?"""
    new = moved_with(s.worktree_path, s.common_dir, os.path.realpath(common_dir))
    return new != s.worktree_path and new == worktree


def duplicate_of(s: Session, others: Sequence[Session]) -> Session | None:
    """The live session registered at the worktree of live session `s` where it is
    now, its repository moved (`same_place`, on the same branch), or with the same
    agent session id: what an import of before 0.3.0 registered beside `s` once its
    repository moved. None when `s`'s repository is there, or none is."""
    if not s.live or os.path.isdir(s.common_dir):
        return None
    for d in others:
        if d.id == s.id or not d.live or not os.path.isdir(d.common_dir) \
                or not os.path.isdir(d.worktree_path):
            continue
        if (same_place(s, d.common_dir, d.worktree_path) and d.branch == s.branch) or (
                s.agent_session_id and d.agent_session_id == s.agent_session_id
                and d.tool == s.tool):
            return d
    return None


def _linked(path: str) -> bool:
    """Does the `.git` file of the worktree at `path` name an admin dir that exists?"""
    named = read_gitfile(os.path.join(path, ".git"))
    return named is not None and os.path.isdir(named)


def registration_holds(s: Session, entry: WorktreeEntry | None) -> tuple[str, str] | None:
    """(what, its admin dir) when the session's worktree directory is gone (or empty)
    but its registration still holds state that differs from its HEAD: staged work
    in its index, or per-worktree refs. The directory was most likely moved (`mv`),
    not deleted, and recording it as gone would let restore prune the only copy of
    that index. An index the preserve ref holds (a checkpoint's, which the record
    of a worktree gone carries over) is no such copy. None otherwise."""
    if entry is None or not entry.head:
        return None
    from git_ao import git
    from git_ao.errors import AoError
    from git_ao.git import index, worktree
    admin = worktree.admin_dir_of(s.common_dir, entry.path)
    if admin is None:
        return None
    index_file = os.path.join(admin, "index")
    staged = False
    if os.path.exists(index_file):
        try:
            tree = index.tree_of(s.common_dir, index_file)
            staged = tree != git.trees_of(s.common_dir, [entry.head])[0] \
                and not _saved_index(s, entry.head, tree)
        except AoError:
            staged = True
    refs = os.path.isdir(os.path.join(admin, "refs")) and any(
        files for _r, _d, files in os.walk(os.path.join(admin, "refs")))
    if staged or refs:
        return ("staged work in its index" if staged else "per-worktree refs"), admin
    return None


def _saved_index(s: Session, head: str, tree: str) -> bool:
    """Does the session's preserve ref (a checkpoint's save: parents H and I) hold
    this index tree on this HEAD?"""
    from git_ao import git
    from git_ao.git import query
    kept = query.ref_tip(s.common_dir, PRESERVED + s.id)
    if not kept:
        return False
    parents = git.commit_parents(s.common_dir, kept)
    return len(parents) >= 2 and parents[0] == head \
        and git.trees_of(s.common_dir, [parents[1]])[0] == tree


def held_advice(path: str, what: str, admin: str) -> str:
    """What is said of a worktree directory gone while its registration holds `what`."""
    return (f"'{path}' is gone, but its registration ({admin}) still holds {what}: if the "
            "directory was moved, move it back")


class Gone:
    """Why a live session's worktree is not at its recorded path. kind: "moved"
    (`git worktree move` took it to `moved_to`, which git's registration names now),
    "removed" (no directory there), "emptied" (an empty directory there: a tmpfs
    cleared by a reboot, a `rm -rf` of its contents), "repository" (its
    repository is gone: moved, or deleted, and the worktree with it or not) or
    "held" (removed or emptied while its registration holds state HEAD does not:
    `held`, the words of `registration_holds`, and its admin dir)."""

    __slots__ = ("held", "kind", "moved_to", "path")

    def __init__(self, kind: str, path: str, moved_to: str | None = None,
                 held: tuple[str, str] | None = None) -> None:
        self.kind, self.path, self.moved_to, self.held = kind, path, moved_to, held

    def advice(self, s: Session, newest: Callable[[], str] | None = None,
               others: Sequence[Session] = ()) -> str:
        """What is true and what brings the worktree back, as one clause starting
        "live, but": the same words in list, restore and doctor.
        newest: when no preserve ref holds the last checkpoint, what names the
        newest history entry that holds work ("" for none; history.gone_advice).
        others: the sessions recorded (see repo_gone_advice)."""
        if self.kind == "repository":
            return (f"live, but its repository {s.common_dir} is gone (moved or deleted), "
                    f"so git ao-preserve cannot save it: {repo_gone_advice(s, others)}")
        if self.kind == "held" and self.held is not None:
            return (f"live, but {held_advice(self.path, *self.held)} (git ao-preserve "
                    "refuses to record it gone until then)")
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
    if not os.path.isdir(s.common_dir):
        # Checked first: a preserve of it is refused, whatever the path holds.
        return Gone("repository", path)
    if os.path.lexists(path) and not is_empty_dir(path):
        return None
    if entries is None:
        from git_ao import git
        from git_ao.errors import AoError
        try:
            entries = git.worktree_list(s.common_dir) if os.path.isdir(s.common_dir) else []
        except AoError:
            entries = []
    kind = "emptied" if os.path.lexists(path) else "removed"
    where = moved_to(entries, s) if kind == "removed" else None
    if where:
        return Gone("moved", path, where)
    # As preserve judges it: what it would refuse to record gone is said so.
    from git_ao.git.worktree import find
    held = registration_holds(s, find(list(entries), path))
    return Gone("held", path, held=held) if held else Gone(kind, path)
