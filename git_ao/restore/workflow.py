"""Restore: re-create each pending session's worktree, apply its saved work,
drop the ref after a clean apply, and relaunch its agent.

The order, per session, reads in `restore_one`: place the worktree (under the
repository's lock), apply, then commit the row; the ref goes only once the
worktree provably holds the work. Nothing here prints but the relaunch hints.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from git_ao import crashpoint, git, groups
from git_ao.batch import NOT_STARTED, guarded, log_failure, run_each
from git_ao.context import Context, lookup
from git_ao.errors import AoError, Failed, Refused, past_timeout
from git_ao.fs.gone import gone_worktree
from git_ao.git import index, query, worktree
from git_ao.git.parse import ObjectId
from git_ao.outcome import Action, Outcome, Status, facts
from git_ao.proof.restored import holds, not_as_saved, prove
from git_ao.restore import from_trash, target
from git_ao.save import apply, history, lacking, local_state
from git_ao.save.apply import ApplyResult
from git_ao.store import locks, trash
from git_ao.store.records import Save, Session


def restore(ctx: Context, sessions: Sequence[Session], *, jobs: int = 1,
            progress: Callable[[Outcome], object] | None = None,
            stop: threading.Event | None = None,
            set_aside_stray: bool = False, timeout: float | None = None) -> list[Outcome]:
    """Restore each pending session; one failure never stops the others.

    sessions: list of Session. jobs: sessions handled at once (threads); sessions
    of one repository place their worktrees one at a time (`restore_one`) and
    apply their work in parallel. progress: callback(Outcome) per session, called
    from the thread that ran it. stop: a threading.Event; once set (SIGTERM,
    SIGINT) no new session starts, the ones in flight run to their end and the
    rest stay pending. set_aside_stray: a directory at a recorded path that is not
    the worktree is moved into the trash (`--set-aside-stray`) instead of refused.
    timeout: seconds after which no new session starts and every git process of
    a session in flight is stopped (`git.bounded`: a smudge filter or merge
    driver that hangs); such a session fails and stays pending, where a kill at
    that step would leave it, so the next run goes on from there.
    Returns one Outcome per session, in input order.
    """
    outer = _pending_outside(ctx, sessions)
    newer = _saved_since_at_its_path(sessions)
    deadline = time.monotonic() + timeout if timeout is not None else None

    def one(s: Session) -> Outcome:
        if deadline is not None and time.monotonic() > deadline:
            return Outcome(s.id, Action.RESTORE, Status.REFUSED,
                           "not started: --timeout spent; the session stays pending",
                           names_state=True)
        if stop is not None and stop.is_set():
            return Outcome(s.id, Action.RESTORE, Status.REFUSED,
                           NOT_STARTED + "; the session stays pending",
                           started=False, names_state=True)
        if s.id in outer:
            # Coming back first would make the outer session's path a plain
            # directory that its own restore then refuses.
            return Outcome(s.id, Action.RESTORE, Status.REFUSED,
                           f"it lies inside pending session '{outer[s.id]}', which comes "
                           f"back first: git ao-restore {outer[s.id]} {s.id} (still pending)",
                           facts(s), names_state=True)
        if s.id in newer:
            # Two saves of one path (a worktree made there since the first, a session
            # of its own): only the newer one comes back, or both would take it.
            later = newer[s.id]
            return Outcome(s.id, Action.RESTORE, Status.REFUSED,
                           f"'{s.worktree_path}' is also pending session '{later}''s, saved "
                           f"since, which this run restores: once git ao-preserve {later} "
                           f"frees the path, git ao-restore {s.id} brings it back there "
                           "(still pending)", facts(s), names_state=True)
        with git.bounded(deadline):
            out = guarded(lambda: restore_one(ctx, s.id, set_aside_stray=set_aside_stray),
                          s.id, Action.RESTORE)
        if out.data.get("timed_out"):
            reached = past_timeout(out.data.get("hung") or [], timeout)
            out.message += ("; the session stays pending, its work in its ref and the trash; "
                            + (f"{reached}: the next git ao-restore with a longer --timeout "
                               "(or a larger restore.timeout) goes on from here" if reached
                               else "the next git ao-restore goes on from here once nothing "
                               "hangs"))
        log_failure(ctx, out)
        crashpoint.hit("restore:between-sessions")
        return out

    # Shared: restores run side by side; a preserve --all waits for them to end
    # before it chooses its sessions (`locks.restore_run`).
    with contextlib.nullcontext() if ctx.dry_run else \
            locks.restore_run(ctx.store.dir, shared=True):
        return groups.in_waves(sessions, lambda part: run_each(part, one, jobs, progress),
                                       inner_first=False)


def _pending_outside(ctx: Context, sessions: Sequence[Session]) -> dict[str, str]:
    """{id: outer id} of the sessions of the batch whose worktree lies inside the
    worktree of a pending session that is not in the batch."""
    ids = {s.id for s in sessions}
    pending = [(os.path.realpath(x.worktree_path).rstrip("/") + "/", x.id)
               for x in ctx.store.sessions() if x.pending and x.id not in ids]
    out = {}
    for s in sessions:
        mine = os.path.realpath(s.worktree_path)
        for base, oid in pending:
            if mine.startswith(base):
                out[s.id] = oid
    return out


@dataclass
class Placement:
    """Where the checkout way starts: the worktree at the path reused (it was there
    already) or just added, and the directory an interrupted restore left there,
    set aside because it held changes no save has (None when there was none)."""

    reused: bool
    unfinished: trash.Entry | None = None


@dataclass
class Prepared:
    """What preparing the path gave: the trash copy already back at the path
    (`placed`), or the worktree there for the checkout way (`placement`, with
    why a trash copy was not put back whole: "" when there was none to use); the
    directory found in the way and set aside (`stray`); on a dry run, the answer."""

    stray: trash.Entry | None = None
    placed: from_trash.Placed | None = None
    placement: Placement | None = None
    trash_skipped: str = ""
    would: Outcome | None = None


@dataclass
class Checkout:
    """The trash copy was not kept: re-create the work from the commit in the
    worktree `placement` stands for; `trash_skipped` says why not from the trash."""

    placement: Placement
    trash_skipped: str = ""


@dataclass
class Restored:
    """What one way of restoring gave: the outcome, whether the preserve ref stays,
    whether work only the ref holds needs the user (`attention`), and the directory
    an interrupted restore left, to name in the outcome."""

    outcome: Outcome
    ref_kept: bool
    attention: bool = False
    unfinished: trash.Entry | None = None


def _saved_since_at_its_path(sessions: Sequence[Session]) -> dict[str, str]:
    """{id: the id of the session saved last at the same path} for every session of
    `sessions` whose path another of them saved later."""
    newest: dict[str, Session] = {}
    for s in sessions:
        if s.save is None:
            continue
        held = newest.get(s.worktree_path)
        if held is None or (held.save is not None and s.save.saved_at > held.save.saved_at):
            newest[s.worktree_path] = s
    return {s.id: newest[s.worktree_path].id for s in sessions
            if s.save is not None and newest[s.worktree_path].id != s.id}


def restore_one(ctx: Context, session_id: str, *, set_aside_stray: bool = False) -> Outcome:
    """Re-create the session's worktree at its recorded path on its branch, with its
    saved work, delete the ref once the worktree provably holds it, mark the
    session live.

    The steps: prepare the path (`_prepare`: a directory in the way refused, or set
    aside when `set_aside_stray`; a killed restore's leftovers cleared; the trash
    copy moved back when it can be), put the work back, whole from the trash
    (`_from_trash`: proven, kept only when the proof holds) or by `git worktree
    add` and the saved commit applied (`_from_commit`, the ignored files of the
    trash copy moved in after), annotate the outcome (`_annotate`), record it
    (`_record`). docs/restore-trash.md tells why in this order.

    The repository's lock (`locks.repo_lock`) makes the check that the branch
    and the path are free and the `git worktree add` one step among threads and
    processes. Returns an Outcome; raises Refused (branch taken, path taken,
    repository gone) or another AoError, the session staying pending."""
    with ctx.lock(session_id):
        s = lookup(ctx, session_id)
        if not s.pending:
            out = _not_pending(s, ctx.store.sessions())
            out.not_restored = True
            return out
        save = s.save
        assert save is not None  # pending means saved
        if not os.path.isdir(s.common_dir):
            from git_ao.fs.gone import missing_repo_advice
            raise Refused(f"repository {s.common_dir} is gone; the session stays pending: "
                          + missing_repo_advice(s.id))
        _refuse_taken_path(ctx, s, save)
        _refuse_unreachable_trash(ctx, s, save)
        prepared = _prepare(ctx, s, save, set_aside_stray)
        if prepared.would is not None:
            holds_less(s, save, prepared.would, live=False)  # as the real run says
            return prepared.would
        way = _from_trash(ctx, s, save, prepared.placed) if prepared.placed is not None else \
            Checkout(_placed(prepared), prepared.trash_skipped)
        restored = way if isinstance(way, Restored) else _from_commit(ctx, s, save, way)
        _annotate(restored, prepared.stray, save.worktree_path)
        holds_less(s, save, restored.outcome)
        _record(ctx, s, save, restored)
        return restored.outcome


def _refuse_taken_path(ctx: Context, s: Session, save: Save) -> None:
    """Refuse (dry run or not) when a live session holds the save's path: a new
    worktree made there since the save (a WorktreeCreate of the same name, a `git
    worktree add`), a session of its own that the save must never be applied into.
    The save stays pending."""
    other = ctx.store.live_at(save.worktree_path)
    if other is None or other.id == s.id:
        return
    shows = (f"; git stash show -p --include-untracked {save.preserve_ref} shows its work"
             if save.preserve_ref else "")
    raise Refused(f"'{save.worktree_path}' is now session '{other.id}''s worktree, made there "
                  f"since this save: once git ao-preserve {other.id} "
                  f"frees the path, git ao-restore {s.id} brings it back there{shows}")


def _refuse_unreachable_trash(ctx: Context, s: Session, save: Save) -> None:
    """Refuse (dry run or not) while a trash root the save's trash copy may be in
    is missing, its file system likely not mounted (`trash.unreachable_roots`):
    restoring without it would check the worktree out again where the file system
    is not, and leave behind what only the copy holds (its ignored files). The
    save stays pending. Raises Refused; OSError when `trash-roots` cannot be read."""
    missing = trash.unreachable_roots(ctx.store.dir, save.worktree_path)
    if not missing:
        return
    from git_ao.store.datadir import ROOTS_FILE
    count = target.ignored_at_save(s, s.common_dir)
    held = f", with the {count} ignored path(s) the save held" if count else ""
    raise Refused(f"trash root {missing[0]} is missing (a file system not mounted?) and the "
                  f"trash copy of {save.worktree_path} may be in it{held}; the session stays "
                  "pending: mount it and run git ao-restore again (if that file system is "
                  f"gone for good, delete the line {missing[0]} from "
                  f"{os.path.join(ctx.store.dir, ROOTS_FILE)}: git ao-restore then checks "
                  "the worktree out again without the copy)", names_state=True)


def holds_less(s: Session, save: Save, outcome: Outcome, *, live: bool = True) -> None:
    """When the save holds less than an earlier capture of the same preserve (the
    worktree before its agents were stopped, or before a late write:
    `Save.holds_less_than`), name the history entry holding it and the `git
    ao-restore ID --at N` that brings it back; the outcome needs attention, as
    the work back is not all the session had. live: the session is back (not a
    dry run's), so `git ao resolve` is named too."""
    earlier = save.holds_less_than
    if not earlier:
        return
    note, number = lacking.advice(s.common_dir, s.id, earlier, final=save.preserved_commit,
                                  judged=True, live=live)
    outcome.data["holds_less_than"] = earlier
    outcome.data["holds_less_entry"] = number
    outcome.message += f"; {note}" if note else (
        f"; the save holds less than {earlier[:12]}, an earlier capture of the same preserve")
    if outcome.status in (Status.OK, Status.NOTHING):
        outcome.status = Status.ATTENTION


def would_restore(ctx: Context, s: Session, save: Save, *, set_aside_stray: bool = False
                  ) -> Outcome:
    """What a restore of `s` and `save` (a session not recorded here yet: one
    `git ao-restore --from` would fetch) would do at its path, judged by the dry
    run's own steps (`_prepare`), so the real run, once it has recorded the
    session, judges the same. Writes nothing. Returns the dry run's Outcome;
    raises Refused as the real run refuses (a directory in the way, a branch
    checked out elsewhere, a path that is not this session's worktree)."""
    prepared = _prepare(replace(ctx, dry_run=True), s, save, set_aside_stray,
                        fetched_later=True)
    assert prepared.would is not None  # a dry run's _prepare always says what it would do
    return prepared.would


def _not_pending(s: Session, others: Sequence[Session] = ()) -> Outcome:
    """The outcome for a session with nothing to restore: live (its ref still holding
    work a restore could not put back needs attention) or terminated."""
    last = s.save
    gone = gone_worktree(s)
    if gone is not None:
        return Outcome(s.id, Action.RESTORE, Status.ATTENTION,
                       history.gone_advice(gone, s, others), facts(s))
    if s.live and last is not None and last.holds_less_than:
        out = Outcome(s.id, Action.RESTORE, Status.ATTENTION, "live, nothing pending", facts(s))
        holds_less(s, last, out)
        return out
    if s.live and last is not None and last.needs_attention and last.preserve_ref \
            and git.rev_parse(s.common_dir, last.preserve_ref) == last.preserved_commit:
        ref = last.preserve_ref
        return Outcome(s.id, Action.RESTORE, Status.ATTENTION,
                       f"live, nothing pending; {ref} still holds work its last "
                       "restore could not put back (git stash show -p "
                       f"--include-untracked {ref}){_then_resolve(s.id)}", facts(s))
    return Outcome(s.id, Action.RESTORE, Status.NOTHING,
                   "live, nothing pending" if s.live else "terminated, nothing pending",
                   facts(s))


def _placed(prepared: Prepared) -> Placement:
    assert prepared.placement is not None  # _prepare places the worktree when not from the trash
    return prepared.placement


def _want_branch(save: Save) -> str | None:
    return None if save.detached else save.branch


def _prepare(ctx: Context, s: Session, save: Save, set_aside_stray: bool, *,
             fetched_later: bool = False) -> Prepared:
    """Step 1, under the repository's lock: refuse a directory at the path that is
    not the worktree (or set it aside first when `set_aside_stray`), clear what a
    killed restore left, then move the trash copy back (resuming one a kill cut
    short) or, when it cannot be, place the worktree (`_place_worktree`). A dry
    run changes nothing and says what the real run would do. fetched_later: the
    saved commit comes with the real run (`--from`), so its absence here is no
    reason for attention."""
    path = save.worktree_path
    out = Prepared()
    with ctx.repo_lock(s.common_dir):
        if not set_aside_stray:
            target.refuse_stray(s, path)
        elif ctx.dry_run and target.stray_files(s, path) is not None:
            # As the real run (`target.report_stray`): the directory set aside needs
            # the user, so attention.
            out.would = Outcome(s.id, Action.RESTORE, Status.ATTENTION, f"would set aside the "
                                f"directory at {path} and re-create the worktree there", facts(s))
            return out
        if not ctx.dry_run:
            target.clear_empty(path)
            if set_aside_stray:
                out.stray = target.set_aside_stray(ctx, s, path)
            target.clear_killed_add(ctx, s, save, path)
            out.placed = _resume_reinstate(ctx, s, save, path)
            if out.placed is None and not os.path.lexists(path):
                out.placed, out.trash_skipped = _try_trash(ctx, s, save, path, _want_branch(save))
        if out.placed is None:
            out.placement = _place_worktree(ctx, s, save, path, _want_branch(save))
            if not ctx.dry_run and not out.trash_skipped:
                # A rerun finding the worktree of an interrupted restore at the path
                # never tried the trash: why it is not put back is said all the same.
                out.trash_skipped = _why_not_trash(ctx, save)
            if ctx.dry_run:
                said, lost, status = _would(ctx, s, save, path, out.placement.reused,
                                            fetched_later)
                out.would = Outcome(s.id, Action.RESTORE, status, said, facts(s))
                if lost:
                    out.would.data["environment_lost"] = lost
    return out


def _why_not_trash(ctx: Context, save: Save) -> str:
    """Why the session's trash copy is not put back whole, when the path already
    held the worktree an interrupted restore had checked out ("" when there is no
    trash copy)."""
    use = from_trash.usable(ctx.store.dir, save)
    if use.entry is None:
        return "" if use.skip is from_trash.Skip.NO_COPY else use.why
    if save.restore_interrupted:
        return "an interrupted restore had checked it out already"
    return f"a worktree was at {save.worktree_path} already"


def _from_commit(ctx: Context, s: Session, save: Save, way: Checkout) -> Restored:
    """Step 2, the checkout way: apply the saved commit in the worktree placed at the
    path (`_apply_saved`), bring in the trash copy's ignored files and bits
    (`target.after_apply`), and say why the trash copy was not put back whole."""
    path = save.worktree_path
    reused = way.placement.reused
    if not reused:
        crashpoint.hit("restore:after-worktree-add")
    outcome = _apply_saved(ctx, s, save, path, reused)
    if os.path.isdir(path):
        target.after_apply(ctx, s, save, path, reused, outcome)
    if way.trash_skipped:
        outcome.message += (f" (checked out again, not put back whole from the trash: "
                            f"{way.trash_skipped})")
        outcome.data["trash_skipped"] = way.trash_skipped
    # An "ok" apply dropped the ref (under this session's lock nothing rewrites it).
    kept = outcome.status != Status.OK and not outcome.data.get("applied") \
        and bool(save.preserve_ref) and git.rev_parse(s.common_dir, save.preserve_ref) is not None
    if kept:
        outcome.message += _then_resolve(s.id, path)
    return Restored(outcome, kept, attention=kept, unfinished=way.placement.unfinished)


def _annotate(restored: Restored, stray: trash.Entry | None, path: str) -> None:
    """Step 3: name in the outcome the directory set aside from the path, and the one
    an interrupted restore left holding changes no save has (which needs attention)."""
    outcome = restored.outcome
    if stray is not None:
        target.report_stray(outcome, stray, path)
    kept_entry = restored.unfinished
    if kept_entry is not None:
        files = [str(f) for f in (kept_entry.meta.files or [])]
        outcome.data["set_aside_unfinished"] = kept_entry.worktree
        outcome.data["unsaved_files"] = files
        outcome.message += (f"; the worktree an interrupted restore left held changes no "
                            f"save has ({', '.join(files[:5])}): it was set aside in "
                            f"{kept_entry.worktree}")
        if outcome.status == Status.OK:
            outcome.status = Status.ATTENTION


def _record(ctx: Context, s: Session, save: Save, restored: Restored) -> None:
    """Step 4: the session is live again (the ref kept or not), and the log says so."""
    ctx.store.mark_restored(s.id, ref_kept=restored.ref_kept, attention=restored.attention)
    crashpoint.hit("restore:after-db")
    ctx.log("restore", s.id, restored.outcome.status, detail=restored.outcome.message,
            workspace=save.worktree_path)


def _would(ctx: Context, s: Session, save: Save, path: str, reused: bool,
           fetched_later: bool = False) -> tuple[str, int, Status]:
    """What a dry run says the real run would do: which way (put back whole from
    the trash, or a checkout and the save applied, and why not the trash), when
    the branch moved since the save, that the work lands on its new tip, and
    after a checkout with no trash copy left, that the ignored paths the save
    held do not come back (`target.environment_note`). Returns (the line, how
    many ignored paths would not come back, the status the real run would give:
    attention when a checkout would come back without the work, its saved commit
    gone, as `_apply_saved` says)."""
    # Nothing to apply: say so, and (as the real run's outcome will) the newest
    # history entry that holds work. A trash copy is the worktree as preserved.
    saved = bool(save.preserved_commit)
    apply_it = " and apply the save" if saved else " (nothing was saved)"
    missing = "" if fetched_later else _commit_missing(ctx.store.dir, s, save)
    if missing:
        apply_it = f" without the work ({missing})"
    note = "" if saved or save.holds_less_than else history.newest_note(
        s.common_dir, s.id, then=f"after git ao-restore {s.id}, ")
    # As the real run's checkout (`target.trash_copy`): with no trash copy to take
    # them from, the ignored paths the save held do not come back.
    lost = target.ignored_lost(s, path, reused) \
        if trash.latest_for(ctx.store.dir, s.id, environment=True) is None else 0
    gone = target.environment_note(lost) if lost else ""
    status = Status.ATTENTION if missing else Status.OK
    if reused:
        return (f"would reuse the worktree at {path}{apply_it}{gone}"
                + (f"; {note}" if note else ""), lost, status)
    use = from_trash.usable(ctx.store.dir, save)
    if use.entry is not None and not os.path.lexists(path):
        unproven = (f"; its saved commit {save.preserved_commit} is gone, so the copy "
                    "would not be compared with the save") if missing else ""
        said = f"would put the worktree back at {path} from the trash ({use.entry.worktree})"
        return said + unproven, 0, Status.OK  # the copy is the work, put back whole
    if save.branch and not save.detached and not save.head \
            and not query.branch_exists(s.common_dir, save.branch):
        raise _no_commit(save.branch)  # as the real run's checkout refuses
    msg = f"would re-create the worktree at {path} by a checkout{apply_it}"
    moved = ""
    if saved and not missing and not save.detached and save.branch and save.head:
        tip = query.branch_tip(s.common_dir, save.branch)
        if tip is not None and tip != save.head:
            moved = (f"; branch '{save.branch}' moved since the save ({save.head[:12]} -> "
                     f"{tip[:12]}): the work is applied on its new tip and may conflict")
    if use.entry is not None:
        msg += f" (not from the trash: '{path}' exists)"
    elif use.skip is not from_trash.Skip.NO_COPY and not (
            use.skip is from_trash.Skip.BRANCH_MOVED and moved):
        msg += f" (not from the trash: {use.why})"  # the moved branch said below otherwise
    msg += moved + gone
    if note:
        msg += f"; {note}"
    return msg, lost, status


def _commit_missing(data_dir: str, s: Session, save: Save) -> str:
    """When the save's commit is gone from the repository (its ref deleted, then
    git gc), the words a checkout restore says of it: the session's trash copy
    (`trash.latest_for`, environment=True) is then what holds the work, and it is
    kept. "" when the commit is there, or nothing was saved."""
    commit = save.preserved_commit
    if not commit or git.object_exists(s.common_dir, commit):
        return ""
    copy = trash.latest_for(data_dir, s.id, environment=True)
    return f"its saved commit {commit} is gone" + (
        f"; the trash copy {copy.worktree} holds the worktree as preserve took it and is kept"
        if copy is not None else "")


def _try_trash(ctx: Context, s: Session, save: Save, path: str,
               want_branch: str | None) -> tuple[from_trash.Placed | None, str]:
    """Under the repository's lock, with nothing at `path`: put the session's trash
    copy back whole when `from_trash.usable` allows it and the branch is free.
    Returns (Placed or None, why the trash copy was not used: "" when there is none)."""
    use = from_trash.usable(ctx.store.dir, save)
    entry = use.entry
    if entry is None:
        return None, "" if use.skip is from_trash.Skip.NO_COPY else use.why
    # The files git lists worktrees from usually prove the path and the branch
    # free at once; otherwise git is asked (one process fewer per session).
    if not worktree.free_by_files(s.common_dir, path, want_branch):
        entries = git.worktree_list(s.common_dir)
        found = worktree.find(entries, path)
        if found is not None:
            if not found.prunable:
                return None, f"'{path}' is still registered"
            ctx.prune_worktrees(s.common_dir, only=[path])
            entries = git.worktree_list(s.common_dir)
        if want_branch and any(e.branch == f"refs/heads/{want_branch}" for e in entries):
            return None, "its branch is checked out elsewhere"  # _place_worktree refuses
    ctx.store.mark_restore_started(s.id)
    try:
        placed = from_trash.put_back(s.common_dir, save, entry)
    except (AoError, OSError) as exc:
        ctx.log("restore", s.id, "trash-not-used", error=str(exc))
        return None, str(exc)
    ctx.log("restore", s.id, "reinstated", trash=entry.path, workspace=path)
    return placed, ""


def _resume_reinstate(ctx: Context, s: Session, save: Save,
                      path: str) -> from_trash.Placed | None:
    """A rerun after a restore from the trash was killed once the directory was back
    at `path`: point its `.git` file at its admin dir again when needed and go on
    with the proof. None when no such restore was under way."""
    if not save.restore_interrupted or not os.path.isdir(path):
        return None
    entry = from_trash.reinstating(ctx.store.dir, s.id, path)
    if entry is None:
        return None
    from_trash.repair_link(s.common_dir, path)
    admin = str(entry.meta.admin or "")
    if admin:
        from_trash.drop_link_tmp(path, admin)
    ctx.log("restore", s.id, "reinstate-resumed", trash=entry.path, workspace=path)
    return from_trash.Placed(entry, path, admin)


def _from_trash(ctx: Context, s: Session, save: Save,
                placed: from_trash.Placed) -> Restored | Checkout:
    """Step 2, the trash way: prove the directory put back from the trash and keep
    it when the proof holds; else move it back into its entry and place the
    worktree for the checkout way (the Checkout returned says why)."""
    crashpoint.hit("restore:after-reinstate")
    path = placed.path
    proof = prove(path, save, placed.admin)
    data = facts(s, preserve_ref=save.preserve_ref, preserved_commit=save.preserved_commit,
                 from_trash=True)
    if not proof.ok:
        ctx.log("restore", s.id, "reinstate-proof-failed", why=proof.why, trash=placed.entry.path)
        try:
            with ctx.repo_lock(s.common_dir):
                from_trash.undo(s.common_dir, placed)
        except OSError as exc:
            return Restored(Outcome(s.id, Action.RESTORE, Status.ATTENTION,
                                    f"worktree back at {path} from the trash, but {proof.why} "
                                    f"and it could not be moved back ({exc.strerror}); the work "
                                    f"stays in {save.preserve_ref}", data), ref_kept=True)
        with ctx.repo_lock(s.common_dir):
            placement = _place_worktree(ctx, s, save, path, _want_branch(save))
        return Checkout(placement, f"{proof.why}; the trash copy is kept")
    ref = save.preserve_ref
    if proof.flags_changed:
        try:
            local_state.put_assume_unchanged(path, local_state.load(save.private_config))
        except AoError as exc:
            ctx.log("restore", s.id, "flags-kept", error=str(exc))
        data["flags_put_back"] = True
    status = Status.OK
    if proof.late:
        # The directory's files are the latest state, so they stay; the last capture
        # stays in the ref, which nothing else holds (see docs/restore-trash.md).
        data["late_writes"] = proof.late
        listed = ", ".join(proof.late[:5]) + (" ..." if len(proof.late) > 5 else "")
        msg = (f"restored at {path} from the trash, with {len(proof.late)} path(s) written "
               f"after the last capture ({listed}); " +
               (f"the last capture stays in {ref}" if ref else
                "the save was clean, so the worktree holds their only copy"))
        kept = bool(ref) and git.rev_parse(path, ref) is not None
        # A late path that is no file now was one at the capture (deleted, or made
        # a directory): its content is in the ref alone.
        gone = [p for p in proof.late if not os.path.islink(os.path.join(path, p))
                and not os.path.isfile(os.path.join(path, p))]
        if gone and kept:
            # Deleted after the capture (an agent's stop handler, say): only the ref
            # still has them, so no later preserve replaces it unasked.
            data["late_deleted"] = gone
            status = Status.ATTENTION
            msg += (f"; {', '.join(gone[:5])}{' ...' if len(gone) > 5 else ''} deleted "
                    f"after it, so the ref stays until you drop it (git stash show -p "
                    f"--include-untracked {ref}; git ao resolve {s.id})")
    elif proof.unproven:
        # The saved commit is gone (so is its ref: a ref keeps its commit): the
        # directory preserve took away is the work's only copy, back as it was.
        data["unproven"] = True
        msg = (f"restored at {path} from the trash, as preserve took it away; its saved "
               f"commit {save.preserved_commit} is gone, so the copy could not be compared "
               "with the save (a write after the last capture would not be named)")
        kept = False
    else:
        crashpoint.hit("restore:before-ref-delete")
        if save.preserved_commit:
            _drop_ref(path, ref, save.preserved_commit)
        crashpoint.hit("restore:after-ref-delete")
        msg = f"restored at {path} from the trash"
        kept = False
    try:
        from_trash.forget_fsmonitor(placed)
    except AoError as exc:
        # A stale fsmonitor answer costs nothing of the work, which is all back.
        ctx.log("restore", s.id, "fsmonitor-kept", error=str(exc))
    if placed.missed:
        data["admin_not_restored"] = list(placed.missed)
        msg += f"; not put back in its git admin dir: {', '.join(placed.missed)}"
    from_trash.finish(placed)
    return Restored(Outcome(s.id, Action.RESTORE, status, msg, data), kept,
                    attention=bool(data.get("late_deleted")))


def _place_worktree(ctx: Context, s: Session, save: Save, path: str,
                    want_branch: str | None) -> Placement:
    """Under the repository's lock: prune a stale registration of `path`, refuse a
    branch checked out elsewhere or a path that is not this session's worktree,
    set aside what an interrupted restore left, then `git worktree add` (not on a
    dry run). Returns the Placement; raises Refused."""
    unfinished: trash.Entry | None = None
    entries = git.worktree_list(s.common_dir)
    entry = worktree.find(entries, path)
    if entry is not None and entry.locked is not None and not entry.is_main \
            and not os.path.lexists(path) and save.restore_interrupted and not ctx.dry_run:
        target.unlock_interrupted_add(ctx, s, path)
        entries = git.worktree_list(s.common_dir)
        entry = worktree.find(entries, path)
    if entry is not None and entry.prunable and (
            not os.path.lexists(path) or (os.path.isdir(path) and not os.listdir(path))):
        if not ctx.dry_run:
            ctx.prune_worktrees(s.common_dir, only=[path])
        entries = git.worktree_list(s.common_dir) if not ctx.dry_run else \
            [e for e in entries if e is not entry]
        entry = None
    if want_branch:
        for e in entries:
            if e.branch == f"refs/heads/{want_branch}" and not worktree.same_path(e.path, path):
                raise Refused(f"branch '{want_branch}' is checked out in {e.path}; "
                              "free it and run git ao-restore again (still pending)",
                              names_state=True)
    # An empty directory (an empty mount point kept by _clear_empty): git worktree
    # add fills it.
    reused = os.path.lexists(path) and not (os.path.isdir(path) and not os.listdir(path))
    if reused:
        try:
            target.check_reusable(s, save, entry, path, want_branch)
        except Refused as exc:
            if save.restore_interrupted:
                raise Refused(f"{exc}; a restore of this session was interrupted while adding "
                              "it: if nothing there is yours, remove it and run git ao-restore "
                              "again") from None
            raise
        if save.restore_interrupted and not ctx.dry_run and entry is not None \
                and entry.locked is not None:
            # git's "initializing" lock of this session's killed add: kept, every
            # later preserve would keep the worktree as locked.
            target.unlock_interrupted_add(ctx, s, path)
        if save.restore_interrupted and not ctx.dry_run:
            unfinished = target.set_aside_unfinished(ctx, s, save, path, entries)
            if unfinished is not None:
                reused = False
                if not unfinished.meta.files:
                    unfinished = None  # nothing in it that no save has: nothing to name
    if not reused and not ctx.dry_run:
        ctx.store.mark_restore_started(s.id)
        _add_worktree(s.common_dir, path, save, want_branch)
    return Placement(reused, unfinished)


def _no_commit(branch: str) -> Refused:
    return Refused(f"branch '{branch}' is gone and no commit was saved to re-create it")


def _add_worktree(repo: str, path: str, save: Save, want_branch: str | None) -> None:
    """`git worktree add` at the recorded path; when the save recorded private config
    (sparse-checkout patterns, config.worktree) it is put in place before checkout."""
    wc = local_state.load(save.private_config)
    first = local_state.needs_config_first(wc)
    if not want_branch:
        git.worktree_add(repo, path, commit=save.head, detach=True, checkout=not first)
    elif query.branch_exists(repo, want_branch):
        git.worktree_add(repo, path, branch=want_branch, checkout=not first)
    elif save.head:
        git.worktree_add(repo, path, new_branch=want_branch, commit=save.head,
                         checkout=not first)
    else:
        raise _no_commit(want_branch)
    if first:
        local_state.put_config(git.repo_dirs(path).git_dir, wc)
        index.checkout_head(path)


def _apply_saved(ctx: Context, s: Session, save: Save, path: str, reused: bool) -> Outcome:
    """Step 2 of restore: apply, then delete the ref only after a clean apply."""
    data = facts(s, preserve_ref=save.preserve_ref, preserved_commit=save.preserved_commit)
    commit = save.preserved_commit
    wc = local_state.load(save.private_config)
    if commit and save.private_config is None and git.object_exists(path, commit):
        # A record rebuilt from its ref (git ao doctor --recover) has no private
        # config: what the commit shows of the intent-to-add entries comes back.
        wc.intent_to_add = apply.intent_to_add_of(path, commit) or None
    if not commit:
        problems = [] if reused else apply.put_flags(path, wc)
        # A history entry may hold work no save does (a prune dropped the ref of a
        # checkpoint whose work was in the worktree, and then the worktree went);
        # one the record names already (`holds_less`) is said once, by that.
        note = "" if save.holds_less_than else history.newest_note(s.common_dir, s.id)
        if problems:
            said = problems + ([f"nothing was saved, but {note}"] if note else [])
            return Outcome(s.id, Action.RESTORE, Status.ATTENTION,
                           f"worktree back at {path}; " + "; ".join(said), data)
        return Outcome(s.id, Action.RESTORE, Status.OK, f"worktree back at {path} (nothing was "
                       "saved)" + (f"; {note}" if note else ""), data)
    dirs = git.repo_dirs(path)
    ref = save.preserve_ref
    if not git.object_exists(path, commit):
        return Outcome(s.id, Action.RESTORE, Status.ATTENTION, f"its saved commit {commit} is "
                       f"gone; the worktree is back at {path} without the work", data)
    if reused and holds(path, dirs.git_dir, save):
        _drop_ref(path, ref, commit)
        return Outcome(s.id, Action.RESTORE, Status.OK, f"worktree at {path} already held the "
                       "preserved work", data)
    since = _held_with_changes_since(path, save) if reused else None
    if since:
        # Every path the save changed is as saved: only what was written since
        # is the worktree's own, so the ref goes as when it held the save alone.
        _drop_ref(path, ref, commit)
        data["changed_since"] = since
        more = f" and {len(since) - 5} more" if len(since) > 5 else ""
        return Outcome(s.id, Action.RESTORE, Status.OK, f"worktree at {path} already held the "
                       f"preserved work, with changes made since ({', '.join(since[:5])}{more})",
                       data)
    if reused and not git.status(path, ignored=False).clean:
        return Outcome(s.id, Action.RESTORE, Status.ATTENTION,
                       f"worktree at {path} has other changes; the work stays in {ref}: "
                       f"git stash apply --index {ref}", data)
    if reused:
        from git_ao.fs.walk import mounts_inside
        inside = mounts_inside(path)
        if inside:
            return Outcome(s.id, Action.RESTORE, Status.ATTENTION,
                           f"'{inside[0]}' is a mount point inside the worktree at {path}; "
                           f"nothing is removed across a mount, so the work stays in {ref}: "
                           f"git stash apply --index {ref} once it is unmounted", data)
    crashpoint.hit("restore:during-apply")
    applied = apply.apply(path, commit, sparse=wc.sparse_checkout is not None)
    crashpoint.hit("restore:after-apply")
    if applied.outcome == ApplyResult.CLEAN:
        if wc.recheckout:
            apply.recheckout(path, dirs.git_dir, commit)
        problems = apply.put_flags(path, wc, fresh=not reused)
        head = git.rev_parse(path, "HEAD")
        proven = head == save.head and holds(path, dirs.git_dir, save)
        if not problems and head == save.head and not proven:
            # The proof: the worktree must now capture to exactly the saved trees.
            unlike = _not_as_saved(path, save, wc)
            listed = ", ".join(f"{p} ({how})" for p, how in unlike.items())
            problems.append("the worktree does not hold exactly the saved work"
                            + (f": {len(unlike)} path(s) are not as saved: {listed}"
                               if unlike else ""))
            if unlike:
                data["not_as_saved"] = unlike
        if problems and proven:
            # Only the submodules' checkouts are missing (a remote unreachable at
            # boot): the work is all back, so the ref goes and nothing waits on it.
            _drop_ref(path, ref, commit)
            data["applied"] = True
            return Outcome(s.id, Action.RESTORE, Status.ATTENTION, f"restored at {path}, but "
                           f"{'; '.join(problems)} (git submodule update --init)", data)
        if problems:
            data["placed"] = apply.saved_paths(path, commit)
            return Outcome(s.id, Action.RESTORE, Status.ATTENTION, f"applied at {path}, but "
                           f"{'; '.join(problems)}; work kept in {ref}", data)
        if head != save.head:
            unlike = _not_as_saved(path, save)
            if unlike:
                data["not_as_saved"] = unlike
                data["placed"] = apply.saved_paths(path, commit)
                listed = ", ".join(f"{p} ({how})" for p, how in list(unlike.items())[:5])
                more = f" and {len(unlike) - 5} more" if len(unlike) > 5 else ""
                return Outcome(s.id, Action.RESTORE, Status.ATTENTION,
                               f"applied at {path} onto a branch that moved since the save, "
                               f"but {len(unlike)} path(s) are not as saved: {listed}{more} "
                               "(a merge driver, filter or rename detection decided for "
                               f"them); the work stays in {ref} (git stash show -p "
                               f"--include-untracked {ref}) and the trash copy is kept", data)
        crashpoint.hit("restore:before-ref-delete")
        _drop_ref(path, ref, commit)
        crashpoint.hit("restore:after-ref-delete")
        moved = f" (its branch moved since the save: HEAD was {save.head[:12]}, now " \
            f"{head[:12]})" if save.head and head and head != save.head else ""
        return Outcome(s.id, Action.RESTORE, Status.OK, f"restored at {path}{moved}", data)
    if applied.outcome == ApplyResult.FAILED and not reused \
            and not git.status(path, ignored=False).clean:
        # Cut short part way (a full disk): the worktree holds some of the work and
        # maybe a half-written file. The session stays pending; the next restore
        # sets this worktree aside as an unfinished one and starts again.
        raise Failed(f"the apply stopped part way ({applied.detail}); the session stays "
                     f"pending and the next git ao-restore sets {path} aside and starts "
                     "again (the work is in the ref and the trash)")
    data["paths"] = applied.paths
    data["placed"] = applied.placed
    listed = ", ".join(applied.paths[:5]) + (" ..." if len(applied.paths) > 5 else "")
    placed = ", ".join(applied.placed[:5]) + (" ..." if len(applied.placed) > 5 else "")
    if applied.outcome == ApplyResult.CONFLICT:
        msg = f"conflicts in {listed}; markers left, work kept in {ref}" + \
            (f"; placed: {placed}" if placed else "")
        restaged = apply.index_differences(path, commit)
        if restaged:
            # git stash applies a conflicted save without its index part.
            data["index_not_kept"] = restaged
            msg += (f"; the index part could not be kept: {', '.join(restaged[:5])}"
                    f"{' ...' if len(restaged) > 5 else ''} (the save's index: git diff "
                    f"{ref}^1 {ref}^2)")
    elif applied.outcome == ApplyResult.UNSTAGED:
        msg = f"{applied.detail}; work kept in {ref}" + (f"; placed: {placed}" if placed else "")
    else:
        msg = f"nothing applied: {applied.detail}" + (f": {listed}" if listed else "") + \
              f"; work kept in {ref}"
    return Outcome(s.id, Action.RESTORE, Status.ATTENTION, msg, data)


def _then_resolve(session_id: str, path: str = "") -> str:
    """The step that finishes a restore whose ref keeps work it could not put back:
    `git ao resolve` drops the ref and the attention together (no later preserve
    replaces the ref before). path: the worktree, when its unmerged paths (a
    conflict) are to be resolved first."""
    try:
        unmerged = bool(path) and os.path.isdir(path) and bool(query.unmerged_paths(path))
    except AoError:
        unmerged = False
    first = "resolve the conflicts and git add the files" if unmerged else \
        "take what you need of it"
    return f"; {first}, then git ao resolve {session_id}"


def _held_with_changes_since(path: str, save: Save) -> list[str] | None:
    """For a worktree restore reuses (a preserve killed before its move left it in
    place, then it was written to): the paths changed since the save, when every
    path the save changed holds as saved in the worktree and the index (`not_as_saved`
    on the saved HEAD and branch) and something else changed; else None (also when
    git cannot tell)."""
    commit = save.preserved_commit
    assert commit
    try:
        st = git.status(path, ignored=False)
        if st.head != save.head or st.branch != (None if save.detached else save.branch) \
                or st.clean or not_as_saved(path, save):
            return None
        parents = git.commit_parents(path, commit)
        saved = set(query.raw_changes(path, parents[0], commit)) | \
            set(query.raw_changes(path, parents[0], parents[1]))
        if len(parents) > 2:
            saved |= set(query.ls_tree_entries(path, parents[2]))
    except (AoError, OSError):
        return None
    since = sorted(({e.path for e in st.changed} | set(st.untracked)) - saved)
    return since or None


def _not_as_saved(path: str, save: Save,
                  wc: local_state.LocalState | None = None) -> dict[str, str]:
    """`proof.not_as_saved`, with a worktree that cannot be read counted as one whose
    paths are not proven ({".": why}). `wc`: the private state the restore put back
    (by default the recorded one)."""
    try:
        return not_as_saved(path, save, wc)
    except (AoError, OSError) as exc:
        return {".": f"cannot be compared with the save: {exc}"}


def _drop_ref(cwd: str, ref: str, commit: ObjectId) -> None:
    """Delete the preserve ref, only while it still points at `commit`."""
    if ref:
        git.drop_ref_if_at(cwd, ref, commit)
