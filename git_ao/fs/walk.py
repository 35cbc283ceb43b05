"""An independent walk of a worktree's directory: the witness for taking it away.

`git status` shows what git chooses to show. Before a directory is taken
away, this walk lists what is really there, through the file system alone:
every file, symlink and special file with its stat data, every directory
holding a `.git` (a nested repository or worktree), every mount point, every
directory that cannot be read. `unaccounted` then compares the walk with the
capture: a file that is neither in the preserve commit nor ignored by the
repository blocks the removal, named with the reason.

The walk never follows a symlink and never descends across a mount point
(`st_dev`, and the kernel's mount table where there is one). It opens each
directory relative to its parent's descriptor, so a path longer than PATH_MAX
is walked, and reported, rather than missed. The stat data it keeps is what
`changed_since` compares after the directory was moved, to see writes that
landed after the capture.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from git_ao.fs import is_empty_dir
from git_ao.mounts import fs_type, mount_points

__all__ = ["fs_type", "is_empty_dir", "mount_points"]  # callers read them here too

PATH_MAX = 4096
S_ISDIR, S_ISREG, S_ISLNK = stat.S_ISDIR, stat.S_ISREG, stat.S_ISLNK
_new_entry = tuple.__new__
# Linux stamps file times from a clock that ticks every few milliseconds, so a
# write within one tick of a stat may leave mtime and ctime as they were. A file
# whose times fall within this window of the walk is compared by content.
RACY_NS = 50_000_000
# A time on a whole second may come from a file system whose stamps are whole
# seconds (FAT's even ones, ext3, HFS+): a write up to two seconds after it may
# leave it as it was, so its window is that long.
COARSE_NS = 2_000_000_000


def _near(t_ns: int, ns: int) -> bool:
    return t_ns >= ns - RACY_NS or (t_ns >= ns - COARSE_NS and t_ns % 1_000_000_000 == 0)


def near(mtime_ns: int, ctime_ns: int, ns: int) -> bool:
    """Is either file time at `ns` or after, or within its racy window before it
    (RACY_NS, or COARSE_NS for a time on a whole second)? All in ns since the epoch."""
    return _near(mtime_ns, ns) or _near(ctime_ns, ns)


class Entry(NamedTuple):
    """What the walk saw of one path that is not a directory: kind is 'file',
    'link' or 'other' (a FIFO, socket or device). A tuple: the walk makes one
    per file, and a tuple is the cheapest record Python builds."""

    kind: str
    mode: int
    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int

    @classmethod
    def of(cls, st: os.stat_result) -> Entry:
        mode = st.st_mode
        kind = "file" if stat.S_ISREG(mode) else "link" if stat.S_ISLNK(mode) else "other"
        return cls(kind, mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)

    def touched_since(self, ns: int) -> bool:
        """Were its times set at `ns` (the clock file times use) or after, or within
        their racy window before it (`near`)? ctime cannot be set back, so False
        means unchanged since."""
        return near(self.mtime_ns, self.ctime_ns, ns)


@dataclass(frozen=True)
class Blocker:
    """Something under the worktree that stops its removal: `path` is relative to
    the worktree ('.' for the worktree itself)."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass
class Walk:
    """The result of `walk`. Paths are relative to `root`, '/'-separated, decoded
    with the file system encoding (surrogateescape), as git.split_z decodes git's."""

    root: str
    started_ns: int
    entries: dict[str, Entry] = field(default_factory=dict)
    dirs: dict[str, int] = field(default_factory=dict)  # st_mode of each directory below root
    # (size, mtime_ns, ctime_ns, ino) of each directory in `dirs`, from the lstat of
    # its parent's listing (before the walk lists it)
    dir_sigs: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)
    empty: list[str] = field(default_factory=list)  # the directories holding nothing
    # how many names each directory entered held when it was listed ('' is root)
    listed: dict[str, int] = field(default_factory=dict)
    nested: list[str] = field(default_factory=list)
    blockers: list[Blocker] = field(default_factory=list)
    # {path: strerror} of what the walk could not read (a directory it could not
    # list or open, ending in '/', an entry it could not stat): each a blocker too.
    unreadable: dict[str, str] = field(default_factory=dict)

    def under_nested(self, rel: str) -> bool:
        """Is `rel` inside one of the nested repositories or worktrees?"""
        return any(rel.startswith(n + "/") for n in self.nested)

    def racy(self, rel: str) -> bool:
        """Were this entry's times set so close to the walk that a later write in the
        same clock tick could have left them unchanged?"""
        return self.entries[rel].touched_since(self.started_ns)


def is_mount_point(path: str, mounts: set[str] | None = None) -> bool:
    """Is the directory `path` itself a mount point (another device than its
    parent, or listed in the mount table)?"""
    real = os.path.realpath(path)
    if os.path.ismount(real):
        return True
    return real in (mounts if mounts is not None else mount_points())


def mounts_inside(root: str) -> list[str]:
    """Every mount point strictly inside the directory `root`, sorted: those the
    kernel's mount table lists below its real path (a bind mount of the same file
    system keeps its `st_dev`, so only the table shows it), and every directory
    below it on another device than `root` (where there is no table). The scan
    reads directories only, never follows a symlink and never enters `.git`.
    Raises OSError when `root` cannot be read."""
    real = os.path.realpath(root)
    found = {m for m in mount_points() if m.startswith(real.rstrip("/") + "/")}
    dev = os.lstat(real).st_dev
    stack = [real]
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                subdirs = [e for e in it if e.name != ".git" and e.is_dir(follow_symlinks=False)]
        except OSError:
            continue  # unreadable: the walk of a removal names it; nothing is entered
        for e in subdirs:
            try:
                if e.stat(follow_symlinks=False).st_dev != dev:
                    found.add(e.path)
                    continue
            except OSError:
                continue
            if e.path not in found:
                stack.append(e.path)
    return sorted(found)


def walk(root: str, *, mounts: set[str] | None = None,
         skip: frozenset[str] = frozenset(), started_ns: int | None = None) -> Walk:
    """Walk the directory `root` without following symlinks or crossing mounts.
    A directory in `skip` (relative, no trailing '/') is listed in `dirs` but not
    entered (a wholly ignored node_modules/ a caller does not judge).

    Returns a Walk; never raises for what it finds inside (an unreadable
    directory, a mount point, a path too long for git are blockers). Raises
    OSError only when `root` itself cannot be opened. A directory named `.git`
    is never entered; the directory holding it (other than `root`) is listed in
    `nested`, and a `.git` file likewise marks a nested worktree or submodule.
    started_ns: the time (ns, the clock file times use) from which an entry counts
    as racy (`Walk.racy`); default: when the walk starts. A caller that reads the
    worktree with git alongside passes a time taken before either began.
    """
    w = Walk(root=root, started_ns=time.time_ns() if started_ns is None else started_ns)
    mounts = mount_points() if mounts is None else mounts
    real = os.path.realpath(root)
    inner_mounts = {m for m in mounts if m.startswith(real.rstrip("/") + "/")}
    if is_mount_point(real, mounts):
        w.blockers.append(Blocker(".", "the worktree is itself a mount point; a directory "
                                       "that is mounted is never taken away"))
        return w
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        dev = os.fstat(fd).st_dev
        _walk_from(w, fd, "", dev, real, inner_mounts, skip)
    finally:
        os.close(fd)
    return w


def _walk_from(w: Walk, top_fd: int, top_rel: str, dev: int, real_root: str,
               inner_mounts: set[str], skip: frozenset[str]) -> None:
    # Depth first with an explicit stack of open directories, so a deep tree costs
    # one descriptor per level and no Python recursion. Each directory's files are
    # recorded as it is listed; its subdirectories wait on the stack.
    root_len = len(os.fsencode(real_root)) + 1
    entries, blockers, dirs, dir_sigs = w.entries, w.blockers, w.dirs, w.dir_sigs
    # each open directory: (its descriptor, path, subdirectories still to enter:
    # (name, path, st_mode, signature))
    stack: list[tuple[int, str, list[tuple[str, str, int, tuple[int, int, int, int]]]]] = []

    def enter(fd: int, rel: str) -> None:
        subdirs: list[tuple[str, str, int, tuple[int, int, int, int]]] = []
        listed = _list(w, fd, rel)
        w.listed[rel] = len(listed)
        stack.append((fd, rel, subdirs))
        if not listed and rel:
            w.empty.append(rel)
        for e in listed:
            name = e.name
            path = f"{rel}/{name}" if rel else name
            try:
                st = e.stat(follow_symlinks=False)
            except FileNotFoundError:
                # Removed since the listing (an editor's swap file): nothing there to
                # lose. One written again later is newer than `started_ns`.
                continue
            except OSError as exc:
                blockers.append(Blocker(path, f"cannot stat: {exc.strerror}"))
                w.unreadable[path] = exc.strerror or str(exc)
                continue
            if inner_mounts and os.path.join(real_root, path) in inner_mounts:
                # A file bind-mounted over one of the worktree's (its own .git too):
                # another file's content, which nothing may move or write through.
                blockers.append(Blocker(path, "a mount point; nothing is taken away across "
                                              "a mount"))
                continue
            if name == ".git":
                if rel:
                    w.nested.append(rel)
                continue
            mode = st.st_mode
            if not S_ISDIR(mode):
                # The record is built inline: this runs once per file, and the
                # walk's cost is mostly its per-file work.
                entries[path] = _new_entry(Entry, (
                    "file" if S_ISREG(mode) else "link" if S_ISLNK(mode) else "other",
                    mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
                # A character is at most 4 bytes: encode only paths that may be too long.
                if (len(path) * 4 + root_len >= PATH_MAX
                        and len(os.fsencode(os.path.join(real_root, path))) >= PATH_MAX):
                    blockers.append(Blocker(path, "its path is longer than PATH_MAX, so git "
                                                  "cannot read or store it"))
            elif st.st_dev != dev:  # (one the mount table lists was caught above)
                blockers.append(Blocker(path, "a mount point; nothing is taken away across "
                                              "a mount"))
            elif path in skip:
                dirs[path] = mode
                dir_sigs[path] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
            else:
                subdirs.append((name, path, mode,
                                (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)))

    try:
        enter(top_fd, top_rel)
        while stack:
            fd, _rel, subdirs = stack[-1]
            if not subdirs:
                stack.pop()
                if fd != top_fd:
                    os.close(fd)
                continue
            name, path, mode, sig = subdirs.pop()
            try:
                sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                continue  # removed since it was listed, as above
            except OSError as exc:
                blockers.append(Blocker(path, f"cannot open the directory ({exc.strerror}), "
                                              "so what it holds is unknown"))
                w.unreadable[path + "/"] = exc.strerror or str(exc)
                continue
            dirs[path] = mode
            dir_sigs[path] = sig
            enter(sub, path)
    finally:
        for fd, _rel, _subdirs in stack:
            if fd != top_fd:
                os.close(fd)
        w.blockers.sort(key=lambda b: b.path)
        w.nested.sort()


class Background:
    """`walk(root, started_ns=...)` running in a thread of its own, so a caller's
    git process runs at the same time (each stat releases the GIL)."""

    def __init__(self, root: str, started_ns: int) -> None:
        self._result: Walk | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(root, started_ns),
                                        name="git-ao-walk", daemon=True)
        self._thread.start()

    def _run(self, root: str, started_ns: int) -> None:
        try:
            self._result = walk(root, started_ns=started_ns)
        except BaseException as exc:  # noqa: BLE001 - raised again by result()
            self._error = exc

    def result(self) -> Walk:
        """The finished walk; raises what `walk` raised (OSError for the root)."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    def abandon(self) -> None:
        """Wait for the walk and drop it (the caller failed before it needed it)."""
        self._thread.join()


def _list(w: Walk, fd: int, rel: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(fd) as it:
            return list(it)
    except OSError as exc:
        w.blockers.append(Blocker(rel or ".", f"cannot read the directory ({exc.strerror}), "
                                              "so what it holds is unknown"))
        w.unreadable[f"{rel}/" if rel else "./"] = exc.strerror or str(exc)
        return []


# Names git will not store in a tree (update-index says "Ignoring path" and exits 0).
def refused_name(rel: str) -> bool:
    """Is `rel` a path git will not store in a tree (core.protectNTFS, on by default):
    a part `.git` or `GIT~1` in any case, with trailing dots or spaces, or with an
    NTFS stream after a ':' (`.git::$INDEX_ALLOCATION`), a backslash also parting
    the path; `.` or `..`?"""
    for part in rel.replace("\\", "/").split("/"):
        low = part.partition(":")[0].lower().rstrip(" .")
        if low == ".git" or low == "git~1" or part in (".", ".."):
            return True
    return False


def _why_missing(rel: str, e: Entry, captured_lower: set[str], started_ns: int) -> str:
    if e.kind == "other":
        return ("a FIFO, socket or device, which git cannot store: move it out of the "
                "worktree, or have git ignore it (a line for it in .git/info/exclude)")
    if refused_name(rel):
        return "a name git refuses to store (.git, GIT~1 and their variants)"
    if rel.lower() in captured_lower:
        return "its name differs only in case from a saved path (core.ignorecase)"
    if e.touched_since(started_ns):
        return ("written as the capture began or since (something is still writing here), "
                "so the capture does not hold it")
    return "git does not show it, so it is not in the capture"


def under(rel: str, prefixes: Iterable[str]) -> bool:
    """Is `rel` equal to, or inside, one of the '/'-ended directory or plain paths?"""
    for p in prefixes:
        if p.endswith("/"):
            if rel.startswith(p) or rel + "/" == p:
                return True
        elif rel == p:
            return True
    return False


def ignored_file(rel: str, ignored: Iterable[str]) -> bool:
    """Is the file (or link) `rel` covered by status's `--ignored=matching` list:
    named there, or inside a directory named there (ending in '/')? A file where
    the list names a directory is not: that directory was replaced since, and
    its pattern may match directories only (`cache/`)."""
    for p in ignored:
        if rel.startswith(p) if p.endswith("/") else rel == p:
            return True
    return False


def unaccounted(w: Walk, captured: set[str], ignored: Iterable[str],
                check_ignored: Callable[[list[str]], set[str]]) -> list[Blocker]:
    """The entries of the walk that the capture cannot account for.

    captured: every path of the preserve commit's worktree and untracked trees
    (or of HEAD's tree when nothing was written). ignored: what `git status
    --ignored=matching` listed (a directory once, ending in '/'). check_ignored:
    asks git about the rest (`git check-ignore`); it returns the ignored subset.
    Ignored files go to the trash with the directory, so they are accounted for;
    so are the insides of nested repositories, which the caller judges apart. An
    entry that is no longer there as walked (removed or replaced while the capture
    was taken) holds nothing to lose here: the check after the move sees whatever
    took its place. Returns the blockers of the walk itself followed by one per
    unaccounted path.
    """
    prefixes = sorted(set(ignored))
    rest = []
    for rel, e in w.entries.items():
        if rel in captured and e.kind != "other":
            continue
        if w.under_nested(rel) or ignored_file(rel, prefixes):
            continue
        rest.append(rel)
    found = list(w.blockers)
    if not rest:
        return found
    ign = check_ignored(sorted(rest))
    lower = {p.lower() for p in captured}
    for rel in sorted(rest):
        if rel in ign or _replaced(w.root, rel, w.entries[rel]):
            continue
        found.append(Blocker(rel, _why_missing(rel, w.entries[rel], lower, w.started_ns)))
    return found


def _replaced(root: str, rel: str, e: Entry) -> bool:
    """Is the walked entry `e` gone from `root`/`rel`, or another file now?"""
    try:
        now = Entry.of(os.lstat(os.path.join(root, rel)))
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False  # past PATH_MAX, unreadable: it stays a blocker
    return (now.kind, now.ino) != (e.kind, e.ino)


def changed_since(before: Walk, after: Walk) -> list[str]:
    """Paths whose entry differs between two walks of the same tree (the second
    usually of the directory after it was moved): added, removed, or with other
    stat data; plus every path that was racy in `before` (its content must be
    compared, since its times cannot tell). Inode numbers are compared too: a
    rename keeps them, a rewrite-and-rename (an editor's save) does not."""
    out = set()
    for rel in set(before.entries) | set(after.entries):
        a, b = before.entries.get(rel), after.entries.get(rel)
        if a != b:
            out.add(rel)
    return sorted(out)


def unchanged_since(before: Walk, root: str, ignored: Iterable[str]) -> bool:
    """Does the directory `root` (the tree `before` walked, usually after it was
    moved) still hold what `before` saw, checked without listing it again: every
    directory below `root` has the stat signature it had (adding, removing or
    renaming an entry sets its directory's mtime and ctime), those whose times
    were within the racy window of `before` and `root` itself are listed again
    and hold the same names, and every file has the stat data it had. What is
    inside an ignored directory, or is an ignored file (`ignored`: status's
    `--ignored=matching` list, a directory ending in '/'), is not compared: it
    is no loss either way. True proves what `changed_since` against a new walk
    would report nothing outside those; False only means "walk again" (any
    difference, or anything the check cannot read). The racy files themselves
    still need their content compared (`racy_paths`)."""
    if before.blockers or before.unreadable:
        return False
    ignored_dirs: set[str] = set()
    ignored_files: set[str] = set()
    for p in ignored:
        (ignored_dirs if p.endswith("/") else ignored_files).add(p.rstrip("/"))
    started = before.started_ns
    lstat, top = os.lstat, root.rstrip("/") + "/"
    skipped: set[str] = set()  # the ignored directories and every one below them
    relist = [""]
    for rel, sig in before.dir_sigs.items():  # (a parent is always listed before its children)
        parent = rel.rpartition("/")[0]
        if parent in skipped:
            skipped.add(rel)
            continue
        try:
            st = lstat(top + rel)
        except OSError:
            return False
        if rel in ignored_dirs:
            # What it holds may change, but it must still be that directory: a
            # file in its place is not what status found ignored.
            if not S_ISDIR(st.st_mode) or st.st_ino != sig[3]:
                return False
            skipped.add(rel)
            continue
        if (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino) != sig \
                or st.st_mode != before.dirs[rel]:
            return False
        if near(sig[1], sig[2], started):
            relist.append(rel)
    entries, dirs = before.entries, before.dirs
    nested = set(before.nested)
    for rel in relist:
        # As many names as then, each one seen then and of the same kind (a file,
        # or a directory: d_type, no stat): the same names. `.git` only where
        # it was (the top, a nested repository).
        try:
            with os.scandir(top + rel) as it:
                now = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
        except OSError:
            return False
        if len(now) != before.listed.get(rel):
            return False
        for name, is_dir in now:
            path = f"{rel}/{name}" if rel else name
            if name == ".git":
                if rel and rel not in nested:
                    return False
            elif not (path in dirs if is_dir else path in entries):
                return False
    for rel, e in entries.items():
        if (skipped or ignored_files) and (rel in ignored_files
                                           or rel.rpartition("/")[0] in skipped):
            continue
        try:
            st = lstat(top + rel)
        except OSError:
            return False
        # (the mode decides the kind)
        if (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino) != e[1:]:
            return False
    return True


def racy_paths(w: Walk, paths: Iterable[str]) -> list[str]:
    """Those of `paths` present in the walk whose times are too close to it to trust."""
    return sorted(p for p in paths if p in w.entries and w.racy(p))
