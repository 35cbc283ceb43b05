"""A git lock file (`index.lock`, `HEAD.lock`, a ref's `.lock`) in the way: held by a
running process (git, or any program with it open), stale (no process has it open,
which this system can tell: a killed git left it), or not known, and what clears it.
`judge` is the one judgement; every message and every removal goes by it.

git takes a lock by creating `<file>.lock` with O_EXCL and keeps it open while it
writes, then renames it over the file; a git killed in between leaves it behind,
and every later git that needs the file fails with "Unable to create
'<file>.lock': File exists." until it is removed. The one lock removed here is
git-ao's own (`clear_own_stale`): a ref's under refs/ao/ judged stale, left by a
killed git-ao. Any other only the user knows no git of theirs is about to finish
with.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # psutil is imported where a process is looked at: a save that
    import psutil  # meets no lock never loads it


def _errors() -> tuple[type[Exception], ...]:
    """psutil's errors of a process that ended or denies access."""
    import psutil
    return psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess

@functools.cache
def _in_the_way() -> re.Pattern[str]:
    """git's message when a lock file exists (lockfile.c, unable_to_lock_message),
    compiled when a failure is first read: a save that meets no lock compiles none."""
    return re.compile(r"Unable to create '([^']+\.lock)': File exists")


def _inside(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _own() -> tuple[set[int], set[int]]:
    """(this process and its descendants, its ancestors): git-ao's own gits never
    hold a lock it reports; an ancestor (the `git` wrapper that ran git-ao, a git
    running a hook) counts only with the lock open."""
    import psutil
    me = psutil.Process()
    mine = {me.pid}
    try:
        mine.update(c.pid for c in me.children(recursive=True))
    except _errors():
        pass
    return mine, ancestors()


def ancestors() -> set[int]:
    """The pids of this process's ancestors, walked by parent pid up to pid 1. One
    that cannot be read ends the walk, and those found so far stay (psutil's
    `parents()` raises instead, which would leave none)."""
    import psutil
    parents: set[int] = set()
    pid = os.getppid()
    while pid > 0 and pid not in parents:
        parents.add(pid)
        try:
            pid = psutil.Process(pid).ppid()
        except _errors():
            break
    return parents


def _other_repository(cwd: str, worktree: str | None) -> bool:
    """Is `cwd` inside a repository nested in `worktree` (a `.git` in a directory
    between them), so a git there works on another repository's files?"""
    if not worktree:
        return False
    top = os.path.realpath(worktree)
    d = cwd
    while d != top and d.startswith(top.rstrip("/") + "/"):
        if os.path.lexists(os.path.join(d, ".git")):
            return True
        d = os.path.dirname(d)
    return False


def _proc_name(pid: int) -> str:
    """The process's name (its `comm`), or '?' when it cannot be read."""
    import psutil
    try:
        return psutil.Process(pid).name() or "?"
    except (psutil.Error, OSError):
        return "?"


class Holder(NamedTuple):
    """A process that has a lock file open, or may hold it (a git at work there)."""

    pid: int
    name: str

    def __str__(self) -> str:
        return f"pid {self.pid} ({self.name})"


class Judgement(NamedTuple):
    """What is known of who holds a lock file (see `judge`).

    holders: the processes that hold it or may. unread: processes that may have it
    open but whose open files could not be read (they run as the lock file's owner,
    who created it, and deny the reading). known: the open files of every process
    could be read at all on this system (Linux /proc, else psutil's open_files)."""

    lock: str
    holders: tuple[Holder, ...]
    unread: tuple[Holder, ...]
    known: bool

    @property
    def stale(self) -> bool:
        """No process has the lock open, and that is known: only then may it be
        removed, or called stale."""
        return self.known and not self.holders and not self.unread


def _same_file(a: str, st: os.stat_result) -> bool:
    try:
        other = os.stat(a)
    except OSError:
        return False
    return (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino)


def _open_by_proc(lock: str, st: os.stat_result) -> tuple[set[int], set[int]]:
    """(the pids with `lock` open, the pids running as its owner whose fds cannot
    be read), from the readlinks of /proc/<pid>/fd/*. A link naming the lock's
    path is it; one with the same base name is compared by inode (a path seen
    through another mount). A process that ends meanwhile is skipped."""
    base = os.path.basename(lock)
    found: set[int] = set()
    unread: set[int] = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        fd_dir = f"/proc/{name}/fd"
        try:
            fds = os.listdir(fd_dir)
        except PermissionError:
            with contextlib.suppress(OSError):
                if os.stat(f"/proc/{name}").st_uid == st.st_uid:
                    unread.add(int(name))
            continue
        except OSError:
            continue  # ended
        for fd in fds:
            link = f"{fd_dir}/{fd}"
            try:
                target = os.readlink(link)
            except OSError:
                continue
            if target == lock or (os.path.basename(target) == base and _same_file(link, st)):
                found.add(int(name))
                break
    return found, unread


def _open_by_psutil(lock: str, st: os.stat_result) -> tuple[set[int], set[int]] | None:
    """As `_open_by_proc`, from psutil's open_files of every process; None when
    psutil cannot list open files here."""
    import psutil
    base = os.path.basename(lock)
    found: set[int] = set()
    unread: set[int] = set()
    for proc in psutil.process_iter(["pid", "uids"]):
        try:
            if any(f.path == lock or (os.path.basename(f.path) == base
                                      and _same_file(f.path, st))
                   for f in proc.open_files()):
                found.add(proc.pid)
        except psutil.AccessDenied:
            uids = proc.info.get("uids")
            if uids is None or uids.real == st.st_uid:
                unread.add(proc.pid)
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
        except (NotImplementedError, OSError):
            return None
    return found, unread


def open_by(lock: str) -> tuple[set[int], set[int]] | None:
    """(the pids of every process, of any program, with the file `lock` open; the
    pids running as its owner whose open files cannot be read), or None when this
    system cannot say (no /proc, and psutil lists no open files). A lock that is
    gone has no holder: (set(), set())."""
    try:
        st = os.stat(lock)
    except OSError:
        return set(), set()
    real = os.path.realpath(lock)
    if os.path.isdir("/proc/self/fd"):
        return _open_by_proc(real, st)
    return _open_by_psutil(real, st)


def judge(lock: str, worktree: str | None = None) -> Judgement:
    """Who holds the lock file `lock`, the one judgement every caller shares: the
    processes of any program with it open (git, a libgit2 or JGit tool), and the
    git processes whose working directory is in `worktree` (not in a repository
    nested in it) or in the lock's directory (between two writes a git may have it
    closed). Never this process or its descendants (git-ao's own gits), and an
    ancestor only with the lock open. Each git found by its directory is read
    again: it must still run as the same process (not a zombie) with the same tie.
    git and libgit2 create a lock with O_EXCL, so no process opens one that exists:
    a lock no process has open when it is looked at stays so. Never raises."""
    import psutil
    real = os.path.realpath(lock)
    roots = [os.path.realpath(p) for p in (os.path.dirname(real), worktree) if p]
    mine, parents = _own()
    errors = _errors()
    scanned = open_by(lock)
    opened, unread = scanned if scanned is not None else (set(), set())
    opened -= mine
    unread -= mine

    def at_work(proc: psutil.Process, name: str, cwd: str) -> bool:
        # A git at work where the lock is, which may hold it between two writes.
        return name.startswith("git") and bool(cwd) and proc.pid not in parents \
            and _inside(cwd, roots) and not _other_repository(cwd, worktree)

    working: list[int] = []
    for proc in psutil.process_iter(["pid", "name", "cwd"]):
        info = proc.info
        if info["pid"] in mine or info["pid"] in opened:
            continue
        if at_work(proc, info.get("name") or "", info.get("cwd") or ""):
            working.append(info["pid"])
    alive = set(opened)
    for pid in working:  # read again: a git that ended meanwhile holds nothing
        try:
            proc = psutil.Process(pid)
            if proc.status() != psutil.STATUS_ZOMBIE and at_work(proc, proc.name(), proc.cwd()):
                alive.add(pid)
        except errors:
            continue
    return Judgement(lock, tuple(Holder(p, _proc_name(p)) for p in sorted(alive)),
                     tuple(Holder(p, _proc_name(p)) for p in sorted(unread)),
                     scanned is not None)


def holders(lock: str, worktree: str | None = None) -> list[int]:
    """The pids of the processes that hold `lock` or may (see judge)."""
    return [h.pid for h in judge(lock, worktree).holders]


def describe(lock: str, worktree: str | None = None, judged: Judgement | None = None) -> str:
    """One line for the lock file `lock` (see judge; `judged`, when given, is that
    judgement made already): held by which processes (pid and name); stale, with the
    command that clears it, only when no process has it open and that is known;
    else that it cannot be told."""
    j = judged if judged is not None else judge(lock, worktree)
    import shlex  # here: only a lock in the way is described
    rm = f"rm {shlex.quote(lock)}"
    if j.holders:
        return f"{lock} is held by {', '.join(map(str, j.holders))}; wait for it to finish"
    if j.stale:
        return f"{lock} is stale (no process holds it; a killed git left it): clear it " \
               f"with: {rm}"
    why = f"the open files of {', '.join(map(str, j.unread))} cannot be read" if j.unread \
        else "this system cannot tell which processes have it open"
    return f"{lock} may be held ({why}): once no program is writing in the repository, " \
           f"clear it with: {rm}"


def own_stale(message: str) -> str | None:
    """The lock file `message` (a git failure) says is in the way, when it is one of
    git-ao's own and stale: a ref's lock under `<git dir>/refs/ao/` (only git-ao
    writes there) that still exists and is stale (see judge). Else
    None: index.lock, refs/heads and every other lock stay the user's."""
    m = _in_the_way().search(message)
    if m is None:
        return None
    path = m.group(1)
    parts = os.path.normpath(path).split(os.sep)
    at = [i for i in range(1, len(parts) - 2) if parts[i:i + 2] == ["refs", "ao"]]
    if not at or not os.path.isfile(path) or os.path.islink(path):
        return None
    git_dir = os.sep.join(parts[:at[0]]) or os.sep
    if not os.path.isfile(os.path.join(git_dir, "HEAD")) or not judge(path).stale:
        return None
    return path


def clear_own_stale(message: str) -> str | None:
    """Remove the lock `own_stale(message)` names; its path, or None when there is
    none or it is gone already. Raises nothing (an unlink that fails leaves the
    lock, and the failure is said as before)."""
    path = own_stale(message)
    if path is None:
        return None
    try:
        os.unlink(path)
    except OSError:
        return None
    return path


def explain(message: str, worktree: str | None = None) -> str:
    """`message` (a git failure) with a note on the lock file in its way, when git
    said one exists and it is still there (see describe); else `message`."""
    m = _in_the_way().search(message)
    if m is None or not os.path.exists(m.group(1)):
        return message
    return f"{message}; {describe(m.group(1), worktree)}"
