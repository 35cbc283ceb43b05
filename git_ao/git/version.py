"""Is git new enough? The floor git-ao needs, and its check, once per git
executable and process."""

from __future__ import annotations

import os
import shutil

from git_ao import git
from git_ao.errors import Fatal
from git_ao.git import parse

MIN_VERSION = (2, 36)


def version(cwd: str = ".") -> tuple[int, ...]:
    """Return git's version as a tuple of ints, e.g. (2, 39, 5) (`git --version`)."""
    return parse.version(git.line(["--version"], cwd))


_new_enough: set[tuple[str, int, int]] = set()


def check_version() -> None:
    """Raise Fatal when git is older than MIN_VERSION (checked once per command).

    A process that runs many commands (a test worker) asks each git executable
    once: it is known by its path on PATH, inode and mtime."""
    exe = shutil.which("git")
    try:
        st = os.stat(exe) if exe else None
    except OSError:
        st = None
    key = (exe, st.st_ino, st.st_mtime_ns) if exe and st else None
    if key in _new_enough:
        return
    have = version(os.getcwd() if os.path.isdir(os.getcwd()) else "/")
    if have < MIN_VERSION:
        need = ".".join(map(str, MIN_VERSION))
        raise Fatal(f"git {need} or newer is needed; this is git {'.'.join(map(str, have))}")
    if key is not None:
        _new_enough.add(key)
