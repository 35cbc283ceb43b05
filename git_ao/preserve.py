"""Preserve: save each session's uncommitted work in its ref, record it, then
take its worktree away.

The crash-safety order, per session, reads in `preserve_one`: check, capture,
write the ref, commit the database row, and only then remove the worktree. A
kill at any point leaves the session live with its worktree, or saved with its
work in the ref and the row committed; running the command again converges.
Nothing here prints: every function returns Outcomes and logs its decisions.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence

from . import crashpoint, git, snapshot, worktree
from .batch import NOT_STARTED, guarded, log_failure, run_each
from .errors import AoError, Refused
from .outcome import Outcome, Status
from .records import Save, Session, now_ns
from .session import Context, facts, lookup, preserve_ref, work_present_elsewhere
from .store import TRASH_DIR, Store


def sessions_for_all(store: Store) -> list[Session]:
    """The sessions `--all` preserves: every live one, and every pending one whose
    directory is still there (a crash interrupted its removal, and running --all
    again finishes it: `_finish_removal`)."""
    return [s for s in store.sessions()
            if s.live or (s.save is not None and s.pending
                          and os.path.lexists(s.save.worktree_path))]


def preserve(ctx: Context, sessions: Sequence[Session], *, keep_worktree: bool = False,
             jobs: int = 1, timeout: float | None = None,
             progress: Callable[[Outcome], object] | None = None,
             stop: threading.Event | None = None) -> list[Outcome]:
    """Preserve each session; one session's failure never stops the others.

    sessions: list of Session. jobs: sessions handled at once (threads; the work
    is in git processes). timeout: seconds after which no new session starts
    (those stay live, which is safe). progress: callback(Outcome) per session.
    stop: a threading.Event; once set (SIGTERM, SIGINT) no new session starts and
    the ones in flight run to their end.
    Returns one Outcome per session, in input order.
    """
    cache = RepoCache(batch=True)
    deadline = time.monotonic() + timeout if timeout is not None else None

    def one(s: Session) -> Outcome:
        if deadline is not None and time.monotonic() > deadline:
            return Outcome(s.id, "preserve", Status.REFUSED,
                           "not started: --timeout spent; the session stays live")
        if stop is not None and stop.is_set():
            return Outcome(s.id, "preserve", Status.REFUSED,
                           NOT_STARTED + "; the session stays live")
        out = guarded(lambda: preserve_one(ctx, s.id, keep_worktree, cache), s.id, "preserve")
        log_failure(ctx, out)
        crashpoint.hit("preserve:between-sessions")
        return out

    try:
        return run_each(sessions, one, jobs, progress)
    finally:
        # Even when a session raised past guarded: what was moved away is deregistered.
        cache.flush_prunes(ctx)


def preserve_one(ctx: Context, session_id: str, keep_worktree: bool = False,
                 cache: RepoCache | None = None, unsaved: Session | None = None) -> Outcome:
    """Preserve one session, strictly: check, capture and write the ref, commit the row,
    then remove the verified worktree. Returns an Outcome; raises AoError on refusal.

    unsaved: on a dry run, a Session that `register` would create (not stored yet)."""
    cache = cache or RepoCache()
    with ctx.lock(session_id):
        # read again under the lock
        s = unsaved if unsaved is not None and ctx.dry_run else lookup(ctx, session_id)
        if not s.live:
            if s.pending and not keep_worktree:
                finished = _finish_removal(ctx, s, cache)
                if finished is not None:
                    return finished
            why = "already preserved" if s.pending else "session is terminated"
            return Outcome(s.id, "preserve", Status.NOTHING, why, facts(s))
        if not s.branch and not s.worktree_path:
            return Outcome(s.id, "preserve", Status.NOTHING, "skipped: no branch and no path")
        path = s.worktree_path
        if not os.path.isdir(s.common_dir):
            raise Refused(f"repository {s.common_dir} is gone; see 'git ao-prune'")
        entries = cache.entries(s.common_dir)
        entry = worktree.find(entries, path)
        main = worktree.main_path(entries)
        if main and worktree.same_path(main, path):
            ctx.log("preserve", s.id, "refused-damaged", workspace=path)
            raise Refused(f"record of '{s.id}' names the main worktree {path}: the record is "
                          "damaged; nothing is removed")
        if not os.path.lexists(path):
            moved = _moved_to(entries, s, path)
            if moved:
                raise Refused(f"'{path}' is gone and branch '{s.branch}' is checked out in "
                              f"{moved} (git worktree move?); move it back to {path}; "
                              "nothing is recorded")
            return _record_missing(ctx, s, entry)
        if entry is None:
            raise Refused(f"'{path}' is not a worktree of {s.common_dir}; nothing is removed")
        _refuse_over_kept_work(ctx, s, path)
        v = worktree.verify(s.common_dir, path, entries)
        st = snapshot.inspect(path, v.git_dir)
        keep = _keep_reasons(v)
        if ctx.dry_run:
            what = "checkpoint" if keep_worktree else "preserve and remove"
            what = f"register and {what}" if unsaved is not None else what
            return Outcome(s.id, "preserve", Status.OK, f"would {what}: {len(st.changed)} changed, "
                           f"{len(st.untracked)} untracked, {len(st.ignored)} ignored",
                           facts(s))
        meta = snapshot.Meta(s.id, s.kind, s.harness, path)
        cap = snapshot.capture(path, v.git_dir, meta, st=st)
        crashpoint.hit("preserve:after-capture")
        keep += cap.keep_reasons
        ref = ""
        if cap.commit:
            ref = preserve_ref(s.id)
            older = git.rev_parse(path, ref)
            if older and older != cap.commit:
                # The reflog keeps it while the ref lives; the log keeps its id for good.
                ctx.log("preserve", s.id, "superseded", ref=ref, commit=older)
            git.update_ref(path, ref, cap.commit, message=f"git-ao preserve {s.id}")
            crashpoint.hit("preserve:after-ref")
        if cap.ignored:
            ctx.log("preserve", s.id, "ignored-skipped", count=len(cap.ignored),
                    first=",".join(cap.ignored[:5]))
        terminate = not keep_worktree and not keep
        save = Save(s.id, s.common_dir, path, cap.branch, cap.head, cap.detached, ref, cap.commit,
                    cap.private_config, now_ns())
        ctx.store.record_save(save, terminate=terminate)
        crashpoint.hit("preserve:after-db")
        data = facts(s, preserve_ref=ref, preserved_commit=cap.commit, changed=len(cap.changed),
                     untracked=len(cap.untracked), ignored=len(cap.ignored))
        summary = _summary(cap)
        if keep_worktree:
            ctx.log("preserve", s.id, "checkpoint", ref=ref, commit=cap.commit)
            return Outcome(s.id, "checkpoint", Status.OK, f"{summary}; worktree kept", data)
        if keep:
            ctx.log("preserve", s.id, "kept", ref=ref, commit=cap.commit, why="; ".join(keep))
            return Outcome(s.id, "preserve", Status.REFUSED,
                           f"{summary}; worktree kept: {'; '.join(keep)}", data)
        trash = worktree.take_away(v, ctx.store.subdir(TRASH_DIR), s.id, crashpoint.hit,
                                   prune=not cache.batch)
        if cache.batch:
            cache.defer_prune(s.common_dir)
        crashpoint.hit("preserve:after-remove")
        data["trash"] = trash
        ctx.log("preserve", s.id, "preserved", ref=ref, commit=cap.commit, trash=trash)
        return Outcome(s.id, "preserve", Status.OK, f"{summary}; worktree removed", data)


class RepoCache:
    """One `git worktree list` per repository per run, shared across threads.

    batch=True (a `preserve` run): worktrees are deregistered by one
    `git worktree prune` per repository at the end of the run (`flush_prunes`),
    not one per session."""

    def __init__(self, batch: bool = False) -> None:
        self._lists: dict[str, list[git.WorktreeEntry]] = {}
        self._lock = threading.Lock()
        self.batch = batch
        self._prune: set[str] = set()

    def defer_prune(self, common_dir: str) -> None:
        with self._lock:
            self._prune.add(common_dir)

    def flush_prunes(self, ctx: Context) -> None:
        """Run the deferred `git worktree prune`s. A failure leaves only a prunable
        registration of a directory already gone (restore and `git ao-prune` prune
        it), so it is logged, not raised."""
        with self._lock:
            repos, self._prune = sorted(self._prune), set()
        for repo in repos:
            try:
                git.worktree_prune(repo)
            except AoError as exc:
                ctx.log("preserve", None, "worktree-prune-failed", repo=repo, error=str(exc))

    def entries(self, common_dir: str, fresh: bool = False) -> list[git.WorktreeEntry]:
        with self._lock:
            if fresh or common_dir not in self._lists:
                self._lists[common_dir] = git.worktree_list(common_dir)
            return self._lists[common_dir]


def _refuse_over_kept_work(ctx: Context, s: Session, path: str) -> None:
    """Raise Refused when the session's ref still holds work a restore could not put
    back in full (a conflict, a blocked apply: `Save.needs_attention`) and that work
    is neither on the branch nor exactly in the worktree: a new capture would
    replace the ref, and restore deletes the ref with its reflog, so the older work
    would be lost. Nothing is captured or removed; the user applies what they need
    and drops the ref."""
    save = s.save
    if save is None or not save.needs_attention or not save.preserved_commit:
        return
    ref = preserve_ref(s.id)
    oid = save.preserved_commit
    if git.rev_parse(path, ref) != oid or work_present_elsewhere(s, oid):
        return
    ctx.log("preserve", s.id, "refused-kept-work", ref=ref, commit=oid)
    raise Refused(f"{ref} still holds work the last restore could not put back "
                  f"(git stash show -p --include-untracked {ref}); apply what you need, then "
                  f"drop it with git update-ref -d {ref} {oid}; nothing is captured or removed")


def _finish_removal(ctx: Context, s: Session, cache: RepoCache) -> Outcome | None:
    """Finish a removal a crash interrupted (the row was committed, the worktree is
    still there): take the verified worktree away only when it holds exactly the saved
    work (`snapshot.holds`, or clean at the saved HEAD when nothing was saved).
    Returns an Outcome, or None when there is no worktree left to remove."""
    save = s.save
    if save is None:
        return None
    path = save.worktree_path
    if not os.path.isdir(s.common_dir) or not os.path.lexists(path):
        return None
    entries = cache.entries(s.common_dir, fresh=True)
    if worktree.find(entries, path) is None:
        return None
    v = worktree.verify(s.common_dir, path, entries)
    keep = _keep_reasons(v)
    if keep:
        return Outcome(s.id, "preserve", Status.REFUSED, f"already preserved; worktree kept: "
                       f"{'; '.join(keep)}", facts(s))
    if not _holds_save(path, v.git_dir, save):
        ctx.log("preserve", s.id, "kept-changed", workspace=path)
        return Outcome(s.id, "preserve", Status.REFUSED, f"already preserved, but {path} changed "
                       "since; it is kept (git ao-restore reuses it)", facts(s))
    if ctx.dry_run:
        return Outcome(s.id, "preserve", Status.OK, "would finish the interrupted removal",
                       facts(s))
    trash = worktree.take_away(v, ctx.store.subdir(TRASH_DIR), s.id, crashpoint.hit,
                               prune=not cache.batch)
    if cache.batch:
        cache.defer_prune(s.common_dir)
    crashpoint.hit("preserve:after-remove")
    ctx.log("preserve", s.id, "removal-finished", ref=save.preserve_ref, trash=trash)
    return Outcome(s.id, "preserve", Status.OK, "already preserved; finished the interrupted "
                   "removal", facts(s, trash=trash))


def _holds_save(path: str, git_dir: str, save: Save) -> bool:
    """Does the worktree hold exactly what `save` recorded (nothing newer), with the
    preserve ref still holding it too? (A restore killed after deleting the ref
    leaves the worktree as the work's only home.)"""
    if save.preserved_commit:
        return git.rev_parse(path, save.preserve_ref) == save.preserved_commit and \
            snapshot.holds(path, git_dir, save.preserved_commit)
    try:
        cap = snapshot.capture(path, git_dir, None, write=False)
    except snapshot.CannotCapture:
        return False
    return cap.clean and cap.head == save.head and cap.branch == save.branch


def _keep_reasons(v: worktree.Verified) -> list[str]:
    """Why a verified worktree must stay although its work is saved."""
    reasons = []
    if v.entry.locked is not None:
        why = f" ({v.entry.locked})" if v.entry.locked else ""
        reasons.append(f"it is locked{why} (git worktree unlock)")
    lock = os.path.join(v.git_dir, "index.lock")
    if os.path.exists(lock):
        reasons.append(f"its index is locked by another process: {lock}")
    return reasons


def _moved_to(entries: list[git.WorktreeEntry], s: Session, path: str) -> str | None:
    """Another existing worktree holding the session's branch, when its recorded path
    is gone (a `git worktree move`): recording it missing would hide where it went."""
    if not s.branch:
        return None
    for e in entries:
        if e.branch == f"refs/heads/{s.branch}" and not worktree.same_path(e.path, path) \
                and os.path.isdir(e.path):
            return e.path
    return None


def _record_missing(ctx: Context, s: Session, entry: git.WorktreeEntry | None) -> Outcome:
    """The user deleted the worktree directory: record a save with no ref so that
    restore re-adds the worktree from its branch."""
    head = entry.head if entry else None
    branch = s.branch
    if entry and entry.branch:
        branch = entry.branch.removeprefix("refs/heads/")
    detached = bool(entry and entry.detached)
    if not head and branch:
        head = git.rev_parse(s.common_dir, f"refs/heads/{branch}")
    # A checkpoint (or a ref kept after a conflict) is the last known work of this
    # worktree: carry it over so restore applies it instead of forgetting it.
    ref = preserve_ref(s.id)
    kept = git.rev_parse(s.common_dir, ref)
    if ctx.dry_run:
        return Outcome(s.id, "preserve", Status.OK, "would record the missing worktree",
                       facts(s))
    ctx.store.record_save(Save(s.id, s.common_dir, s.worktree_path, branch, head, detached,
                               ref if kept else "", kept, None, now_ns()), terminate=True)
    ctx.log("preserve", s.id, "recorded-missing", workspace=s.worktree_path, branch=branch)
    return Outcome(s.id, "preserve", Status.OK, "worktree directory was already gone; "
                   "recorded so restore re-adds it", facts(s))


def _summary(cap: snapshot.Capture) -> str:
    ignored = f"; {len(cap.ignored)} ignored path(s) not saved" if cap.ignored else ""
    if not cap.commit:
        return "clean, nothing to save" + ignored
    return (f"{len(cap.changed)} changed, {len(cap.untracked)} untracked saved in "
            f"{preserve_ref_short(cap.commit)}{ignored}")


def preserve_ref_short(commit: str | None) -> str:
    """The short id printed for a preserve commit ('-' when none)."""
    return commit[:12] if commit else "-"
