"""git run for its exit status alone, where loading the subprocess module would
cost more than the answer: the quick check that a worktree is unchanged since
its last checkpoint (save/unchanged.py) runs one `git diff-files --quiet`.
posix_spawn starts it, with its input and output on /dev/null.

The environment and the options every git process of git-ao gets are stated
here once; git/process.py starts every other git process, under the same rules.
"""

from __future__ import annotations

import os

from git_ao import gitfiles

TYPE_CHECKING = False  # mypy takes any name TYPE_CHECKING as true; typing costs the quick path
if TYPE_CHECKING:
    from collections.abc import Callable

# The `-v` trace hook (git/process.py's set_trace sets it here too).
trace: Callable[[list[str], str], object] | None = None

# Variables that point git at a particular repository. git-ao works on many
# repositories at once, each named by its own directory, so they are dropped
# for every command except the one that resolves the user's current repository.
REPO_ENV = (
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
GLOBAL_OPTS = ("-c", "core.hooksPath=/dev/null", "-c", "advice.detachedHead=false",
               "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false",
               "-c", "core.trustctime=true", "-c", "core.checkStat=default",
               "-c", "core.ignoreStat=false")


def environment(inherit_repo_env: bool = False) -> dict[str, str]:
    """The environment of a git process: the user's, without REPO_ENV (unless
    inherit_repo_env), with optional locks off, so git status never rewrites an
    index as a side effect, and the C locale unless one is set. A new dict each
    call, the caller's to change."""
    raw = getattr(os.environ, "_data", None)  # os.environ's own bytes, as the OS has them
    known = _environments.get(inherit_repo_env)
    if known is not None and known[0] == raw:
        # Decoding every variable again cost a third of a millisecond per git
        # process; os.environ is compared as it stands, so a change is seen.
        return dict(known[1])
    # The environment is made from the copy that is cached with it, so a variable
    # another thread sets meanwhile cannot be cached as seen.
    raw = dict(raw) if isinstance(raw, dict) else None
    env = {os.fsdecode(k): os.fsdecode(v) for k, v in raw.items()} \
        if raw is not None else dict(os.environ)
    if not inherit_repo_env:
        for name in REPO_ENV:
            env.pop(name, None)
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env.setdefault("LC_ALL", "C")
    if raw is not None:
        _environments[inherit_repo_env] = (raw, env)
    return dict(env)


# {inherit_repo_env: (os.environ's bytes then, the environment made from them)}
_environments: dict[bool, tuple[dict[object, object], dict[str, str]]] = {}


def spawn_ready() -> tuple[int, ...]:
    """Make this process ready to start git with posix_spawn as subprocess's
    `close_fds` and `restore_signals` would: every descriptor above 2 it
    inherited open across exec (a caller's `flock 9`, a hook runner's pipe) is
    made close-on-exec once, so git and what it runs neither hold a lock past
    git-ao's end nor keep a pipe open; returns the signals to reset to their
    default in the child (`setsigdef`: Python ignores SIGPIPE and SIGXFSZ)."""
    if not _spawn_ready:
        try:
            fds = [int(n) for n in os.listdir("/proc/self/fd")]
        except OSError:
            fds = []
        for fd in fds:
            if fd > 2:
                try:
                    if os.get_inheritable(fd):
                        os.set_inheritable(fd, False)
                except OSError:
                    pass  # (the listing's own descriptor, closed since)
        _spawn_ready.append(True)
    return _DEFAULT_SIGNALS


_spawn_ready: list[bool] = []
try:  # the C module `signal` wraps: `signal` itself loads enum, which an
    # unchanged checkpoint does not import
    from _signal import SIGPIPE, SIGXFSZ  # type: ignore[import-not-found]
except ImportError:
    from signal import SIGPIPE, SIGXFSZ
_DEFAULT_SIGNALS = (SIGPIPE, SIGXFSZ)


def exit_status(args: list[str], env: dict[str, str]) -> int | None:
    """The exit status of git with GLOBAL_OPTS and `args`, in `environment()` plus
    `env`; None when git could not be started or a signal ended it."""
    exe = gitfiles.on_path("git")
    if exe is None:
        return None
    if trace is not None:
        trace(list(args), env.get("GIT_WORK_TREE", os.getcwd()))
    null = os.devnull
    try:
        pid = os.posix_spawn(exe, [os.path.basename(exe), *GLOBAL_OPTS, *args],
                             {**environment(), **env},
                             file_actions=[(os.POSIX_SPAWN_OPEN, 0, null, os.O_RDONLY, 0),
                                           (os.POSIX_SPAWN_OPEN, 1, null, os.O_WRONLY, 0),
                                           (os.POSIX_SPAWN_OPEN, 2, null, os.O_WRONLY, 0)],
                             setsigdef=spawn_ready())
        _, status = os.waitpid(pid, 0)
    except OSError:
        return None
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else None
