"""Taking a captured worktree away, and finishing a removal a kill interrupted.

The directory goes into a trash entry on its own file system with one rename
(`trash.move_in`), so an agent still writing there writes into the entry,
never into nothing. Then the moved copy is proven: walked again and compared
with the walk taken before the capture; what an agent wrote after the capture
is captured again from the moved copy (its registration is still in place)
and the ref moved on with compare-and-swap, a bounded number of times
(`settle`). Deregistering is the caller's, once per repository.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from git_ao import crashpoint, git
from git_ao.batch import RepoCache
from git_ao.context import Context, preserve_ref
from git_ao.errors import AoError, Failed
from git_ao.fs import walk
from git_ao.git import index, worktree
from git_ao.git import lock as gitlock
from git_ao.outcome import Action, Outcome, Status, facts
from git_ao.proof import restored, witness
from git_ao.save import capture, local_state
from git_ao.store import trash
from git_ao.store.records import Save, Session, now_ns

# How many times a worktree still being written to is captured again after the
# move before preserve reports it as not settled.
ROUNDS = 3


@dataclass
class Settled:
    """What `settle` found. late: the paths written after the first capture;
    settled: False when they kept changing, could not be checked or captured, or
    one is a path git cannot store (the trash copy holds their latest state);
    unsaved: those of them the last save does not hold, when that is known."""

    late: list[str] = field(default_factory=list)
    settled: bool = True
    unsaved: list[str] | None = None

    @property
    def touched(self) -> bool:
        """Did anything happen after the capture (a late write, or a check that failed)?"""
        return bool(self.late) or not self.settled


def where(path: str, b: walk.Blocker) -> str:
    return f"{path if b.path == '.' else os.path.join(path, b.path)}: {b.reason}"


# How many paths a line of `grouped` names before "and N more".
SHOWN = 5


def grouped(path: str, blockers: Sequence[walk.Blocker]) -> list[str]:
    """The message's lines for `blockers` under the worktree `path`, as git says
    them: one per reason, in the order first met; a reason of one path is its
    `where` line, of several their count, the first SHOWN paths relative to the
    worktree, how many more, and the reason once. (The full list, one `where`
    line a path, is for --json and the log.)"""
    by_reason: dict[str, list[str]] = {}
    for b in blockers:
        by_reason.setdefault(b.reason, []).append(b.path)
    out = []
    for reason, paths in by_reason.items():
        if len(paths) == 1:
            out.append(where(path, walk.Blocker(paths[0], reason)))
            continue
        more = f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else ""
        out.append(f"{len(paths)} paths in {path} ({', '.join(paths[:SHOWN])}{more}), "
                   f"each {reason}")
    return out


def take_away(ctx: Context, s: Session, v: worktree.Verified, commit: str | None,
               walked_ns: int | None,
               refreshed: tuple[str, int] | None = None) -> trash.Entry:
    """Move the verified worktree into a trash entry on its own file system (the
    registration is pruned by the caller). walked_ns: when the walk before the
    capture started (ns, the clock file times use), None when unknown; the entry
    keeps it, so a restore can tell files written after it. refreshed: (the real
    index's checksum, the mtime in ns the capture's `git status` wrote it back
    with, `capture.Ahead.refreshed_ns`): the entry's copy of the index, still
    those bytes, gets that mtime, as git's own refresh would leave it, so the
    restore's proof hashes no file status found unchanged. Raises AoError saying
    exactly what state the session is in when the move fails: the save is
    recorded, so it is pending and its directory is still in place."""
    try:
        entry = trash.move_in(ctx.store.dir, s.id, v,
                              trash.Meta(commit=commit, walked_ns=walked_ns))
    except OSError as exc:
        ctx.log("preserve", s.id, "move-failed", workspace=v.path, error=exc.strerror)
        raise Failed(f"saved and recorded (pending), but '{v.path}' could not be moved to the "
                     f"trash ({exc.strerror}); it is still there, untouched: run git "
                     "ao-preserve again, or git ao-restore to keep working in it") from exc
    crashpoint.hit("preserve:after-rename")
    if refreshed is not None:
        _refresh_mtime(entry, *refreshed)
    return entry


def _refresh_mtime(entry: trash.Entry, checksum: str, mtime_ns: int) -> None:
    """Give the entry's copy of the index `mtime_ns` when its bytes are still those
    of checksum `checksum` (an index an agent wrote after the capture's copy
    keeps its own time). Failing, the copy keeps the real index's mtime (the
    restore's proof then hashes those files again)."""
    admin_index = os.path.join(entry.admin, "index")
    if index.checksum(admin_index, len(checksum)) != checksum:
        return
    with contextlib.suppress(OSError):
        os.utime(admin_index, ns=(mtime_ns, mtime_ns))


def settle(ctx: Context, s: Session, v: worktree.Verified, entry: trash.Entry,
            before: walk.Walk, cap: capture.Capture, captured: dict[str, str], save: Save,
            meta: capture.Meta) -> Settled:
    """`_settle`, then the mount table: a mount point inside the moved directory
    appeared after the walk (which refuses one), and what it shows is no file of
    the save. Named with a trailing '/', not settled; the trash copy keeps it
    (prune deletes nothing across a mount)."""
    done = _settle(ctx, s, v, entry, before, cap, captured, save, meta)
    real = os.path.realpath(entry.worktree).rstrip("/") + "/"
    inside = sorted(os.path.relpath(m, real) + "/" for m in walk.mount_points()
                    if m.startswith(real))
    if inside:
        ctx.log("preserve", s.id, "mounted-late", trash=entry.worktree, mounts=len(inside))
        done.settled = False
        had = done.unsaved if done.unsaved is not None else done.late
        done.unsaved = sorted(set(had) | set(inside))
        done.late = sorted(set(done.late) | set(inside))
    return done


def _settle(ctx: Context, s: Session, v: worktree.Verified, entry: trash.Entry,
            before: walk.Walk, cap: capture.Capture, captured: dict[str, str], save: Save,
            meta: capture.Meta) -> Settled:
    """Prove the moved directory holds exactly what was captured; where an agent
    wrote after the capture, capture again from the moved copy (its admin dir is
    still registered), move the ref on (compare-and-swap on the old value) and
    record the new save, up to ROUNDS times. Returns the paths written late and
    whether they settled; writes after the last check stay in the trash copy,
    which restore brings back. A repository or worktree that appeared inside
    after the capture is in no save (named with a trailing '/', not settled):
    it stays in the trash copy, its registration with it (the caller prunes only
    the session's own)."""
    late: list[str] = []
    moved = entry.worktree
    known = set(before.nested)
    grown: set[str] = set()
    for _ in range(ROUNDS):
        try:
            changed, after = witness.changed_after_move(before, moved, captured, cap.ignored,
                                                        v.git_dir)
        except AoError as exc:
            # git could not hash a file an agent was rewriting: the copy is not
            # proven settled, so it is reported, and it stays in the trash.
            ctx.log("preserve", s.id, "late-check-failed", trash=moved, error=str(exc))
            return Settled(sorted(set(late) | grown), settled=False)
        grown |= {f"{n}/" for n in after.nested if n not in known}
        if not changed:
            # A late path the last capture does not hold (a name or file type git
            # cannot store) is not saved: it stays in the trash copy, and is named.
            uncaptured = [p for p in late if p in after.entries and p not in captured]
            return Settled(sorted(set(late) | grown), settled=not uncaptured and not grown,
                           unsaved=sorted(set(uncaptured) | grown))
        late = sorted(set(late) | set(changed))
        try:
            again = capture.capture(moved, v.git_dir, meta, walked=after)
        except AoError as exc:
            ctx.log("preserve", s.id, "late-capture-failed", trash=moved, error=str(exc))
            return Settled(sorted(set(late) | grown), settled=False)
        if again.commit and again.commit != save.preserved_commit:
            ref = preserve_ref(s.id)
            git.update_ref(moved, ref, again.commit, save.preserved_commit or None,
                           message=f"git-ao preserve {s.id} (written after the capture)")
            save = Save(s.id, s.common_dir, save.worktree_path, again.branch, again.head,
                        again.detached, ref, again.commit,
                        _late_config(save.private_config, again.private_config), now_ns(),
                        removed_by=save.removed_by)
            ctx.store.record_save(save, terminate=True)
            ctx.log("preserve", s.id, "captured-late", commit=again.commit, paths=len(changed))
        before, cap = after, again
        captured = witness.captured_blobs(moved, again.head, again.worktree_tree,
                                          again.untracked_tree, again.listed)
    return Settled(sorted(set(late) | grown), settled=False)


def _late_config(first: str | None, again: str | None) -> str | None:
    """The private config of a capture taken again from the moved copy (flags and
    bits written late are in it), with what only the first capture could read: the
    per-worktree refs found in the admin dir before the move (`worktree_refs`)."""
    old, new = local_state.load(first), local_state.load(again)
    if old.worktree_refs is not None:
        new.worktree_refs = old.worktree_refs
    return new.to_json()


def finish_interrupted(ctx: Context, s: Session, cache: RepoCache) -> Outcome | None:
    """Finish a removal a crash interrupted (the row was committed, the worktree is
    still there): take the verified worktree away only when it holds exactly the saved
    work (`capture.holds`, or clean at the saved HEAD when nothing was saved).
    Returns an Outcome, or None when there is no worktree left to remove."""
    save = s.save
    if save is None:
        return None
    path = save.worktree_path
    if not os.path.isdir(s.common_dir) or not os.path.lexists(path):
        return None
    if ctx.store.live_at(path) is not None:
        return None  # a new worktree there, another session's: not this save's to remove
    entries = cache.entries(s.common_dir, fresh=True)
    if worktree.find(entries, path) is None:
        return None
    v = worktree.verify(s.common_dir, path, entries)
    keep = keep_reasons(v)
    if keep:
        return Outcome(s.id, Action.PRESERVE, Status.REFUSED, f"already preserved; worktree kept: "
                       f"{'; '.join(keep)}", facts(s))
    if not _holds_save(path, v.git_dir, save):
        ctx.log("preserve", s.id, "kept-changed", workspace=path)
        return Outcome(s.id, Action.PRESERVE, Status.REFUSED, f"already preserved, but {path} changed "
                       "since; it is kept (git ao-restore reuses it)", facts(s))
    if ctx.dry_run:
        return Outcome(s.id, Action.PRESERVE, Status.OK, "would finish the interrupted removal",
                       facts(s))
    entry = take_away(ctx, s, v, save.preserved_commit, None)
    trash.detach(entry)
    if cache.batch:
        cache.defer_prune(s.common_dir, path)
    else:
        ctx.prune_worktrees(s.common_dir, only=[path])
    crashpoint.hit("preserve:after-remove")
    ctx.log("preserve", s.id, "removal-finished", ref=save.preserve_ref, trash=entry.worktree)
    return Outcome(s.id, Action.PRESERVE, Status.OK, "already preserved; finished the interrupted "
                   "removal", facts(s, trash=entry.worktree))


def _holds_save(path: str, git_dir: str, save: Save) -> bool:
    """Does the worktree hold exactly what `save` recorded (nothing newer), with the
    preserve ref still holding it too? (A restore killed after deleting the ref
    leaves the worktree as the work's only home.)"""
    if save.preserved_commit:
        return git.rev_parse(path, save.preserve_ref) == save.preserved_commit and \
            restored.holds(path, git_dir, save)
    try:
        cap = capture.capture(path, git_dir, None, write=False)
    except capture.CannotCapture:
        return False
    return cap.clean and cap.head == save.head and cap.branch == save.branch


def keep_reasons(v: worktree.Verified) -> list[str]:
    """Why a verified worktree must stay although its work is saved."""
    reasons = []
    if os.path.islink(v.path):
        # A rename would take the link alone away; the pruned registration would
        # then orphan the directory it names.
        reasons.append(f"it is a symlink to {os.path.realpath(v.path)} (a rename would move "
                       "the link alone)")
    if v.entry.locked is not None:
        why = f" ({v.entry.locked})" if v.entry.locked else ""
        reasons.append(f"it is locked{why} (git worktree unlock)")
    lock = os.path.join(v.git_dir, "index.lock")
    if os.path.exists(lock):
        reasons.append(f"its index is locked: {gitlock.describe(lock, v.path)}")
    return reasons
