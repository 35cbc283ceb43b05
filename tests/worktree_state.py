"""A state comparator: everything a person would notice about a worktree.

state(path) returns a dict of HEAD, branch (or detached), the index entries,
`git status --porcelain=v2`, the bytes, mode and symlink target of every file
that is not ignored, and the list of ignored paths. Two equal dicts mean the
worktree came back exactly.
"""

from __future__ import annotations

import os
import stat
import subprocess


def _git(path, *args) -> bytes:
    return subprocess.run(["git", *args], cwd=path, capture_output=True, check=True).stdout


def _z(data: bytes) -> list:
    return [p for p in data.split(b"\0") if p]


def state(path) -> dict:
    """The comparable state of the worktree at `path` (see module docstring)."""
    path = str(path)
    head = _git(path, "rev-parse", "HEAD").strip()
    res = subprocess.run(["git", "symbolic-ref", "-q", "HEAD"], cwd=path, capture_output=True)
    branch = res.stdout.strip() if res.returncode == 0 else None
    index = sorted(_z(_git(path, "ls-files", "-s", "-z")))
    status = sorted(_z(_git(path, "status", "--porcelain=v2", "-z", "--untracked-files=all")))
    files = {}
    for rel in _z(_git(path, "ls-files", "-z", "--cached", "--others", "--exclude-standard")):
        full = os.path.join(path.encode(), rel)
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            files[rel] = ("link", os.readlink(full))
        elif stat.S_ISREG(st.st_mode):
            with open(full, "rb") as fh:
                files[rel] = ("file", bool(st.st_mode & 0o100), fh.read())
        else:
            files[rel] = ("other", stat.S_IFMT(st.st_mode))
    ignored = sorted(_z(_git(path, "ls-files", "-z", "--others", "--ignored",
                             "--exclude-standard", "--directory")))
    return {"head": head, "branch": branch, "index": index, "status": status, "files": files,
            "ignored": ignored}


def same_but_ignored(before: dict, after: dict) -> bool:
    """True when everything but the ignored files matches (restore never brings those back)."""
    a = {k: v for k, v in before.items() if k != "ignored"}
    b = {k: v for k, v in after.items() if k != "ignored"}
    return a == b
