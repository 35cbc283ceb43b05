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
from git_ao.git import query, remotes
from git_ao.git.parse import ObjectId
from git_ao.outcome import Action, Outcome, OutcomeData, Status
from git_ao.remote import pushes
from git_ao.remote.pushes import (
    INCOMING_HISTORY_PREFIX,
    INCOMING_PREFIX,
    has_remote,
    set_have,
    why_failed,
)
from git_ao.save import history
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


def fetch_incoming(repo: str, remote: str, ids: Sequence[str], *, timeout: float,
                   histories: Iterable[str] = ()) -> None:
    """Fetch the remote's preserve refs of `ids` to refs/ao/incoming/<id>, and the
    histories of `histories` to refs/ao/incoming-history/<id> (forced: they only
    mirror the remote). Raises GitError."""
    remotes.fetch_refs(repo, remote, [f"+{REF_PREFIX}{i}:{INCOMING_PREFIX}{i}" for i in ids]
                       + [f"+{history.HISTORY_PREFIX}{i}:{INCOMING_HISTORY_PREFIX}{i}"
                          for i in histories], timeout=timeout)


def drop_incoming(repo: str, ids: Iterable[str]) -> None:
    """Delete the refs/ao/incoming/<id> and refs/ao/incoming-history/<id> refs
    fetch_incoming wrote."""
    for i in ids:
        for prefix in (INCOMING_PREFIX, INCOMING_HISTORY_PREFIX):
            oid = git.rev_parse(repo, prefix + i)
            if oid:
                git.drop_ref_if_at(repo, prefix + i, oid)


def ids_under(listed: Iterable[tuple[str, ObjectId]], prefix: str) -> dict[str, ObjectId]:
    """{the name after `prefix`: object id} of the (ref, object id) pairs `listed`
    (a remote's `git ls-remote`) under `prefix`."""
    return {ref[len(prefix):]: oid for ref, oid in listed if ref.startswith(prefix)}


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
    listed = remotes.ls_remote(repos[0], remote, REF_PREFIX + "*",
                               history.HISTORY_PREFIX + "*", timeout=timeout)
    refs = {sid: oid for sid, oid in ids_under(listed, REF_PREFIX).items() if _valid_id(sid)}
    hists = {sid: oid for sid, oid in ids_under(listed, history.HISTORY_PREFIX).items()
             if _valid_id(sid)}
    # A commit a dry run would push is in this machine's repository, not there yet.
    local: set[str] = set()
    for o in pushed:
        if o.status == Status.OK and o.data.get("remote") == remote \
                and o.data.get("repo") in repos:
            commit = o.data.get("commit")
            if commit:
                refs[o.session_id] = ObjectId(commit)
                local.add(o.session_id)
                # Its history goes in the same push (an ok line: it is there after).
                tip = query.ref_tip(str(o.data.get("repo")), history.history_ref(o.session_id))
                if tip:
                    hists[o.session_id] = ObjectId(tip)
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
    chains, notes, kept = _histories_to_delete(ctx, remote, repos, refs, hists, doomed)
    out += kept
    for repo in repos:
        out += _delete_remote(ctx, repo, remote, doomed[repo], chains[repo], notes, timeout)
    return out


def _histories_to_delete(ctx: Context, remote: str, repos: Sequence[str],
                         refs: dict[str, ObjectId], hists: dict[str, ObjectId],
                         doomed: dict[str, dict[str, tuple[str, str]]]
                         ) -> tuple[dict[str, dict[str, str]], dict[str, str], list[Outcome]]:
    """Which of the remote's histories go, by the repository that deletes them: the
    history of a session whose remote save is deleted, or is gone from there
    already, when this machine holds that chain (`_holds_history`): its entries
    (each checkpoint's untracked files among them) are then on this machine, and
    nothing on the remote needs them without the save. Another chain stays. A
    history beside a save that stays on the remote stays with it, unsaid.

    Returns ({repo: {id: tip}} to delete, {id: the note of a history kept beside
    a save deleted}, the Outcome of each history kept with no save there)."""
    chains: dict[str, dict[str, str]] = {repo: {} for repo in repos}
    notes: dict[str, str] = {}
    kept: list[Outcome] = []
    leases = pushes.history_leases(ctx.store, remote)
    waiting = {r.session_id for r in pushes.pending_rows(ctx.store)
               if r.want and r.remote == remote}
    for sid, tip in sorted(hists.items()):
        deleter = next((repo for repo in repos if sid in doomed[repo]), None)
        if sid in refs and deleter is None:
            continue  # its save stays there, and the history with it
        ref = history.history_ref(sid)
        if sid not in refs and sid in waiting:
            kept.append(_kept_history(sid, repos[0], remote, tip,
                                      f"its save's push to {remote} is still to be made"))
            continue
        holder = next((repo for repo in repos
                       if _holds_history(repo, sid, tip, leases.get(sid))), None)
        if holder is None:
            why = (f"this machine's history of {sid} does not hold it (another machine's "
                   "chain, or entries dropped here that this machine never pushed)")
            if deleter is not None:
                notes[sid] = f"kept {ref} ({tip[:12]}) there: {why}"
            else:
                kept.append(_kept_history(sid, repos[0], remote, tip,
                                          f"{REF_PREFIX}{sid} is gone from there, but {why}"))
            continue
        chains[deleter or holder][sid] = tip
    return chains, notes, kept


def _holds_history(repo: str, sid: str, tip: str, pushed: str | None) -> bool:
    """Does this machine hold the chain `tip` of the session's history: its history
    in `repo` is that chain or continues it, or it is what this machine last
    pushed there (`pushed`: a chain retention rewrote here since, on purpose)?"""
    if tip == pushed:
        return True
    here = query.ref_tip(repo, history.history_ref(sid))
    if here is None:
        return False
    return here == tip or query.is_ancestor_here(repo, tip, here)


def _kept_history(sid: str, repo: str, remote: str, tip: str, why: str) -> Outcome:
    return Outcome(sid, Action.PRUNE_REMOTE, Status.NOTHING,
                   f"kept {history.history_ref(sid)} ({tip[:12]}) on {remote}: {why}",
                   {"repo": repo, "remote": remote, "history_tip": ObjectId(tip)})


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


def _delete_leased(repo: str, remote: str, leases: dict[str, str], timeout: float
                   ) -> dict[str, str]:
    """Delete the refs `leases` ({ref: the commit listed there}) from `remote` in one
    push, each leased on its commit (git refuses one that moved). Returns {ref:
    why} of those not deleted."""
    res, lines = remotes.push_refs(repo, remote, [f":{ref}" for ref in leases],
                                   list(leases.items()), timeout=timeout)
    by_dst = {ln.dst: ln for ln in lines}
    refused: dict[str, str] = {}
    for ref in leases:
        line = by_dst.get(ref)
        if line is None or not line.ok:
            refused[ref] = line.summary if line is not None else why_failed(res)
    return refused


def _delete_remote(ctx: Context, repo: str, remote: str, doomed: dict[str, tuple[str, str]],
                   chains: dict[str, str], notes: dict[str, str], timeout: float
                   ) -> list[Outcome]:
    """Delete from `remote` the preserve refs `doomed` ({id: (commit, why)}), then
    the histories `chains` ({id: tip}) of those deleted and of those whose save is
    gone from there already: a history goes only after its save, so a save whose
    delete was refused keeps it. Each delete is leased on what was listed. A dry
    run prints the real run's lines, the verb aside (the whole commit ids, which
    `git update-ref` takes to bring a ref back). `notes`: a history kept beside a
    save deleted, said in its line."""
    out: list[Outcome] = []
    if not doomed and not chains:
        return out
    verb = "would delete" if ctx.dry_run else "deleted"
    gone: set[str] = set(doomed)
    failed: dict[str, str] = {}
    ids = sorted(doomed)
    if not ctx.dry_run and ids:
        refused = _delete_leased(repo, remote, {REF_PREFIX + i: doomed[i][0] for i in ids},
                                 timeout)
        for sid in ids:
            if REF_PREFIX + sid in refused:
                gone.discard(sid)
                failed[sid] = refused[REF_PREFIX + sid]
                continue
            set_have(ctx.store, sid, remote, repo, "", want="")
            ctx.log("prune", sid, "remote-ref-deleted", remote=remote,
                    ref=REF_PREFIX + sid, commit=doomed[sid][0], why=doomed[sid][1])
    chained = sorted(sid for sid in chains if sid in gone or sid not in doomed)
    hist_failed: dict[str, str] = {}
    if not ctx.dry_run and chained:
        href = history.history_ref
        refused = _delete_leased(repo, remote, {href(i): chains[i] for i in chained}, timeout)
        for sid in chained:
            if href(sid) in refused:
                hist_failed[sid] = refused[href(sid)]
            else:
                ctx.log("prune", sid, "remote-history-deleted", remote=remote, ref=href(sid),
                        commit=chains[sid])
        pushes.forget_histories_pushed(ctx.store, [(sid, remote) for sid in chained
                                                   if sid not in hist_failed])
    for sid in sorted(set(doomed) | set(chained)):
        data: OutcomeData = {"repo": repo, "remote": remote}
        ref = history.history_ref(sid)
        tip = chains.get(sid)
        if tip is not None:
            data["history_tip"] = ObjectId(tip)
        if sid in failed:
            data["commit"] = ObjectId(doomed[sid][0])
            out.append(Outcome(sid, Action.PRUNE_REMOTE, Status.ATTENTION, f"kept {REF_PREFIX}"
                               f"{sid} on {remote}: the delete was refused ({failed[sid]})"
                               + (f"; {ref} stays with it" if tip is not None else ""), data))
            continue
        status = Status.OK
        said = ""
        if tip is not None and sid in hist_failed:
            status = Status.ATTENTION
            said = f"; kept {ref} there: the delete was refused ({hist_failed[sid]})"
        elif sid in notes:
            said = f"; {notes[sid]}"
        both = f" and {ref} (was {tip})" if tip is not None and sid not in hist_failed else ""
        if sid in doomed:
            oid, why = doomed[sid]
            data["commit"] = ObjectId(oid)
            msg = f"{verb} {REF_PREFIX}{sid} (was {oid}){both} from {remote}: {why}{said}"
        elif sid in hist_failed:
            msg = f"kept {ref} ({(tip or '')[:12]}) on {remote}: the delete was refused " \
                  f"({hist_failed[sid]})"
        else:
            msg = (f"{verb} {ref} (was {tip}) from {remote}: {REF_PREFIX}{sid} is gone from "
                   f"there, and this machine's history of {sid} holds it")
        out.append(Outcome(sid, Action.PRUNE_REMOTE, status, msg, data))
    return out
