"""Exceptions that carry git's exit-status conventions.

Every error the commands report is one of these; the command layer turns them
into one line (`fatal: ...` or `error: ...`) and the matching exit status.
"""

import os
from collections.abc import Iterable
from enum import IntEnum

_NAMED = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v",
          "\f": "\\f", "\r": "\\r"}


def one_line(text: str, *, quoted: bool = False) -> str:
    """`text` fit for one line of output: unchanged when every character prints;
    else each control character as a C escape (`\\n`, `\\t`), each byte that was
    not UTF-8 (a surrogate escape) and each other unprintable character as octal
    escapes of its bytes, as git quotes a path. quoted: the C-style quoted form
    (in double quotes, `"` and `\\` escaped) whenever any of that was needed or
    `text` starts with a double quote, so a reader can tell the two apart."""
    if text.isprintable() and not (quoted and text.startswith('"')):
        return text
    out = []
    for c in text:
        if c in _NAMED:
            out.append(_NAMED[c])
        elif quoted and c in '"\\':
            out.append("\\" + c)
        elif c.isprintable():
            out.append(c)
        else:
            raw = c.encode("utf-8", "surrogatepass") if not "\udc80" <= c <= "\udcff" \
                else bytes([ord(c) - 0xDC00])
            out.append("".join(f"\\{b:03o}" for b in raw))
    return '"' + "".join(out) + '"' if quoted else "".join(out)


# Every time git-ao prints or logs: UTC, with a Z.
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def utc_time(ns: int) -> str:
    """A wall-clock time in nanoseconds as git-ao prints every time:
    2026-12-01T04:30:19Z (UTC)."""
    import time
    return time.strftime(TIME_FORMAT, time.gmtime(ns / 1e9))


class ExitStatus(IntEnum):
    """Every exit status git-ao's commands use, as git's own commands use them."""

    OK = 0  # done, or nothing to do
    FAILED = 1  # a session was refused or failed
    ATTENTION = 3  # work that needs the user's attention
    FATAL = 128  # nothing could run; also the base a signal's number is added to
    USAGE = 129  # bad usage
    INTERRUPTED = 130  # stopped by SIGINT (128 + 2) before anything could report

    @staticmethod
    def signalled(signum: int) -> int:
        """The status of a run a signal stopped: 128 + the signal, as a shell says it."""
        return ExitStatus.FATAL + signum


class AoError(Exception):
    """Base class: a message for one line, and the exit status it implies."""

    exit_status = ExitStatus.FAILED
    prefix = "error"
    # The message already says what state the session is left in.
    names_state = False


class Fatal(AoError):
    """Nothing could run: not a repository, an unreadable database (exit 128)."""

    exit_status = ExitStatus.FATAL
    prefix = "fatal"


class NotARepository(Fatal):
    """git found no repository at or above the directory (exit 128): a command that
    could name its session from the directory asks for the id instead."""


def current_directory() -> str:
    """os.getcwd(), or Fatal in git's words when the directory the command runs in
    no longer exists (or cannot be read), as git says it for its own commands."""
    try:
        return os.getcwd()
    except OSError as exc:
        raise Fatal(f"Unable to read current working directory: {exc.strerror}") from exc


class Usage(AoError):
    """Bad input caught before anything changed (exit 129)."""

    exit_status = ExitStatus.USAGE
    prefix = "error"


class Refused(AoError):
    """One session was refused or failed; others may go on (exit 1)."""

    exit_status = ExitStatus.FAILED
    prefix = "error"

    def __init__(self, message: str, *, names_state: bool = False) -> None:
        super().__init__(message)
        self.names_state = names_state


class Failed(AoError):
    """One session's step failed after something was recorded; the message says what
    state the session is in (exit 1, status failed)."""

    exit_status = ExitStatus.FAILED
    prefix = "error"
    names_state = True



class GitError(AoError):
    """A git command exited with a status it was not expected to.

    Attributes: args (list[str]) the git arguments, status (int) its exit
    status, stderr (str) what it printed on stderr, decoded with replacement.
    """

    exit_status = ExitStatus.FAILED
    prefix = "error"

    def __init__(self, argv: Iterable[str], status: int, stderr: str) -> None:
        self.argv = list(argv)
        self.status = status
        self.stderr = stderr
        super().__init__(f"git {' '.join(self.argv[:2])}: {git_message(stderr, status)}")


class TimedOut(BaseException):
    """A git process still ran at the deadline of `git_ao.git.process.bounded`
    (`--timeout`): it was stopped, with the programs it ran.

    A BaseException, so that no `except AoError` on the way takes it for a git
    failure and goes on: it ends the session where it stands (`batch.guarded`
    makes it the session's outcome). Attributes: argv (the git arguments), hung
    (the command lines of the programs it was running: a filter, a merge
    driver), why (one phrase)."""

    def __init__(self, argv: Iterable[str], hung: Iterable[str], why: str) -> None:
        self.argv = list(argv)
        self.hung = list(hung)
        self.why = why
        self.removed: list[str] = []  # lock and scratch files it left, removed
        super().__init__(self.message())

    def message(self) -> str:
        """One line: which git command, doing what."""
        sub = next((a for a in self.argv if not a.startswith("-") and "=" not in a), "")
        what = f"git {sub}".strip()
        if self.hung:
            running = ", ".join(f"'{h if len(h) <= 160 else h[:157] + '...'}'"
                                for h in self.hung[:3])
            return (f"{what} ran past --timeout, running {running} (a merge driver, filter, "
                    "textconv or signing program that hangs?), and was stopped")
        if self.why == "stopped at the deadline":
            return f"{what} ran past --timeout and was stopped"
        return f"--timeout was spent before {what} could start"


def past_timeout(hung: Iterable[str], seconds: float | None) -> str:
    """Why a session stopped at the `--timeout` deadline, said before the advice: ""
    when git was running a program of the user's (`hung`: a filter, a merge
    driver, whose cure is to wait until nothing hangs), else that the limit of
    `seconds` was reached with nothing hung (the cure is a longer limit)."""
    if any(True for _ in hung):
        return ""
    limit = f" of {seconds:g} s" if seconds is not None else ""
    return f"the --timeout{limit} was reached with nothing hung"


def git_message(stderr: str, status: int) -> str:
    """What the user needs of git's stderr, on one line: its `fatal:` and `error:`
    lines (the lock file to remove, the path in the way), joined with '; ';
    `hint:` lines and git's prose around them are left out. Without such lines,
    the last line; without any, the exit status."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    kept = [ln for ln in lines if ln.startswith(("fatal:", "error:"))]
    if kept:
        return "; ".join(dict.fromkeys(kept))
    plain = [ln for ln in lines if not ln.startswith("hint:")]
    return plain[-1] if plain else f"exit status {status}"
