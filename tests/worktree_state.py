"""A state comparator: everything a person would notice about a worktree.

state(path) returns a dict of:
- head: the HEAD commit id; branch: the full branch ref, or None when detached;
- index: every index entry (`git ls-files -s`), and flags: the entries whose
  flags hide them (`git ls-files -v`: assume-unchanged, skip-worktree); with the
  intent-to-add marks of the status records they fix the tree `git write-tree`
  would make of the index, so that tree is not written;
- status: the records of `git status --porcelain=v2 -z --untracked-files=all`;
- files: bytes and executable bit of every non-ignored regular file, the target of
  every non-ignored symlink (tracked and untracked alike);
- ignored: the ignored paths present (an ignored directory counts once).

Two equal dicts mean the worktree came back exactly. `assert_restored` is the
check a round trip must pass: everything equal, and no ignored file brought back
(preserve never captures them).

Every git command here runs with the fsmonitor and the untracked cache off, so
the comparator sees the files themselves, whatever the repository is set to.
"""

from __future__ import annotations

import os
import stat
import subprocess

_TRUTH = ("-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false")


def _run(path, *args, check=True) -> subprocess.CompletedProcess:
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        env.pop(name, None)
    return subprocess.run(["git", *_TRUTH, *args], cwd=path, capture_output=True, check=check,
                          env=env)


def _git(path, *args) -> bytes:
    return _run(path, *args).stdout


def _z(data: bytes) -> list:
    return [p for p in data.split(b"\0") if p]


def _file(full: bytes):
    st = os.lstat(full)
    if stat.S_ISLNK(st.st_mode):
        return ("link", os.readlink(full))
    if stat.S_ISREG(st.st_mode):
        with open(full, "rb") as fh:
            return ("file", bool(st.st_mode & 0o100), fh.read())
    if stat.S_ISDIR(st.st_mode):
        return None  # a tracked path now a directory: its files are listed on their own
    return ("other", stat.S_IFMT(st.st_mode))


def _admin_dir(path: str) -> str:
    """The worktree's admin dir: its `.git` directory, or where its `.git` file points."""
    dotgit = os.path.join(path, ".git")
    if os.path.isdir(dotgit):
        return dotgit
    if os.path.isfile(dotgit):
        with open(dotgit, encoding="utf-8") as fh:
            line = fh.read().strip()
        if line.startswith("gitdir: "):
            return os.path.normpath(os.path.join(path, line[len("gitdir: "):]))
    return os.path.join(path, _git(path, "rev-parse", "--git-dir").strip().decode())


def _branch(path: str):
    """What `git symbolic-ref -q HEAD` prints (the full branch ref), None when detached."""
    try:
        with open(os.path.join(_admin_dir(path), "HEAD"), "rb") as fh:
            head = fh.read().strip()
    except FileNotFoundError:
        return None
    return head[len(b"ref: "):] if head.startswith(b"ref: ") else None


def state(path) -> dict:
    """The comparable state of the worktree at `path` (see module docstring)."""
    path = str(path)
    records = _z(_git(path, "status", "--porcelain=v2", "-z", "--branch",
                      "--untracked-files=all"))
    oid = next(r for r in records if r.startswith(b"# branch.oid "))[len(b"# branch.oid "):]
    head = None if oid == b"(initial)" else oid  # None on an unborn branch
    branch = _branch(path)
    # `ls-files -s -v`: each entry with the tag `ls-files -v` gives it
    tagged = _z(_git(path, "ls-files", "-s", "-v", "-z"))
    index = sorted(r[2:] for r in tagged)
    flags = sorted(r[:2] + r.split(b"\t", 1)[1] for r in tagged if not r.startswith(b"H "))
    status = sorted(r for r in records if not r.startswith(b"# "))
    files = {}
    for rel in _z(_git(path, "ls-files", "-z", "--cached", "--others", "--exclude-standard")):
        full = os.path.join(path.encode(), rel)
        try:
            found = _file(full)
        except (FileNotFoundError, NotADirectoryError):
            continue
        if found is not None:
            files[rel] = found
    ignored = sorted(_z(_git(path, "ls-files", "-z", "--others", "--ignored",
                             "--exclude-standard", "--directory")))
    return {"head": head, "branch": branch, "index": index, "flags": flags, "status": status, "files": files,
            "ignored": ignored}


def differences(before: dict, after: dict, *, skip=("ignored",)) -> list:
    """Human-readable lines naming what differs (keys in `skip` are not compared)."""
    out = []
    for key, value in before.items():
        if key in skip or value == after.get(key):
            continue
        if key == "files":
            a, b = before["files"], after["files"]
            for p in sorted(set(a) | set(b)):
                if a.get(p) != b.get(p):
                    out.append(f"file {p!r}: {str(a.get(p))[:80]} -> {str(b.get(p))[:80]}")
        else:
            out.append(f"{key}: {str(value)[:300]} -> {str(after.get(key))[:300]}")
    return out


def same_but_ignored(before: dict, after: dict) -> bool:
    """True when everything but the ignored files matches (restore never brings those back)."""
    return not differences(before, after)


def assert_restored(before: dict, after: dict):
    """A round trip came back exactly: every key equal, the ignored files too (restore
    brings them back from the trash, whole or moved into the new worktree)."""
    diff = differences(before, after, skip=())
    assert not diff, "worktree did not come back exactly:\n" + "\n".join(diff)




def exact_state(path) -> dict:
    """`state(path)` and what it leaves out: the permission bits of every regular file
    (ignored ones too) and of the directories holding them, every directory (empty
    ones too), the sparse-checkout patterns, the entries of a sparse index as it
    holds them and the worktree's sparse settings. What the slow restore path must give back beyond the contents."""
    path = str(path)
    out = state(path)
    modes, dirs = {}, {b"."}
    for rel in _z(_git(path, "ls-files", "-z", "--cached", "--others")):
        full = os.path.join(path.encode(), rel)
        try:
            st = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):
            continue
        if stat.S_ISREG(st.st_mode):
            modes[rel] = oct(stat.S_IMODE(st.st_mode))
            parts = rel.split(b"/")
            dirs.update(b"/".join(parts[:i]) for i in range(1, len(parts)))
    out["modes"] = modes
    out["dir_modes"] = {d: oct(stat.S_IMODE(os.lstat(os.path.join(path.encode(), d)).st_mode))
                        for d in sorted(dirs)}
    out["directories"] = sorted(
        os.path.relpath(os.path.join(root, d), path)
        for root, dnames, _ in os.walk(path) for d in dnames
        if d != ".git" and not root.startswith(os.path.join(path, ".git")))
    try:
        with open(os.path.join(_admin_dir(path), "info", "sparse-checkout"), "rb") as fh:
            out["sparse_patterns"] = fh.read()
    except FileNotFoundError:
        out["sparse_patterns"] = None
    # A sparse index holds a directory outside the patterns as one entry.
    out["sparse_index"] = sorted(_z(_git(path, "ls-files", "--sparse", "-s", "-z")))
    config = dict(e.split(b"\n", 1) for e in _z(_git(path, "config", "-z", "--list"))
                  if b"\n" in e)
    out["sparse_config"] = [config.get(key, b"")
                            for key in (b"core.sparsecheckout", b"core.sparsecheckoutcone",
                                        b"index.sparse")]
    return out
