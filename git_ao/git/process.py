"""The one place that starts a git process (but the quick check of an unchanged
checkpoint, which starts its one from git_ao/quickgit.py without subprocess).

Every git process git-ao starts goes through `call` (or `call_bounded`, for
network commands): arguments are a list (never a shell string) handed to
posix_spawn (`_spawned`) or, under a deadline, to `subprocess`, stdout is read
as bytes so path names survive whatever encoding they have, and the `-v` trace
hook sees each command before it runs.

Every git command runs with `core.hooksPath=/dev/null`: preserve and restore
must never run the user's hooks (post-checkout, reference-transaction, ...).

git still runs other programs of the user's (merge drivers, clean and smudge
filters, textconv, signing programs), and one may hang. Inside `bounded(deadline)`
every git process must end by the deadline: it runs in a process group of its
own, and at the deadline the group is stopped (SIGTERM, so git removes its lock
files, then SIGKILL), the lock files it still held are removed, and `TimedOut`
names the program it was running.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import stat
import subprocess
import threading
import time
from dataclasses import dataclass

from git_ao import quickgit
from git_ao.errors import Fatal, GitError, TimedOut
from git_ao.quickgit import GLOBAL_OPTS, environment

TYPE_CHECKING = False  # mypy takes any name TYPE_CHECKING as true; typing costs a listing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from typing import Any

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
    quickgit.trace = callback


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
    full_env = environment(inherit_repo_env)
    if env:
        full_env.update(env)
    deadline = current_deadline()
    if deadline is not None:
        return _call_until(argv, cwd, full_env, input, deadline)
    try:
        spawned = _spawned(argv, cwd, full_env, input)
        if spawned is not None:
            return spawned
        proc = subprocess.run(["git", *GLOBAL_OPTS, *argv], cwd=cwd, env=full_env,
                              input=input, stdin=None if input is not None else subprocess.DEVNULL,
                              capture_output=True, check=False)
    except OSError as exc:
        raise _start_error(argv, cwd, exc) from exc
    return Completed(argv, _status(proc.returncode), proc.stdout, proc.stderr)


def _spawned(argv: list[str], cwd: str, env: dict[str, str], input: bytes | None
             ) -> Completed | None:
    """`call`'s process started with posix_spawn (a vfork in the C library) and
    `git -C cwd`: subprocess's Popen costs about 0.3 ms more of this process's
    time per git process (a `preserve --all` of 200 sessions starts 2,600), all
    of it under the GIL. Its pipes and /dev/null are the child's only new
    descriptors (Python opens every other one close-on-exec). None where pipes
    would land on 0, 1 or 2 (one of those closed in this process), which
    subprocess handles. Raises OSError as subprocess would: git not found, or
    its directory missing (git's `cannot change to`, raised as `_start_error`
    raises it)."""
    if not cwd:
        return None
    made: list[int] = []
    try:
        r_out, w_out = os.pipe()
        made += (r_out, w_out)
        r_err, w_err = os.pipe()
        made += (r_err, w_err)
        r_in = w_in = -1
        if input is not None:
            r_in, w_in = os.pipe()
            made += (r_in, w_in)
        if min(made) < 3:
            return None
        stdin = (os.POSIX_SPAWN_DUP2, r_in, 0) if input is not None \
            else (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)
        pid = os.posix_spawnp("git", ["git", "-C", cwd, *GLOBAL_OPTS, *argv], env,
                              setsigdef=quickgit.spawn_ready(),
                              file_actions=[stdin, (os.POSIX_SPAWN_DUP2, w_out, 1),
                                            (os.POSIX_SPAWN_DUP2, w_err, 2)])
        for fd in (w_out, w_err, r_in):
            if fd >= 0:
                made.remove(fd)
                os.close(fd)
        try:
            out, err = _exchange(r_out, r_err, w_in, input or b"", made)
            _, wait_status = os.waitpid(pid, 0)
        except BaseException:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
            raise
    finally:
        for fd in made:
            with contextlib.suppress(OSError):
                os.close(fd)
    status = _status(os.waitstatus_to_exitcode(wait_status))
    if status == 128 and os.fsencode(cwd) in err.partition(b"\n")[0]:
        # git's "cannot change to" (in the user's language): what subprocess's
        # chdir raised, with the error the directory gives now.
        try:
            mode = os.stat(cwd).st_mode
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, cwd) from None
        number = errno.ENOTDIR if not stat.S_ISDIR(mode) else \
            errno.EACCES if not os.access(cwd, os.X_OK) else 0
        if number:
            raise OSError(number, os.strerror(number), cwd)
    return Completed(argv, status, out, err)


def _exchange(r_out: int, r_err: int, w_in: int, data: bytes, made: list[int]
              ) -> tuple[bytes, bytes]:
    """Read the pipes `r_out` and `r_err` to their end while writing `data` to
    `w_in` (-1: none), closing `w_in` once written (a reader that stopped early
    is no error, as for subprocess) and taking it out of `made`, the descriptors
    the caller closes. Returns (stdout, stderr) bytes."""
    got: dict[int, list[bytes]] = {r_out: [], r_err: []}
    poller = select.poll()
    poller.register(r_out, select.POLLIN)
    poller.register(r_err, select.POLLIN)
    open_fds = 2
    sent = 0
    if w_in >= 0:
        if data:
            os.set_blocking(w_in, False)
            poller.register(w_in, select.POLLOUT)
        else:
            made.remove(w_in)
            os.close(w_in)
            w_in = -1
    while open_fds or w_in >= 0:
        for fd, _ in poller.poll():
            if fd == w_in:
                try:
                    sent += os.write(w_in, data[sent:sent + 65536])
                except BlockingIOError:
                    continue
                except BrokenPipeError:
                    sent = len(data)
                if sent >= len(data):
                    poller.unregister(w_in)
                    made.remove(w_in)
                    os.close(w_in)
                    w_in = -1
                continue
            chunk = os.read(fd, 65536)
            if chunk:
                got[fd].append(chunk)
            else:
                poller.unregister(fd)
                open_fds -= 1
    return b"".join(got[r_out]), b"".join(got[r_err])


# ---------------------------------------------------------------- the bound

_bound = threading.local()
# After SIGTERM, how long git gets to remove its lock files and exit (seconds).
_TERM_GRACE = 2.0


def current_deadline() -> float | None:
    """The deadline (`time.monotonic()` seconds) every git process started from this
    thread must end by, or None."""
    return getattr(_bound, "deadline", None)


@contextlib.contextmanager
def bounded(deadline: float | None) -> Iterator[None]:
    """Within the block, every git process this thread starts must end by `deadline`
    (`time.monotonic()` seconds; None: no bound of its own, an outer one still
    holds). A process still running then is stopped with what it started, and
    `call` raises TimedOut; so does every `call` started after the deadline. A
    bound nested inside another keeps the earlier deadline."""
    outer = current_deadline()
    if deadline is not None and outer is not None:
        deadline = min(deadline, outer)
    _bound.deadline = outer if deadline is None else deadline
    try:
        yield
    finally:
        _bound.deadline = outer


@contextlib.contextmanager
def unbounded() -> Iterator[None]:
    """Within the block, this thread's git processes have no deadline: for the last
    steps of a session whose git runs none of the user's programs (a `git worktree
    prune` after the directory is already in the trash), which must not be cut."""
    outer = current_deadline()
    _bound.deadline = None
    try:
        yield
    finally:
        _bound.deadline = outer


def _call_until(argv: list[str], cwd: str, env: dict[str, str], input: bytes | None,
                deadline: float) -> Completed:
    """`call` under a deadline: git in a process group of its own (so the stop reaches
    the filter or driver it runs, and a Ctrl-C at the terminal does not cut it
    short); stopped at the deadline. Raises TimedOut then, or when the deadline
    has passed before it starts."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimedOut(argv, [], "not started")
    try:
        proc = subprocess.Popen(["git", *GLOBAL_OPTS, *argv], cwd=cwd, env=env,
                                stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, process_group=0)
    except OSError as exc:
        raise _start_error(argv, cwd, exc) from exc
    try:
        out, err = proc.communicate(input=input, timeout=left)
    except subprocess.TimeoutExpired:
        hung, removed = _stop_group(proc)
        stopped = TimedOut(argv, hung, "stopped at the deadline")
        stopped.removed = removed
        raise stopped from None
    return Completed(argv, _status(proc.returncode), out, err)


def _stop_group(proc: subprocess.Popen[bytes]) -> tuple[list[str], list[str]]:
    """Stop git `proc` and its process group: SIGTERM (git removes its lock files on
    it), then SIGKILL after `_TERM_GRACE`. Lock files the group held open and
    left behind are removed when they are the same files (device, inode and
    change time) and no process has them open any more, and so are
    the scratch files git wrote for a merge driver (`_merge_scratch`). Returns
    (the programs it was running, as their command lines; the files removed)."""
    import psutil  # lazily: completion must not import it

    hung: list[str] = []
    held: dict[str, tuple[int, int, int]] = {}
    scratch: set[str] = set()
    try:
        family = [psutil.Process(proc.pid)]
        family += family[0].children(recursive=True)
    except psutil.Error:
        family = []
    for p in family:
        with contextlib.suppress(psutil.Error):
            for f in p.open_files():
                if f.path.endswith(".lock"):
                    with contextlib.suppress(OSError):
                        held[f.path] = _identity(os.stat(f.path))
            if p.pid != proc.pid and not _is_git(p):
                cmdline = p.cmdline()
                hung.append(_shown(cmdline))
                scratch.update(_merge_scratch(cmdline, p.cwd()))
    for sig, wait in ((signal.SIGTERM, _TERM_GRACE), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.communicate(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    if proc.returncode is None:
        # A program that left the group still holds the pipes: git itself is gone.
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        proc.wait()
    removed = []
    for path, ident in held.items():
        with contextlib.suppress(OSError):
            if _identity(os.lstat(path)) == ident and _unheld(path):
                os.unlink(path)
                removed.append(path)
    for path in sorted(scratch):
        with contextlib.suppress(OSError):
            if os.path.isfile(path) and not os.path.islink(path):
                os.unlink(path)
                removed.append(path)
    return hung, removed


def _identity(st: os.stat_result) -> tuple[int, int, int]:
    # An inode number is soon reused (ext4, tmpfs): with the change time, a lock
    # another git made at the same path since is not taken for the stopped one's.
    return st.st_dev, st.st_ino, st.st_ctime_ns


def _unheld(lock: str) -> bool:
    """Does no process have `lock` open (a program that left the stopped group, or
    another git), as far as this system can tell?"""
    from git_ao.git.lock import open_by
    holders = open_by(lock)
    return holders is not None and not holders[0] and not holders[1]


def _merge_scratch(cmdline: list[str], cwd: str) -> list[str]:
    """The files git wrote for a merge driver it runs (`%O %A %B`: `.merge_file_XXXXXX`
    at the top of the worktree), named in the driver's command line: a git
    stopped while the driver runs leaves them behind, untracked."""
    out = []
    for arg in cmdline:
        for word in arg.split():
            if os.path.basename(word).startswith(".merge_file_"):
                out.append(os.path.join(cwd, word))
    return out


def _is_git(p: Any) -> bool:
    """Is psutil process `p` git itself (a git child such as `git checkout` that
    `git worktree add` runs), not a program of the user's?"""
    try:
        name = os.path.basename(str(p.exe() or p.name()))
    except Exception:  # noqa: BLE001 - psutil.Error, or an exe gone
        return False
    return name == "git" or name.startswith("git-")


def _shown(cmdline: list[str]) -> str:
    """A command line as the user configured it: `sh -c '<command> "$@"' ...`, how git
    runs a configured command, shows as the command."""
    if len(cmdline) >= 3 and os.path.basename(cmdline[0]) in ("sh", "bash", "dash") \
            and cmdline[1] == "-c":
        text = cmdline[2].removesuffix(' "$@"')
    else:
        text = " ".join(cmdline)
    return text


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


def show_manual(command: str) -> int:
    """`git help <command>` (`ao-preserve`, `ao`) with the terminal: git opens the
    page as it does for its own commands (man.viewer, help.format, MANPATH with
    its exec path). Returns git's exit status. Raises Fatal when git itself
    cannot be started."""
    argv = ["help", command]
    try:
        where = os.getcwd()
    except OSError:
        where = os.curdir  # gone: `git help` needs no directory of its own
    if _trace is not None:
        _trace(argv, where)
    try:
        # The user's own environment and locale: the page is for a person.
        return _status(subprocess.run(["git", *argv], check=False).returncode)
    except OSError as exc:
        raise _start_error(argv, where, exc) from exc


def run(args: Sequence[object], cwd: str, **kw: Any) -> bytes:
    """Like `call`, but raise GitError on a non-zero status; return stdout bytes."""
    return call(args, cwd, **kw).check().out


def line(args: Sequence[object], cwd: str, **kw: Any) -> str:
    """Run git and return its stdout as one stripped str line."""
    return run(args, cwd, **kw).decode("utf-8", "surrogateescape").strip()


# A git process stopped by `call_bounded`'s timeout reports this status (as
# timeout(1) does), so callers tell "took too long" from git's own failures.
TIMED_OUT = 124
# Network commands must never wait for a password nobody is there to type
# (a shutdown has no terminal): git and ssh fail at once instead.
_NO_PROMPT = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": "",
              "GCM_INTERACTIVE": "never"}


def call_bounded(args: Sequence[object], cwd: str, timeout: float, *,
                 env: dict[str, str] | None = None) -> Completed:
    """Run `git <args>` in `cwd` like `call`, but for at most `timeout` seconds.

    git's own connect timeout can wait minutes on an unreachable host, and a
    transport helper (ssh, a credential helper) can wait on a prompt, so the
    bound is kept here: git runs in a process group of its own, and when the
    time is up the whole group (git and the ssh or helper it started) is killed.
    Returns a Completed whose status is TIMED_OUT then. Never prompts
    (GIT_TERMINAL_PROMPT=0). env: extra variables. Raises GitError when git
    cannot be started.
    """
    argv = [str(a) for a in args]
    if _trace is not None:
        _trace(argv, cwd)
    full_env = environment(False)
    full_env.update(_NO_PROMPT)
    full_env.update(env or {})
    try:
        # A process group of its own, so the kill reaches ssh or a helper git started.
        proc = subprocess.Popen(["git", *GLOBAL_OPTS, *argv], cwd=cwd, env=full_env,
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
