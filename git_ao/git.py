"""The one place that runs git.

Every git process git-ao starts goes through `call` here: arguments are a
list handed to the `sh` package (never a shell string), stdout is read as
bytes so path names survive whatever encoding they have, and the `-v` trace
hook sees each command before it runs. The parsers below turn git's
machine-readable output (`-z`, `--porcelain`) into small records.

Every git command runs with `core.hooksPath=/dev/null`: preserve and restore
must never run the user's hooks (post-checkout, reference-transaction, ...).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from .errors import Fatal, GitError, Usage, git_message

MIN_VERSION = (2, 36)

# Variables that point git at a particular repository. git-ao works on many
# repositories at once, each named by its own directory, so they are dropped
# for every command except the one that resolves the user's current repository.
_REPO_ENV = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE",
    "GIT_PREFIX",
)
# core.fsmonitor and core.untrackedCache off: both let git skip looking at
# files it believes unchanged, and a stale or lying answer would make a change
# invisible to capture (SPEC 3). An fsmonitor hook is also user code.
# core.trustctime and core.checkStat at their defaults: with ctime ignored, a
# same-size rewrite that keeps the mtime looks unchanged to git's stat cache.
_GLOBAL_OPTS = ("-c", "core.hooksPath=/dev/null", "-c", "advice.detachedHead=false",
                "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false",
                "-c", "core.trustctime=true", "-c", "core.checkStat=default")
# Every status is returned to the caller, which decides (Completed.check).
_OK_CODES = list(range(256))
# The preserve commits are a tool's artefacts, like a stash: a fixed identity
# means preserve never fails on a machine where user.name is not configured.
IDENTITY = {
    "GIT_AUTHOR_NAME": "git-ao", "GIT_AUTHOR_EMAIL": "git-ao@localhost",
    "GIT_COMMITTER_NAME": "git-ao", "GIT_COMMITTER_EMAIL": "git-ao@localhost",
}

_git = None  # the sh.Command, made on first use (see _command)
_trace = None


def _command():
    """The `sh.Command("git")`, imported and resolved on first use.

    `sh` imports asyncio and more (about 25 ms): `git ao-preserve -h` and shell
    completion never start git, so they never pay for it."""
    global _git
    if _git is None:
        import sh
        try:
            _git = sh.Command("git")
        except sh.CommandNotFound as exc:  # pragma: no cover - git missing entirely
            raise Fatal("git is not installed or not on PATH") from exc
    return _git


def set_trace(callback):
    """Install `callback(argv: list[str], cwd: str)` to see every git command (for -v)."""
    global _trace
    _trace = callback


def _base_env(inherit_repo_env):
    env = dict(os.environ)
    if not inherit_repo_env:
        for name in _REPO_ENV:
            env.pop(name, None)
    # git status must not rewrite the real index as a side effect.
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env.setdefault("LC_ALL", "C")
    return env


@dataclass
class Completed:
    """The outcome of one git process: exit status, stdout and stderr bytes."""

    argv: list
    status: int
    out: bytes
    err: bytes

    @property
    def text(self) -> str:
        return self.out.decode("utf-8", "replace")

    @property
    def errtext(self) -> str:
        return self.err.decode("utf-8", "replace")

    def check(self) -> Completed:
        """Return self when the status is 0, else raise GitError."""
        if self.status != 0:
            raise GitError(self.argv, self.status, self.errtext)
        return self


def call(args, cwd, *, env=None, input=None, inherit_repo_env=False) -> Completed:
    """Run `git <args>` in directory `cwd` and return a Completed, whatever its status.

    args: list of str. cwd: str path. env: extra variables (dict of str).
    input: bytes for stdin or None. inherit_repo_env: keep GIT_DIR and friends
    (only for resolving the user's own repository). Raises Fatal when the git
    executable itself cannot be started.
    """
    argv = [str(a) for a in args]
    if _trace is not None:
        _trace(argv, cwd)
    full_env = _base_env(inherit_repo_env)
    if env:
        full_env.update(env)
    command = _command()
    import sh  # already loaded by _command
    try:
        proc = command(*_GLOBAL_OPTS, *argv, _cwd=cwd, _env=full_env, _in=input,
                       _ok_code=_OK_CODES, _return_cmd=True, _tty_out=False, _tty_in=False)
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise GitError(argv, 128, f"cannot change to '{cwd}': {exc.strerror}") from exc
    except sh.SignalException as exc:
        # git itself was killed (systemd's stop signals the whole control group):
        # that is this command's failure, reported like any other, not a crash.
        return Completed(argv, 128 + abs(exc.exit_code), exc.stdout or b"", exc.stderr or b"")
    except sh.ForkException as exc:
        raise GitError(argv, 128, f"cannot start git in '{cwd}': "
                       f"{str(exc).strip().splitlines()[-1]}") from exc
    return Completed(argv, proc.exit_code, proc.stdout or b"", proc.stderr or b"")


def run(args, cwd, **kw) -> bytes:
    """Like `call`, but raise GitError on a non-zero status; return stdout bytes."""
    return call(args, cwd, **kw).check().out


def line(args, cwd, **kw) -> str:
    """Run git and return its stdout as one stripped str line."""
    return run(args, cwd, **kw).decode("utf-8", "surrogateescape").strip()


def split_z(data: bytes) -> list[str]:
    """Split NUL-terminated output into str paths (undecodable bytes kept via surrogateescape)."""
    return [os.fsdecode(p) for p in data.split(b"\0") if p]


def join_z(paths) -> bytes:
    """Encode str paths as NUL-terminated bytes for `--stdin -z` readers."""
    return b"".join(os.fsencode(p) + b"\0" for p in paths)


# ---------------------------------------------------------------- version


def version(cwd=".") -> tuple:
    """Return git's version as a tuple of ints, e.g. (2, 39, 5) (`git --version`)."""
    text = line(["--version"], cwd)
    nums = []
    for part in text.split()[-1].split("."):
        if not part.isdigit():
            break
        nums.append(int(part))
    return tuple(nums)


def check_version():
    """Raise Fatal when git is older than MIN_VERSION (checked once per command)."""
    have = version(os.getcwd() if os.path.isdir(os.getcwd()) else "/")
    if have < MIN_VERSION:
        need = ".".join(map(str, MIN_VERSION))
        raise Fatal(f"git {need} or newer is needed; this is git {'.'.join(map(str, have))}")


# ---------------------------------------------------------------- repositories


@dataclass
class RepoDirs:
    """Where a directory sits in git: absolute git dir, common dir, top level (None when bare)."""

    git_dir: str
    common_dir: str
    toplevel: str | None
    is_bare: bool

    @property
    def is_linked_worktree(self) -> bool:
        return (not self.is_bare and self.toplevel is not None
                and os.path.realpath(self.git_dir) != os.path.realpath(self.common_dir))


def repo_dirs(path, *, inherit_repo_env=False) -> RepoDirs:
    """Resolve `path` with `git rev-parse --path-format=absolute ...`.

    Returns RepoDirs. Raises Fatal("not a git repository ...") when `path` is
    not inside one, or cannot be entered.
    """
    if "\n" in os.path.abspath(path):
        # git's line-based answers (and the commit trailers) cannot carry one.
        raise Usage(f"paths containing a newline are not supported: {os.path.abspath(path)!r}")
    if not os.path.isdir(path):
        raise Fatal(f"cannot change to '{path}': No such directory")
    res = call(["rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir",
                "--is-bare-repository", "--show-toplevel"], path,
               inherit_repo_env=inherit_repo_env)
    lines = res.out.decode("utf-8", "surrogateescape").splitlines()
    if res.status != 0 and len(lines) >= 3 and lines[2] == "true":
        # A bare repository has no top level; rev-parse says so and fails.
        return RepoDirs(lines[0], lines[1], None, True)
    if res.status != 0 or len(lines) < 3:
        msg = git_message(res.errtext, res.status) if res.errtext.strip() else ""
        raise Fatal(msg.removeprefix("fatal: ") or f"not a git repository: {path}")
    top = lines[3] if len(lines) > 3 and lines[2] != "true" else None
    return RepoDirs(lines[0], lines[1], top, lines[2] == "true")


@dataclass
class WorktreeEntry:
    """One record of `git worktree list --porcelain -z`."""

    path: str
    head: str | None = None
    branch: str | None = None  # full ref name, e.g. refs/heads/topic
    detached: bool = False
    bare: bool = False
    locked: str | None = None  # the reason ("" when none given), None when not locked
    prunable: str | None = None
    is_main: bool = False


def worktree_list(common_dir) -> list[WorktreeEntry]:
    """Parse `git worktree list --porcelain -z` run in the repository's common dir.

    Returns a list of WorktreeEntry, the main worktree (or bare repository) first.
    Raises GitError; when a registration left half-written by a killed
    `git worktree add` (`locked` written, `commondir` not yet: `_half_added`) is
    what makes git fail, the message names it and the fix.
    """
    res = call(["worktree", "list", "--porcelain", "-z"], common_dir)
    if res.status != 0:
        half = _half_added(common_dir)
        if half:
            raise GitError(res.argv, res.status, f"{res.errtext.strip()}; {half} was left "
                           "half-written by a killed `git worktree add`; "
                           "git cannot list worktrees until it is gone: check that no "
                           f"`git worktree add` is running, then rm -r '{half}'")
        res.check()
    out = res.out
    entries, cur = [], None
    for field_ in out.split(b"\0"):
        if not field_:
            if cur is not None:
                entries.append(cur)
                cur = None
            continue
        key, _, value = field_.partition(b" ")
        val = os.fsdecode(value)
        if key == b"worktree":
            cur = WorktreeEntry(path=val, is_main=not entries)
        elif cur is None:
            continue
        elif key == b"HEAD":
            cur.head = val
        elif key == b"branch":
            cur.branch = val
        elif key == b"detached":
            cur.detached = True
        elif key == b"bare":
            cur.bare = True
        elif key == b"locked":
            cur.locked = val
        elif key == b"prunable":
            cur.prunable = val
    if cur is not None:
        entries.append(cur)
    return entries


def _half_added(common_dir) -> str | None:
    """The admin dir under <common_dir>/worktrees that git's `worktree add` was still
    creating (it has the `locked` file git writes first, "initializing" in the
    user's language, and `commondir` is missing or empty), or None."""
    base = os.path.join(common_dir, "worktrees")
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return None
    for name in names:
        d = os.path.join(base, name)
        try:
            if not os.path.isfile(os.path.join(d, "locked")):
                continue
            commondir = os.path.join(d, "commondir")
            empty = not os.path.exists(commondir) or os.path.getsize(commondir) == 0
        except OSError:
            continue
        if empty:
            return d
    return None


def worktree_add(common_dir, path, *, branch=None, commit=None, new_branch=None, detach=False,
                 checkout=True):
    """`git worktree add` at `path`: attach existing `branch`, or `-b new_branch` at
    `commit`, or `--detach` at `commit`. Never `-B`. Raises GitError.

    checkout=False adds `--no-checkout`: the worktree is registered with an empty
    index and no files, so its private config (sparse-checkout patterns,
    config.worktree) can be put in place first; `checkout_head` then fills it."""
    args = ["worktree", "add"] + ([] if checkout else ["--no-checkout"])
    if new_branch:
        args += ["-b", new_branch, path, commit]
    elif detach:
        args += ["--detach", path, commit]
    else:
        args += [path, branch]
    return run(args, common_dir)


def worktree_unlock(common_dir, path):
    """`git worktree unlock <path>`. Raises GitError."""
    run(["worktree", "unlock", path], common_dir)


def worktree_prune(common_dir, *, dry_run=False) -> list[str]:
    """`git worktree prune -v [-n]`: deregister worktrees whose directory is gone.

    Returns git's report lines (it prints them on stderr)."""
    args = ["worktree", "prune", "-v"] + (["-n"] if dry_run else [])
    res = call(args, common_dir).check()
    return [ln for ln in res.errtext.splitlines() if ln.strip()]


def worktree_remove(common_dir, path):
    """`git worktree remove <path>` without --force: git itself refuses a dirty worktree."""
    return run(["worktree", "remove", path], common_dir)


# ---------------------------------------------------------------- status


@dataclass
class StatusEntry:
    """One changed path from `git status --porcelain=v2`: kind is '1', '2' or 'u'."""

    kind: str
    xy: str
    sub: str
    path: str
    orig_path: str | None = None


@dataclass
class Status:
    """Parsed `git status --porcelain=v2 -z --branch --untracked-files=all --ignored=matching`."""

    head: str | None  # None when the branch is unborn
    branch: str | None  # short branch name, None when detached
    changed: list = field(default_factory=list)  # StatusEntry
    untracked: list = field(default_factory=list)  # str paths
    ignored: list = field(default_factory=list)  # str paths (directories end in '/')

    @property
    def clean(self) -> bool:
        return not self.changed and not self.untracked

    @property
    def unmerged(self) -> list:
        return [e.path for e in self.changed if e.kind == "u"]


def status(cwd, *, index_file=None, ignored=True) -> Status:
    """Run `git status --porcelain=v2 -z --branch --untracked-files=all` in `cwd`.

    ignored=True adds `--ignored=matching`, so an ignored directory counts once.
    index_file: read this index instead of the real one (GIT_INDEX_FILE).
    Raises GitError.
    """
    # --ignore-submodules=none: submodule.<name>.ignore and diff.ignoreSubmodules
    # must not hide a dirty submodule from the capture.
    args = ["status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all",
            "--no-renames", "--ignore-submodules=none"]
    if ignored:
        args.append("--ignored=matching")
    env = {"GIT_INDEX_FILE": index_file} if index_file else None
    out = run(args, cwd, env=env)
    st = Status(head=None, branch=None)
    fields = out.split(b"\0")
    i = 0
    while i < len(fields):
        rec = fields[i]
        i += 1
        if not rec:
            continue
        tag = rec[:1]
        if tag == b"#":
            words = rec.split(b" ", 2)
            if words[1] == b"branch.oid" and words[2] != b"(initial)":
                st.head = words[2].decode()
            elif words[1] == b"branch.head" and words[2] != b"(detached)":
                st.branch = os.fsdecode(words[2])
        elif tag == b"1":
            parts = rec.split(b" ", 8)
            st.changed.append(StatusEntry("1", parts[1].decode(), parts[2].decode(),
                                          os.fsdecode(parts[8])))
        elif tag == b"2":
            parts = rec.split(b" ", 9)
            orig = os.fsdecode(fields[i]) if i < len(fields) else None
            i += 1
            st.changed.append(StatusEntry("2", parts[1].decode(), parts[2].decode(),
                                          os.fsdecode(parts[9]), orig))
        elif tag == b"u":
            parts = rec.split(b" ", 10)
            st.changed.append(StatusEntry("u", parts[1].decode(), parts[2].decode(),
                                          os.fsdecode(parts[10])))
        elif tag == b"?":
            st.untracked.append(os.fsdecode(rec[2:]))
        elif tag == b"!":
            st.ignored.append(os.fsdecode(rec[2:]))
    return st


# ---------------------------------------------------------------- objects and refs


def write_tree(cwd, index_file) -> str:
    """`git write-tree` from the index file `index_file`; return the tree id."""
    return line(["write-tree"], cwd, env={"GIT_INDEX_FILE": index_file})


def update_index(cwd, index_file, paths, *, extra=()):
    """Feed `paths` (str) to `git update-index --add --remove -z --stdin` on `index_file`.

    Each path is re-read from the worktree: updated when present, removed when
    gone. `extra` adds options such as `--no-assume-unchanged`. Raises GitError.
    """
    if not paths:
        return
    run(["update-index", "--add", "--remove", *extra, "-z", "--stdin"], cwd,
        env={"GIT_INDEX_FILE": index_file}, input=join_z(paths))


def commit_tree(cwd, tree, parents, message) -> str:
    """`git commit-tree <tree> -p <parent>... ` with `message` on stdin; return the commit id."""
    args = ["commit-tree", tree]
    for p in parents:
        args += ["-p", p]
    return run(args, cwd, env=IDENTITY, input=message.encode("utf-8", "surrogateescape")
               ).decode().strip()


def update_ref(cwd, ref, new, old=None, *, message="git-ao"):
    """`git update-ref --create-reflog -m <message> <ref> <new> [<old>]`.

    old=None: no check; old="": the ref must not exist yet. Raises GitError."""
    args = ["update-ref", "--create-reflog", "-m", message, ref, new]
    if old is not None:
        args.append(old)
    run(args, cwd)


def delete_ref(cwd: str, ref: str, old: str) -> None:
    """`git update-ref -d <ref> <old>`: delete only while it still points at `old`."""
    run(["update-ref", "-d", ref, old], cwd)


def drop_ref_if_at(cwd: str, ref: str, commit: str) -> None:
    """Delete `ref` while it still points at `commit`, in one `git update-ref -d`; a ref
    that moved or is gone is left alone, and only a failure with the ref still at
    `commit` raises GitError."""
    res = call(["update-ref", "-d", ref, commit], cwd)
    if res.status != 0 and rev_parse(cwd, ref) == commit:
        res.check()


def current_branch(cwd: str) -> str | None:
    """The short name of the branch checked out in `cwd` (`git symbolic-ref -q --short
    HEAD`), None when HEAD is detached."""
    res = call(["symbolic-ref", "-q", "--short", "HEAD"], cwd)
    return res.text.strip() if res.status == 0 else None


def rev_parse(cwd, rev) -> str | None:
    """`git rev-parse --verify -q <rev>`: the object id, or None when it does not resolve."""
    res = call(["rev-parse", "--verify", "-q", rev], cwd)
    return res.text.strip() or None if res.status == 0 else None


def rev_parse_many(cwd, revs) -> list:
    """Resolve several revisions in one `git rev-parse`; None for each that fails.

    Falls back to one call each when any of them does not resolve."""
    res = call(["rev-parse", *revs], cwd)
    vals = res.text.split()
    if res.status == 0 and len(vals) == len(revs):
        return vals
    return [rev_parse(cwd, r) for r in revs]


def object_exists(cwd, oid) -> bool:
    """`git cat-file -e <oid>`: does the object exist in the repository?"""
    return call(["cat-file", "-e", oid], cwd).status == 0


def commit_parents(cwd, commit) -> list:
    """The parent ids of `commit` (`git rev-list --parents -n 1`)."""
    return line(["rev-list", "--parents", "-n", "1", commit], cwd).split()[1:]


def commit_message(cwd, commit) -> str:
    """The raw message of `commit` (`git log -1 --format=%B`)."""
    return run(["log", "-1", "--format=%B", commit], cwd).decode("utf-8", "surrogateescape")


def trees_of(cwd, commits) -> list:
    """The tree id of each commit, in one `git rev-parse c^{tree} ...`."""
    return rev_parse_many(cwd, [f"{c}^{{tree}}" for c in commits])


def for_each_ref(cwd, prefix) -> list:
    """`git for-each-ref --format=%(objectname) %(refname) <prefix>`: list of (ref, oid)."""
    out = run(["for-each-ref", "--format=%(objectname) %(refname)", prefix], cwd)
    pairs = []
    for ln in out.decode("utf-8", "surrogateescape").splitlines():
        oid, _, ref = ln.partition(" ")
        pairs.append((ref, oid))
    return pairs


def is_reachable_from_refs(cwd, commit) -> bool:
    """Is `commit` contained in any branch, tag or remote-tracking ref, or a preserve ref?"""
    out = run(["for-each-ref", "--count=1", "--contains", commit, "--format=%(refname)",
               "refs/heads", "refs/tags", "refs/remotes", "refs/ao"], cwd)
    return bool(out.strip())


def is_ancestor(cwd, ancestor, descendant) -> bool:
    """Is commit `ancestor` reachable from `descendant` (`git merge-base --is-ancestor`,
    status 0 yes, 1 no)? Raises GitError on any other status (an unknown commit)."""
    res = call(["merge-base", "--is-ancestor", ancestor, descendant], cwd)
    if res.status not in (0, 1):
        res.check()
    return res.status == 0


def expiry_date(value) -> int | None:
    """Parse a date exactly as git parses expiry dates (`git config
    --type=expiry-date`: 2.weeks.ago, yesterday, 2024-01-01, now, never).

    Returns epoch seconds (0 for 'never'), or None for 'now' and 'all' (everything
    has expired). Raises Usage for what git cannot parse."""
    res = call(["-c", f"ao.expire={value}", "config", "--type=expiry-date", "ao.expire"], "/")
    text = res.text.strip()
    if res.status != 0 or not text.isdigit():
        raise Usage(f"malformed expiration date '{value}'")
    n = int(text)
    return None if n >= 2**63 else n


def ls_tree_paths(cwd, tree) -> list:
    """Every file path in `tree`, recursively (`git ls-tree -r -z --name-only`)."""
    return split_z(run(["ls-tree", "-r", "-z", "--name-only", tree], cwd))


def diff_stat(common_dir, commit) -> str:
    """What `git stash show --stat --include-untracked <commit>` prints.

    stash insists on a work tree although `show` reads none, so the common dir
    stands in for one: this works for bare repositories too."""
    env = {"GIT_DIR": common_dir, "GIT_WORK_TREE": common_dir}
    return run(["stash", "show", "--stat", "--include-untracked", commit], common_dir,
               env=env).decode("utf-8", "replace")


def stash_apply(cwd, commit, *, index) -> Completed:
    """`git stash apply [--index] <commit>` in worktree `cwd`; the Completed, whatever its status."""
    args = ["stash", "apply"] + (["--index"] if index else []) + [commit]
    return call(args, cwd)


def unmerged_paths(cwd) -> list:
    """Paths with unmerged index entries (`git diff --name-only --diff-filter=U -z`)."""
    return sorted(set(split_z(run(["diff", "--name-only", "--diff-filter=U", "-z"], cwd))))


def branch_exists(cwd, branch) -> bool:
    """Does refs/heads/<branch> exist?"""
    return call(["show-ref", "--verify", "-q", f"refs/heads/{branch}"], cwd).status == 0


_REF_FORBIDDEN = frozenset(" ~^:?*[\\\x7f") | frozenset(chr(c) for c in range(32))


def check_ref_format(ref) -> bool:
    """Is `ref` (str) a valid full ref name, as `git check-ref-format <ref>` decides?

    The rules of git-check-ref-format(1), checked here without starting a
    process (every command validates each session id it is given): at least
    one '/'; no empty component, none starting with '.' or ending with '.lock';
    no '..', '@{', '\\', control characters, space, '~', '^', ':', '?', '*',
    '['; not ending with '/' or '.'; not '@'. tests/test_scale_git.py holds
    this against git itself.
    """
    if not isinstance(ref, str) or "/" not in ref or ref == "@":
        return False
    if ".." in ref or "@{" in ref or ref.endswith(".") or _REF_FORBIDDEN.intersection(ref):
        return False
    try:
        ref.encode("utf-8")
    except UnicodeEncodeError:
        return False
    for part in ref.split("/"):
        if not part or part.startswith(".") or part.endswith(".lock"):
            return False
    return True


# ---------------------------------------------------------------- fidelity (issue 3)


@dataclass
class IndexFlags:
    """Index entries whose flags tell git to overlook the worktree (`git ls-files -v`):
    assume-unchanged (lower-case tag) and skip-worktree ('S'), plus every tracked
    `.gitattributes` path (they decide content conversion)."""

    assume_unchanged: list = field(default_factory=list)
    skip_worktree: list = field(default_factory=list)
    attributes: list = field(default_factory=list)


# Records of `git ls-files -v -z` ("<tag> <path>\0") whose tag is not plain "H",
# and records of tracked .gitattributes files.
_FLAGGED = re.compile(rb"(?:^|\0)([^H\0] [^\0]*)")
_ATTRIBUTES = re.compile(rb"(?:^|\0)(. (?:[^\0]*/)?\.gitattributes)(?=\0|$)")


def index_flags(cwd, *, index_file=None) -> IndexFlags:
    """Read the index flags with one `git ls-files -v -z` (no worktree scan).

    Returns IndexFlags. Raises GitError."""
    env = {"GIT_INDEX_FILE": index_file} if index_file else None
    out = run(["ls-files", "-v", "-z"], cwd, env=env)
    flags = IndexFlags()
    # Nearly every record is "H <path>" with nothing to report: the regular
    # expressions pick out the few others in C, so a 20,000-file index costs no
    # Python loop over every file. Sorted by position to keep git's order.
    hits = {m.start(1): m.group(1) for m in _FLAGGED.finditer(out)}
    hits.update((m.start(1), m.group(1)) for m in _ATTRIBUTES.finditer(out))
    for _, rec in sorted(hits.items()):
        if len(rec) < 3:
            continue
        tag, path = rec[:1], os.fsdecode(rec[2:])
        if tag in (b"S", b"s"):
            flags.skip_worktree.append(path)
        if tag.islower():
            flags.assume_unchanged.append(path)
        if path == ".gitattributes" or path.endswith("/.gitattributes"):
            flags.attributes.append(path)
    return flags


def config_map(cwd) -> dict:
    """Every effective config value (`git config -z --list`) as {lower-case key: last value}."""
    out = run(["config", "-z", "--list"], cwd)
    conf = {}
    for rec in out.split(b"\0"):
        if rec:
            key, _, value = rec.partition(b"\n")
            conf[key.decode("utf-8", "replace").lower()] = value.decode("utf-8", "surrogateescape")
    return conf


def set_index_flag(cwd, paths, flag, *, index_file=None):
    """`git update-index <flag> -z --stdin` for `paths`: flag is one of
    --[no-]assume-unchanged, --[no-]skip-worktree (only the flag changes), or
    --force-remove (the entry goes, the file stays). Raises GitError."""
    if not paths:
        return
    env = {"GIT_INDEX_FILE": index_file} if index_file else None
    run(["update-index", flag, "-z", "--stdin"], cwd, env=env, input=join_z(paths))


def add_intent_to_add(cwd, paths):
    """`git add -N` for literal `paths` (read as NUL-separated pathspecs from stdin)."""
    if not paths:
        return
    run(["--literal-pathspecs", "add", "-N", "--pathspec-from-file=-", "--pathspec-file-nul"],
        cwd, input=join_z(paths))


def checkout_head(cwd):
    """`git read-tree -m -u HEAD` in a worktree added with --no-checkout: fills the index
    and the files from HEAD, honouring its sparse-checkout patterns."""
    return run(["read-tree", "-m", "-u", "HEAD"], cwd)


def check_ignore(cwd, paths) -> set[str]:
    """Those of `paths` (str, relative to the worktree at `cwd`) that the repository
    ignores (`git check-ignore -z --stdin`; a path under an ignored directory
    counts as ignored). Raises GitError when git fails for another reason."""
    if not paths:
        return set()
    res = call(["check-ignore", "-z", "--stdin"], cwd, input=join_z(paths))
    if res.status not in (0, 1):
        res.check()
    return set(split_z(res.out))


def ls_tree_blobs(cwd, tree) -> dict[str, str]:
    """{path: object id} of every non-tree entry of `tree`, recursively
    (`git ls-tree -r -z`); gitlinks map to their commit."""
    out = {}
    for rec in run(["ls-tree", "-r", "-z", tree], cwd).split(b"\0"):
        if rec:
            meta, _, path = rec.partition(b"\t")
            out[os.fsdecode(path)] = meta.split()[2].decode()
    return out


def hash_paths(cwd, paths) -> list[str]:
    """The blob id git would store for each of `paths` (relative to the worktree
    at `cwd`), with the repository's clean filters and end-of-line rules
    (`git hash-object --stdin-paths`); nothing is written."""
    # --stdin-paths reads lines and has no -z: a name holding a newline is hashed
    # on its own.
    plain = [p for p in paths if "\n" not in p]
    ids = dict(zip(plain, run(["hash-object", "--stdin-paths"], cwd,
                              input=b"".join(os.fsencode(p) + b"\n" for p in plain)
                              ).decode().split())) if plain else {}
    for p in paths:
        if p not in ids:
            ids[p] = line(["hash-object", "--", p], cwd)
    return [ids[p] for p in paths]
