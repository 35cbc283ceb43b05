"""Sessions that are parts of one ao daemon session of a workspace project.

A daemon session of a workspace spans a root directory and one linked worktree
per repository inside it. git-ao registers each worktree as its own session
(`<daemon id>` for the root, `<daemon id>.<repo name>` for the others) with the
daemon id as `group_id`. Since a child worktree lies inside the root, a batch
preserves the inner worktrees before the outer ones (removing the root first
would take the children with it) and restores the outer ones first (a child's
directory goes inside the root's).
"""

from __future__ import annotations

import os

# A listing imports no more than it runs, not even typing (mypy takes any name
# TYPE_CHECKING as true).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import TypeVar

    from git_ao.outcome import OutcomeData
    from git_ao.store.records import Session

    T = TypeVar("T")



def depths(sessions: Sequence[Session]) -> list[int]:
    """For each session, how many other sessions of the batch have a workspace path
    that contains its own (0: outermost)."""
    paths = {os.path.normpath(s.worktree_path) for s in sessions if s.worktree_path}
    out = []
    for s in sessions:
        n, p = 0, os.path.normpath(s.worktree_path or "/")
        while True:
            parent = os.path.dirname(p)
            if parent == p:
                break
            p = parent
            n += p in paths
        out.append(n)
    return out


def in_waves(sessions: Sequence[Session], run: Callable[[list[Session]], list[T]], *,
             inner_first: bool) -> list[T]:
    """Call run(list of sessions) -> list of results once per nesting level, deepest
    level first when inner_first (preserve), outermost first otherwise (restore), so
    each level finishes before the next starts. Returns the results in the order
    of `sessions`. A batch with no nesting is one call."""
    levels = depths(sessions)
    order = sorted(set(levels), reverse=inner_first)
    if len(order) <= 1:
        return run(list(sessions))
    results: dict[int, T] = {}
    for level in order:
        idx = [i for i, d in enumerate(levels) if d == level]
        for i, out in zip(idx, run([sessions[i] for i in idx]), strict=True):
            results[i] = out
    return [results[i] for i in range(len(sessions))]  # each level ran once: all are set


def child_id(daemon_id: str, repo_name: str) -> str:
    """The git-ao id of a workspace session's repository worktree."""
    return f"{daemon_id}.{repo_name}"


def facts(s: Session) -> OutcomeData:
    """The daemon facts of a session for `git ao list --json` and `git ao show`."""
    return {"group": s.group_id, "session_mode": s.session_mode,
            "provider_conversation_id": s.provider_conversation_id}
