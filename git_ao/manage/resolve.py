"""`git ao resolve ID`: end what a restore that could not put all the work back
left (a conflict, files that could not be placed): drop the preserve ref it
kept and the record's attention together, so refs and records stay in step.

Also the way to bring a record in step with a ref the user dropped by hand
(`git update-ref -d`): the record stops naming it."""

from __future__ import annotations

import os

from git_ao import git
from git_ao.context import Context, lookup, preserve_ref
from git_ao.errors import Refused
from git_ao.fs.gone import gone_worktree, repo_gone_advice
from git_ao.git import query
from git_ao.outcome import Action, Outcome, Status, facts
from git_ao.save import history, lacking
from git_ao.store.records import Session


def resolve(ctx: Context, session_id: str) -> Outcome:
    """Drop the preserve ref a restore kept for a live session, once its worktree
    has no unmerged path left, and clear the record's attention in the same step.

    The ref is deleted only while it still points at the commit the record
    names (`git update-ref -d <ref> <old>`); the commit id is logged, and is kept
    by git until `git gc` prunes it. A ref already gone only brings the record in
    step. Returns an Outcome (nothing: no such ref or attention); raises Refused
    for a pending session, a worktree that is gone, unmerged paths, or a ref that
    holds another commit than the record's."""
    with ctx.lock(session_id):
        s = lookup(ctx, session_id)
        save = s.save
        ref = preserve_ref(s.id)
        if s.pending:
            raise Refused(f"'{s.id}' is pending: git ao-restore {s.id} brings it back first",
                          names_state=True)
        if not s.live:
            return Outcome(s.id, Action.RESOLVE, Status.NOTHING, "terminated, nothing to resolve",
                           facts(s))
        oid = save.preserved_commit if save is not None else None
        if save is None or not oid or not (save.needs_attention or save.holds_ref):
            less = _holds_less(ctx, s)
            if less:
                return Outcome(s.id, Action.RESOLVE, Status.OK, less, facts(s))
            return Outcome(s.id, Action.RESOLVE, Status.NOTHING, f"nothing to resolve: no record of "
                           f"work left in {ref}", facts(s))
        if not os.path.isdir(s.common_dir):
            # Its ref went with the repository: no "already deleted" to bring in step.
            raise Refused(f"repository {s.common_dir} is gone, and {ref} with it; "
                          f"{repo_gone_advice(s)}")
        now = git.rev_parse(s.common_dir, ref)
        verb = "would " if ctx.dry_run else ""
        if now is None:
            if not ctx.dry_run:
                ctx.store.forget_ref(s.id, oid)
            ctx.log("resolve", s.id, "record-in-step", ref=ref, commit=oid)
            less = _holds_less(ctx, s, then="; ")
            return Outcome(s.id, Action.RESOLVE, Status.OK, f"{ref} was already deleted; the record "
                           f"{'would stop' if ctx.dry_run else 'stops'} naming it ({oid[:12]})"
                           f"{less}", facts(s))
        if now != oid:
            raise Refused(f"{ref} holds {now[:12]}, not {oid[:12]} as recorded; nothing is "
                          "changed (see it with git stash show -p --include-untracked "
                          f"{ref})")
        path = s.worktree_path
        gone = gone_worktree(s)
        if gone is not None or not os.path.isdir(path):
            # What list and restore say of it, naming only what will work.
            then = history.gone_advice(gone, s) if gone is not None else \
                f"git ao-preserve {s.id} records that, then git ao-restore re-creates it"
            raise Refused(f"the worktree {path} is gone, and {ref} may hold its only work; "
                          f"{then}")
        unmerged = query.unmerged_paths(path)
        if unmerged:
            listed = ", ".join(unmerged[:5]) + (" ..." if len(unmerged) > 5 else "")
            raise Refused(f"{len(unmerged)} path(s) still unmerged in {path} ({listed}): "
                          "resolve them and git add them first; nothing is changed")
        if not ctx.dry_run:
            git.delete_ref(s.common_dir, ref, oid)
            ctx.store.forget_ref(s.id, oid)
        ctx.log("resolve", s.id, "ref-dropped", ref=ref, commit=oid)
        less = _holds_less(ctx, s, then="; ")
        return Outcome(s.id, Action.RESOLVE, Status.OK,
                       f"{verb}drop {ref} (was {oid}) and the record's attention{less}"
                       if ctx.dry_run else
                       f"dropped {ref} (was {oid}); the session is live with nothing kept "
                       f"(git update-ref {ref} {oid} brings the ref back until git gc prunes "
                       f"the commit){less}", facts(s))


def _holds_less(ctx: Context, s: Session, then: str = "") -> str:
    """End the record's note that the live session's save holds less than an earlier
    capture of the same preserve (`Save.holds_less_than`), as the user decided not
    to bring it back; returns the clause saying so, after `then` ("" when there was
    none). The history entry and refs/ao/before-stop/<id> stay."""
    earlier = s.save.holds_less_than if s.save is not None else None
    if not earlier:
        return ""
    if not ctx.dry_run:
        ctx.store.mark_holds_less(s.id, None)
    ctx.log("resolve", s.id, "holds-less-ended", earlier=earlier)
    kept = lacking.before_stop_ref(s.id) if lacking.before_stop_commit(
        s.common_dir, s.id) == earlier else ""
    return (f"{then}{'would end' if ctx.dry_run else 'ended'} the note that the save holds less "
            f"than {earlier[:12]}, an earlier capture of the same preserve (its history "
            "entry stays" + (f", and {kept} until git update-ref -d {kept}" if kept else "")
            + ")")
