"""The one place that writes `logs/git-ao.log` in the data dir.

Shutdown scripts have no terminal, so every preserve, restore and prune
decision is appended here, one line each, rotated by size. Values are written
as `key=value` with repr-quoting where needed; prompt text is never passed in.
"""

from __future__ import annotations

import os
import threading
import time

from git_ao.errors import TIME_FORMAT

TYPE_CHECKING = False  # mypy takes any name TYPE_CHECKING as true; typing costs a listing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

LOG_NAME = "git-ao.log"
MAX_BYTES = 1 << 20
BACKUPS = 5

# Written with os alone: logging and its rotating handler cost a checkpoint more
# to import (socket, pickle, queue) than all it logs.
_lock = threading.Lock()
_fd: int | None = None
_path: str | None = None
_warned: set[str] = set()  # the log paths a "cannot write" warning was given for
_on_failure: Callable[[str], None] | None = None  # set by the command layer


def on_failure(callback: Callable[[str], None] | None) -> None:
    """Install callback(message) to hear, once per log file, that it cannot be written."""
    global _on_failure
    _on_failure = callback


def _open(path: str) -> int:
    """The log's descriptor for appending, the file made private when new."""
    global _fd, _path
    if _path != path or _fd is None:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        # One process may serve several data dirs (tests, importers): the previous
        # file is closed here, not left open.
        _close()
        _fd, _path = fd, path
    return _fd


def _close() -> None:
    global _fd, _path
    if _fd is not None:
        os.close(_fd)
    _fd, _path = None, None


def _rotate(path: str) -> None:
    """git-ao.log becomes git-ao.log.1, each .N becomes .N+1, the last is dropped."""
    _close()
    for n in range(BACKUPS - 1, 0, -1):
        try:
            os.replace(f"{path}.{n}", f"{path}.{n + 1}")
        except FileNotFoundError:
            pass
    os.replace(path, f"{path}.1")


def _write(data_dir: str, message: str) -> None:
    path = os.path.join(data_dir, "logs", LOG_NAME)
    now = time.time()
    line = (f"{time.strftime(TIME_FORMAT, time.gmtime(now))} pid={os.getpid()} "
            f"{message}\n").encode("utf-8", "backslashreplace")
    with _lock:
        fd = _open(path)
        st = os.fstat(fd)
        try:
            moved = not os.path.samestat(st, os.stat(path))
        except FileNotFoundError:
            moved = True
        if moved:
            # Another process rotated it: write to the file the path names now.
            _close()
            fd = _open(path)
            st = os.fstat(fd)
        if st.st_size and st.st_size + len(line) > MAX_BYTES:
            _rotate(path)
            fd = _open(path)
        # One write of the whole line: O_APPEND keeps lines of several processes whole.
        os.write(fd, line)


def _fmt(value: object) -> str:
    text = str(value)
    if not text or any(c.isspace() or c in "\"'=" for c in text):
        return repr(text)
    return text


def event(data_dir: str, action: str, session_id: str | None, decision: str,
          **fields: Any) -> None:
    """Append one line: `<time> pid=<pid> <action> <session> <decision> key=value ...`.

    data_dir: str. Never raises: a log that cannot be written must not stop a
    preserve at shutdown; the callback given to `on_failure` hears of it once."""
    try:
        parts = [action, _fmt(session_id or "-"), _fmt(decision)]
        parts += [f"{k}={_fmt(v)}" for k, v in fields.items() if v is not None]
        _write(data_dir, " ".join(parts))
    except Exception as exc:  # noqa: BLE001 - logging is best effort by design
        _report(path(data_dir), exc)


def _report(log_path: str, exc: BaseException) -> None:
    with _lock:
        if log_path in _warned:
            return
        _warned.add(log_path)
    if _on_failure is not None:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        _on_failure(f"cannot write the log {log_path}: {why}; decisions are not being logged")


def close() -> None:
    """Close the log file and forget the failure callback. A process that outlives
    its data dir (the tests run commands in-process, one data dir each) calls this
    so no file stays open and nothing holds the command's objects (its database
    connection among them) alive."""
    global _on_failure
    _on_failure = None
    with _lock:
        _close()


def path(data_dir: str) -> str:

    """The log file's path for this data dir."""
    return os.path.join(data_dir, "logs", LOG_NAME)
