"""Is git new enough? The floor git-ao needs, and its check, once per git
executable and process."""

from __future__ import annotations

from git_ao import git, gitfiles
from git_ao.errors import Fatal, current_directory
from git_ao.git import parse

MIN_VERSION = (2, 36)


def version(cwd: str = ".") -> tuple[int, ...]:
    """Return git's version as a tuple of ints, e.g. (2, 39, 5) (`git --version`)."""
    return parse.version(git.line(["--version"], cwd))


_new_enough: set[str] = set()


def check_version(known: str | None = None) -> str | None:
    """Raise Fatal when git is older than MIN_VERSION (checked once per command).

    A process that runs many commands (a test worker) asks each git executable
    once: it is known by a key of its path on PATH, inode, size, mtime and ctime,
    and GIT_EXEC_PATH. known: the key an earlier run passed (the caller keeps it
    in the data dir), which spares this one `git --version` for the same git; a
    git replaced or another one on PATH has another key and is asked again.
    Returns this git's key (None when git is not on PATH)."""
    key = gitfiles.executable_key("git")
    if key is not None and (key in _new_enough or key == known):
        _new_enough.add(key)
        return key
    try:
        where = current_directory()
    except Fatal:
        where = "/"  # `git --version` needs no repository: any directory that exists
    have = version(where)
    if have < MIN_VERSION:
        need = ".".join(map(str, MIN_VERSION))
        raise Fatal(f"git {need} or newer is needed; this is git {'.'.join(map(str, have))}")
    if key is not None:
        _new_enough.add(key)
    return key
