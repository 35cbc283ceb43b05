"""The `git ao` entry point: an unchanged checkpoint answered before click loads.

An agent tool's hook runs `git ao checkpoint --hook-input -q` after every turn,
and the timer runs `git ao checkpoint --all -q`: when the stat file the last
checkpoint left proves the worktree unchanged (git_ao/save/unchanged.py), there
is nothing to do and nothing to print, so it is answered here with os and
marshal alone, which costs less than the `git status` it replaces. Everything
else (any other command, any option this does not know, a worktree that may
have changed) goes to the full command line (git_ao/cli/ao.py), which checks
again and does the work.
"""

from __future__ import annotations

import io
import os
import sys

# context.ID_RE's characters, checked without importing re.
_ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def _valid_id(sid: str) -> bool:
    return 0 < len(sid) <= 200 and sid[0] not in ".-" and set(sid) <= _ID_CHARS


def hook_cwd(data: bytes) -> str | None:
    """The working directory an agent tool's hook names in the JSON it gives on stdin
    (Claude Code: {"cwd": ..., "session_id": ..., "hook_event_name": ...}), None
    when there is none."""
    import json
    try:
        doc = json.loads(data.decode("utf-8", "replace") or "{}")
    except ValueError:
        return None
    cwd = doc.get("cwd") if isinstance(doc, dict) else None
    return cwd if isinstance(cwd, str) and cwd else None


def _top(start: str) -> str | None:
    """The top of the worktree holding `start` (the directory with a `.git`)."""
    d = os.path.realpath(start)
    while True:
        if os.path.lexists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def _unchanged(argv: list[str]) -> bool:
    """Is `argv` a quiet checkpoint of one session whose worktree is provably
    unchanged? Reads the hook's JSON from stdin when asked (and puts it back for
    the full command line when the answer is no)."""
    if not argv or argv[0] != "checkpoint":
        return False
    rest = argv[1:]
    if "-q" not in rest and "--quiet" not in rest:
        return False
    rest = [a for a in rest if a not in ("-q", "--quiet")]
    if "--trigger" in rest:
        i = rest.index("--trigger")
        if rest[i + 1:i + 2] not in (["checkpoint"], ["timer"], ["hook"]):
            return False
        del rest[i:i + 2]
    hook = "--hook-input" in rest
    rest = [a for a in rest if a != "--hook-input"]
    if len(rest) > (0 if hook else 1) or any(a.startswith("-") for a in rest):
        return False
    from git_ao.save import unchanged
    env = os.environ.get("AO_DATA_DIR")
    data = os.path.abspath(os.path.expanduser(env)) if env else os.path.join(
        os.path.expanduser("~"), ".ao", "data")
    where = os.getcwd()
    if hook:
        raw = sys.stdin.buffer.read()
        sys.stdin = io.TextIOWrapper(io.BytesIO(raw))  # for the full command line
        where = hook_cwd(raw) or where
    if rest:
        if not _valid_id(rest[0]):
            return False
        sid: str | None = rest[0]
        try:
            with open(os.path.join(data, "history-stat", rest[0]), "rb"):
                pass
        except OSError:
            return False
        path = None
    else:
        path = _top(where)
        sid = unchanged.session_at(data, path) if path else None
    if not sid:
        return False
    return unchanged.unchanged(data, sid, path) if path else unchanged.unchanged_any(data, sid)


def main() -> None:
    """Answer an unchanged quiet checkpoint at once (exit 0), else run `git ao`
    (entry.ao: a listing without click, anything else through click)."""
    try:
        if _unchanged(sys.argv[1:]):
            sys.exit(0)
    except (OSError, ValueError):
        pass
    # Then the listing without click (cli/entry.py), else the full command line.
    from git_ao.cli.entry import ao
    ao()
