"""Restore from the trash: put the preserved directory back whole, with one rename.

Preserve moved the worktree's directory into a trash entry on its own file
system (git_ao/store/trash.py). When that entry is this save's and nothing has moved since,
restore does not check anything out: it registers the worktree again with
`git worktree add --no-checkout`, removes the empty directory git made (after
proving it holds only the `.git` file git just wrote), renames the entry's
`worktree/` back into place, points its `.git` file at the new admin dir, and
copies what the saved admin dir held there (the index first, so git's stat cache stays
valid and nothing is hashed again). Then the result is proven (git_ao/proof/restored.py), with
writes that landed after the last capture reported, never dropped. When the
proof fails, `undo` moves the directory back into its entry and deregisters
it: the caller falls back to the checkout-and-apply path and the entry is kept.

Crash safety: entry.json says "reinstating" (with the new admin dir) before the
directory moves, so a rerun after a kill finds the directory by its entry and
finishes (`repair_link` points its `.git` file at its admin dir again).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from dataclasses import dataclass
from enum import Enum

from git_ao import crashpoint, git, gitfiles
from git_ao.errors import AoError
from git_ao.git import index, query, worktree
from git_ao.mounts import mount_of
from git_ao.store import trash
from git_ao.store.records import Save

# The admin dir's subtrees moved (not copied) when they can be: a submodule's git dir
# can be large.
ADMIN_TREES = (os.path.join("refs", "worktree"), os.path.join("refs", "bisect"),
               os.path.join("logs", "refs", "worktree"), os.path.join("logs", "refs", "bisect"),
               "modules")  # the git dirs of submodules initialised in this worktree
# What `git worktree add` just wrote for the new registration: kept as git made it.
GIT_WROTE = ("HEAD", "commondir", "gitdir")
# Not put back, and named: a lock file left in the new admin dir would make a restore
# interrupted here look like a killed `git worktree add` (restore/target.py).
NOT_PUT_BACK = ("locked",)
# Scratch a git-ao writes into a worktree's admin dir (trash._ADMIN_SKIP) and git's
# lock files: never state worth keeping.
SCRATCH = ("git-ao-index.", "git-ao-verify.")


@dataclass
class Placed:
    """A directory put back from `entry` at `path`, registered with admin dir `admin`.
    old_link: what its `.git` file said before (written back by `undo`)."""

    entry: trash.Entry
    path: str
    admin: str
    old_link: bytes = b""
    missed: tuple[str, ...] = ()  # admin files not put back (copy_admin)


def _nearest_place(path: str) -> tuple[int, str | None] | None:
    """The device and the mount (`mounts.mount_of`) of `path`, or of its nearest
    existing parent: a rename works only where both are the same."""
    cur = os.path.abspath(path)
    while True:
        try:
            return os.stat(cur).st_dev, mount_of(cur)
        except FileNotFoundError:
            parent = os.path.dirname(cur)
            if parent == cur:
                return None
            cur = parent
        except OSError:
            return None


class Skip(Enum):
    """Why a trash copy is not put back whole (what restore decides on; `Usable.why`
    says it to people)."""

    NO_COPY = "no copy"
    OLDER = "older"
    OTHER_PATH = "other path"
    OTHER_FS = "other file system"
    NO_INDEX = "no index"
    NO_HEAD = "no head"
    BRANCH_GONE = "branch gone"
    BRANCH_MOVED = "branch moved"


@dataclass(frozen=True)
class Usable:
    """What `usable` found: the entry to put back, or why not (`skip`, and `why`
    in words)."""

    entry: trash.Entry | None
    skip: Skip | None = None
    why: str = ""


def usable(data_dir: str, save: Save) -> Usable:
    """The trash entry restore can put back whole for `save`, or why not.

    The entry must be the session's newest candidate (`trash.Entry.candidate`), be
    this save's (its commit is the save's, or one the preserve ref moved on from
    when writes landed after the capture, or it was made after the save), sit on
    the file system of the recorded path (a rename cannot cross one), hold the
    admin copy's index, and the branch must still point at the saved HEAD (or the
    save be detached)."""
    entry = trash.latest_for(data_dir, save.session_id)
    if entry is None:
        return Usable(None, Skip.NO_COPY, "no trash copy")
    commit = entry.meta.commit
    mine = commit == save.preserved_commit or entry.created_ns >= save.saved_at or (
        bool(commit) and bool(save.preserve_ref)
        and commit in query.reflog_commits(save.common_dir, save.preserve_ref))
    if not mine:
        return Usable(None, Skip.OLDER, "the trash copy is older than the save")
    if entry.meta.path not in (None, save.worktree_path):
        return Usable(None, Skip.OTHER_PATH, "the trash copy was taken from another path")
    if _nearest_place(entry.worktree) != _nearest_place(os.path.dirname(save.worktree_path)):
        return Usable(None, Skip.OTHER_FS, "the trash copy is on another file system")
    if not os.path.isfile(os.path.join(entry.admin, "index")):
        return Usable(None, Skip.NO_INDEX, "the trash copy has no saved index")
    if not save.head:
        return Usable(None, Skip.NO_HEAD, "no HEAD was saved")
    if not save.detached:
        tip = query.branch_tip(save.common_dir, save.branch) if save.branch else None
        if tip is None:
            return Usable(None, Skip.BRANCH_GONE, f"branch '{save.branch}' is gone")
        if tip != save.head:
            return Usable(None, Skip.BRANCH_MOVED, f"branch '{save.branch}' moved since the save")
    return Usable(entry)


def _read_link(path: str) -> bytes:
    with open(os.path.join(path, ".git"), "rb") as fh:
        return fh.read()


def only_git_file(path: str) -> str | None:
    """When the directory `path` holds nothing but a regular `.git` file naming an
    admin dir (what `git worktree add --no-checkout` makes, or a killed add
    leaves), that admin dir; else None."""
    try:
        names = os.listdir(path)
        link = os.path.join(path, ".git")
        if names != [".git"] or os.path.islink(link) or not os.path.isfile(link):
            return None
        return gitfiles.read_gitfile(link)
    except OSError:
        return None


# The `.git` file is written beside itself under a name of its own, then renamed
# over it; a kill between the two leaves that file, which drop_link_tmp takes
# away on the rerun. The name is new each time and opened exclusively, never
# following a link: a file or link the agent left under any name is not touched.
LINK_TMP_PREFIX = ".git.ao-tmp-"
_LINK_TMP = re.compile(re.escape(LINK_TMP_PREFIX) + "[0-9a-f]{16}")


def _link_line(admin: str) -> bytes:
    return b"gitdir: " + os.fsencode(admin) + b"\n"


def _write_link(path: str, admin: str) -> None:
    """Point the worktree's `.git` file at `admin` (a new file, then rename)."""
    tmp = os.path.join(path, LINK_TMP_PREFIX + os.urandom(8).hex())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        with os.fdopen(fd, "wb", closefd=False) as fh:
            fh.write(_link_line(admin))
        os.fsync(fd)
    finally:
        os.close(fd)
    crashpoint.hit("restore:link-written")
    os.rename(tmp, os.path.join(path, ".git"))


def drop_link_tmp(path: str, admin: str) -> list[str]:
    """Remove the files a killed `_write_link` left at the top of the worktree
    `path`: named LINK_TMP_PREFIX and 16 hex digits, regular files holding a
    start of the line that names `admin` (all of it, part of it, or nothing).
    Returns the names removed."""
    removed = []
    line = _link_line(admin)
    try:
        names = [n for n in os.listdir(path) if _LINK_TMP.fullmatch(n)]
    except OSError:
        return []
    for name in names:
        tmp = os.path.join(path, name)
        try:
            st = os.lstat(tmp)
            if not stat.S_ISREG(st.st_mode) or st.st_size > len(line):
                continue
            with open(tmp, "rb") as fh:
                if not line.startswith(fh.read()):
                    continue
            os.unlink(tmp)
            removed.append(name)
        except OSError:
            continue
    return removed


def copy_admin(saved: str, admin: str) -> list[str]:
    """Put back everything the saved admin dir held (the entry's `admin/` copy) into
    the new admin dir `admin`: the index first (copy2 keeps its mtime, which git
    compares file times against to spot racily clean entries), then every other
    file and directory, whoever wrote it (git's reflog, per-worktree refs, private
    config and sparse patterns, and what other tools keep there, such as Codex's
    codex-worktree.json), except what `git worktree add` just wrote (GIT_WROTE),
    lock files and git-ao's scratch. Returns what was not put back (NOT_PUT_BACK,
    anything that is not a file, directory or symlink, a copy that failed), each
    as `path` or `path (why)`, for the restore's message."""
    missed: list[str] = []
    index = os.path.join(saved, "index")
    if os.path.isfile(index) and not os.path.islink(index):
        shutil.copy2(index, os.path.join(admin, "index"))
    for rel in ADMIN_TREES:
        src, dst = os.path.join(saved, rel), os.path.join(admin, rel)
        if not os.path.isdir(src) or os.path.islink(src) or os.path.lexists(dst):
            continue
        try:
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            os.rename(src, dst)
        except OSError:
            pass  # another file system: copied below
    for dirpath, dirnames, filenames in os.walk(saved):
        dirnames.sort()
        rel_dir = os.path.relpath(dirpath, saved)
        for name in sorted(filenames) + [d for d in dirnames
                                         if os.path.islink(os.path.join(dirpath, d))]:
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if rel == "index" or rel in GIT_WROTE or name.endswith(".lock") \
                    or name.startswith(SCRATCH):
                continue
            if rel in NOT_PUT_BACK:
                missed.append(rel)
                continue
            src, dst = os.path.join(dirpath, name), os.path.join(admin, rel)
            try:
                st = os.lstat(src)
                if stat.S_ISLNK(st.st_mode):
                    if os.path.lexists(dst):
                        os.unlink(dst)
                    os.makedirs(os.path.dirname(dst), exist_ok=True)
                    os.symlink(os.readlink(src), dst)
                elif stat.S_ISREG(st.st_mode):
                    os.makedirs(os.path.dirname(dst), exist_ok=True)
                    shutil.copy2(src, dst)
                else:
                    missed.append(f"{rel} (not a file)")
            except OSError as exc:
                missed.append(f"{rel} ({exc.strerror or exc})")
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
    return missed


# What git itself keeps in a worktree's admin dir. A checkout-and-apply restore gets
# these from git and the saved commit; only the rest (other tools' files) is copied
# from the trash copy (copy_foreign).
GIT_ADMIN_NAMES = frozenset((
    "index", "HEAD", "ORIG_HEAD", "FETCH_HEAD", "AUTO_MERGE", "MERGE_HEAD", "MERGE_MSG",
    "MERGE_MODE", "MERGE_RR", "CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD",
    "COMMIT_EDITMSG", "BISECT_LOG", "BISECT_START", "BISECT_EXPECTED_REV",
    "BISECT_ANCESTORS_OK", "BISECT_NAMES", "BISECT_TERMS", "BISECT_RUN",
    "BISECT_FIRST_PARENT", "commondir", "gitdir", "locked", "config.worktree", "logs",
    "refs", "info", "modules", "rebase-merge", "rebase-apply", "sequencer", "hooks"))


def copy_foreign(saved: str, admin: str) -> tuple[list[str], list[str]]:
    """After a checkout-and-apply restore: copy what other tools kept in the saved
    admin dir (every top-level entry git does not own, GIT_ADMIN_NAMES, nor git-ao's
    scratch or a lock file) into the new admin dir `admin`, where not there already.
    Returns (what was copied, what could not be, as `name (why)`)."""
    copied: list[str] = []
    missed: list[str] = []
    try:
        names = sorted(os.listdir(saved))
    except OSError:
        return copied, missed
    for name in names:
        if name in GIT_ADMIN_NAMES or name.endswith(".lock") or name.startswith(SCRATCH):
            continue
        src, dst = os.path.join(saved, name), os.path.join(admin, name)
        if os.path.lexists(dst):
            continue
        try:
            if os.path.islink(src):
                os.symlink(os.readlink(src), dst)
            elif os.path.isdir(src):
                shutil.copytree(src, dst, symlinks=True)
            elif os.path.isfile(src):
                shutil.copy2(src, dst)
            else:
                missed.append(f"{name} (not a file)")
                continue
            copied.append(name)
        except OSError as exc:
            missed.append(f"{name} ({exc.strerror or exc})")
    return copied, missed


def put_back(common_dir: str, save: Save, entry: trash.Entry) -> Placed:
    """Register the worktree at the recorded path and rename the entry's directory
    into place (see the module docstring). The caller holds the repository's lock,
    has checked that the path is free and the branch is not checked out elsewhere.

    Raises AoError (git refused the add: nothing was moved) or OSError (the rename
    failed: the registration is undone first, `git worktree prune` of that path
    alone)."""
    path = save.worktree_path
    if save.detached:
        git.worktree_add(common_dir, path, commit=save.head, detach=True, checkout=False)
    else:
        git.worktree_add(common_dir, path, branch=save.branch, checkout=False)
    admin = only_git_file(path)
    if admin is None or not os.path.isdir(admin):
        # Something else landed in the new directory: leave it all as it is.
        raise AoError(f"'{path}' holds more than the .git file git just wrote; nothing "
                      "was moved")
    missed = copy_admin(entry.admin, admin)
    old_link = _read_link(entry.worktree) if os.path.isfile(
        os.path.join(entry.worktree, ".git")) else b""
    trash.mark(entry, reinstating=path, admin=admin)
    os.unlink(os.path.join(path, ".git"))
    os.rmdir(path)
    try:
        os.rename(entry.worktree, path)
    except OSError:
        git.worktree_prune(common_dir, only=[path])
        raise
    _write_link(path, admin)
    return Placed(entry, path, admin, old_link, tuple(missed))


def repair_link(common_dir: str, path: str) -> bool:
    """A rerun after a kill between the rename and the `.git` rewrite: when `path`
    is registered but its `.git` file names an admin dir that is gone, point it at
    the admin dir registered for `path`. Returns True when it rewrote the file."""
    try:
        link = _read_link(path)
    except OSError:
        return False
    named = gitfiles.gitfile_target(link, path)
    if named is None or os.path.isdir(named):
        return False
    admin = worktree.admin_dir_of(common_dir, path)
    if admin is None:
        return False
    _write_link(path, admin)
    return True


def reinstating(data_dir: str, session_id: str, path: str) -> trash.Entry | None:
    """The entry of `session_id` whose directory a killed restore was putting back
    at `path` (entry.json "reinstating", no `worktree/` left), or None."""
    for e in trash.of_session(data_dir, session_id):
        if e.meta.reinstating == path and not e.holds_worktree:
            return e
    return None


def undo(common_dir: str, placed: Placed) -> None:
    """The proof failed: move the directory back into its entry, restore its `.git`
    file, deregister the worktree (`git worktree prune`). The entry is kept as it
    was. Raises OSError when the directory cannot be moved back (it then stays at
    the recorded path, registered: nothing is lost)."""
    entry = placed.entry
    if placed.old_link:
        with open(os.path.join(placed.path, ".git"), "wb") as fh:
            fh.write(placed.old_link)
    os.rename(placed.path, entry.worktree)
    git.worktree_prune(common_dir, only=[placed.path])
    trash.mark(entry, reinstating=None, admin=None, proof_failed=True)


def forget_fsmonitor(placed: Placed) -> bool:
    """Drop the fsmonitor extension of the index put back, when it has one (its
    signature `FSMN` is in the file: a path holding those letters costs one needless
    rewrite). Its bits vouch for files since the monitor's last answer, and no
    monitor watched the directory while it was in the trash; the checkout path's
    index, written with the fsmonitor off, has none either. Returns True when it
    rewrote the index. Raises GitError."""
    try:
        with open(os.path.join(placed.admin, "index"), "rb") as fh:
            if b"FSMN" not in fh.read():
                return False
    except FileNotFoundError:
        return False
    index.drop_fsmonitor(placed.path)
    return True


def finish(placed: Placed) -> None:
    """After the proof: what is left of the entry (entry.json and the admin copy,
    both now in the worktree's admin dir) is removed. Only a trash entry with no
    `worktree/` left is ever removed here."""
    entry = placed.entry
    if entry.holds_worktree or os.path.lexists(entry.worktree):
        return
    shutil.rmtree(entry.path, ignore_errors=True)

