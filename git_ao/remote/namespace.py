"""The remote's side of the preserve refs: fetching sessions in from another
machine's pushes, and deleting from the remote only what is provably restored
or committed (`git ao-prune --remote`), each delete leased on what this
machine saw there.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from git_ao import git
from git_ao.context import REF_PREFIX, Context, validate_id, work_present_elsewhere
from git_ao.errors import AoError, Usage
from git_ao.git import remotes
from git_ao.git.parse import ObjectId
from git_ao.outcome import Action, Outcome, OutcomeData, Status
from git_ao.remote.pushes import INCOMING_PREFIX, has_remote, set_have, why_failed
from git_ao.store.database import Store


def repositories_with(store: Store, remote: str, here: str | None) -> list[str]:
    """The repositories (common dirs) `remote` applies to: the one at `here` (a
    directory, None for none), and every repository with sessions that has a
    remote of that name (a URL or path applies to `here` only)."""
    found: list[str] = []
    if here is not None:
        try:
            found.append(os.path.realpath(git.repo_dirs(here).common_dir))
        except AoError:
            pass
    if "/" not in remote and ":" not in remote:
        for repo in sorted({s.common_dir for s in store.sessions()}):
            if os.path.isdir(repo) and repo not in found and has_remote(repo, remote):
                found.append(repo)
    return [r for r in found if has_remote(r, remote)]


def fetch_incoming(repo: str, remote: str, ids: Sequence[str], *, timeout: float) -> None:
    """Fetch the remote's preserve refs of `ids` to refs/ao/incoming/<id> (forced:
    they only mirror the remote). Raises GitError."""
    remotes.fetch_refs(repo, remote, [f"+{REF_PREFIX}{i}:{INCOMING_PREFIX}{i}" for i in ids],
                   timeout=timeout)


def drop_incoming(repo: str, ids: Iterable[str]) -> None:
    """Delete the refs/ao/incoming/<id> refs fetch_incoming wrote."""
    for i in ids:
        oid = git.rev_parse(repo, INCOMING_PREFIX + i)
        if oid:
            git.drop_ref_if_at(repo, INCOMING_PREFIX + i, oid)


def prune_remote(ctx: Context, remote: str, repos: Sequence[str], *,
                 timeout: float, pushed: Sequence[Outcome] = ()) -> list[Outcome]:
    """List the preserve refs on `remote` for `repos` and delete those whose work is
    provably elsewhere: restored here (the session's save recorded that commit and
    is no longer pending), or committed on the session's branch
    (`session.work_present_elsewhere`, read from the commit's own trailers). A ref
    of a session this machine does not know, whose work is nowhere else, is
    another machine's pending save: kept and reported. Deletes carry a lease on
    the commit seen, so a concurrent update is never lost.

    Repositories whose `remote` lies in one place (two clones of one remote) are
    one remote: it is listed once and each of its refs judged once over all of
    them, before anything is deleted, so the dry run and the real run make one
    decision per ref whichever clone the command runs in.

    pushed: a dry run's Outcomes of `pushes.push_pending`: the remote is judged as
    the pushes and deletes they say it would make would leave it, as the real
    run, which makes them first, lists it.

    Returns one Outcome per remote ref. Raises GitError when the remote cannot be
    listed or fetched within `timeout` seconds."""
    places: dict[str, list[str]] = {}
    for repo in repos:
        places.setdefault(remotes.place(repo, remote), []).append(repo)
    out: list[Outcome] = []
    for same in places.values():
        out += _prune_one(ctx, remote, same, timeout, pushed)
    return out


def _prune_one(ctx: Context, remote: str, repos: Sequence[str], timeout: float,
               pushed: Sequence[Outcome]) -> list[Outcome]:
    """prune_remote of one remote that `repos` (the one here first) all reach."""
    out: list[Outcome] = []
    listed = remotes.ls_remote(repos[0], remote, REF_PREFIX + "*", timeout=timeout)
    refs = {ref[len(REF_PREFIX):]: oid for ref, oid in listed
            if _valid_id(ref[len(REF_PREFIX):])}
    # A commit a dry run would push is in this machine's repository, not there yet.
    local: set[str] = set()
    for o in pushed:
        if o.status == Status.OK and o.data.get("remote") == remote \
                and o.data.get("repo") in repos:
            commit = o.data.get("commit")
            if commit:
                refs[o.session_id] = ObjectId(commit)
                local.add(o.session_id)
            else:
                refs.pop(o.session_id, None)
    # By the repository whose proof decided it, which deletes it.
    doomed: dict[str, dict[str, tuple[str, str]]] = {repo: {} for repo in repos}
    judge = []
    for sid, oid in sorted(refs.items()):
        s = ctx.store.get(sid)
        if s is not None and s.common_dir in doomed and s.save is not None \
                and s.save.preserved_commit == oid:
            # The clone whose save this is decides alone.
            repo = s.common_dir
            where = work_present_elsewhere(s, oid)
            if where:
                doomed[repo][sid] = (oid, f"its work is {where}")
            elif s.pending or s.save.needs_attention \
                    or git.rev_parse(repo, REF_PREFIX + sid) == oid:
                # Pending, kept after a conflict, or a checkpoint: the ref here
                # still holds work no worktree was proven to have.
                out.append(_kept(sid, repo, remote, oid, "its save is pending or kept here"))
            else:
                doomed[repo][sid] = (oid, "restored here")
        else:
            judge.append(sid)
    # A ref no clone here knows as its save: judged in each clone in turn, until one
    # proves its work is there.
    for repo in repos:
        if not judge:
            break
        fetched = [sid for sid in judge if sid not in local]
        fetch_incoming(repo, remote, fetched, timeout=timeout)
        try:
            for sid in judge:
                where = _judged_elsewhere(ctx, repo, sid, refs[sid])
                if where:
                    doomed[repo][sid] = (refs[sid], f"its work is {where}")
        finally:
            drop_incoming(repo, fetched)
        judge = [sid for sid in judge if sid not in doomed[repo]]
    for sid in judge:
        out.append(_kept(sid, repos[0], remote, refs[sid],
                         "its work is neither on its branch nor restored here"))
    for repo in repos:
        out += _delete_remote(ctx, repo, remote, doomed[repo], timeout)
    return out


def _judged_elsewhere(ctx: Context, repo: str, sid: str, oid: ObjectId) -> str:
    """Where the work of `oid` (fetched to refs/ao/incoming/<sid>) is in `repo`,
    judged from the commit's own trailers, or from the session's record when `repo`
    holds it; '' when nowhere or unreadable."""
    from git_ao.manage.recover import Orphan, rebuild
    try:
        sess, _save = rebuild(ctx.store, Orphan(repo, REF_PREFIX + sid, oid))
        local = ctx.store.get(sid)
        if local is not None and local.common_dir == repo:
            sess = local
        return work_present_elsewhere(sess, oid)
    except AoError:
        return ""


def _valid_id(sid: str) -> bool:
    try:
        validate_id(sid)
    except Usage:
        return False
    return True


def _kept(sid: str, repo: str, remote: str, oid: str, why: str) -> Outcome:
    return Outcome(sid, Action.PRUNE_REMOTE, Status.NOTHING,
                   f"kept {REF_PREFIX}{sid} ({oid[:12]}) on {remote}: {why}",
                   {"repo": repo, "remote": remote, "commit": oid})


def _delete_remote(ctx: Context, repo: str, remote: str, doomed: dict[str, tuple[str, str]],
                   timeout: float) -> list[Outcome]:
    out: list[Outcome] = []
    if not doomed:
        return out
    verb = "would delete" if ctx.dry_run else "deleted"
    if ctx.dry_run:
        # The real run's line, word for word but the verb: the whole commit id, which
        # `git update-ref` takes to bring the ref back.
        return [Outcome(sid, Action.PRUNE_REMOTE, Status.OK, f"{verb} {REF_PREFIX}{sid} (was "
                        f"{oid}) from {remote}: {why}",
                        {"repo": repo, "remote": remote, "commit": oid})
                for sid, (oid, why) in sorted(doomed.items())]
    ids = sorted(doomed)
    res, lines = remotes.push_refs(repo, remote, [f":{REF_PREFIX}{i}" for i in ids],
                               [(REF_PREFIX + i, doomed[i][0]) for i in ids], timeout=timeout)
    by_dst = {ln.dst: ln for ln in lines}
    for sid in ids:
        oid, why = doomed[sid]
        line = by_dst.get(REF_PREFIX + sid)
        data: OutcomeData = {"repo": repo, "remote": remote, "commit": oid}
        if line is not None and line.ok:
            set_have(ctx.store, sid, remote, repo, "", want="")
            ctx.log("prune", sid, "remote-ref-deleted", remote=remote, ref=REF_PREFIX + sid,
                    commit=oid, why=why)
            out.append(Outcome(sid, Action.PRUNE_REMOTE, Status.OK, f"{verb} {REF_PREFIX}{sid} "
                               f"(was {oid}) from {remote}: {why}", data))
        else:
            detail = line.summary if line is not None else why_failed(res)
            out.append(Outcome(sid, Action.PRUNE_REMOTE, Status.ATTENTION, f"kept {REF_PREFIX}"
                               f"{sid} on {remote}: the delete was refused ({detail})", data))
    return out
