"""A session as the records `git ao list --json` and `git ao show` print."""

from __future__ import annotations

import os

from git_ao import gitfiles, groups
from git_ao.errors import AoError, utc_time
from git_ao.fs import is_empty_dir
from git_ao.store.states import State

# context.REF_PREFIX: `git ao list` imports only what a listing runs (not the
# workflows' context, the capture, the locks, nor typing), which would cost every
# listing more than its own work. mypy takes any name TYPE_CHECKING as true.
PRESERVED = "refs/ao/preserved/"
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

    from git_ao.outcome import Outcome, OutcomeData
    from git_ao.store import trash
    from git_ao.store.records import Session

    # {common dir: {ref: commit}} of the preserve refs, read once per repository.
    Refs = dict[str, dict[str, str]]


def preserve_refs(sessions: Sequence[Session]) -> Refs:
    """The preserve refs of the repositories of `sessions`, read from the ref files
    (`gitfiles.refs_under`), else by one `git for-each-ref` each (a repository
    that is gone or unreadable has none)."""
    out: Refs = {}
    for repo in sorted({s.common_dir for s in sessions}):
        if not os.path.isdir(repo):
            out[repo] = {}
            continue
        read = gitfiles.refs_under(repo, PRESERVED)
        if read is not None:
            out[repo] = read
            continue
        from git_ao import git  # here: a listing the ref files answer loads no git module
        try:
            out[repo] = dict(git.for_each_ref(repo, PRESERVED))
        except AoError:
            out[repo] = {}
    return out


def holds_ref(s: Session, refs: Refs | None = None) -> bool:
    """Does the session's ref still hold the commit its record names? A pending save
    is taken as recorded (restore applies the commit itself); any other is checked
    against the ref, so one dropped by hand (`git update-ref -d`) is not listed.
    refs: `preserve_refs` read beforehand, else one `git rev-parse`."""
    save = s.save
    if save is None or not save.holds_ref or not save.preserved_commit:
        return False
    if save.pending:
        return True
    if refs is not None:
        return refs.get(s.common_dir, {}).get(save.preserve_ref) == save.preserved_commit
    from git_ao import git
    return os.path.isdir(s.common_dir) and \
        git.rev_parse(s.common_dir, save.preserve_ref) == save.preserved_commit


def pending_ref_gone(s: Session, refs: Refs | None = None) -> bool:
    """Is the preserve ref of a pending session's save gone, or moved off the saved
    commit (deleted by hand: `git update-ref -d`)? Restore applies the recorded
    commit all the same, while the repository has it. refs: see `holds_ref`."""
    gone, _now = _pending_ref(s, refs)
    return gone


def _pending_ref(s: Session, refs: Refs | None) -> tuple[bool, str | None]:
    """(`pending_ref_gone`, what the ref holds now), the ref read once."""
    save = s.save
    if save is None or not save.pending or not save.holds_ref or not save.preserved_commit \
            or not os.path.isdir(s.common_dir):
        return False, None
    if refs is not None and s.common_dir in refs:
        now = refs[s.common_dir].get(save.preserve_ref)
    else:
        from git_ao import git
        now = git.rev_parse(s.common_dir, save.preserve_ref)
    return now != save.preserved_commit, now


def ref_gone_hint(s: Session, data_dir: str, refs: Refs | None = None, *,
                  where_copy: bool = False) -> str:
    """What `git ao list`, `show` and doctor say of a pending session whose preserve
    ref is gone (`pending_ref_gone`); "" for any other. In turn: a restore that
    started and did not finish (it deletes the ref once the work is back, so a kill
    right after leaves exactly this: the rerun finishes it); the saved commit gone
    too (then the trash copy, when there is one, is what holds the work); else the
    ref deleted, with the gc advice only when no other ref (its history) keeps the
    commit. where_copy: also say where the trash copy is, or that none is left."""
    gone, now = _pending_ref(s, refs)
    if not gone:
        return ""
    save = s.save
    assert save is not None and save.preserved_commit  # _pending_ref says so
    ref, commit = save.preserve_ref, save.preserved_commit
    from git_ao.store import trash  # only for such a session: a listing needs none
    commit_gone = saved_commit_gone(s)
    copy = trash.latest_for(data_dir, s.id, environment=True) \
        if where_copy or commit_gone else None
    if commit_gone:
        if copy is not None:
            return (f"its ref {ref} was deleted and its saved commit {commit} is gone, but "
                    f"the trash copy {copy.worktree} holds the worktree as preserve took it, "
                    f"untracked files included: git ao-restore {s.id} puts it back whole when "
                    "it can, else checks the worktree out again without the work and keeps "
                    f"the copy (git ao forget --force {s.id} drops the record, keeping it "
                    "too)")
        return (f"its ref {ref} was deleted and its saved commit {commit} is gone, and no "
                f"trash copy is left: its saved work cannot be restored (git ao forget "
                f"--force {s.id} drops the record)")
    where = "" if not where_copy else (
        f"; the trash still holds the directory: {copy.worktree}" if copy is not None
        else "; no trash copy is left")
    if save.restore_interrupted:
        assert save.restore_started_at is not None  # restore_interrupted says so
        return (f"a restore started {utc_time(save.restore_started_at)} did not finish, and "
                f"its ref {ref} is gone (a restore deletes it once the work is back): git "
                f"ao-restore {s.id} finishes it, from the saved commit {commit}{where}")
    if now is not None:
        # Moved, not deleted: putting it back would drop what it holds now.
        return (f"its ref {ref} now holds {now}, not the saved commit: git ao-restore "
                f"{s.id} still applies the saved commit {commit}"
                f"{_kept_from_gc(s.common_dir, s.id, ref, commit, moved=True)}{where}")
    return (f"its ref {ref} was deleted (git update-ref -d, or a git fetch --prune with a "
            f"refspec covering refs/ao/); git ao-restore {s.id} still applies the saved "
            f"commit {commit}{_kept_from_gc(s.common_dir, s.id, ref, commit)}{where}")


def _kept_from_gc(common_dir: str, session_id: str, ref: str, commit: str, *,
                  moved: bool = False) -> str:
    """How the saved commit of a pending save whose ref is gone stays out of git
    gc's reach: the session's history, another ref, or nothing (then the command
    that keeps it: the ref put back, or for a ref that moved, which must keep what
    it holds, a branch of its own)."""
    from git_ao.git import query
    from git_ao.save import history
    href = history.history_ref(session_id)
    if query.is_ancestor_here(common_dir, commit, href):
        return f" ({href}, the session's history, keeps it from git gc)"
    try:
        if query.is_reachable_from_refs(common_dir, commit):
            return " (another ref keeps it from git gc)"
    except AoError:
        pass
    if moved:
        return (f" while the repository has it (git branch ao-saved-{session_id} {commit} "
                "keeps it from git gc)")
    return (f" while the repository has it (git update-ref {ref} {commit} puts the ref "
            "back, keeping the commit from git gc)")


def worktree_gone(s: Session) -> bool:
    """Is a live session's worktree not at its path (moved, removed, or emptied: see
    `gone.gone_worktree`, which says why), or its repository gone? Nothing is
    pending, yet its work is not where it was, or cannot be saved."""
    path = s.worktree_path
    return s.live and bool(path) and (not os.path.lexists(path) or is_empty_dir(path)
                                      or not os.path.isdir(s.common_dir))


def state(s: Session, refs: Refs | None = None, data_dir: str | None = None) -> State:
    """The session's state as listed. `attention`: live, and either
    its ref still holds the save's commit after a restore that could not put it
    all back (`git ao resolve` ends it), or its save holds less than an earlier
    capture of the same preserve (`holds_less`), or its worktree is gone or empty,
    or (data_dir given) a trash copy holds work the last restore could not put back
    (`trash_work`: removing the copy ends it)."""
    save = s.save
    if s.live and save is not None and save.needs_attention and holds_ref(s, refs):
        return State.ATTENTION
    if holds_less(s) or worktree_gone(s):
        return State.ATTENTION
    if data_dir and trash_work(s, data_dir) is not None:
        return State.ATTENTION
    return s.state


def trash_work(s: Session, data_dir: str) -> trash.Entry | None:
    """The newest trash copy of a live session that holds what the last restore did
    not put back: its saved commit was gone, so the worktree was checked out again
    without the work (`trash.Meta.commit_gone`); or the copy changed after the last
    capture (`unlike_save`), holds ignored files that found something in their
    way (`environment_kept`) or paths the save could not be put back as
    (`not_as_saved`). Prune keeps such a copy until it is removed by hand. None
    for any other. Reads only directory names unless an entry of the session is
    there: a listing imports the trash module for such a session only."""
    if not s.live:
        return None
    prefix = s.id + "."
    from git_ao.store.datadir import TRASH_DIR, trash_roots
    try:
        roots = trash_roots(data_dir)
    except OSError:  # an unreadable list: the data dir's own root still tells
        roots = [os.path.join(data_dir, TRASH_DIR)]
    if not any(n.startswith(prefix) for r in roots for n in _names(r)):
        return None
    from git_ao.store import trash
    held = [e for e in trash.entries(data_dir, s.id) if e.holds_worktree and (
        e.meta.commit_gone or e.meta.unlike_save or e.meta.environment_kept
        or e.meta.not_as_saved)]
    return held[-1] if held else None


def _names(root: str) -> list[str]:
    try:
        return os.listdir(root)
    except OSError:
        return []


def _such_as(paths: Iterable[object]) -> str:
    names = sorted(str(p) for p in paths)
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def trash_work_hint(s: Session, data_dir: str) -> str:
    """What `git ao list`, `show` and doctor say of a live session whose trash copy
    holds what its last restore did not put back (`trash_work`); "" for any other."""
    entry = trash_work(s, data_dir)
    if entry is None:
        return ""
    copy, meta = entry.worktree, entry.meta
    if meta.commit_gone:
        return (f"its last restore found the saved commit gone and checked the worktree out "
                f"again without the work; the trash copy {copy} holds the worktree as "
                "preserve took it, untracked files included: take the work from there, then "
                "remove the copy (prune keeps it)")
    if meta.unlike_save:
        left = f"what was written after the last capture ({_such_as(meta.unlike_save)})"
    elif meta.environment_kept:
        left = f"ignored files that found something in their way ({_such_as(meta.environment_kept)})"
    else:
        left = f"paths the save could not be put back as ({_such_as(meta.not_as_saved or [])})"
    return (f"its last restore checked the worktree out again and left {left} in the trash "
            f"copy {copy}: take what you need from there, then remove the copy (prune keeps it)")


def holds_less(s: Session) -> bool:
    """Is the session back (live) with a save that holds less than an earlier capture
    of the same preserve (`Save.holds_less_than`: the worktree before its agents
    were stopped, or before a late write)? A `git ao-restore --at` that brings it
    back, `git ao resolve` or the next preserve ends it."""
    return s.live and s.save is not None and not s.save.pending \
        and bool(s.save.holds_less_than)


def holds_less_hint(s: Session) -> str:
    """What `git ao list` and `show` say of a session whose save holds less than an
    earlier capture of the same preserve (pending or back): the history entry
    holding it and the command that brings it back; "" for any other."""
    save = s.save
    if save is None or not save.holds_less_than or not (s.live or s.pending) or \
            not os.path.isdir(s.common_dir):
        return ""
    from git_ao.save import lacking  # only for such a session: a listing needs none
    note, _ = lacking.advice(s.common_dir, s.id, save.holds_less_than,
                             then=f"after git ao-restore {s.id}, " if save.pending else "",
                             live=not save.pending)
    return note


def left_pending(s: Session) -> Outcome:
    """The outcome (nothing) of a pending session that a restore naming no session
    leaves (here, or from a remote): its tool removed its worktree on purpose
    (`Save.removed_by`)."""
    from git_ao.outcome import Action, Outcome, Status, facts
    return Outcome(s.id, Action.RESTORE, Status.NOTHING, f"left pending: {removed_by_hint(s)}",
                   facts(s), names_state=True)


def removed_by_hint(s: Session) -> str:
    """What `git ao list`, `show` and a restore naming no session say of a pending
    save whose worktree its tool removed itself (`Save.removed_by`: the user
    removed it there, git-ao kept its work); "" for any other."""
    save = s.save
    if save is None or not save.pending or not save.removed_by:
        return ""
    return (f"saved when {save.removed_by} removed its worktree; git ao-restore {s.id} "
            "brings it back (git ao-restore with no session leaves it)")


def interrupted_at_hint(data_dir: str, s: Session) -> str:
    """What `git ao list` and `show` say of a live session whose worktree an
    interrupted `--at` left part way (`history.interrupted_at_hint`); "" for any
    other, with no git process unless its mark is there."""
    if not s.live or not os.path.exists(os.path.join(data_dir, "restore-at", s.id)):
        return ""
    from git_ao.save import history  # only for such a session: a listing needs none
    return history.interrupted_at_hint(data_dir, s)


def list_json(s: Session, refs: Refs | None = None, data_dir: str | None = None
              ) -> OutcomeData:
    """A session as a JSON-ready dict (the `git ao list --json` record). refs: see
    `holds_ref`; data_dir: see `state`."""
    save = s.save
    held = holds_ref(s, refs)
    ref_there = held and not pending_ref_gone(s, refs)
    return {
        "id": s.id, "kind": s.kind, "harness": s.harness, "state": state(s, refs, data_dir),
        "branch": s.branch, "workspace_path": s.worktree_path, "repo": s.common_dir,
        "agent_session_id": s.agent_session_id,
        # a pending save's commit stays named (restore applies it), its ref only
        # while it is there (ref_gone_hint says it is not)
        "preserve_ref": save.preserve_ref if save and ref_there else None,
        "preserved_commit": save.preserved_commit if save and held else None,
        "detached": save.detached if save else None,
        "saved_at": utc_time(save.saved_at) if save else None,
        # a checkpoint records restored_at = saved_at: it was never restored
        "restored_at": utc_time(save.restored_at) if save and save.restored_at
        and not save.pending and save.restored_at != save.saved_at else None,
        # 0: not registered (a dry run's would-be session), so no time to give
        "created_at": utc_time(s.created_at) if s.created_at else None,
        "tool": s.tool, "tool_id": s.tool_id, "tmux_session": s.tmux_session,
        **groups.facts(s),
        "holds_less_than": save.holds_less_than if save and (s.live or s.pending) else None,
        # pending only: a restore naming the session clears it
        "removed_by": save.removed_by if save and save.pending else None,
    }


def show_stat(s: Session) -> str:
    """What `git stash show --stat --include-untracked` prints for the work the
    session's ref holds now: nothing once a restore put it back (the facts then
    name no ref), nor when the commit is gone (see saved_commit_gone)."""
    save = s.save
    if not save or not holds_ref(s) or not save.preserved_commit \
            or not os.path.isdir(s.common_dir):
        return ""
    from git_ao import git
    from git_ao.git import query  # lazily, as below: a listing runs neither
    if not git.object_exists(s.common_dir, save.preserved_commit):
        return ""
    return query.diff_stat(s.common_dir, save.preserved_commit)


def saved_commit_gone(s: Session) -> bool:
    """Does the record name a saved commit the repository no longer has (the ref
    deleted by hand, then garbage collected)? Asked of a pending save only: any
    other names no commit once its ref is gone (`holds_ref`)."""
    save = s.save
    if not (save and save.pending and save.holds_ref and save.preserved_commit
            and os.path.isdir(s.common_dir)):
        return False
    from git_ao import git
    return not git.object_exists(s.common_dir, save.preserved_commit)


def trash_kept(s: Session, data_dir: str) -> list[dict[str, Any]]:
    """What the trash keeps for the session, oldest first: for each entry its path
    (the directory), size in bytes (`trash.size`), kind ('preserved', 'stray',
    'killed', 'restored'), and the ignored paths at its top level with their
    count (what git ignores there, judged with the entry's saved index; a wholly
    ignored directory counts once)."""
    from git_ao.store import trash
    out = []
    for e in trash.of_session(data_dir, s.id):
        kind = "stray" if e.stray else "killed" if e.meta.killed else \
            "restored" if e.meta.restored else "preserved"
        ignored = entry_ignored(e, s.common_dir)
        top = sorted({p.split("/", 1)[0] + ("/" if "/" in p else "") for p in ignored})
        out.append({"path": e.worktree if e.holds_worktree else e.path, "kind": kind,
                    "size": trash.size(e.path), "ignored": top, "ignored_count": len(ignored)})
    return out


def entry_ignored(e: trash.Entry, common_dir: str | None) -> list[str]:
    """The ignored paths in trash entry `e`, as git judges them with the entry's
    saved index (a wholly ignored directory counts once); [] when the entry holds
    no worktree or its repository is gone."""
    common = str(e.meta.common_dir or common_dir or "")
    if not (e.holds_worktree and not e.legacy and common and os.path.isdir(common)):
        return []
    from git_ao.git import query
    try:
        return query.ignored_in(common, e.worktree, os.path.join(e.admin, "index"))
    except AoError:
        return []
