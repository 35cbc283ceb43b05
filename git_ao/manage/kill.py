"""End a live session (kill) or drop a session's record (forget)."""

from __future__ import annotations

import os
import shlex

from git_ao.context import KEPT_PREFIX, Context, lookup
from git_ao.errors import AoError, Refused
from git_ao.fs import walk
from git_ao.git import query, worktree
from git_ao.outcome import Action, Outcome, Status, facts
from git_ao.proof import witness
from git_ao.save import capture, history
from git_ao.store import trash
from git_ao.store.records import Session


def kill(ctx: Context, session_id: str) -> Outcome:
    """End a live session: move its worktree into a trash entry only when it is clean
    and holds nothing git does not show, and mark it terminated with nothing
    pending. The Outcome names the trash entry (its facts' `trash`)."""
    with ctx.lock(session_id):
        s = lookup(ctx, session_id)
        if s.pending:
            raise Refused(f"session '{s.id}' has preserved work pending; restore it, or "
                          f"'git ao forget --force {s.id}'", names_state=True)
        if not s.live:
            return Outcome(s.id, Action.KILL, Status.NOTHING, "already terminated", facts(s))
        path = s.worktree_path
        trashed = None
        if os.path.lexists(path):
            v = worktree.verify(s.common_dir, path)
            try:
                st = capture.inspect(path, v.git_dir)
            except capture.Unborn as exc:
                raise history.unborn_refusal(s, exc) from None
            if not st.clean:
                raise Refused(f"'{path}' has uncommitted work ({len(st.changed)} changed, "
                              f"{len(st.untracked)} untracked); commit it or preserve it")
            assert st.head is not None  # inspect refuses an unborn branch
            if st.branch is None and not query.is_reachable_from_refs(path, st.head):
                raise Refused(f"'{path}' is detached at {st.head[:12]}, which no ref holds; "
                              "create a branch first")
            # Clean is not empty: ignored files (.env, build output) and anything git
            # does not show are proven and kept in the trash, as preserve keeps them.
            w = walk.walk(path)
            assert st.head is not None  # inspect refuses an unborn branch
            captured = witness.captured_blobs(path, st.head, None, None)
            blockers = witness.blockers(path, w, captured, st.ignored, private_config=None,
                                        sessions={})
            if blockers:
                raise Refused(f"'{path}' holds what git does not show: "
                              + "; ".join(str(b) for b in blockers[:5]))
            # The worktree's own refs and its HEAD's reflog go with its admin dir: what
            # only they reach is kept under refs/ao/kept/<id>, as a preserve keeps it.
            found = witness.admin_only(path, None, st.head)
            kept = f"; the commits only its own refs kept are under {KEPT_PREFIX}{s.id}" \
                if found else ""
            if ctx.dry_run:
                would = f"; would keep the commits only its own refs keep under " \
                    f"{KEPT_PREFIX}{s.id}" if found else ""
                return Outcome(s.id, Action.KILL, Status.OK, f"would remove {path}{would}",
                               facts(s))
            if found:
                witness.keep_alive(path, KEPT_PREFIX + s.id, found)
                ctx.log("kill", s.id, "kept-alive", ref=KEPT_PREFIX + s.id,
                        refs=len(found.refs), reflog=len(found.reflog))
            try:
                entry = trash.move_in(ctx.store.dir, s.id, v,
                                      trash.Meta(killed=True))
            except OSError as exc:
                raise Refused(f"cannot move '{path}' to the trash: {exc.strerror}") from exc
            trash.detach(entry)
            ctx.log("kill", s.id, "trash", trash=entry.worktree)
            trashed = entry.worktree
            gone = f"{path} moved to the trash ({trashed}; git ao-prune deletes it){kept}"
        elif ctx.dry_run:
            return Outcome(s.id, Action.KILL, Status.OK, "would mark terminated", facts(s))
        else:
            gone = f"{path} was already gone"
        ctx.store.mark_terminated(s.id)
        if trashed:
            # Only now: the prune keeps the registration of a live session whose
            # directory is missing, as this one was until it was marked terminated.
            gone += _prune_after(ctx, s)
        ctx.log("kill", s.id, "killed", workspace=path)
        return Outcome(s.id, Action.KILL, Status.OK, f"terminated; {gone}",
                       {**facts(s), **({"trash": trashed} if trashed else {})})


def _prune_after(ctx: Context, s: Session) -> str:
    """`git worktree prune` after the kill of `s` moved its worktree to the trash,
    best effort: the session is terminated and its worktree in the trash whatever
    it does, and a failure leaves only the registration of a directory gone, which
    the next prune clears (as preserve's). Returns the clause saying a failure."""
    try:
        with ctx.repo_lock(s.common_dir):
            ctx.prune_worktrees(s.common_dir, only=[s.worktree_path])
    except AoError as exc:
        ctx.log("kill", s.id, "worktree-prune-failed", repo=s.common_dir, error=str(exc))
        return (f"; git worktree prune failed ({exc}): its registration stays until the "
                "next git ao-prune or git worktree prune")
    return ""


def forget(ctx: Context, session_id: str, force: bool = False) -> Outcome:
    """Drop a session's record. Refuses while work is pending unless `force`; the
    preserve ref itself is left for `git ao-prune --force ID` or for recovery."""
    with ctx.lock(session_id):
        s = lookup(ctx, session_id)
        if s.pending and not force:
            raise Refused(f"session '{s.id}' has preserved work pending; restore it, or use "
                          "--force", names_state=True)
        kept = _kept(ctx, s)
        if ctx.dry_run:
            return Outcome(s.id, Action.FORGET, Status.OK, f"would drop the record{kept}",
                           facts(s))
        ctx.store.delete(s.id)
        ctx.log("forget", s.id, "forgotten", forced=force or None)
        return Outcome(s.id, Action.FORGET, Status.OK, f"record dropped{kept}", facts(s))


def _kept(ctx: Context, s: Session) -> str:
    """What forgetting a session keeps, as the end of its line: its preserve ref
    and history when they are there (`git ao doctor --recover` rebuilds the record
    of a pending one from them), and its trash copies; "" when none is. The
    history is named with how to read it and drop it, since a later session of the
    same id takes it on as its older entries."""
    held = []
    ref = history.history_ref(s.id)
    hist = os.path.isdir(s.common_dir) and query.ref_tip(s.common_dir, ref) is not None
    if os.path.isdir(s.common_dir) and s.save and s.save.preserve_ref \
            and query.ref_tip(s.common_dir, s.save.preserve_ref):
        held.append(s.save.preserve_ref)
    if hist:
        held.append(ref)
    copies = [e.worktree if e.holds_worktree else e.path
              for e in trash.of_session(ctx.store.dir, s.id)]
    if copies:
        held.append(f"the trash cop{'y' if len(copies) == 1 else 'ies'} {', '.join(copies)}")
    if not held:
        return ""
    how = (f" (git -C {shlex.quote(s.common_dir)} log {ref} lists it; "
           f"{history.drop_command(s.common_dir, s.id)} drops it; a later session "
           f"'{s.id}' takes it on as its older entries)") if hist else ""
    return f"; kept: {', '.join(held)}{how}"
