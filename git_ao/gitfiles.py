"""Where git's own files say a repository is, read as git reads them, with no
process and no import beyond `os`: a `.git` file's `gitdir:` line, an admin
dir's `gitdir` and `commondir` files, and the discovery that walks up from a
directory; the refs under one prefix; and which git executable PATH names. A
command with little to do (a listing, the notice every command gives) answers
from these before it loads the modules that run git."""

from __future__ import annotations

import os


def gitfile_target(data: bytes, base: str) -> str | None:
    """The directory a `.git` file's content `data` names, as git reads it
    (setup.c, read_gitfile): the text must start with "gitdir: ", only trailing
    CR and LF are dropped (a path may start or end with a space), and a relative
    path is relative to `base`, the directory holding the file. Normalised; None
    when `data` is no such text."""
    text = os.fsdecode(data).rstrip("\r\n")
    if not text.startswith("gitdir: ") or len(text) == len("gitdir: "):
        return None
    return os.path.normpath(os.path.join(base, text[len("gitdir: "):]))


def read_gitfile(dotgit: str) -> str | None:
    """`gitfile_target` of the `.git` file at `dotgit` (base: its directory); None
    when it cannot be read or names nothing."""
    try:
        with open(dotgit, "rb") as fh:
            data = fh.read(65536)
    except OSError:
        return None
    return gitfile_target(data, os.path.dirname(dotgit))


def admin_gitdir(admin: str, *, as_written: bool = False) -> str | None:
    """The `.git` of the worktree a linked worktree's admin dir names in its `gitdir`
    file, as git reads it (worktree.c): trailing white space dropped, and a
    relative path (git 2.48's worktree.useRelativePaths) relative to `admin`,
    normalised; with `as_written`, the text as it stands (a git before 2.48 reads
    a relative one otherwise). None when the file cannot be read or is empty."""
    try:
        with open(os.path.join(admin, "gitdir"), "rb") as fh:
            named = os.fsdecode(fh.read()).rstrip()
    except OSError:
        return None
    if not named or as_written:
        return named or None
    return os.path.normpath(os.path.join(admin, named))


def registered_ns(admin: str) -> int | None:
    """When the linked worktree whose admin dir is `admin` was registered (ns): the
    mtime of its `commondir`, which `git worktree add` writes once. None when it
    cannot be read."""
    try:
        return os.stat(os.path.join(admin, "commondir")).st_mtime_ns
    except OSError:
        return None


def common_dir(git_dir: str) -> str:
    """The common dir of `git_dir`: the one its `commondir` file names (relative to
    it), else `git_dir` itself. Normalised."""
    try:
        with open(os.path.join(git_dir, "commondir"), "rb") as fh:
            named = os.fsdecode(fh.read()).rstrip("\r\n")
    except OSError:
        return os.path.normpath(git_dir)
    return os.path.normpath(os.path.join(git_dir, named)) if named else os.path.normpath(git_dir)


def discover(path: str) -> tuple[str, str | None] | None:
    """Where git's discovery from `path` stops, from the file system alone: (the
    directory, its git dir) for the first directory, walking up, that holds a
    `.git` directory or a `.git` file (its `gitdir:`; None when it does not
    read) or that is itself a git dir (HEAD, objects and refs). None when there
    is none. It knows nothing of GIT_DIR, GIT_CEILING_DIRECTORIES,
    safe.directory or a file system boundary: a caller that must agree with git
    checks those or asks git."""
    d = os.path.realpath(path)
    while True:
        dot = os.path.join(d, ".git")
        if os.path.isdir(dot):
            return d, dot
        if os.path.isfile(dot):
            return d, read_gitfile(dot)
        if os.path.isfile(os.path.join(d, "HEAD")) and os.path.isdir(os.path.join(d, "objects")) \
                and os.path.isdir(os.path.join(d, "refs")):
            return d, d
        up = os.path.dirname(d)
        if up == d:
            return None
        d = up


def discovered_as_git_would(path: str, found: tuple[str, str | None]) -> str | None:
    """The real path of the common dir of `found` (`discover(path)`'s answer) when
    git's own discovery from `path` would take that repository as it stands: a
    git dir that reads, the repository and its top directory the caller's own
    (git refuses another user's: safe.directory), and no other file system on
    the way up from `path` (git stops there). Else None: only git can tell. The
    caller checks the environment variables that steer discovery."""
    top, git_dir = found
    if git_dir is None:
        return None
    common = os.path.realpath(common_dir(git_dir))
    try:
        if not os.stat(common).st_uid == os.stat(top).st_uid == os.geteuid():
            return None
        d, dev, top = os.path.realpath(path), os.stat(path).st_dev, os.path.realpath(top)
        while True:
            if os.stat(d).st_dev != dev:
                return None
            if d == top or d == os.path.dirname(d):
                return common if d == top else None
            d = os.path.dirname(d)
    except OSError:
        return None


def git_dir_above(path: str) -> str | None:
    """The git dir `discover` finds from `path`, or None."""
    found = discover(path)
    return found[1] if found is not None else None


# Characters of the session ids git-ao writes under a ref prefix; a name with any
# other (git's rules for the rest: check-ref-format) is left to git.
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def refs_under(common_dir: str, prefix: str) -> dict[str, str] | None:
    """{ref: object id} of every ref under `prefix` (e.g. 'refs/ao/preserved/', one
    level deep) as `git for-each-ref` lists them: the loose ref files and
    `packed-refs`, a loose one winning. None where only git can tell: a reftable,
    a ref file that is not a plain object id (a symbolic ref), a name with other
    characters than letters, digits, '.', '_' and '-' (or ending in '.lock'),
    anything unreadable."""
    if os.path.exists(os.path.join(common_dir, "reftable")):
        return None
    out: dict[str, str] = {}
    want = os.fsencode(prefix)
    try:
        with open(os.path.join(common_dir, "packed-refs"), "rb") as fh:
            for ln in fh:
                oid, _, packed = ln.rstrip(b"\n").partition(b" ")
                if packed.startswith(want):
                    ref = _plain_ref(os.fsdecode(packed), prefix)
                    if ref is None or not _is_oid(oid):
                        return None
                    out[ref] = oid.decode("ascii")
    except FileNotFoundError:
        pass
    except OSError:
        return None
    loose = os.path.join(common_dir, *prefix.rstrip("/").split("/"))
    try:
        with os.scandir(loose) as it:
            names = [(e.name, e.is_file(follow_symlinks=False)) for e in it]
    except (FileNotFoundError, NotADirectoryError):
        names = []
    except OSError:
        return None
    for name, is_file in names:
        ref = _plain_ref(prefix + name, prefix)
        if ref is None or not is_file:
            return None
        try:
            with open(os.path.join(loose, name), "rb") as fh:
                value = fh.read().strip()
        except OSError:
            return None
        if not _is_oid(value):
            return None
        out[ref] = value.decode("ascii")
    return dict(sorted(out.items()))


def _plain_ref(ref: str, prefix: str) -> str | None:
    rest = ref[len(prefix):]
    if not rest or rest.startswith(".") or rest.endswith((".", ".lock")) or ".." in rest \
            or not set(rest) <= _PLAIN:
        return None
    return ref


def _is_oid(value: bytes) -> bool:
    return len(value) in (40, 64) and value.strip(b"0123456789abcdef") == b""


def executable_key(name: str = "git") -> str | None:
    """Who `name` is on PATH, as the processes find it: its path, inode, size, mtime
    and ctime and GIT_EXEC_PATH, one line; None when PATH has no such executable.
    A git replaced, or another one first on PATH, has another key."""
    exe = on_path(name)
    try:
        st = os.stat(exe) if exe else None
    except OSError:
        st = None
    if exe is None or st is None:
        return None
    return (f"{exe}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0"
            f"{os.environ.get('GIT_EXEC_PATH', '')}\n")


def on_path(name: str) -> str | None:
    """The first executable `name` in $PATH, as the processes find it (shutil.which,
    without importing shutil and the compression modules it loads)."""
    for d in os.environ.get("PATH", os.defpath).split(os.pathsep):
        p = os.path.join(d or ".", name)
        if os.access(p, os.X_OK) and not os.path.isdir(p):
            return p
    return None
