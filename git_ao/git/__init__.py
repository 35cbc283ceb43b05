"""Named git operations on repositories, worktrees, objects and refs.

Callers ask for named operations (`worktree_list`, `update_ref`, a
`TempIndex`'s `write_tree`...), never for an argument list. The processes start
in `process.py`; `parse.py` turns git's machine-readable output into records;
the sibling modules name queries (`query`), index operations (`index`),
remotes (`remotes`) and the version floor (`version`).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from git_ao import gitfiles
from git_ao.errors import Fatal, GitError, NotARepository, Usage, git_message
from git_ao.git import parse
from git_ao.git.parse import (
    NO_OBJECT,
    BranchName,
    ObjectId,
    check_ref_format,
    join_z,
    split_z,
)
from git_ao.git.process import (
    IDENTITY,
    TIMED_OUT,
    Completed,
    bounded,
    call,
    call_bounded,
    current_deadline,
    line,
    run,
    set_trace,
    show_manual,
    unbounded,
)

__all__ = ["IDENTITY", "NO_OBJECT", "TIMED_OUT", "BranchName", "Completed", "IndexFlags",
           "ObjectId", "RefRead", "Status", "StatusEntry", "WorktreeEntry", "bounded", "call",
           "call_bounded", "check_ref_format", "current_deadline", "join_z", "line", "run",
           "set_trace", "show_manual", "split_z", "unbounded"]

# The records of the longer outputs: imported when first read (porcelain.py), so a
# command that reads none of those outputs does not build their classes.
TYPE_CHECKING = False  # mypy takes any name TYPE_CHECKING as true
if TYPE_CHECKING:
    from git_ao.git.porcelain import IndexFlags, RefRead, Status, StatusEntry, WorktreeEntry
else:
    def __getattr__(name: str) -> object:
        if name in ("IndexFlags", "RefRead", "Status", "StatusEntry", "WorktreeEntry"):
            return getattr(parse, name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


def repo_dirs(path: str, *, inherit_repo_env: bool = False) -> RepoDirs:
    """Resolve `path` with `git rev-parse --path-format=absolute ...`.

    Returns RepoDirs. Raises NotARepository when `path` is not inside one, Fatal
    when it cannot be entered.
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
        msg = msg.removeprefix("fatal: ")
        if msg.startswith("not a git repository") and not _same_dir(path, os.curdir):
            # git names `.git` and not the directory it was given: name it.
            msg = f"not a git repository (or any of the parent directories): '{path}'"
        if not msg or msg.startswith("not a git repository"):
            raise NotARepository(msg or f"not a git repository: '{path}'")
        raise Fatal(msg)
    top = lines[3] if len(lines) > 3 and lines[2] != "true" else None
    return RepoDirs(lines[0], lines[1], top, lines[2] == "true")


def common_dir_of(path: str) -> str:
    """The absolute common git dir of the repository `path` is in: a worktree, a
    bare repository, or a git dir itself (`<repo>/.git`, where `--show-toplevel`
    fails: "must be run in a work tree"). One `git rev-parse --path-format=absolute
    --git-common-dir`. Raises Fatal when `path` is in no repository."""
    if not os.path.isdir(path):
        raise Fatal(f"cannot change to '{path}': No such directory")
    res = call(["rev-parse", "--path-format=absolute", "--git-common-dir"], path)
    text = res.out.decode("utf-8", "surrogateescape").strip()
    if res.status != 0 or not text:
        msg = git_message(res.errtext, res.status) if res.errtext.strip() else ""
        raise Fatal(msg.removeprefix("fatal: ") or f"not a git repository: {path}")
    return text


def _same_dir(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def remote_names(cwd: str) -> list[str]:
    """The remotes of the repository at `cwd` (`git remote`), for completion; []
    outside a repository or when git fails."""
    res = call(["remote"], cwd, inherit_repo_env=True)
    return res.text.split() if res.status == 0 else []


def worktree_list(common_dir: str) -> list[WorktreeEntry]:
    """Parse `git worktree list --porcelain -z` run in the repository's common dir.

    Returns a list of WorktreeEntry, the main worktree (or bare repository) first.
    Raises GitError; when a registration left half-written by a killed
    `git worktree add` (`locked` written, `commondir` not yet: `parse.half_added_worktree`) is
    what makes git fail, the message names it and the fix.
    """
    res = call(["worktree", "list", "--porcelain", "-z"], common_dir)
    if res.status != 0:
        half = parse.half_added_worktree(common_dir)
        if half:
            raise GitError(res.argv, res.status, f"{res.errtext.strip()}; {half} was left "
                           "half-written by a killed `git worktree add`; "
                           "git cannot list worktrees until it is gone: check that no "
                           f"`git worktree add` is running, then rm -r '{half}'")
        res.check()
    return parse.worktree_list(res.out)


def parallel_checkout(cwd: str) -> list[str]:
    """`-c checkout.workers=8` for a command run in `cwd`, none when its config sets
    checkout.workers. Writing many files is bound by the file system's latency per
    file, not the CPU (a 2-core VM: 20,000 files in about 10 s one at a time, 1.5 s
    with 8 workers); git writes in parallel only from 100 files on."""
    if call(["config", "--get", "checkout.workers"], cwd).status == 0:
        return []
    return ["-c", "checkout.workers=8"]


def worktree_add(common_dir: str, path: str, *, branch: str | None = None,
                 commit: str | None = None, new_branch: str | None = None, detach: bool = False,
                 checkout: bool = True) -> None:
    """`git worktree add` at `path`: attach existing `branch`, or `-b new_branch` at
    `commit`, or `--detach` at `commit`. Never `-B`. Raises GitError.

    checkout=False adds `--no-checkout`: the worktree is registered with an empty
    index and no files, so its private config (sparse-checkout patterns,
    config.worktree) can be put in place first; `checkout_head` then fills it."""
    args: list[str | None] = [*parallel_checkout(common_dir), "worktree", "add"] if checkout \
        else ["worktree", "add", "--no-checkout"]
    if new_branch:
        args += ["-b", new_branch, path, commit]
    elif detach:
        args += ["--detach", path, commit]
    else:
        args += [path, branch]
    run(args, common_dir)


def worktree_unlock(common_dir: str, path: str) -> None:
    """`git worktree unlock <path>`. Raises GitError."""
    run(["worktree", "unlock", path], common_dir)


def worktree_prune(common_dir: str, *, dry_run: bool = False,
                   keep: Iterable[str] = (), only: Collection[str] | None = None) -> list[str]:
    """`git worktree prune -v [-n]`: deregister worktrees whose directory is gone.

    keep: worktree paths whose registration must stay although their directory is
    missing (a live session's worktree on a disk not mounted yet: pruning it
    would drop its index and HEAD). only: the worktree paths whose registrations
    may go, every other one staying (a worktree moved by hand and not repaired
    yet, one on a disk not mounted, one inside a directory taken away: each
    registration holds an index and a HEAD). git leaves a locked worktree alone,
    so each registration kept that is not locked gets a `locked` file for the
    prune, removed after. Returns git's report lines (it prints them on stderr)."""
    args = ["worktree", "prune", "-v"] + (["-n"] if dry_run else [])
    locked = [] if dry_run else _lock_for_prune(common_dir, keep, only)
    try:
        res = call(args, common_dir).check()
    finally:
        for f in locked:
            with contextlib.suppress(OSError):
                os.unlink(f)
    lines = [ln for ln in res.errtext.splitlines() if ln.strip()]
    if dry_run:
        # A dry run locks nothing: leave out what the real run's locks keep.
        kept = {os.path.basename(admin) for admin in _admins_of(common_dir, keep)}
        lines = [ln for ln in lines if not any(ln.startswith(f"Removing worktrees/{name}:")
                                               for name in kept)]
    return lines


def admin_dirs(common_dir: str) -> list[tuple[str, str | None]] | None:
    """Each linked worktree's admin dir under `common_dir/worktrees/` with the path
    its `gitdir` file names as written (the worktree's `.git`, relative to the admin
    dir when not absolute; None when it does not read); [] when there is none, None when the directory
    cannot be listed."""
    try:
        with os.scandir(os.path.join(common_dir, "worktrees")) as it:
            admins = [e.path for e in it if e.is_dir(follow_symlinks=False)]
    except FileNotFoundError:
        return []
    except OSError:
        return None
    return [(admin, gitfiles.admin_gitdir(admin, as_written=True)) for admin in admins]


def registrations(common_dir: str) -> list[tuple[str, str]]:
    """(admin dir, the real path of its worktree) of each linked worktree whose
    `gitdir` file reads (`admin_dirs`)."""
    return [(admin, os.path.realpath(os.path.dirname(os.path.join(admin, named))))
            for admin, named in admin_dirs(common_dir) or [] if named is not None]


def _admins_of(common_dir: str, paths: Iterable[str]) -> list[str]:
    """The admin dirs of the worktrees at `paths` (as their `gitdir` files name them)."""
    wanted = {os.path.realpath(p) for p in paths}
    return [admin for admin, at in (registrations(common_dir) if wanted else [])
            if at in wanted]


def _lock_for_prune(common_dir: str, keep: Iterable[str],
                    only: Collection[str] | None = None) -> list[str]:
    """Write a `locked` file into the admin dir of each path of `keep` that has one
    and is not locked already, and with `only`, into every admin dir but those of
    its paths; returns the files written."""
    written: list[str] = []
    if only is not None:
        # (only those git would prune: no readable gitdir file, or it names a `.git`
        # that is not there)
        mine = set(_admins_of(common_dir, only))
        admins = [admin for admin, named in admin_dirs(common_dir) or [] if admin not in mine
                  and (named is None or not os.path.exists(os.path.join(admin, named)))]
    else:
        admins = _admins_of(common_dir, keep)
    for admin in admins:
        lock = os.path.join(admin, "locked")
        _clear_left_lock(lock)
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError:
            continue  # locked already (git keeps it), or unwritable
        with os.fdopen(fd, "w") as fh:
            fh.write(f"{_LOCK_WORDS.format(os.getpid())}\n")
        written.append(lock)
    return written


# The reason of the `locked` file a prune writes for the time of the prune.
_LOCK_WORDS = "git-ao {}: kept through a prune of another worktree's registration"


def _clear_left_lock(lock: str) -> None:
    """Remove the `locked` file a git-ao prune wrote and a kill left behind (its
    process is gone): else the registration would stay locked for good."""
    try:
        with open(lock, encoding="utf-8") as fh:
            said = fh.read(200)
    except (OSError, UnicodeDecodeError):
        return
    head, _, tail = said.partition(" ")
    pid = tail.partition(":")[0]
    if head != "git-ao" or not pid.isdigit() or said.rstrip("\n") != _LOCK_WORDS.format(pid):
        return
    try:
        os.kill(int(pid), 0)
        return  # still running: its prune's lock
    except ProcessLookupError:
        pass
    except OSError:
        return  # another user's process: alive
    with contextlib.suppress(OSError):
        os.unlink(lock)



# ---------------------------------------------------------------- status


def index_env(index_file: str | None) -> dict[str, str] | None:
    """The environment that points git at `index_file` instead of the real index."""
    return {"GIT_INDEX_FILE": index_file} if index_file else None


def lenient_opts(drivers: Sequence[str]) -> list[str]:
    """The `-c filter.<driver>.required=false` options that make each of `drivers`
    not required for one git command."""
    return [a for d in drivers for a in ("-c", f"filter.{d}.required=false")]


def status(cwd: str, *, index_file: str | None = None, ignored: bool = True,
           refresh_copy: bool = False, lenient: Sequence[str] = ()) -> Status:
    """Run `git status --porcelain=v2 -z --branch --untracked-files=all` in `cwd`.

    ignored=True adds `--ignored=matching`, so an ignored directory counts once.
    index_file: read this index instead of the real one (GIT_INDEX_FILE).
    refresh_copy: let git write the refreshed stat data into `index_file` (a copy
    of the caller's own; the real index is never written: GIT_OPTIONAL_LOCKS).
    lenient: filter drivers not `required` for this run (`-c
    filter.<driver>.required=false`): where one fails on a file git reads, git
    takes the file's bytes as they are instead of stopping.
    Raises GitError.
    """
    # --ignore-submodules=none: submodule.<name>.ignore and diff.ignoreSubmodules
    # must not hide a dirty submodule from the capture.
    args = [*lenient_opts(lenient),
            "status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all",
            "--no-renames", "--ignore-submodules=none"]
    if ignored:
        args.append("--ignored=matching")
    env = index_env(index_file)
    if refresh_copy:
        assert env is not None, "only a copy of the index is written"
        env["GIT_OPTIONAL_LOCKS"] = "1"
    return parse.status(run(args, cwd, env=env))


# ---------------------------------------------------------------- objects and refs


def commit_tree(cwd: str, tree: str, parents: Sequence[str], message: str) -> ObjectId:
    """`git commit-tree <tree> -p <parent>... ` with `message` on stdin; return the commit id."""
    args = ["commit-tree", tree]
    for p in parents:
        args += ["-p", p]
    return ObjectId(run(args, cwd, env=IDENTITY,
                        input=message.encode("utf-8", "surrogateescape")).decode().strip())


# Scratch files `write_objects` feeds git are named <OBJECT_PREFIX><pid>.<random>.<n>.
OBJECT_PREFIX = "git-ao-object."


def build_commit(tree: str, parents: Sequence[str], message: str, *,
                 when: int | None = None) -> tuple[ObjectId, bytes] | None:
    """The commit object `git commit-tree` would write for `tree`, `parents` and
    `message` with git-ao's identity (`IDENTITY`), dated `when` (epoch seconds, now
    by default) in the local time zone, and its id: SHA-1, or SHA-256 when `tree`
    is a 64-digit id. None for a message that is not valid UTF-8, which commit-tree
    would rewrite (it reads invalid bytes as Latin-1): such a commit is left to
    `commit_tree`. Nothing is written (`write_objects` does)."""
    try:
        text = message.encode("utf-8")
    except UnicodeEncodeError:
        return None
    stamp = int(time.time()) if when is None else when
    off = time.localtime(stamp).tm_gmtoff
    zone = f"{'-' if off < 0 else '+'}{abs(off) // 3600:02d}{abs(off) % 3600 // 60:02d}"
    author = f"{IDENTITY['GIT_AUTHOR_NAME']} <{IDENTITY['GIT_AUTHOR_EMAIL']}> {stamp} {zone}"
    committer = (f"{IDENTITY['GIT_COMMITTER_NAME']} <{IDENTITY['GIT_COMMITTER_EMAIL']}> "
                 f"{stamp} {zone}")
    head = f"tree {tree}\n" + "".join(f"parent {p}\n" for p in parents)
    body = f"{head}author {author}\ncommitter {committer}\n\n".encode() + text
    import hashlib  # here: a listing, which writes no object, never loads OpenSSL
    digest = hashlib.sha256 if len(tree) == 64 else hashlib.sha1
    return ObjectId(digest(b"commit %d\0" % len(body) + body).hexdigest()), body


def write_objects(cwd: str, scratch: str, kind: str,
                  objects: Sequence[tuple[ObjectId, bytes]]) -> None:
    """Write `objects` ((id, content) pairs, from `build_commit` for commits) to the
    object store as objects of type `kind`, in one `git hash-object -w -t <kind>
    --no-filters --stdin-paths`: each content goes through a scratch file in the
    directory `scratch` (a git dir), removed on every way out. Raises GitError,
    also when git gives another id than the one computed."""
    if not objects:
        return
    base = os.path.join(scratch, f"{OBJECT_PREFIX}{os.getpid()}.{os.urandom(4).hex()}.")
    names = []
    try:
        for n, (_oid, data) in enumerate(objects):
            names.append(f"{base}{n}")
            with open(names[-1], "wb") as fh:
                fh.write(data)
        args = ["hash-object", "-w", "-t", kind, "--no-filters", "--stdin-paths"]
        got = run(args, cwd, input="".join(f"{n}\n" for n in names).encode(
            "utf-8", "surrogateescape")).decode().split()
    finally:
        for name in names:
            try:
                os.unlink(name)
            except FileNotFoundError:
                pass
    want = [oid for oid, _data in objects]
    if got != want:
        raise GitError(args, 0, f"git wrote {' '.join(got)} for {' '.join(want)}")


def update_ref(cwd: str, ref: str, new: ObjectId, old: ObjectId | None = None, *,
               message: str = "git-ao") -> None:
    """`git update-ref --create-reflog -m <message> <ref> <new> [<old>]`.

    old=None: no check; old=NO_OBJECT: the ref must not exist yet. Raises GitError."""
    args = ["update-ref", "--create-reflog", "-m", message, ref, new]
    if old is not None:
        args.append(old)
    run(args, cwd)


def swap_ref(cwd: str, ref: str, new: str, old: str | None, *,
             message: str = "git-ao") -> bool:
    """Move `ref` to `new` only while it still points at `old` (None: only while it
    does not exist), in one `git update-ref --create-reflog -m <message> <ref> <new>
    <old>`; git checks and writes under the ref's lock. Returns False when the ref
    was elsewhere (another writer won); raises GitError for any other failure."""
    res = call(["update-ref", "--create-reflog", "-m", message, ref, new, old or ""], cwd)
    if res.status == 0:
        return True
    if rev_parse(cwd, ref) != old:
        return False
    res.check()
    return False


def update_refs(cwd: str, updates: Sequence[tuple[str, str | None, str | None]], *,
                message: str = "git-ao") -> bool:
    """Move several refs in one transaction (`git update-ref --create-reflog -m
    <message> --stdin -z`): each (ref, new, old) moves `ref` to `new` (None: deletes
    it) only while it points at `old` (None: only while it does not exist). All
    move or none does. Returns False when a ref was elsewhere (another writer won);
    raises GitError for any other failure (a lock held, an object missing)."""
    lines = []
    for ref, new, old in updates:
        if new is None:
            assert old, "a ref is deleted only from what it holds"
            lines.append(f"delete {ref}\0{old}\0")
        elif old is None:
            lines.append(f"create {ref}\0{new}\0")
        else:
            lines.append(f"update {ref}\0{new}\0{old}\0")
    res = call(["update-ref", "--create-reflog", "-m", message, "--stdin", "-z"], cwd,
               input="".join(lines).encode("utf-8", "surrogateescape"))
    if res.status == 0:
        return True
    if any(rev_parse(cwd, ref) != old for ref, _new, old in updates):
        return False
    res.check()
    return False


def reset_hard(cwd: str, commit: str) -> None:
    """`git reset -q --hard <commit>` in the worktree at `cwd`: HEAD (the branch it
    names, or a detached HEAD), the index and the tracked files take `commit`;
    untracked files not in its way are left alone, and so is what a submodule
    holds (never recursing, whatever submodule.recurse says). Raises GitError."""
    run(["reset", "-q", "--hard", "--no-recurse-submodules", commit], cwd)


def delete_ref(cwd: str, ref: str, old: ObjectId) -> None:
    """`git update-ref -d <ref> <old>`: delete only while it still points at `old`."""
    run(["update-ref", "-d", ref, old], cwd)


def drop_ref_if_at(cwd: str, ref: str, commit: ObjectId) -> None:
    """Delete `ref` while it still points at `commit`, in one `git update-ref -d`; a ref
    that moved or is gone is left alone, and only a failure with the ref still at
    `commit` raises GitError."""
    res = call(["update-ref", "-d", ref, commit], cwd)
    if res.status != 0 and rev_parse(cwd, ref) == commit:
        res.check()


def current_branch(cwd: str) -> BranchName | None:
    """The short name of the branch checked out in `cwd` (`git symbolic-ref -q --short
    HEAD`), None when HEAD is detached."""
    res = call(["symbolic-ref", "-q", "--short", "HEAD"], cwd)
    return BranchName(res.text.strip()) if res.status == 0 else None


def rev_parse(cwd: str, rev: str) -> ObjectId | None:
    """`git rev-parse --verify -q <rev>`: the object id, or None when it does not resolve."""
    res = call(["rev-parse", "--verify", "-q", rev], cwd)
    return ObjectId(res.text.strip()) or None if res.status == 0 else None


def rev_parse_many(cwd: str, revs: Sequence[str]) -> list[ObjectId | None]:
    """Resolve several revisions in one `git rev-parse`; None for each that fails.

    Falls back to one call each when any of them does not resolve."""
    res = call(["rev-parse", *revs], cwd)
    vals = res.text.split()
    if res.status == 0 and len(vals) == len(revs):
        return [ObjectId(v) for v in vals]
    return [rev_parse(cwd, r) for r in revs]


def object_exists(cwd: str, oid: str) -> bool:
    """`git cat-file -e <oid>`: does the object exist in the repository?"""
    return call(["cat-file", "-e", oid], cwd).status == 0


def commit_parents(cwd: str, commit: str) -> list[ObjectId]:
    """The parent ids of `commit` (`git rev-list --parents -n 1`)."""
    return [ObjectId(p) for p in line(["rev-list", "--parents", "-n", "1", commit], cwd).split()[1:]]


def trees_of(cwd: str, commits: Iterable[str]) -> list[ObjectId | None]:
    """The tree id of each commit, in one `git rev-parse c^{tree} ...`."""
    return rev_parse_many(cwd, [f"{c}^{{tree}}" for c in commits])


_READ_FORMAT = "%(refname)%00%(objectname)%00%(tree)%00%(parent)%00%(contents)%00"


def read_refs(cwd: str, *patterns: str) -> dict[str, RefRead] | None:
    """{ref: RefRead} of every ref `patterns` name (as `git for-each-ref` matches them:
    a whole name, or a prefix ending at a '/'), each with its commit's tree,
    parents and message, in one `git for-each-ref` run in `cwd` (per-worktree refs
    are that worktree's). None when git's answer cannot be read back (a message
    holding a NUL). Raises GitError."""
    from git_ao.git import porcelain
    return porcelain.ref_reads(run(["for-each-ref", f"--format={_READ_FORMAT}", *patterns], cwd))


def for_each_ref(cwd: str, *prefixes: str) -> list[tuple[str, ObjectId]]:
    """`git for-each-ref --format=%(objectname) %(refname) <prefix>...`: list of (ref, oid)."""
    out = run(["for-each-ref", "--format=%(objectname) %(refname)", *prefixes], cwd)
    return parse.ref_oids(out.decode("utf-8", "surrogateescape"))


# ---------------------------------------------------------------- checkouts and applies


def checkout_detached(cwd: str, commit: str) -> bool:
    """`git checkout -q --detach <commit>` in the repository at `cwd`; True on success."""
    return call(["checkout", "-q", "--detach", commit], cwd).status == 0


def checkout_branch_at(cwd: str, branch: str, commit: str, *, reset: bool) -> bool:
    """Put HEAD of the repository at `cwd` on the local branch `branch` at `commit`:
    `git checkout -q -b` when the branch is new, `-B` (moving it) when `reset`,
    else `git checkout -q <branch>` (it must be at `commit` already, which the
    caller checked). True on success."""
    if reset or rev_parse(cwd, f"refs/heads/{branch}") is None:
        flag = "-B" if reset else "-b"
        return call(["checkout", "-q", flag, branch, commit], cwd).status == 0
    return call(["checkout", "-q", branch, "--"], cwd).status == 0


def empty_tree(cwd: str) -> ObjectId:
    """The id of the empty tree, written to the object store (`git hash-object -w`)."""
    return ObjectId(line(["hash-object", "-w", "-t", "tree", "--stdin"], cwd, input=b""))


def stash_apply(cwd: str, commit: str, *, index: bool, sparse_off: bool = False) -> Completed:
    """`git stash apply [--index] <commit>` in worktree `cwd`; the Completed, whatever its
    status. sparse_off: with the sparse-checkout patterns switched off for this one
    command (`-c core.sparseCheckout=false`)."""
    args = (["-c", "core.sparseCheckout=false"] if sparse_off else []) + ["stash", "apply"]
    return call(args + (["--index"] if index else []) + [commit], cwd)


def submodule_update_init(cwd: str, paths: Sequence[str]) -> Completed:
    """`git submodule update --init -- <paths>` (literal paths); the Completed, whatever
    its status."""
    return call(["--literal-pathspecs", "submodule", "update", "--init", "--", *paths], cwd)


# ---------------------------------------------------------------- remotes
