"""Restore: re-create each pending session's worktree, apply its saved work,
drop the ref after a clean apply, and relaunch its agent.

The order, per session, reads in `restore_one`: place the worktree (under the
repository's lock), apply, then commit the row; the ref goes only once the
worktree provably holds the work. Nothing here prints but the relaunch hints.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from . import crashpoint, git, gitindex, replay, session_groups, snapshot, worktree
from .batch import NOT_STARTED, guarded, log_failure, run_each
from .errors import Refused
from .outcome import Outcome, Status
from .records import Save, Session
from .session import Context, facts, lookup
from .store import TRASH_DIR, Store

if TYPE_CHECKING:
    from .output import Printer
    from .settings import Settings


def restore(ctx: Context, sessions: Sequence[Session], *, jobs: int = 1,
            progress: Callable[[Outcome], object] | None = None,
            stop: threading.Event | None = None) -> list[Outcome]:
    """Restore each pending session; one failure never stops the others.

    sessions: list of Session. jobs: sessions handled at once (threads); sessions
    of one repository place their worktrees one at a time (`restore_one`) and
    apply their work in parallel. progress: callback(Outcome) per session, called
    from the thread that ran it. stop: a threading.Event; once set (SIGTERM,
    SIGINT) no new session starts, the ones in flight run to their end and the
    rest stay pending. Returns one Outcome per session, in input order.
    """
    def one(s: Session) -> Outcome:
        if stop is not None and stop.is_set():
            return Outcome(s.id, "restore", Status.REFUSED,
                           NOT_STARTED + "; the session stays pending")
        out = guarded(lambda: restore_one(ctx, s.id), s.id, "restore")
        log_failure(ctx, out)
        crashpoint.hit("restore:between-sessions")
        return out

    return session_groups.in_waves(sessions, lambda part: run_each(part, one, jobs, progress),
                                   inner_first=False)


def restore_one(ctx: Context, session_id: str) -> Outcome:
    """Re-create the session's worktree at its recorded path on its branch, apply the
    preserved commit, delete the ref after a clean apply, mark the session live.

    The repository's lock (`locks.repo_lock`) makes the check that the branch
    and the path are free and the `git worktree add` one step among threads and
    processes. Returns an Outcome; raises Refused (branch taken, path taken,
    repository gone) or another AoError, the session staying pending."""
    with ctx.lock(session_id):
        s = lookup(ctx, session_id)
        if not s.pending:
            return Outcome(s.id, "restore", Status.NOTHING,
                           "live, nothing pending" if s.live else "terminated, nothing pending",
                           facts(s))
        save = s.save
        assert save is not None  # pending means saved
        path = save.worktree_path
        if not os.path.isdir(s.common_dir):
            raise Refused(f"repository {s.common_dir} is gone; the session stays pending until it "
                          "is back (if it moved: git ao forget --force "
                          f"{s.id}, then git ao doctor --recover -C <its new path>)")
        want_branch = None if save.detached else save.branch
        with ctx.repo_lock(s.common_dir):
            reused = _place_worktree(ctx, s, save, path, want_branch)
            if ctx.dry_run:
                how = "reuse the worktree at" if reused else "re-create the worktree at"
                return Outcome(s.id, "restore", Status.OK, f"would {how} {path}", facts(s))
        if not reused:
            crashpoint.hit("restore:after-worktree-add")
        outcome = _apply_saved(ctx, s, save, path, reused)
        # An "ok" apply dropped the ref (under this session's lock nothing rewrites it).
        kept = outcome.status != Status.OK and bool(save.preserve_ref) \
            and git.rev_parse(s.common_dir, save.preserve_ref) is not None
        ctx.store.mark_restored(s.id, ref_kept=kept)
        crashpoint.hit("restore:after-db")
        ctx.log("restore", s.id, outcome.status, detail=outcome.message, workspace=path)
        return outcome


def _place_worktree(ctx: Context, s: Session, save: Save, path: str,
                    want_branch: str | None) -> bool:
    """Step 1 of restore, under the repository's lock: prune a stale registration of
    `path`, refuse a branch checked out elsewhere or a path that is not this
    session's worktree, then `git worktree add` (not on a dry run).
    Returns True when the worktree at `path` is reused; raises Refused."""
    entries = git.worktree_list(s.common_dir)
    entry = worktree.find(entries, path)
    if entry is not None and entry.locked is not None and not entry.is_main \
            and not os.path.lexists(path) and save.restore_interrupted and not ctx.dry_run:
        _unlock_interrupted_add(ctx, s, path)
        entries = git.worktree_list(s.common_dir)
        entry = worktree.find(entries, path)
    if entry is not None and entry.prunable and not os.path.lexists(path):
        if not ctx.dry_run:
            git.worktree_prune(s.common_dir)
        entries = git.worktree_list(s.common_dir) if not ctx.dry_run else \
            [e for e in entries if e is not entry]
        entry = None
    if want_branch:
        for e in entries:
            if e.branch == f"refs/heads/{want_branch}" and not worktree.same_path(e.path, path):
                raise Refused(f"branch '{want_branch}' is checked out in {e.path}; "
                              "free it and run git ao-restore again (still pending)")
    reused = os.path.lexists(path)
    if reused:
        try:
            _check_reusable(s, save, entry, path, want_branch)
        except Refused as exc:
            if save.restore_interrupted:
                raise Refused(f"{exc}; a restore of this session was interrupted while adding "
                              "it: if nothing there is yours, remove it and run git ao-restore "
                              "again") from None
            raise
        if save.restore_interrupted and not ctx.dry_run \
                and _set_aside_unfinished(ctx, s, save, path, entries):
            reused = False
    if not reused and not ctx.dry_run:
        ctx.store.mark_restore_started(s.id)
        _add_worktree(s.common_dir, path, save, want_branch)
    return reused


def _set_aside_unfinished(ctx: Context, s: Session, save: Save, path: str,
                          entries: list[git.WorktreeEntry]) -> bool:
    """The worktree at `path` is what an interrupted restore of this save left (the
    row says a restore started and never finished, so no agent has worked there).
    When it does not already hold the saved work, and every untracked path in it is
    one the saved commit or its HEAD has, so nothing in it exists only there, move
    it into the trash and deregister it, so the restore starts again.
    Returns True when it was set aside."""
    commit = save.preserved_commit
    dirs = git.repo_dirs(path)
    if commit and snapshot.holds(path, dirs.git_dir, commit):
        return False  # the apply finished: _apply_saved recognises it
    st = git.status(path, ignored=False)
    # A killed git leaves its index.lock behind; in a session no one has had back
    # yet, no other git can be holding it, and the apply would fail on it.
    stale_lock = os.path.exists(os.path.join(dirs.git_dir, "index.lock"))
    if st.clean and not stale_lock:
        return False  # killed before the apply: the apply goes on in this worktree
    if st.untracked:
        known = set()
        if commit:
            _head, i_tree, w_tree, u_tree = snapshot.saved_trees(s.common_dir, commit)
            for tree in (i_tree, w_tree, u_tree):
                if tree:
                    known.update(git.ls_tree_paths(s.common_dir, tree))
        if save.head:
            known.update(git.ls_tree_paths(s.common_dir, f"{save.head}^{{tree}}"))
        if any(p not in known for p in st.untracked):
            return False
    v = worktree.verify(s.common_dir, path, entries)
    if v.entry.locked is not None:
        _unlock_interrupted_add(ctx, s, path)
    trash = worktree.take_away(v, ctx.store.subdir(TRASH_DIR), s.id, crashpoint.hit)
    ctx.log("restore", s.id, "interrupted-restore-set-aside", workspace=path, trash=trash)
    return True


def _unlock_interrupted_add(ctx: Context, s: Session, path: str) -> None:
    """Unlock the registration of `path` that this session's killed restore left:
    git locks a new worktree ("initializing") until its `git worktree add` is done,
    and git's prune keeps locked registrations, so the next add would fail."""
    git.worktree_unlock(s.common_dir, path)
    ctx.log("restore", s.id, "interrupted-add-unlocked", workspace=path)


def _check_reusable(s: Session, save: Save, entry: git.WorktreeEntry | None, path: str,
                    want_branch: str | None) -> None:
    """Raise Refused unless the worktree at `path` is this session's, on its branch."""
    if entry is None:
        raise Refused(f"'{path}' exists and is not a worktree of this repository; "
                      "nothing there is touched (still pending)")
    if entry.is_main:
        raise Refused(f"'{path}' is the main worktree; the record is damaged (still pending)")
    on_branch = entry.branch == f"refs/heads/{want_branch}" if want_branch else \
        (entry.detached and entry.head == save.head)
    if not on_branch:
        now = entry.branch or f"detached at {entry.head}"
        raise Refused(f"'{path}' is a worktree on {now}, not this session's; "
                      "nothing there is touched (still pending)")


def _add_worktree(repo: str, path: str, save: Save, want_branch: str | None) -> None:
    """`git worktree add` at the recorded path; when the save recorded private config
    (sparse-checkout patterns, config.worktree) it is put in place before checkout."""
    wc = replay.load_config(save.private_config)
    first = replay.needs_config_first(wc)
    if not want_branch:
        git.worktree_add(repo, path, commit=save.head, detach=True, checkout=not first)
    elif git.branch_exists(repo, want_branch):
        git.worktree_add(repo, path, branch=want_branch, checkout=not first)
    elif save.head:
        git.worktree_add(repo, path, new_branch=want_branch, commit=save.head,
                         checkout=not first)
    else:
        raise Refused(f"branch '{want_branch}' is gone and no commit was saved to re-create it")
    if first:
        replay.put_config(git.repo_dirs(path).git_dir, wc)
        gitindex.checkout_head(path)


def _apply_saved(ctx: Context, s: Session, save: Save, path: str, reused: bool) -> Outcome:
    """Step 2 of restore: apply, then delete the ref only after a clean apply."""
    data = facts(s, preserve_ref=save.preserve_ref, preserved_commit=save.preserved_commit)
    commit = save.preserved_commit
    wc = replay.load_config(save.private_config)
    if not commit:
        problems = [] if reused else replay.put_flags(path, wc)
        if problems:
            return Outcome(s.id, "restore", Status.ATTENTION, f"worktree back at {path}; "
                           + "; ".join(problems), data)
        return Outcome(s.id, "restore", Status.OK,
                       f"worktree back at {path} (nothing was saved)", data)
    dirs = git.repo_dirs(path)
    ref = save.preserve_ref
    if not git.object_exists(path, commit):
        return Outcome(s.id, "restore", Status.ATTENTION, f"preserved commit {commit} is "
                       "missing; worktree is back without the work", data)
    if reused and snapshot.holds(path, dirs.git_dir, commit):
        _drop_ref(path, ref, commit)
        return Outcome(s.id, "restore", Status.OK, f"worktree at {path} already held the "
                       "preserved work", data)
    if reused and not git.status(path, ignored=False).clean:
        return Outcome(s.id, "restore", Status.ATTENTION,
                       f"worktree at {path} has other changes; the work stays in {ref}: "
                       f"git stash apply --index {ref}", data)
    crashpoint.hit("restore:during-apply")
    applied = replay.apply(path, commit, sparse="sparse_checkout" in wc)
    crashpoint.hit("restore:after-apply")
    if applied.outcome == "clean":
        if wc.get("recheckout"):
            replay.recheckout(path, dirs.git_dir, commit)
        problems = replay.put_flags(path, wc, fresh=not reused)
        head = git.rev_parse(path, "HEAD")
        if not problems and head == save.head \
                and not snapshot.holds(path, dirs.git_dir, commit):
            # The proof: the worktree must now capture to exactly the saved trees.
            problems.append("the worktree does not hold exactly the saved work")
        if problems:
            data["placed"] = replay.saved_paths(path, commit)
            return Outcome(s.id, "restore", Status.ATTENTION, f"applied at {path}, but "
                           f"{'; '.join(problems)}; work kept in {ref}", data)
        crashpoint.hit("restore:before-ref-delete")
        _drop_ref(path, ref, commit)
        crashpoint.hit("restore:after-ref-delete")
        moved = f" (its branch moved since the save: HEAD was {save.head[:12]}, now " \
            f"{head[:12]})" if save.head and head and head != save.head else ""
        return Outcome(s.id, "restore", Status.OK, f"restored at {path}{moved}", data)
    data["paths"] = applied.paths
    data["placed"] = applied.placed
    listed = ", ".join(applied.paths[:5]) + (" ..." if len(applied.paths) > 5 else "")
    placed = ", ".join(applied.placed[:5]) + (" ..." if len(applied.placed) > 5 else "")
    if applied.outcome == "conflict":
        msg = f"conflicts in {listed}; markers left, work kept in {ref}" + \
            (f"; placed: {placed}" if placed else "")
    elif applied.outcome == "unstaged":
        msg = f"{applied.detail}; work kept in {ref}" + (f"; placed: {placed}" if placed else "")
    else:
        msg = f"nothing applied: {applied.detail}" + (f": {listed}" if listed else "") + \
              f"; work kept in {ref}"
    return Outcome(s.id, "restore", Status.ATTENTION, msg, data)


def _drop_ref(cwd: str, ref: str, commit: str) -> None:
    """Delete the preserve ref, only while it still points at `commit`."""
    if ref:
        git.drop_ref_if_at(cwd, ref, commit)


def relaunch_all(ctx: Context, settings: Settings, outcomes: list[Outcome], no_launch: bool,
                 stop: threading.Event, printer: Printer) -> list[Outcome]:
    """The last step of restore, for every session that came back: run the configured
    relaunch command in its worktree, or print how to resume its agent. Once `stop`
    is set by a signal no command starts, as with --no-launch (the machine is going
    down again). Returns the relaunch Outcomes, each already printed (a failed one
    exits 1; the restore before it stands)."""
    from . import relaunch
    from .settings import DEFAULT_RELAUNCH_TIMEOUT
    extra = []
    for o in list(outcomes):
        if o.action != "restore" or o.status not in (Status.OK, Status.ATTENTION):
            continue
        s = ctx.store.get(o.session_id)
        if s is None or not s.live:
            continue
        argv = None if no_launch or stop.is_set() else settings.relaunch_argv(s.harness)
        if argv is None:
            if s.agent_session_id:
                printer.hint(f"resume {s.id}: {s.harness or 'agent'} session "
                             f"{s.agent_session_id} in {s.worktree_path}")
            continue
        res = relaunch.run(argv, s, o.status,
                           timeout=settings.get("relaunch.timeout", DEFAULT_RELAUNCH_TIMEOUT))
        status = Status.OK if res.ok else Status.FAILED
        ctx.log("relaunch", s.id, status, detail=res.message, command=argv[0],
                returncode=res.returncode, state=res.status)
        r = Outcome(s.id, "relaunch", status, res.message,
                    {"argv0": argv[0], "returncode": res.returncode, "state": res.status})
        printer.outcome(r)
        extra.append(r)
    return extra


def empty_database_hint(store: Store) -> str | None:
    """When nothing is pending because the database lost its records (it holds no
    session, yet the repository the command runs in, or one the trash names,
    holds preserve refs): the command that rebuilds them. None otherwise."""
    if store.sessions():
        return None
    from .doctor import current_repo, lost_database
    return lost_database(store.dir, current_repo())
