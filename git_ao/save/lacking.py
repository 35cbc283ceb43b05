"""A save that holds less than an earlier capture of the same preserve.

One preserve may capture a worktree more than once: as a checkpoint before its
agents are stopped (a stop handler may throw the work away), then for the save
itself, and again after the move into the trash when an agent wrote late. When
the save recorded lacks what such an earlier capture held (`lost`), its record
names that capture (`Save.holds_less_than`), and the restore, `git ao list`,
`git ao show` and `git ao resolve` name the history entry holding it with the
`git ao-restore ID --at N` that brings it back (`advice`): otherwise only the
preserve's own line would ever say so.
"""

from __future__ import annotations

from git_ao.errors import AoError, utc_time
from git_ao.git import query
from git_ao.git.parse import ObjectId
from git_ao.save import capture, history

# A checkpoint taken before a shutdown stopped the agents, kept when the stop
# changed the worktree; nothing deletes these but the user.
BEFORE_STOP_PREFIX = "refs/ao/before-stop/"
# The first line of the commit that keeps an earlier before-stop checkpoint alive
# beside a newer one (witness.keep_alive): its lines name each kept commit.
_KEPT_ALIVE = "git-ao: commits kept alive"


def before_stop_ref(session_id: str) -> str:
    """refs/ao/before-stop/<id>: the worktree before a shutdown stopped its agents."""
    return BEFORE_STOP_PREFIX + session_id


def _blobs(common_dir: str, commit: str) -> tuple[dict[str, str], dict[str, str]]:
    """({path: blob} of what the save `commit` holds, {path: blob} of its HEAD)."""
    head, _, tree, untracked = capture.saved_trees(common_dir, commit)
    held = query.ls_tree_blobs(common_dir, tree or f"{head}^{{tree}}")
    if untracked:
        held.update(query.ls_tree_blobs(common_dir, untracked))
    return held, query.ls_tree_blobs(common_dir, f"{head}^{{tree}}")


def lost(common_dir: str, earlier: str, final: str | None) -> list[str]:
    """The paths the capture `earlier` holds, changed or added against its HEAD,
    that the save `final` lacks, or holds empty where `earlier` did not (a stop
    handler's `: > file`), sorted. A file as its HEAD has it is committed, not
    work this save could lose, and other differences may be an agent's last
    writes, which the final save rightly holds. With `final` None (nothing was
    saved: a clean worktree, or one found gone), every path `earlier` changed or
    added against its HEAD. Raises GitError."""
    was, base = _blobs(common_dir, earlier)
    work = {p: oid for p, oid in was.items() if base.get(p) != oid}
    if final is None:
        return sorted(work)
    now, _ = _blobs(common_dir, final)
    empty = query.hash_bytes(common_dir, b"")
    return sorted(p for p, oid in work.items() if p not in now or now[p] == empty != oid)


def before_stop_commit(common_dir: str, session_id: str) -> ObjectId | None:
    """The checkpoint refs/ao/before-stop/<id> keeps (the newest, when a commit keeps
    several alive), None when there is no such ref. The ref is read from its file
    or `packed-refs` (`query.ref_tip`): a session without one costs no process."""
    tip = query.ref_tip(common_dir, before_stop_ref(session_id))
    if tip is None:
        return None
    try:
        _tree, _parents, message = query.commit_object(common_dir, tip)
    except AoError:
        return None
    if not message.startswith(_KEPT_ALIVE):
        return tip
    for ln in message.splitlines():
        name, _, oid = ln.partition(" ")
        if name == "before-stop" and oid:
            return ObjectId(oid)
    return None


def advice(common_dir: str, session_id: str, earlier: str, *, final: str | None = None,
           judged: bool = False, then: str = "", live: bool = False,
           ref_said: bool = False) -> tuple[str, int | None]:
    """One clause saying that the session's save holds less than the earlier capture
    `earlier` of the same preserve: the history entry holding it (its number now,
    time and counts), whether it is the state before the agents were stopped, and
    the command that brings it back (`then` goes before it: "after git ao-restore
    ID, " while the session is pending). judged: name the paths the save `final`
    lost of it (`lost`). live: the session is back, so `git ao resolve` (which
    ends the record's note) is named too. ref_said: the caller names
    refs/ao/before-stop/<id> itself. Returns (the clause, the entry's number or
    None when no entry holds it); ("", None) when the repository cannot be read."""
    try:
        entry = history.holding(common_dir, session_id, earlier)
        kept = before_stop_commit(common_dir, session_id) == earlier
        paths = lost(common_dir, earlier, final) if judged else []
    except AoError:
        return "", None
    # The preserve's own captures are its "preserve" entries; the checkpoint before
    # the stop is another (the ref that keeps it may have been deleted since).
    stopped = entry.trigger != "preserve" if entry is not None else kept
    when = "before its agents were stopped" if stopped else \
        "at the preserve's first capture, before a late write"
    done = f"; git ao resolve {session_id} once it is not needed" if live else ""
    facts = [f"not in the save: {', '.join(paths[:5])}{' ...' if len(paths) > 5 else ''}"
             ] if paths else []
    if kept and not ref_said:
        facts.append(f"also in {before_stop_ref(session_id)}")
    if entry is None:
        # Retention dropped the entry, or it could not be appended: the commit
        # itself still holds the state.
        return (f"the save holds less than the worktree held {when} "
                f"({'; '.join([earlier[:12], *facts])}): {then}git stash apply --index "
                f"{earlier[:12]} in the worktree brings it back{done}"), None
    facts.insert(0, f"entry {entry.number} of its history, {utc_time(entry.time_ns)}: "
                 f"{entry.changed} changed, {entry.untracked} untracked")
    return (f"the save holds less than the worktree held {when} ({'; '.join(facts)}): "
            f"{then}git ao-restore {session_id} --at {entry.number} brings it back{done}"), \
        entry.number
