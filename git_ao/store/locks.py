"""The locks that keep two git-ao runs (or two threads of one) off the same thing.

Each lock is an exclusive `flock` on a file under the data dir's `locks/`: one
per session, one per repository; and one of restore runs, shared by restores. A flock belongs to an open file, so threads
of one process exclude each other too, and a killed holder releases it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from collections.abc import Iterator

from git_ao.errors import Fatal, Refused
from git_ao.store.datadir import ensure_private_dir

LOCK_DIR = "locks"
DEFAULT_TIMEOUT = 120.0


def session_lock(data_dir: str, session_id: str,
                 timeout: float = DEFAULT_TIMEOUT) -> contextlib.AbstractContextManager[None]:
    """Hold the lock of one session (flock on locks/<id>.lock), waiting up to `timeout`
    seconds. Raises Refused when another git-ao process holds it for longer."""
    path = os.path.join(_lock_dir(data_dir, LOCK_DIR), session_id + ".lock")
    return _flock(path, f"session '{session_id}'", timeout)


def repo_lock(data_dir: str, common_dir: str,
              timeout: float = DEFAULT_TIMEOUT) -> contextlib.AbstractContextManager[None]:
    """Hold the lock of the repository at `common_dir` (flock on
    locks/repos/<sha1 of the path>.lock), waiting up to `timeout` seconds.

    Restore holds it from reading `git worktree list` to the end of
    `git worktree add`: git checks that a branch is free and adds the worktree
    without a lock, so two adds (threads of one run, or two git-ao processes)
    could both pass the check. Raises Refused when held for longer."""
    import hashlib  # lazily: OpenSSL's start-up is for the commands that lock a repository
    name = hashlib.sha1(os.path.abspath(common_dir).encode("utf-8", "surrogateescape"))
    path = os.path.join(_lock_dir(data_dir, os.path.join(LOCK_DIR, "repos")),
                        name.hexdigest() + ".lock")
    return _flock(path, f"repository {common_dir}", timeout)


RESTORE_RUN = "restore-run.lock"


def restore_run(data_dir: str, *, shared: bool,
                timeout: float = DEFAULT_TIMEOUT) -> contextlib.AbstractContextManager[None]:
    """The lock of restore runs (flock on locks/restore-run.lock): each restore
    holds it shared for its whole batch, and `preserve --all` holds it exclusive
    while it chooses its sessions, so it waits for a running restore and sees the
    sessions that restore brought back live, not pending. Waits up to `timeout`
    seconds; raises Refused when a holder keeps it longer."""
    path = os.path.join(_lock_dir(data_dir, LOCK_DIR), RESTORE_RUN)
    return _flock(path, "a running git ao-restore", timeout,
                  fcntl.LOCK_SH if shared else fcntl.LOCK_EX)


def _lock_dir(data_dir: str, name: str) -> str:
    path = os.path.join(data_dir, name)
    ensure_private_dir(path)
    return path


@contextlib.contextmanager
def _flock(path: str, what: str, timeout: float, how: int = fcntl.LOCK_EX) -> Iterator[None]:
    """Hold an exclusive flock on `path` (created 0600), polling every 50 ms up to
    `timeout` seconds. Raises Fatal when the file cannot be opened, Refused when
    another holder keeps it longer."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise Fatal(f"cannot open the lock '{path}': {exc.strerror}; nothing is changed") \
            from exc
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, how | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() >= deadline:
                    raise Refused(f"{what} is busy: another git-ao holds {path}") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)
