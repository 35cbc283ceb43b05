"""The one place that runs git.

Every git process git-ao starts goes through `call` here: arguments are a
list handed to `subprocess` (never a shell string), stdout is read as
bytes so path names survive whatever encoding they have, and the `-v` trace
hook sees each command before it runs. Callers ask for named operations
(`worktree_list`, `changed_paths`, a `TempIndex`'s `write_tree`...), never for
an argument list; gitparse.py turns git's machine-readable output into records.

Every git command runs with `core.hooksPath=/dev/null`: preserve and restore
must never run the user's hooks (post-checkout, reference-transaction, ...).
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from . import gitparse
from .errors import Fatal, GitError, Usage, git_message
from .gitparse import (
    IndexFlags,
    Status,
    StatusEntry,
    WorktreeEntry,
    check_ref_format,
    join_z,
    split_z,
)

__all__ = ["IndexFlags", "Status", "StatusEntry", "WorktreeEntry", "check_ref_format", "join_z",
           "split_z"]

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
# invisible to capture, which must see every change. An fsmonitor hook is also user code.
# core.trustctime and core.checkStat at their defaults: with ctime ignored, a
# same-size rewrite that keeps the mtime looks unchanged to git's stat cache.
# core.ignoreStat off: git would mark every entry a restore writes assume-unchanged
# (restore sets exactly the flags the save recorded).
_GLOBAL_OPTS = ("-c", "core.hooksPath=/dev/null", "-c", "advice.detachedHead=false",
                "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false",
                "-c", "core.trustctime=true", "-c", "core.checkStat=default",
                "-c", "core.ignoreStat=false")
# The preserve commits are a tool's artefacts, like a stash: a fixed identity
# means preserve never fails on a machine where user.name is not configured.
IDENTITY = {
    "GIT_AUTHOR_NAME": "git-ao", "GIT_AUTHOR_EMAIL": "git-ao@localhost",
    "GIT_COMMITTER_NAME": "git-ao", "GIT_COMMITTER_EMAIL": "git-ao@localhost",
}

_trace: Callable[[list[str], str], object] | None = None


def set_trace(callback: Callable[[list[str], str], object] | None) -> None:
    """Install `callback(argv: list[str], cwd: str)` to see every git command (for -v)."""
    global _trace
    _trace = callback


def _base_env(inherit_repo_env: bool) -> dict[str, str]:
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

    argv: list[str]
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


def call(args: Sequence[object], cwd: str, *, env: dict[str, str] | None = None,
         input: bytes | None = None, inherit_repo_env: bool = False) -> Completed:
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
    try:
        proc = subprocess.run(["git", *_GLOBAL_OPTS, *argv], cwd=cwd, env=full_env,
                              input=input, stdin=None if input is not None else subprocess.DEVNULL,
                              capture_output=True, check=False)
    except OSError as exc:
        raise _start_error(argv, cwd, exc) from exc
    return Completed(argv, _status(proc.returncode), proc.stdout, proc.stderr)


def _status(returncode: int) -> int:
    # git killed by a signal (systemd's stop signals the whole control group) is
    # reported as a shell would, 128 + the signal: this command's failure, not a crash.
    return 128 - returncode if returncode < 0 else returncode


def _start_error(argv: list[str], cwd: str, exc: OSError) -> Exception:
    """The error for a git process that could not be started: Fatal when git itself
    is missing, else GitError (status 128) naming the directory."""
    if isinstance(exc, FileNotFoundError) and exc.filename != cwd:
        return Fatal("git is not installed or not on PATH")
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
        return GitError(argv, 128, f"cannot change to '{cwd}': {exc.strerror}")
    return GitError(argv, 128, f"cannot start git in '{cwd}': {exc.strerror or exc}")


def run(args: Sequence[object], cwd: str, **kw: Any) -> bytes:
    """Like `call`, but raise GitError on a non-zero status; return stdout bytes."""
    return call(args, cwd, **kw).check().out


def line(args: Sequence[object], cwd: str, **kw: Any) -> str:
    """Run git and return its stdout as one stripped str line."""
    return run(args, cwd, **kw).decode("utf-8", "surrogateescape").strip()


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


def worktree_list(common_dir: str) -> list[WorktreeEntry]:
    """Parse `git worktree list --porcelain -z` run in the repository's common dir.

    Returns a list of WorktreeEntry, the main worktree (or bare repository) first.
    Raises GitError; when a registration left half-written by a killed
    `git worktree add` (`locked` written, `commondir` not yet: `gitparse.half_added_worktree`) is
    what makes git fail, the message names it and the fix.
    """
    res = call(["worktree", "list", "--porcelain", "-z"], common_dir)
    if res.status != 0:
        half = gitparse.half_added_worktree(common_dir)
        if half:
            raise GitError(res.argv, res.status, f"{res.errtext.strip()}; {half} was left "
                           "half-written by a killed `git worktree add`; "
                           "git cannot list worktrees until it is gone: check that no "
                           f"`git worktree add` is running, then rm -r '{half}'")
        res.check()
    return gitparse.worktree_list(res.out)


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


def worktree_prune(common_dir: str, *, dry_run: bool = False) -> list[str]:
    """`git worktree prune -v [-n]`: deregister worktrees whose directory is gone.

    Returns git's report lines (it prints them on stderr)."""
    args = ["worktree", "prune", "-v"] + (["-n"] if dry_run else [])
    res = call(args, common_dir).check()
    return [ln for ln in res.errtext.splitlines() if ln.strip()]


def worktree_remove(common_dir: str, path: str, *, force: bool = False) -> None:
    """`git worktree remove <path>`. Without `force` git itself refuses a dirty worktree;
    force (twice, for a locked one too) is only for a verified worktree whose work is
    saved, which cannot be renamed into the trash."""
    run(["worktree", "remove", *(["--force"] if force else []), path], common_dir)


# ---------------------------------------------------------------- status


def index_env(index_file: str | None) -> dict[str, str] | None:
    """The environment that points git at `index_file` instead of the real index."""
    return {"GIT_INDEX_FILE": index_file} if index_file else None


def status(cwd: str, *, index_file: str | None = None, ignored: bool = True) -> Status:
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
    return gitparse.status(run(args, cwd, env=index_env(index_file)))


# ---------------------------------------------------------------- objects and refs


def commit_tree(cwd: str, tree: str, parents: Sequence[str], message: str) -> str:
    """`git commit-tree <tree> -p <parent>... ` with `message` on stdin; return the commit id."""
    args = ["commit-tree", tree]
    for p in parents:
        args += ["-p", p]
    return run(args, cwd, env=IDENTITY, input=message.encode("utf-8", "surrogateescape")
               ).decode().strip()


def update_ref(cwd: str, ref: str, new: str, old: str | None = None, *,
               message: str = "git-ao") -> None:
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


def rev_parse(cwd: str, rev: str) -> str | None:
    """`git rev-parse --verify -q <rev>`: the object id, or None when it does not resolve."""
    res = call(["rev-parse", "--verify", "-q", rev], cwd)
    return res.text.strip() or None if res.status == 0 else None


def rev_parse_many(cwd: str, revs: Sequence[str]) -> list[str | None]:
    """Resolve several revisions in one `git rev-parse`; None for each that fails.

    Falls back to one call each when any of them does not resolve."""
    res = call(["rev-parse", *revs], cwd)
    vals = res.text.split()
    if res.status == 0 and len(vals) == len(revs):
        return list(vals)
    return [rev_parse(cwd, r) for r in revs]


def object_exists(cwd: str, oid: str) -> bool:
    """`git cat-file -e <oid>`: does the object exist in the repository?"""
    return call(["cat-file", "-e", oid], cwd).status == 0


def commit_parents(cwd: str, commit: str) -> list[str]:
    """The parent ids of `commit` (`git rev-list --parents -n 1`)."""
    return line(["rev-list", "--parents", "-n", "1", commit], cwd).split()[1:]


def trees_of(cwd: str, commits: Iterable[str]) -> list[str | None]:
    """The tree id of each commit, in one `git rev-parse c^{tree} ...`."""
    return rev_parse_many(cwd, [f"{c}^{{tree}}" for c in commits])


def for_each_ref(cwd: str, *prefixes: str) -> list[tuple[str, str]]:
    """`git for-each-ref --format=%(objectname) %(refname) <prefix>...`: list of (ref, oid)."""
    out = run(["for-each-ref", "--format=%(objectname) %(refname)", *prefixes], cwd)
    return gitparse.ref_oids(out.decode("utf-8", "surrogateescape"))



# ---------------------------------------------------------------- remotes

# A git process stopped by `call_bounded`'s timeout reports this status (as
# timeout(1) does), so callers tell "took too long" from git's own failures.
TIMED_OUT = 124
# Network commands must never wait for a password nobody is there to type
# (a shutdown has no terminal): git and ssh fail at once instead.
_NO_PROMPT = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": "",
              "GCM_INTERACTIVE": "never"}


def call_bounded(args: Sequence[object], cwd: str, timeout: float) -> Completed:
    """Run `git <args>` in `cwd` like `call`, but for at most `timeout` seconds.

    git's own connect timeout can wait minutes on an unreachable host, and a
    transport helper (ssh, a credential helper) can wait on a prompt, so the
    bound is kept here: git runs in a process group of its own, and when the
    time is up the whole group (git and the ssh or helper it started) is killed.
    Returns a Completed whose status is TIMED_OUT then. Never prompts
    (GIT_TERMINAL_PROMPT=0). Raises GitError when git cannot be started.
    """
    argv = [str(a) for a in args]
    if _trace is not None:
        _trace(argv, cwd)
    env = _base_env(False)
    env.update(_NO_PROMPT)
    try:
        # A process group of its own, so the kill reaches ssh or a helper git started.
        proc = subprocess.Popen(["git", *_GLOBAL_OPTS, *argv], cwd=cwd, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, process_group=0)
    except OSError as exc:
        raise _start_error(argv, cwd, exc) from exc
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass  # it ended between the timeout and the kill
        try:
            out, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            # A helper that left the group (an ssh master) still holds the pipes:
            # git itself is gone, so stop reading.
            out, err = b"", b""
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
            proc.wait()
        return Completed(argv, TIMED_OUT, out, err + f"\ntimed out after {timeout:g} s".encode())
    return Completed(argv, _status(proc.returncode), out, err)
