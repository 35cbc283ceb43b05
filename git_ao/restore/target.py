"""What stands at a restore path, and what comes back with a worktree.

A directory that is not the worktree is refused unless the user asks for it to
be set aside (`--set-aside-stray`); an empty one is cleared; what a killed `git worktree add` or a killed restore
left is recognised and finished; after a checkout-and-apply restore the
ignored files of the trash copy (.env, node_modules/) are moved back in.
Nothing here deletes anything but an empty directory or git's own lock files
its killed commands left.
"""

from __future__ import annotations

import os

from git_ao import git
from git_ao.context import Context
from git_ao.errors import AoError, Refused
from git_ao.fs import walk
from git_ao.git import index, query, worktree
from git_ao.git import lock as gitlock
from git_ao.outcome import Outcome, Status
from git_ao.proof import restored, witness
from git_ao.restore import from_trash
from git_ao.save import capture, local_state
from git_ao.store import trash
from git_ao.store.records import Save, Session


def clear_empty(path: str) -> None:
    """An empty directory at the restore path (a mount point made again after a
    reboot, a parent left behind) holds nothing to lose: remove it unless it is a
    mount point, so the worktree can come back there. `git worktree add` accepts
    an empty mount point as it is."""
    try:
        if walk.is_empty_dir(path) and not walk.is_mount_point(path):
            os.rmdir(path)
    except OSError:
        pass


STRAY_OPTION = "--set-aside-stray"


def stray_files(s: Session, path: str) -> list[str] | None:
    """The files of a directory at `path` that could be moved into the trash as a
    whole: a real directory, not a worktree git lists, holding no `.git`, no
    mount and nothing the walk could not read or judge (a nested repository).
    Returns its files (sorted, relative), or None when it is no such directory."""
    if not os.path.isdir(path) or os.path.islink(path) or walk.is_mount_point(path):
        return None
    if os.path.lexists(os.path.join(path, ".git")):
        return None
    if worktree.find(git.worktree_list(s.common_dir), path) is not None:
        return None
    try:
        w = walk.walk(path)
    except OSError:
        return None
    if w.blockers or w.nested:
        return None
    return sorted(w.entries)


def refuse_stray(s: Session, path: str) -> None:
    """A directory at the recorded path that is not this session's worktree (made by
    the user, another tool, or an agent still running) is never touched unasked:
    raise Refused naming the option that moves it into the trash, when it is one
    that can be moved (`stray_files`). Does nothing when `path` holds no directory
    or one `check_reusable` judges."""
    files = stray_files(s, path)
    if files is None or walk.is_empty_dir(path):
        return
    listed = ", ".join(files[:3]) + (" ..." if len(files) > 3 else "")
    raise Refused(f"'{path}' exists and is not a worktree of this repository "
                  f"({len(files)} file(s): {listed}); nothing there is touched (still "
                  f"pending); to move it into the trash and restore: git ao-restore "
                  f"{STRAY_OPTION} {s.id}", names_state=True)


def set_aside_stray(ctx: Context, s: Session, path: str) -> trash.Entry | None:
    """Asked for with `--set-aside-stray`: move the directory at `path` that is not
    a worktree (`stray_files`) into a stray entry of the session's trash root
    (a rename, nothing deleted; prune keeps the entry), so the session can come
    back. Anything else is left untouched (`check_reusable` refuses it). Returns
    the stray Entry, or None."""
    files = stray_files(s, path)
    if files is None:
        return None
    try:
        entry = trash.set_aside(ctx.store.dir, s.id, path, s.common_dir,
                                trash.Meta(files=files[:1000], count=len(files)))
    except OSError as exc:
        ctx.log("restore", s.id, "stray-not-moved", workspace=path, error=exc.strerror)
        return None
    ctx.log("restore", s.id, "stray-set-aside", workspace=path, trash=entry.path,
            count=len(files))
    return entry


def report_stray(outcome: Outcome, stray: trash.Entry, path: str) -> None:
    """Name the set-aside directory and its files in the outcome (exit 3), and the
    files newer there than in the restored worktree (an agent's latest writes,
    kept only in the stray entry)."""
    files = [str(f) for f in (stray.meta.files or [])]
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
    outcome.message += (f"; the directory that stood at {path} was set aside in "
                        f"{stray.worktree}: {listed}")
    if newer:
        outcome.data["stray_newer"] = newer
        outcome.message += f"; newer there than here: {', '.join(newer[:5])}"
    if outcome.status == Status.OK:
        outcome.status = Status.ATTENTION


def put_modes(outcome: Outcome, path: str, save: Save, reused: bool) -> None:
    """After a checkout-and-apply restore, any apply (a private key comes back 0600
    even when another path conflicted): the save's empty directories and
    permission bits (`local_state.put_modes`); the paths whose bits could not be set
    are named and make the restore need attention."""
    failed = local_state.put_modes(path, local_state.load(save.private_config), fresh=not reused)
    if failed:
        outcome.data["modes_not_set"] = failed
        outcome.message += f"; the permission bits of {', '.join(failed[:5])} could not be set"
        if outcome.status == Status.OK:
            outcome.status = Status.ATTENTION


def _say_environment_gone(s: Session, path: str, outcome: Outcome, reused: bool) -> None:
    """No trash copy is left (a tmpfs cleared by a reboot, a worktree or a trash
    deleted by hand): when the save recorded ignored paths, say they did not
    come back (`ignored_lost`)."""
    count = ignored_lost(s, path, reused)
    if count:
        outcome.data["environment_lost"] = count
        # The save records how many, not which: name none rather than guess.
        outcome.message += environment_note(count)


def ignored_at_save(s: Session, cwd: str) -> int:
    """How many ignored paths the worktree held at the save of `s` (its commit's
    `Ao-Ignored` trailer, read in the repository at `cwd`); 0 when none, no commit
    was saved, or git cannot read it."""
    commit = s.save.preserved_commit if s.save else None
    if not commit:
        return 0
    try:
        count = query.trailer(cwd, commit, capture.IGNORED_TRAILER)
    except AoError:
        return 0
    return int(count) if count.isdigit() else 0


def ignored_lost(s: Session, path: str, reused: bool) -> int:
    """With no trash copy left: how many ignored paths the save of `s` held that do
    not come back (`ignored_at_save`), 0 when a reused worktree at `path` (one a
    preserve killed before its move left in place) holds as many ignored paths
    as the save counted (`git status --ignored=matching`, an ignored directory
    once, as the capture counts them): they never left."""
    count = ignored_at_save(s, path if os.path.isdir(path) else s.common_dir)
    if not count or not reused:
        return count
    try:
        there = len(git.status(path).ignored)
    except AoError:
        return count
    return 0 if there >= count else count


def environment_note(count: int) -> str:
    """What a restore says of the `count` ignored paths a save held when no trash copy
    of them is left on this machine."""
    return (f"; the {count} ignored path(s) it held at the save have no trash copy left: "
            "they did not come back")


def environment_elsewhere_note(count: int) -> str:
    """`environment_note` for a session saved on another machine (restore --from):
    there never was a trash copy here, and ignored files are never pushed."""
    return (f"; the {count} ignored path(s) it held at the save stay on the machine that "
            "saved it (ignored files are never pushed)")


def after_apply(ctx: Context, s: Session, save: Save, path: str, reused: bool,
                outcome: Outcome) -> None:
    """What follows a checkout-and-apply restore into `path`, in this order: the
    save's modes (before the ignored files come in: they keep their own bits);
    then, from the session's trash copy, the comparison with the save (marked in
    the entry before anything moves out of it) and the ignored files."""
    put_modes(outcome, path, save, reused)
    entry = trash_copy(ctx, s, path, outcome, reused)
    if entry is None:
        return
    unlike = outcome.data.get("not_as_saved")
    if unlike:
        # The worktree does not hold the save: the copy is kept, like the ref.
        try:
            trash.mark(entry, not_as_saved=unlike)
        except OSError as exc:
            ctx.log("restore", s.id, "trash-not-marked", trash=entry.path, error=exc.strerror)
    bring_admin(ctx, s, entry, path, outcome)
    ignored = ignored_in_copy(ctx, s, entry)
    report_unlike_save(ctx, s, save, entry, ignored, outcome)
    report_running(ctx, s, entry, outcome)
    if ignored is not None:
        bring_environment(ctx, s, entry, ignored, path, outcome)


def bring_admin(ctx: Context, s: Session, entry: trash.Entry, path: str,
                outcome: Outcome) -> None:
    """Put back what other tools kept in the worktree's git admin dir (Codex's
    codex-worktree.json, ...) from the trash copy's `admin/`; name what could not be."""
    if not os.path.isdir(entry.admin):
        return
    try:
        dirs = git.repo_dirs(path)
    except AoError:
        return
    if not dirs.is_linked_worktree:
        return
    copied, missed = from_trash.copy_foreign(entry.admin, dirs.git_dir)
    if copied:
        outcome.data["admin_restored"] = copied
        ctx.log("restore", s.id, "admin-files", files=copied)
    if missed:
        outcome.data["admin_not_restored"] = missed
        outcome.message += f"; not put back in its git admin dir: {', '.join(missed)}"


def trash_copy(ctx: Context, s: Session, path: str, outcome: Outcome,
               reused: bool = False) -> trash.Entry | None:
    """After a checkout-and-apply restore: the session's trash entry whose copy the
    rest of the restore reads (`trash.latest_for`, environment=True), or None,
    said in the outcome when the save recorded ignored paths that are now gone
    (reused: the worktree at `path` was already there, see `ignored_lost`)."""
    entry = trash.latest_for(ctx.store.dir, s.id, environment=True)
    if entry is None:
        _say_environment_gone(s, path, outcome, reused)
    return entry


def ignored_in_copy(ctx: Context, s: Session, entry: trash.Entry) -> list[str] | None:
    """The ignored paths of the trash copy `entry` (`query.ignored_in`, judged
    with the admin copy's index, since the copy's own `.git` names an admin dir
    that is gone; a wholly ignored directory once, ending in '/'), or None when
    git cannot read them (logged)."""
    try:
        return query.ignored_in(s.common_dir, entry.worktree, os.path.join(entry.admin, "index"))
    except AoError as exc:
        ctx.log("restore", s.id, "environment-not-read", error=str(exc))
        return None


def report_unlike_save(ctx: Context, s: Session, save: Save, entry: trash.Entry,
                       ignored: list[str] | None, outcome: Outcome) -> None:
    """After a checkout-and-apply restore (the trash copy could not be put back
    whole), before its ignored files move out: when the copy differs from the
    save that came back (`witness.unlike_save`: a file written, deleted or given
    another mode after the last capture by an agent that kept running), that
    change did not come back. Mark the entry first (prune keeps it), then name
    the copy and the paths, and make the outcome need attention. ignored:
    `ignored_in_copy`; None makes the copy one that cannot be compared."""
    if not entry.holds_worktree:
        return
    commit = save.preserved_commit
    if commit and os.path.isdir(save.common_dir) \
            and not git.object_exists(save.common_dir, commit):
        # The saved commit is gone (its ref deleted, then git gc): nothing came
        # back, and the copy is the work's only copy. Marked so prune keeps it.
        try:
            trash.mark(entry, commit_gone=True)
        except OSError as exc:
            ctx.log("restore", s.id, "trash-not-marked", trash=entry.path, error=exc.strerror)
        outcome.data["trash_holds_unsaved"] = entry.worktree
        outcome.message += (f"; the trash copy {entry.worktree} holds the worktree as preserve "
                            "took it, untracked files included: take the work from there "
                            "(prune keeps the copy)")
        if outcome.status == Status.OK:
            outcome.status = Status.ATTENTION
        return
    try:
        if ignored is None:
            raise AoError("git cannot list its ignored files")
        changes = witness.unlike_save(entry, save.head, save.preserved_commit, ignored,
                                      save.common_dir)
    except (AoError, OSError) as exc:
        changes = {".": f"cannot be compared with the save: {exc}"}
    if not changes:
        return
    try:
        trash.mark(entry, unlike_save=changes)
    except OSError as exc:
        ctx.log("restore", s.id, "trash-not-marked", trash=entry.path, error=exc.strerror)
    listed = ", ".join(f"{p} {how}" for p, how in list(changes.items())[:5])
    more = f" and {len(changes) - 5} more" if len(changes) > 5 else ""
    outcome.data["trash_holds_unsaved"] = entry.worktree
    outcome.data["trash_changes"] = changes
    outcome.message += (f"; the trash copy {entry.worktree} changed after the last capture "
                        f"({listed}{more}): that did not come back, and prune keeps the copy")
    if outcome.status == Status.OK:
        outcome.status = Status.ATTENTION


def report_running(ctx: Context, s: Session, entry: trash.Entry, outcome: Outcome) -> None:
    """After a checkout-and-apply restore: a process still working in the trash copy
    (an agent that outlived the preserve's stop, its working directory moved with
    the copy) writes there, not into the worktree checked out again. Name it (pid
    and name, JSON `running_in_trash`) and make the outcome need attention. One
    scan of the process table (`processes.find`)."""
    if not entry.holds_worktree:
        return
    from git_ao.agents import processes
    running = processes.find(entry.worktree)
    if not running:
        return
    outcome.data["running_in_trash"] = [a.pid for a in running]
    ctx.log("restore", s.id, "running-in-trash", trash=entry.worktree,
            pids=" ".join(str(a.pid) for a in running))
    names = ", ".join(f"pid {a.pid} ({a.name})" for a in running[:3])
    more = f" and {len(running) - 3} more" if len(running) > 3 else ""
    outcome.message += (f"; {names}{more} still working in the trash copy {entry.worktree}: "
                        "what it writes there does not come back; stop it, then take what "
                        "it wrote from there")
    if outcome.status == Status.OK:
        outcome.status = Status.ATTENTION


def bring_environment(ctx: Context, s: Session, entry: trash.Entry, found: list[str],
                      path: str, outcome: Outcome) -> None:
    """After a checkout-and-apply restore: move the ignored paths `found` of the
    session's trash copy `entry` (.env, node_modules/, .venv/; `ignored_in_copy`)
    into the new worktree wherever nothing is in their way; what could not be
    placed stays in the entry and is listed."""
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
    try:
        trash.mark(entry, restored=True, environment_kept=kept)
    except OSError as exc:
        # The restore itself stands; only the note in the entry is missing, so
        # prune judges the entry by its contents.
        ctx.log("restore", s.id, "trash-not-marked", trash=entry.path, error=exc.strerror)
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


def clear_killed_add(ctx: Context, s: Session, save: Save, path: str) -> None:
    """What a `git worktree add` of this session's killed restore left, cleared so the
    rerun converges: a directory holding only the `.git` file git wrote first (and
    perhaps an all-zero HEAD) is deregistered (`git worktree unlock`, the file and
    the empty directory removed, `git worktree prune`); a `refs/heads/<branch>.lock`
    it left, made after the restore started and stale (`gitlock.judge`: no process
    has it open), is removed. Only a restore that started and never finished
    (`Save.restore_interrupted`) does this."""
    if not save.restore_interrupted:
        return
    if save.branch and not save.detached:
        lock = os.path.join(s.common_dir, "refs", "heads", *save.branch.split("/")) + ".lock"
        try:
            made = os.lstat(lock).st_mtime_ns
        except OSError:
            made = None
        if made is not None and save.restore_started_at is not None \
                and made >= save.restore_started_at - 2_000_000_000 \
                and gitlock.judge(lock).stale:
            os.unlink(lock)
            ctx.log("restore", s.id, "stale-branch-lock-removed", lock=lock)
    _clear_lock_only_admin(ctx, s, save, path)
    admin = from_trash.only_git_file(path) if os.path.isdir(path) else None
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
    ctx.prune_worktrees(s.common_dir, only=[path])
    ctx.log("restore", s.id, "killed-add-cleared", workspace=path, admin=admin)


def _clear_lock_only_admin(ctx: Context, s: Session, save: Save, path: str) -> None:
    """Remove the admin dirs a `git worktree add` of `path` killed at its start left:
    named for the path (`<name>` or `<name><n>`), holding nothing but the `locked`
    file git writes first, made after this save's restore started. `git worktree
    prune` keeps them (they are locked) and every later add would take the next
    name. They hold no index, HEAD or ref, so nothing is lost with them."""
    started = save.restore_started_at
    root = os.path.join(s.common_dir, "worktrees")
    name = os.path.basename(os.path.normpath(path))
    if started is None or not name:
        return
    try:
        with os.scandir(root) as it:
            candidates = [e for e in it if e.name.startswith(name)
                          and (e.name == name or e.name[len(name):].isdigit())
                          and e.is_dir(follow_symlinks=False)]
    except OSError:
        return
    for e in candidates:
        try:
            if os.listdir(e.path) != ["locked"] or \
                    os.lstat(os.path.join(e.path, "locked")).st_mtime_ns < started - 2_000_000_000:
                continue
            os.unlink(os.path.join(e.path, "locked"))
            os.rmdir(e.path)
        except OSError:
            continue
        ctx.log("restore", s.id, "killed-add-admin-removed", admin=e.path)


def set_aside_unfinished(ctx: Context, s: Session, save: Save, path: str,
                          entries: list[git.WorktreeEntry]) -> trash.Entry | None:
    """The worktree at `path` is what an interrupted restore of this save left (the
    row says a restore started and never finished, so no agent has worked there).
    When it does not already hold the saved work, and every untracked path in it is
    one the saved commit or its HEAD has, move it into a stray trash entry (which
    prune keeps) and deregister it, so the restore starts again. Files whose
    content no saved tree holds (an edit made there before the rerun) are listed
    in the entry (its `files`), which the outcome names. Returns the entry, or
    None when the worktree was left where it is. Raises Refused when its index.lock
    is not stale (`gitlock.judge`): a process may be writing there."""
    commit = save.preserved_commit
    dirs = git.repo_dirs(path)
    if commit and restored.holds(path, dirs.git_dir, save):
        return None  # the apply finished: _apply_saved recognises it
    st = git.status(path, ignored=False)
    # A killed git leaves its index.lock behind, and the apply would fail on it;
    # setting the worktree aside drops it, so never while a process has it open.
    index_lock = os.path.join(dirs.git_dir, "index.lock")
    locked = os.path.exists(index_lock)
    if locked:
        judged = gitlock.judge(index_lock, path)
        if not judged.stale:
            raise Refused(f"the index of '{path}' is locked: "
                          f"{gitlock.describe(index_lock, path, judged)} (still pending)")
    if st.clean and not locked:
        return None  # killed before the apply: the apply goes on in this worktree
    trees = [f"{save.head}^{{tree}}"] if save.head else []
    if commit:
        trees += [t for t in capture.saved_trees(s.common_dir, commit)[1:] if t]
    # A branch that moved on since the save: the killed `git worktree add` was
    # writing its commit's files, which no saved tree may hold.
    checked_out = git.trees_of(path, ["HEAD"])[0]
    if checked_out:
        trees.append(checked_out)
    known = query.blobs_by_path(s.common_dir, trees)
    if any(p not in known for p in st.untracked):
        return None
    # Content no saved tree holds, other than the beginning of a saved file (which
    # the interrupted checkout or apply wrote): an edit made in the half-restored
    # worktree, kept in the entry and said.
    present = [p for p in [e.path for e in st.changed] + list(st.untracked)
               if os.path.isfile(os.path.join(path, p))
               and not os.path.islink(os.path.join(path, p))]
    foreign = [p for p, oid in zip(present, index.added_ids(path, present, dirs.git_dir),
                                   strict=True)
               if oid not in known.get(p, set())
               and not witness.partly_written(s.common_dir, os.path.join(path, p), known.get(p, set()))
               ] if present else []
    v = worktree.verify(s.common_dir, path, entries)
    if v.entry.locked is not None:
        unlock_interrupted_add(ctx, s, path)
    # Marked as git-ao's own checkout, with the trees it was writing: prune deletes
    # the entry once it proves all it holds is in them (witness.not_from_checkout).
    resolved = [str(t) for t in git.rev_parse_many(s.common_dir, trees) if t]
    entry = trash.move_in(ctx.store.dir, s.id, v,
                          trash.Meta(stray=True, interrupted_restore=True, files=foreign,
                                     checkout_trees=resolved))
    trash.detach(entry)
    ctx.prune_worktrees(s.common_dir, only=[path])
    ctx.log("restore", s.id, "interrupted-restore-set-aside", workspace=path,
            trash=entry.worktree, unsaved=len(foreign) or None)
    return entry


def unlock_interrupted_add(ctx: Context, s: Session, path: str) -> None:
    """Unlock the registration of `path` that this session's killed restore left:
    git locks a new worktree ("initializing") until its `git worktree add` is done,
    and git's prune keeps locked registrations, so the next add would fail."""
    try:
        git.worktree_unlock(s.common_dir, path)
    except AoError:
        return  # not locked (any more): nothing to do
    ctx.log("restore", s.id, "interrupted-add-unlocked", workspace=path)


def check_reusable(s: Session, save: Save, entry: git.WorktreeEntry | None, path: str,
                    want_branch: str | None) -> None:
    """Raise Refused unless the worktree at `path` is this session's, on its branch."""
    if entry is None:
        what = "is a symbolic link, so" if os.path.islink(path) else \
            "is a mount point and" if walk.is_mount_point(path) else "exists and is"
        raise Refused(f"'{path}' {what} not a worktree of this repository; "
                      "nothing there is touched (still pending)", names_state=True)
    if entry.is_main:
        raise Refused(f"'{path}' is the main worktree; the record is damaged (still pending)",
                      names_state=True)
    on_branch = entry.branch == f"refs/heads/{want_branch}" if want_branch else \
        (entry.detached and entry.head == save.head)
    if not on_branch:
        now = entry.branch or f"detached at {entry.head}"
        raise Refused(f"'{path}' is a worktree on {now}, not this session's; "
                      "nothing there is touched (still pending)", names_state=True)
