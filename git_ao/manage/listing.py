"""A session as the records `git ao list --json` and `git ao show` print."""

from __future__ import annotations

import os
import time
from typing import Any

from git_ao import git, groups
from git_ao.errors import AoError
from git_ao.git import query
from git_ao.store import trash
from git_ao.store.records import Session

# The states `list` and `show` print, in JSON too (a stable vocabulary, git-ao(1)):
# live, attention (live, but its ref holds work the last restore could not put
# back), pending (saved, waiting for a restore), terminated.
STATES = ("live", "attention", "pending", "terminated")


def state(s: Session) -> str:
    """The session's state as listed: one of STATES. `attention` needs the ref to
    still hold the save's commit (dropping it with git update-ref -d ends it)."""
    save = s.save
    if s.live and save is not None and save.needs_attention and save.holds_ref \
            and save.preserved_commit and os.path.isdir(s.common_dir) \
            and git.rev_parse(s.common_dir, save.preserve_ref) == save.preserved_commit:
        return "attention"
    return s.state


def list_json(s: Session) -> dict[str, Any]:
    """A session as a JSON-ready dict (the `git ao list --json` record)."""
    save = s.save
    return {
        "id": s.id, "kind": s.kind, "harness": s.harness, "state": state(s),
        "branch": s.branch, "workspace_path": s.worktree_path, "repo": s.common_dir,
        "agent_session_id": s.agent_session_id,
        "preserve_ref": save.preserve_ref if save and save.holds_ref else None,
        "preserved_commit": save.preserved_commit if save and save.holds_ref else None,
        "detached": save.detached if save else None,
        "saved_at": _iso(save.saved_at) if save else None,
        # a checkpoint records restored_at = saved_at: it was never restored
        "restored_at": _iso(save.restored_at) if save and save.restored_at
        and not save.pending and save.restored_at != save.saved_at else None,
        "created_at": _iso(s.created_at),
        **groups.facts(s),
    }


def _iso(ns: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ns / 1e9))


def show_stat(s: Session) -> str:
    """What `git stash show --stat --include-untracked` prints for the work the
    session's ref holds now: nothing once a restore put it back (the facts then
    name no ref), nor when the commit is gone (see saved_commit_gone)."""
    save = s.save
    if not save or not save.holds_ref or not save.preserved_commit or not os.path.isdir(s.common_dir):
        return ""
    if not git.object_exists(s.common_dir, save.preserved_commit):
        return ""
    return query.diff_stat(s.common_dir, save.preserved_commit)


def saved_commit_gone(s: Session) -> bool:
    """Does the record name a saved commit the repository no longer has (the ref
    deleted by hand, then garbage collected)?"""
    save = s.save
    return bool(save and save.holds_ref and save.preserved_commit and os.path.isdir(s.common_dir)
                and not git.object_exists(s.common_dir, save.preserved_commit))


def trash_kept(s: Session, data_dir: str) -> list[dict[str, Any]]:
    """What the trash keeps for the session, oldest first: for each entry its path
    (the directory), size in bytes (`trash.size`), kind ('preserved', 'stray',
    'killed', 'restored'), and the ignored paths at its top level with their
    count (what git ignores there, judged with the entry's saved index; a wholly
    ignored directory counts once)."""
    out = []
    for e in trash.of_session(data_dir, s.id):
        kind = "stray" if e.stray else "killed" if e.meta.get("killed") else \
            "restored" if e.meta.get("restored") else "preserved"
        ignored: list[str] = []
        common = str(e.meta.get("common_dir") or s.common_dir)
        if e.holds_worktree and not e.legacy and os.path.isdir(common):
            try:
                ignored = query.ignored_in(common, e.worktree, os.path.join(e.admin, "index"))
            except AoError:
                ignored = []
        top = sorted({p.split("/", 1)[0] + ("/" if "/" in p else "") for p in ignored})
        out.append({"path": e.worktree if e.holds_worktree else e.path, "kind": kind,
                    "size": trash.size(e.path), "ignored": top, "ignored_count": len(ignored)})
    return out
