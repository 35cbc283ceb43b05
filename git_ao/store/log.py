"""The one place that writes `logs/git-ao.log` in the data dir.

Shutdown scripts have no terminal, so every preserve, restore and prune
decision is appended here, one line each, rotated by size. Values are written
as `key=value` with repr-quoting where needed; prompt text is never passed in.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from git_ao.errors import TIME_FORMAT

TYPE_CHECKING = False  # mypy takes any name TYPE_CHECKING as true; typing costs a listing
if TYPE_CHECKING:
    import logging
    from collections.abc import Callable
    from typing import Any

LOG_NAME = "git-ao.log"
MAX_BYTES = 1 << 20
BACKUPS = 5

_lock = threading.Lock()
# logging (and logging.handlers) is imported on the first line written: a
# command that logs nothing (a listing, a completion) does not pay for it.
_logger: logging.Logger | None = None
_path: str | None = None
_warned: set[str] = set()  # the log paths a "cannot write" warning was given for
_on_failure: Callable[[str], None] | None = None  # set by the command layer


def _handler(path: str) -> logging.Handler:
    """A rotating handler on `path` that reports a failed write (a full disk, a log
    turned into a directory) to `event` instead of printing logging's traceback."""
    import logging.handlers

    class _Handler(logging.handlers.RotatingFileHandler):
        def handleError(self, record: logging.LogRecord) -> None:
            raise sys.exc_info()[1] or OSError("cannot write the log")

    return _Handler(path, maxBytes=MAX_BYTES, backupCount=BACKUPS)


def _the_logger() -> logging.Logger:
    global _logger
    if _logger is None:
        import logging
        _logger = logging.getLogger("git-ao")
        _logger.propagate = False
        _logger.setLevel(logging.INFO)
    return _logger


def warm() -> None:
    """Import logging in a thread of its own, for a command about to wait on git:
    its first line is then written without paying for the import."""
    if _logger is None:
        threading.Thread(target=_import, name="git-ao-log-import", daemon=True).start()


def _import() -> None:
    import logging.handlers  # noqa: F401


def on_failure(callback: Callable[[str], None] | None) -> None:
    """Install callback(message) to hear, once per log file, that it cannot be written."""
    global _on_failure
    _on_failure = callback


def _get(data_dir: str) -> logging.Logger:
    global _path
    import logging
    path = os.path.join(data_dir, "logs", LOG_NAME)
    with _lock:
        logger = _the_logger()
        if _path != path:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            if not os.path.exists(path):
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
            handler = _handler(path)
            # UTC with a Z, the one time format git-ao prints (as in --json).
            fmt = logging.Formatter("%(asctime)s pid=%(process)d %(message)s", TIME_FORMAT)
            fmt.converter = time.gmtime
            handler.setFormatter(fmt)
            # One process may serve several data dirs (tests, importers): the
            # previous file is closed here, not left for the garbage collector.
            for old in list(logger.handlers):
                logger.removeHandler(old)
                old.close()
            logger.addHandler(handler)
            _path = path
        return logger


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
        _get(data_dir).info(" ".join(parts))
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
    global _path, _on_failure
    _on_failure = None
    with _lock:
        logger = _logger
        if logger is not None:
            for old in list(logger.handlers):
                logger.removeHandler(old)
                old.close()
        _path = None


def path(data_dir: str) -> str:

    """The log file's path for this data dir."""
    return os.path.join(data_dir, "logs", LOG_NAME)
