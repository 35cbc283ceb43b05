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

from . import (
    crashpoint,
    git,
    gitindex,
    gitquery,
    reinstate,
    replay,
    session_groups,
    snapshot,
    trash,
    walk,
    worktree,
)
from .batch import NOT_STARTED, guarded, log_failure, run_each
from .errors import AoError, Refused
from .outcome import Outcome, Status
from .records import Save, Session
from .session import Context, facts, lookup
from .store import Store

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
    outer = _pending_outside(ctx, sessions)

    def one(s: Session) -> Outcome:
        if stop is not None and stop.is_set():
            return Outcome(s.id, "restore", Status.REFUSED,
                           NOT_STARTED + "; the session stays pending")
        if s.id in outer:
            # Coming back first would make the outer session's path a plain
            # directory that its own restore then refuses.
            return Outcome(s.id, "restore", Status.REFUSED,
                           f"it lies inside pending session '{outer[s.id]}', which comes "
                           f"back first: git ao-restore {outer[s.id]} {s.id} (still pending)",
                           facts(s))
        out = guarded(lambda: restore_one(ctx, s.id), s.id, "restore")
        log_failure(ctx, out)
        crashpoint.hit("restore:between-sessions")
        return out

    return session_groups.in_waves(sessions, lambda part: run_each(part, one, jobs, progress),
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


def restore_one(ctx: Context, session_id: str) -> Outcome:
    """Re-create the session's worktree at its recorded path on its branch, with its
    saved work, delete the ref once the worktree provably holds it, mark the
    session live.

    Two ways, tried in this order (docs/restore-trash.md): from the trash, the
    directory preserve took away is put back whole (`reinstate`), proven, and
    kept only when the proof holds; otherwise `git worktree add` and the saved
    commit applied (`_apply_saved`), then the ignored files of the trash copy
    moved in (`_bring_environment`). A directory an agent re-created at the
    path after the save is set aside first (`_set_aside_stray`).

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
        stray: trash.Entry | None = None
        notes: list[trash.Entry] = []
        placed: reinstate.Placed | None = None
        why_not = ""
        with ctx.repo_lock(s.common_dir):
            if not ctx.dry_run:
                _clear_empty(path)
                stray = _set_aside_stray(ctx, s, save, path)
                _clear_killed_add(ctx, s, save, path)
                placed = _resume_reinstate(ctx, s, save, path)
                if placed is None and not os.path.lexists(path):
                    placed, why_not = _try_trash(ctx, s, save, path, want_branch)
            if placed is None:
                reused = _place_worktree(ctx, s, save, path, want_branch, notes)
                if ctx.dry_run:
                    how = "reuse the worktree at" if reused else "re-create the worktree at"
                    return Outcome(s.id, "restore", Status.OK, f"would {how} {path}", facts(s))
        outcome = None
        kept: bool | None = None
        if placed is not None:
            crashpoint.hit("restore:after-reinstate")
            outcome, kept, why_not = _finish_from_trash(ctx, s, save, placed)
            if outcome is None:
                with ctx.repo_lock(s.common_dir):
                    reused = _place_worktree(ctx, s, save, path, want_branch, notes)
        if outcome is None:
            if not reused:
                crashpoint.hit("restore:after-worktree-add")
            outcome = _apply_saved(ctx, s, save, path, reused)
            if os.path.isdir(path):
                _bring_environment(ctx, s, path, outcome)
            if why_not and why_not != "no trash copy":
                outcome.message += f" (not from the trash: {why_not})"
                outcome.data["trash_skipped"] = why_not
        if stray is not None:
            _report_stray(outcome, stray, path)
        for kept_entry in notes:
            files = [str(f) for f in kept_entry.meta.get("files", [])]
            outcome.data["set_aside_unfinished"] = kept_entry.worktree
            outcome.data["unsaved_files"] = files
            outcome.message += (f"; the worktree an interrupted restore left held changes no "
                                f"save has ({', '.join(files[:5])}): it was set aside in "
                                f"{kept_entry.worktree}")
            if outcome.status == Status.OK:
                outcome.status = Status.ATTENTION
        if kept is None:
            # An "ok" apply dropped the ref (under this session's lock nothing rewrites it).
            kept = outcome.status != Status.OK and not outcome.data.get("applied") \
                and bool(save.preserve_ref) \
                and git.rev_parse(s.common_dir, save.preserve_ref) is not None
            ctx.store.mark_restored(s.id, ref_kept=kept)
        else:
            ctx.store.mark_restored(s.id, ref_kept=kept, attention=False)
        crashpoint.hit("restore:after-db")
        ctx.log("restore", s.id, outcome.status, detail=outcome.message, workspace=path)
        return outcome


def _try_trash(ctx: Context, s: Session, save: Save, path: str,
               want_branch: str | None) -> tuple[reinstate.Placed | None, str]:
    """Under the repository's lock, with nothing at `path`: put the session's trash
    copy back whole when `reinstate.usable` allows it and the branch is free.
    Returns (Placed or None, why the trash was not used)."""
    entry, why = reinstate.usable(ctx.store.dir, save)
    if entry is None:
        return None, why
    entries = git.worktree_list(s.common_dir)
    found = worktree.find(entries, path)
    if found is not None:
        if not found.prunable:
            return None, f"'{path}' is still registered"
        git.worktree_prune(s.common_dir)
        entries = git.worktree_list(s.common_dir)
    if want_branch and any(e.branch == f"refs/heads/{want_branch}" for e in entries):
        return None, "its branch is checked out elsewhere"  # _place_worktree refuses
    ctx.store.mark_restore_started(s.id)
    try:
        placed = reinstate.put_back(s.common_dir, save, entry)
    except (AoError, OSError) as exc:
        ctx.log("restore", s.id, "trash-not-used", error=str(exc))
        return None, str(exc)
    ctx.log("restore", s.id, "reinstated", trash=entry.path, workspace=path)
    return placed, ""


def _resume_reinstate(ctx: Context, s: Session, save: Save,
                      path: str) -> reinstate.Placed | None:
    """A rerun after a restore from the trash was killed once the directory was back
    at `path`: point its `.git` file at its admin dir again when needed and go on
    with the proof. None when no such restore was under way."""
    if not save.restore_interrupted or not os.path.isdir(path):
        return None
    entry = reinstate.reinstating(ctx.store.dir, s.id, path)
    if entry is None:
        return None
    reinstate.repair_link(s.common_dir, path)
    admin = str(entry.meta.get("admin") or "")
    ctx.log("restore", s.id, "reinstate-resumed", trash=entry.path, workspace=path)
    return reinstate.Placed(entry, path, admin)


def _finish_from_trash(ctx: Context, s: Session, save: Save, placed: reinstate.Placed
                       ) -> tuple[Outcome | None, bool | None, str]:
    """Prove the directory put back from the trash; keep it when the proof holds,
    else move it back into its entry (the caller falls back).
    Returns (Outcome or None, whether the ref stays, why the trash was not used)."""
    path = placed.path
    proof = reinstate.prove(path, save)
    data = facts(s, preserve_ref=save.preserve_ref, preserved_commit=save.preserved_commit,
                 from_trash=True)
    if not proof.ok:
        ctx.log("restore", s.id, "reinstate-proof-failed", why=proof.why, trash=placed.entry.path)
        try:
            with ctx.repo_lock(s.common_dir):
                reinstate.undo(s.common_dir, placed)
        except OSError as exc:
            return (Outcome(s.id, "restore", Status.ATTENTION,
                            f"worktree back at {path} from the trash, but {proof.why} and it "
                            f"could not be moved back ({exc.strerror}); the work stays in "
                            f"{save.preserve_ref}", data), True, proof.why)
        return None, None, f"{proof.why}; the trash copy is kept"
    ref = save.preserve_ref
    if proof.late:
        # The directory's files are the latest state, so they stay; the last capture
        # stays in the ref, which nothing else holds (see docs/restore-trash.md).
        data["late_writes"] = proof.late
        listed = ", ".join(proof.late[:5]) + (" ..." if len(proof.late) > 5 else "")
        msg = (f"restored at {path} from the trash, with {len(proof.late)} path(s) written "
               f"after the last capture ({listed}); the last capture stays in {ref}")
        kept = bool(ref) and git.rev_parse(path, ref) is not None
    else:
        crashpoint.hit("restore:before-ref-delete")
        if save.preserved_commit:
            _drop_ref(path, ref, save.preserved_commit)
        crashpoint.hit("restore:after-ref-delete")
        msg = f"restored at {path} from the trash"
        kept = False
    reinstate.finish(placed)
    return Outcome(s.id, "restore", Status.OK, msg, data), kept, ""


def _clear_empty(path: str) -> None:
    """An empty directory at the restore path (a mount point made again after a
    reboot, a parent left behind) holds nothing to lose: remove it unless it is a
    mount point, so the worktree can come back there. `git worktree add` accepts
    an empty mount point as it is."""
    try:
        if os.path.isdir(path) and not os.path.islink(path) and not os.listdir(path) \
                and not walk.is_mount_point(path):
            os.rmdir(path)
    except OSError:
        pass


def _taken_away_at(ctx: Context, session_id: str, saved_at: int) -> int:
    """When the session's worktree was last moved into the trash (ns; the newest
    entry's creation), or `saved_at` when no entry says."""
    newest = [e.created_ns for e in trash.entries(ctx.store.dir)
              if e.session_id == session_id and not e.stray]
    return min(saved_at, max(newest)) if newest else saved_at


def _set_aside_stray(ctx: Context, s: Session, save: Save, path: str) -> trash.Entry | None:
    """A directory at `path` that is not a worktree and holds only files written
    after the save (every file's mtime later than saved_at, no `.git`, nothing
    the walk could not read, no mount) was re-created by an agent still running
    (a `mkdir -p` by absolute path): move it into a stray entry of the session's
    trash root, so the session can come back. Anything else is left untouched
    (`_check_reusable` refuses it). Returns the stray Entry, or None."""
    if not os.path.isdir(path) or os.path.islink(path):
        return None
    if os.path.lexists(os.path.join(path, ".git")):
        return None
    if worktree.find(git.worktree_list(s.common_dir), path) is not None:
        return None
    try:
        w = walk.walk(path)
        own = os.lstat(path).st_mtime_ns
    except OSError:
        return None
    if w.blockers or w.nested or walk.is_mount_point(path):
        return None
    # Written after the directory was taken away: the move into the trash (its
    # entry's creation) comes before a save recorded again for late writes.
    since = _taken_away_at(ctx, s.id, save.saved_at)
    if not w.entries and own <= since:
        return None
    if any(e.mtime_ns <= since for e in w.entries.values()):
        return None
    files = sorted(w.entries)
    try:
        entry = trash.set_aside(ctx.store.dir, s.id, path, s.common_dir,
                                {"files": files[:1000], "count": len(files)})
    except OSError as exc:
        ctx.log("restore", s.id, "stray-not-moved", workspace=path, error=exc.strerror)
        return None
    ctx.log("restore", s.id, "stray-set-aside", workspace=path, trash=entry.path,
            count=len(files))
    return entry


def _report_stray(outcome: Outcome, stray: trash.Entry, path: str) -> None:
    """Name the set-aside directory and its files in the outcome (exit 3), and the
    files newer there than in the restored worktree (an agent's latest writes,
    kept only in the stray entry)."""
    files = [str(f) for f in stray.meta.get("files", [])]
    newer = []
    for rel in files:
        try:
            mine = os.lstat(os.path.join(stray.worktree, rel)).st_mtime_ns
            there = os.lstat(os.path.join(path, rel)).st_mtime_ns
        except OSError:
            continue
        if mine > there:
            newer.append(rel)
    listed = ", ".join(files[:5]) + (" ..." if len(files) > 5 else "")
    outcome.data["set_aside"] = stray.worktree
    outcome.data["set_aside_files"] = files
    outcome.message += (f"; a directory written at {path} after the save (by an agent still "
                        f"running?) was set aside in {stray.worktree}: {listed}")
    if newer:
        outcome.data["stray_newer"] = newer
        outcome.message += f"; newer there than here: {', '.join(newer[:5])}"
    if outcome.status == Status.OK:
        outcome.status = Status.ATTENTION


def _bring_environment(ctx: Context, s: Session, path: str, outcome: Outcome) -> None:
    """After a checkout-and-apply restore: move the ignored files of the session's
    trash copy (.env, node_modules/, .venv/) into the new worktree wherever nothing
    is in their way; what could not be placed stays in the entry and is listed.
    The ignored paths are what git says of the trash copy, judged with its saved
    index (`git.ignored_in`)."""
    entry = trash.latest_for(ctx.store.dir, s.id, environment=True)
    if entry is None:
        return
    try:
        found = gitquery.ignored_in(s.common_dir, entry.worktree, os.path.join(entry.admin, "index"))
    except AoError as exc:
        ctx.log("restore", s.id, "environment-not-read", error=str(exc))
        return
    moved, kept = [], []
    real = os.path.realpath(path)
    for rel in found:
        name = rel.rstrip("/")
        src, dst = os.path.join(entry.worktree, name), os.path.join(path, name)
        parent = os.path.dirname(dst)
        if os.path.lexists(dst) or not os.path.realpath(parent).startswith(real) or (
                os.path.lexists(parent) and (os.path.islink(parent)
                                             or not os.path.isdir(parent))):
            kept.append(rel)
            continue
        try:
            os.makedirs(parent, exist_ok=True)
            os.rename(src, dst)
        except OSError:
            kept.append(rel)
            continue
        moved.append(rel)
    trash.mark(entry, restored=True, environment_kept=kept)
    ctx.log("restore", s.id, "environment", moved=len(moved), kept=len(kept), trash=entry.path)
    if moved:
        outcome.data["environment"] = moved
        outcome.message += f"; {len(moved)} ignored path(s) brought back from the trash"
    if kept:
        # Something was in their way (the branch now tracks .env, say): the user
        # decides, so the restore needs attention and prune keeps the entry.
        outcome.data["environment_kept"] = kept
        outcome.message += (f"; {len(kept)} ignored path(s) could not be put back and are "
                            f"kept in {entry.worktree}: "
                            + ", ".join(kept[:5]) + (" ..." if len(kept) > 5 else ""))
        if outcome.status == Status.OK:
            outcome.status = Status.ATTENTION


def _clear_killed_add(ctx: Context, s: Session, save: Save, path: str) -> None:
    """What a `git worktree add` of this session's killed restore left, cleared so the
    rerun converges: a directory holding only the `.git` file git wrote first (and
    perhaps an all-zero HEAD) is deregistered (`git worktree unlock`, the file and
    the empty directory removed, `git worktree prune`); a `refs/heads/<branch>.lock`
    it left, made after the restore started, is removed. Only a restore that
    started and never finished (`Save.restore_interrupted`) does this."""
    if not save.restore_interrupted:
        return
    if save.branch and not save.detached:
        lock = os.path.join(s.common_dir, "refs", "heads", *save.branch.split("/")) + ".lock"
        try:
            made = os.lstat(lock).st_mtime_ns
        except OSError:
            made = None
        if made is not None and save.restore_started_at is not None \
                and made >= save.restore_started_at - 2_000_000_000:
            os.unlink(lock)
            ctx.log("restore", s.id, "stale-branch-lock-removed", lock=lock)
    admin = reinstate.only_git_file(path) if os.path.isdir(path) else None
    base = os.path.realpath(os.path.join(s.common_dir, "worktrees"))
    if admin is None or not os.path.realpath(admin).startswith(base + os.sep):
        return
    if os.path.exists(os.path.join(admin, "locked")):
        try:
            git.worktree_unlock(s.common_dir, path)
        except AoError:
            pass  # git cannot read it (an all-zero HEAD): prune below still may
    os.unlink(os.path.join(path, ".git"))
    os.rmdir(path)
    git.worktree_prune(s.common_dir)
    ctx.log("restore", s.id, "killed-add-cleared", workspace=path, admin=admin)


def _place_worktree(ctx: Context, s: Session, save: Save, path: str,
                    want_branch: str | None, notes: list[trash.Entry] | None = None) -> bool:
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
    if entry is not None and entry.prunable and (
            not os.path.lexists(path) or (os.path.isdir(path) and not os.listdir(path))):
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
    # An empty directory (an empty mount point kept by _clear_empty): git worktree
    # add fills it.
    reused = os.path.lexists(path) and not (os.path.isdir(path) and not os.listdir(path))
    if reused:
        try:
            _check_reusable(s, save, entry, path, want_branch)
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
            _unlock_interrupted_add(ctx, s, path)
        if save.restore_interrupted and not ctx.dry_run \
                and _set_aside_unfinished(ctx, s, save, path, entries, notes):
            reused = False
    if not reused and not ctx.dry_run:
        ctx.store.mark_restore_started(s.id)
        _add_worktree(s.common_dir, path, save, want_branch)
    return reused


def _set_aside_unfinished(ctx: Context, s: Session, save: Save, path: str,
                          entries: list[git.WorktreeEntry],
                          notes: list[trash.Entry] | None = None) -> bool:
    """The worktree at `path` is what an interrupted restore of this save left (the
    row says a restore started and never finished, so no agent has worked there).
    When it does not already hold the saved work, and every untracked path in it is
    one the saved commit or its HEAD has, move it into a stray trash entry (which
    prune keeps) and deregister it, so the restore starts again. Files whose
    content no saved tree holds (an edit made there before the rerun) are listed
    in the entry and, through `notes`, in the outcome. Returns True when it was
    set aside."""
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
    known: dict[str, set[str]] = {}
    trees = [f"{save.head}^{{tree}}"] if save.head else []
    if commit:
        trees += [t for t in snapshot.saved_trees(s.common_dir, commit)[1:] if t]
    for tree in trees:
        for p, oid in gitquery.ls_tree_blobs(s.common_dir, tree).items():
            known.setdefault(p, set()).add(oid)
    if any(p not in known for p in st.untracked):
        return False
    # Content no saved tree holds (a file a killed apply half wrote, or an edit
    # made in the half-restored worktree): kept in the entry, and said.
    present = [p for p in [e.path for e in st.changed] + list(st.untracked)
               if os.path.isfile(os.path.join(path, p))
               and not os.path.islink(os.path.join(path, p))]
    foreign = [p for p, oid in zip(present, gitquery.hash_paths(path, present), strict=True)
               if oid not in known.get(p, set())] if present else []
    v = worktree.verify(s.common_dir, path, entries)
    if v.entry.locked is not None:
        _unlock_interrupted_add(ctx, s, path)
    entry = trash.move_in(ctx.store.dir, s.id, path, v.common_dir, v.git_dir,
                          {"commit": None, "stray": True, "interrupted_restore": True,
                           "files": foreign})
    git.worktree_prune(s.common_dir)
    ctx.log("restore", s.id, "interrupted-restore-set-aside", workspace=path,
            trash=entry.worktree, unsaved=len(foreign) or None)
    if notes is not None and foreign:
        notes.append(entry)
    return True


def _unlock_interrupted_add(ctx: Context, s: Session, path: str) -> None:
    """Unlock the registration of `path` that this session's killed restore left:
    git locks a new worktree ("initializing") until its `git worktree add` is done,
    and git's prune keeps locked registrations, so the next add would fail."""
    try:
        git.worktree_unlock(s.common_dir, path)
    except AoError:
        return  # not locked (any more): nothing to do
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
        proven = head == save.head and snapshot.holds(path, dirs.git_dir, commit)
        if not problems and head == save.head and not proven:
            # The proof: the worktree must now capture to exactly the saved trees.
            problems.append("the worktree does not hold exactly the saved work")
        if problems and proven:
            # Only the submodules' checkouts are missing (a remote unreachable at
            # boot): the work is all back, so the ref goes and nothing waits on it.
            _drop_ref(path, ref, commit)
            data["applied"] = True
            return Outcome(s.id, "restore", Status.ATTENTION, f"restored at {path}, but "
                           f"{'; '.join(problems)} (git submodule update --init)", data)
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
