"""Is git new enough? The floor git-ao needs, and its check, once per git
executable and process."""

from __future__ import annotations

import os

from git_ao import git
from git_ao.errors import Fatal
from git_ao.git import parse

MIN_VERSION = (2, 36)


def version(cwd: str = ".") -> tuple[int, ...]:
    """Return git's version as a tuple of ints, e.g. (2, 39, 5) (`git --version`)."""
    return parse.version(git.line(["--version"], cwd))


_new_enough: set[str] = set()


def check_version(remember_in: str | None = None) -> None:
    """Raise Fatal when git is older than MIN_VERSION (checked once per command).

    A process that runs many commands (a test worker) asks each git executable
    once: it is known by its path on PATH, inode, size, mtime and ctime, and
    GIT_EXEC_PATH. remember_in: an existing directory (the data dir) where that
    key is kept after a check that passed, so the next command starts no
    `git --version` for the same git; a git replaced or another one on PATH has
    another key and is asked again. A file that cannot be read or written only
    costs the process."""
    exe = _on_path("git")
    try:
        st = os.stat(exe) if exe else None
    except OSError:
        st = None
    key = f"{exe}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0" \
        f"{os.environ.get('GIT_EXEC_PATH', '')}\n" if exe and st else None
    if key is not None and (key in _new_enough or _remembered(remember_in) == key):
        _new_enough.add(key)
        return
    have = version(os.getcwd() if os.path.isdir(os.getcwd()) else "/")
    if have < MIN_VERSION:
        need = ".".join(map(str, MIN_VERSION))
        raise Fatal(f"git {need} or newer is needed; this is git {'.'.join(map(str, have))}")
    if key is not None:
        _new_enough.add(key)
        if remember_in is not None and os.path.isdir(remember_in):
            _remember(remember_in, key)


_FILE = "git-checked"


def _remembered(where: str | None) -> str | None:
    if where is None:
        return None
    try:
        with open(os.path.join(where, _FILE), encoding="utf-8",
                  errors="surrogateescape") as fh:
            return fh.read()
    except OSError:
        return None


def _remember(where: str, key: str) -> None:
    path = os.path.join(where, _FILE)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8", errors="surrogateescape") as fh:
            fh.write(key)
        os.replace(tmp, path)  # readers see the old key or the new one, never half
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _on_path(name: str) -> str | None:
    """The first executable `name` in $PATH, as the processes find it (shutil.which,
    without importing shutil and the compression modules it loads)."""
    for d in os.environ.get("PATH", os.defpath).split(os.pathsep):
        p = os.path.join(d or ".", name)
        if os.access(p, os.X_OK) and not os.path.isdir(p):
            return p
    return None
