"""A git lock file (`index.lock`, `HEAD.lock`, a ref's `.lock`) in the way: held by a
running git, or stale (a killed git left it), and what clears it.

git takes a lock by creating `<file>.lock` with O_EXCL and keeps it open while it
writes, then renames it over the file; a git killed in between leaves it behind,
and every later git that needs the file fails with "Unable to create
'<file>.lock': File exists." until it is removed. The one lock removed here is
git-ao's own (`clear_own_stale`): a ref's under refs/ao/ that no process holds,
left by a killed git-ao. Any other only the user knows no git of theirs is about
to finish with.
"""

from __future__ import annotations

import os
import re
import shlex
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # psutil is imported where a process is looked at: a save that
    import psutil  # meets no lock never loads it


def _errors() -> tuple[type[Exception], ...]:
    """psutil's errors of a process that ended or denies access."""
    import psutil
    return psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess

# git's message when a lock file exists (lockfile.c, unable_to_lock_message).
_IN_THE_WAY = re.compile(r"Unable to create '([^']+\.lock)': File exists")


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


def holders(lock: str, worktree: str | None = None) -> list[int]:
    """Pids of the processes that may hold `lock`: those with it open, and the git
    processes whose working directory is in `worktree` (not in a repository nested
    in it) or in the lock's directory (between two writes a git may have it
    closed). Never this process or its descendants (git-ao's own gits), and an
    ancestor only with the lock open. One pass over the process table
    (psutil.process_iter), open files read only for git processes, then each one
    found read again: it must still run as the same process (not a zombie) with
    the same tie. A process that exits or denies access is skipped. Never raises."""
    import psutil
    lock = os.path.realpath(lock)
    roots = [os.path.realpath(p) for p in (os.path.dirname(lock), worktree) if p]
    mine, parents = _own()
    errors = _errors()

    def tie(proc: psutil.Process, name: str, cwd: str) -> bool:
        if not name.startswith("git"):
            return False
        if cwd and proc.pid not in parents and _inside(cwd, roots) \
                and not _other_repository(cwd, worktree):
            return True
        try:
            return any(f.path == lock for f in proc.open_files())
        except errors:
            return False

    found: list[int] = []
    for proc in psutil.process_iter(["pid", "name", "cwd"]):
        info = proc.info
        if info["pid"] in mine:
            continue
        if tie(proc, info.get("name") or "", info.get("cwd") or ""):
            found.append(info["pid"])
    alive = []
    for pid in found:  # read again: a git that ended meanwhile holds nothing
        try:
            proc = psutil.Process(pid)
            if proc.status() != psutil.STATUS_ZOMBIE and tie(proc, proc.name(), proc.cwd()):
                alive.append(pid)
        except errors:
            continue
    return sorted(alive)


def describe(lock: str, worktree: str | None = None) -> str:
    """One line for the lock file `lock`: held by which running git, or stale with
    the command that clears it (see holders)."""
    pids = holders(lock, worktree)
    if pids:
        return f"{lock} is held by a running git (pid {', '.join(map(str, pids))}); " \
               "wait for it to finish"
    return f"{lock} is stale (no process holds it; a killed git left it): clear it " \
           f"with: rm {shlex.quote(lock)}"


def own_stale(message: str) -> str | None:
    """The lock file `message` (a git failure) says is in the way, when it is one of
    git-ao's own and stale: a ref's lock under `<git dir>/refs/ao/` (only git-ao
    writes there) that still exists and no process holds (see holders). Else
    None: index.lock, refs/heads and every other lock stay the user's."""
    m = _IN_THE_WAY.search(message)
    if m is None:
        return None
    path = m.group(1)
    parts = os.path.normpath(path).split(os.sep)
    at = [i for i in range(1, len(parts) - 2) if parts[i:i + 2] == ["refs", "ao"]]
    if not at or not os.path.isfile(path) or os.path.islink(path):
        return None
    git_dir = os.sep.join(parts[:at[0]]) or os.sep
    if not os.path.isfile(os.path.join(git_dir, "HEAD")) or holders(path):
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
    m = _IN_THE_WAY.search(message)
    if m is None or not os.path.exists(m.group(1)):
        return message
    return f"{message}; {describe(m.group(1), worktree)}"
