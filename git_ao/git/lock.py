"""A git lock file (`index.lock`, `HEAD.lock`, a ref's `.lock`) in the way: held by a
running git, or stale (a killed git left it), and what clears it.

git takes a lock by creating `<file>.lock` with O_EXCL and keeps it open while it
writes, then renames it over the file; a git killed in between leaves it behind,
and every later git that needs the file fails with "Unable to create
'<file>.lock': File exists." until it is removed. Nothing here removes a lock:
only the user knows no git of theirs is about to finish with it.
"""

from __future__ import annotations

import os
import re
import shlex

import psutil

_ERRORS = (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess)
# git's message when a lock file exists (lockfile.c, unable_to_lock_message).
_IN_THE_WAY = re.compile(r"Unable to create '([^']+\.lock)': File exists")


def holders(lock: str, worktree: str | None = None) -> list[int]:
    """Pids of the processes that may hold `lock`: those with it open, and the git
    processes whose working directory is in `worktree` or in the lock's directory
    (between two writes a git may have it closed). One pass over the process
    table (psutil.process_iter), open files read only for git processes; a
    process that exits or denies access is skipped. Never raises."""
    lock = os.path.realpath(lock)
    roots = [os.path.realpath(p) for p in (os.path.dirname(lock), worktree) if p]
    found: list[int] = []
    for proc in psutil.process_iter(["pid", "name", "cwd"]):
        info = proc.info
        name, cwd = info.get("name") or "", info.get("cwd") or ""
        if not name.startswith("git") or info["pid"] == os.getpid():
            continue
        if cwd and any(cwd == r or cwd.startswith(r.rstrip("/") + "/") for r in roots):
            found.append(info["pid"])
            continue
        try:
            if any(f.path == lock for f in proc.open_files()):
                found.append(info["pid"])
        except _ERRORS:
            continue
    return sorted(found)


def describe(lock: str, worktree: str | None = None) -> str:
    """One line for the lock file `lock`: held by which running git, or stale with
    the command that clears it (see holders)."""
    pids = holders(lock, worktree)
    if pids:
        return f"{lock} is held by a running git (pid {', '.join(map(str, pids))}); " \
               "wait for it to finish"
    return f"{lock} is stale (no process holds it; a killed git left it): clear it " \
           f"with: rm {shlex.quote(lock)}"


def explain(message: str, worktree: str | None = None) -> str:
    """`message` (a git failure) with a note on the lock file in its way, when git
    said one exists and it is still there (see describe); else `message`."""
    m = _IN_THE_WAY.search(message)
    if m is None or not os.path.exists(m.group(1)):
        return message
    return f"{message}; {describe(m.group(1), worktree)}"
