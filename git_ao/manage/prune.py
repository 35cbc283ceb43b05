"""Prune: clean what can be cleaned without losing work (records of vanished
repositories and of finished sessions, stale registrations, scratch files,
the trash, refs whose work is provably elsewhere)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable

from git_ao import git
from git_ao.context import (
    REF_PREFIX,
    Context,
    preserve_ref,
    work_present_elsewhere,
    work_whereabouts,
)
from git_ao.fs import walk
from git_ao.fs.gone import missing_repo_advice, repo_gone_advice
from git_ao.manage import listing
from git_ao.outcome import Action, Outcome, OutcomeData, Status, facts
from git_ao.proof import witness
from git_ao.save import capture, history, unchanged
from git_ao.save.lacking import BEFORE_STOP_PREFIX
from git_ao.store import trash
from git_ao.store.records import Session


def prune(ctx: Context, *, expire_before: float | None = None,
          force_ids: Iterable[str] = (), history_keep: int | None = None,
          history_before: float | None = None,
          expire_text: str | None = None) -> list[Outcome]:
    """Clean what can be cleaned without losing work.

    expire_before: epoch seconds; trash entries older are deleted (None: all).
    expire_text: the date as given (2.weeks.ago), for the messages.
    history_keep: entries each history keeps, newest first (None: all);
    history_before: epoch seconds; history entries older are dropped (None:
    none). The newest entry of a history always stays (`_prune_history`).
    force_ids: sessions the user named with --force: their refs and records go, and
    nothing else is done.
    Returns one Outcome per thing done (or that would be done on a dry run).
    """
    named = list(dict.fromkeys(force_ids))
    if named:
        # A prune that names sessions acts on those sessions only: no general
        # clean-up, so another session's ref, record or trash is never touched.
        return [_prune_named(ctx, sid) for sid in named]
    out = []
    sessions = ctx.store.sessions()
    repos = sorted({s.common_dir for s in sessions})
    for listed in sessions:
        # Decide under the session's lock, on a fresh read: a preserve or restore
        # running at the same moment must not have its record or ref pulled away.
        with ctx.lock(listed.id):
            s = ctx.store.get(listed.id)
            if s is None:
                continue
            if not os.path.isdir(s.common_dir) and s.pending:
                # Only the record knows where the pending save is (its ref went
                # with the repository): an unmounted disk or a moved repository
                # must not lose it.
                out.append(Outcome(s.id, Action.PRUNE_RECORD, Status.NOTHING,
                                   f"kept the record: repository {s.common_dir} is missing "
                                   f"and the session is pending; {missing_repo_advice(s.id)}",
                                   facts(s)))
            elif not os.path.isdir(s.common_dir) and s.live:
                # A repository moved with its worktree: the record holds the id and
                # facts `git ao add --id` re-points, so only the user drops it.
                out.append(Outcome(s.id, Action.PRUNE_RECORD, Status.NOTHING,
                                   f"kept the record: repository {s.common_dir} is missing "
                                   f"and the session is live; {repo_gone_advice(s, ctx.store.sessions())}",
                                   facts(s)))
            elif not os.path.isdir(s.common_dir):
                out.append(_prune_record(ctx, s, f"repository {s.common_dir} is gone"))
            elif not s.live and not s.pending:
                kept = _holds_work(s)
                if kept:
                    # Dropped, the record would leave the ref to no one: every
                    # command would name it, and a recovery make the session pending.
                    out.append(Outcome(s.id, Action.PRUNE_RECORD, Status.NOTHING,
                                       f"kept the record: {kept} holds work found nowhere "
                                       f"else (git ao-prune --force {s.id} drops both)",
                                       facts(s)))
                else:
                    out.append(_prune_record(ctx, s, "terminated, nothing pending"))
    for repo in repos:
        if os.path.isdir(repo):
            out += _prune_repo(ctx, repo, {s.id: s for s in sessions if s.common_dir == repo})
            if history_keep is not None or history_before is not None:
                out += _prune_histories(ctx, repo, history_keep, history_before)
    pending = {s.id for s in ctx.store.sessions() if s.pending}
    out += _prune_trash(ctx, expire_before, pending, expire_text)
    return out


def _prune_histories(ctx: Context, repo: str, keep: int | None, before: float | None
                     ) -> list[Outcome]:
    """Apply the retention settings to every history of `repo`, known session or not."""
    out = []
    for ref, _oid in git.for_each_ref(repo, history.HISTORY_PREFIX):
        sid = ref[len(history.HISTORY_PREFIX):]
        with ctx.lock(sid):
            o = _prune_history(ctx, repo, sid, keep, before)
        if o is not None:
            out.append(o)
    return out


def _prune_history(ctx: Context, repo: str, sid: str, keep: int | None,
                   before: float | None) -> Outcome | None:
    """Rewrite one history without the entries past `keep` (count, newest first) or
    older than `before` (epoch seconds), never dropping the newest. The ref moves
    with compare-and-swap; an append landing meanwhile makes it read and try again
    (three times, then the history is left for the next prune). None when nothing
    is dropped."""
    for _attempt in range(3):
        found = history.entries(repo, sid)
        if not found:
            return None
        kept = [e for e in found if (keep is None or e.number <= keep)
                and (before is None or e.time_ns >= before * 1e9)] or found[:1]
        if found[0] not in kept:
            kept.insert(0, found[0])
        dropped = len(found) - len(kept)
        if not dropped:
            return None
        ref = history.history_ref(sid)
        verb = "would drop" if ctx.dry_run else "dropped"
        # The whole tip: `git update-ref` takes it to bring the old chain back.
        msg = (f"{verb} {dropped} of the {len(found)} entries of {ref}, kept {len(kept)} "
               f"(was {found[0].commit})")
        if ctx.dry_run:
            return Outcome(sid, Action.PRUNE_HISTORY, Status.OK, msg,
                           {"repo": repo, "dropped": dropped, "kept": len(kept)})
        tip = history.rewrite(repo, sid, kept, found[0].commit)
        if tip is not None:
            ctx.log("prune", sid, "history-pruned", ref=ref, was=found[0].commit, now=tip,
                    dropped=dropped, kept=len(kept))
            return Outcome(sid, Action.PRUNE_HISTORY, Status.OK, msg,
                           {"repo": repo, "dropped": dropped, "kept": len(kept)})
    return Outcome(sid, Action.PRUNE_HISTORY, Status.NOTHING,
                   f"{history.history_ref(sid)} kept moving (checkpoints being appended); "
                   "left for the next git ao-prune", {"repo": repo})


def _prune_named(ctx: Context, sid: str) -> Outcome:
    """`--force ID`: that session's ref and record, under its lock; an unknown id is
    refused on its own and the other named sessions go on."""
    with ctx.lock(sid):
        s = ctx.store.get(sid)
        if s is None:
            return Outcome(sid, Action.PRUNE_REF, Status.REFUSED,
                           f"no session '{sid}' (see 'git ao list'); nothing pruned for it")
        return _prune_forced(ctx, s)


def _holds_work(s: Session) -> str:
    """The session's preserve ref when it holds work found nowhere else, or ''."""
    ref = preserve_ref(s.id)
    oid = git.rev_parse(s.common_dir, ref)
    return ref if oid and not work_present_elsewhere(s, oid) else ""


def _prune_record(ctx: Context, s: Session, why: str) -> Outcome:
    if not ctx.dry_run:
        ctx.store.delete(s.id)
    ctx.log("prune", s.id, "record-dropped", why=why)
    return Outcome(s.id, Action.PRUNE_RECORD, Status.OK, f"{'would drop' if ctx.dry_run else 'dropped'} "
                   f"record ({why})", facts(s))


def _prune_forced(ctx: Context, s: Session) -> Outcome:
    ref = preserve_ref(s.id)
    oid = git.rev_parse(s.common_dir, ref) if os.path.isdir(s.common_dir) else None
    href = history.history_ref(s.id)
    hoid = git.rev_parse(s.common_dir, href) if os.path.isdir(s.common_dir) else None
    if not ctx.dry_run:
        if oid:
            git.delete_ref(s.common_dir, ref, oid)
        if hoid:
            git.delete_ref(s.common_dir, href, hoid)
        unchanged.drop(ctx.store.dir, s.id)  # a session of that id later starts afresh
        ctx.store.delete(s.id)
    ctx.log("prune", s.id, "forced", ref=ref if oid else None, commit=oid,
            history=hoid)
    verb = "would delete" if ctx.dry_run else "deleted"
    gone, kept = [], []
    for entry in trash.of_session(ctx.store.dir, s.id):
        # Only this session's entries; a stray one may hold an agent's latest
        # writes and a mount point is never crossed: both stay.
        if entry.stray or walk.walk(entry.path).blockers:
            kept.append(entry.path)
            continue
        if not ctx.dry_run:
            _remove_entry(entry)
            if os.path.lexists(entry.path):  # part of it could not be deleted: it stays
                kept.append(entry.path)
                continue
        gone.append(entry.path)
    data = facts(s, trash_deleted=gone, trash_kept=kept)
    return Outcome(s.id, Action.PRUNE_REF, Status.OK,
                   _forced_line(verb, [(ref, oid), (href, hoid)], gone, kept), data)


def _forced_line(verb: str, refs: list[tuple[str, str | None]], gone: list[str],
                 kept: list[str]) -> str:
    """The one line of a forced prune, the same words for -n and the real run: each
    thing deleted (only the refs that exist), then each trash entry kept and why."""
    what = [f"{ref} (was {oid})" for ref, oid in refs if oid]
    what.append("the record")
    if gone:
        what.append(f"{len(gone)} trash entr{'y' if len(gone) == 1 else 'ies'} "
                    f"({', '.join(gone)})")
    line = f"{verb} {', '.join(what[:-1])} and {what[-1]}" if len(what) > 1 \
        else f"{verb} {what[0]}"
    if kept:
        line += (f"; kept {len(kept)} trash entr{'y' if len(kept) == 1 else 'ies'} "
                 f"({', '.join(kept)}): each is a directory restore set aside, holds "
                 "a mount point or could not be deleted whole; remove it by hand once "
                 "nothing in it is needed")
    return line


def _would_prune(line: str) -> str:
    """A line of `git worktree prune -n -v` (git's words of the real run, "Removing
    worktrees/x: why") said as what the run would do, naming what git names."""
    if line.startswith("Removing "):
        return f"would remove {line.removeprefix('Removing ')}"
    return f"would prune worktrees, as git says: {line}"


def _prune_repo(ctx: Context, repo: str, by_id: dict[str, Session]) -> list[Outcome]:
    out = []
    with ctx.repo_lock(repo):
        lines = ctx.prune_worktrees(repo, dry_run=ctx.dry_run)
    for ln in lines:
        ctx.log("prune", None, "worktree-prune", repo=repo, detail=ln)
        out.append(Outcome("-", Action.PRUNE_WORKTREE, Status.OK,
                           _would_prune(ln) if ctx.dry_run else ln, {"repo": repo}))
    for path in _leftover_scratch(repo):
        if not ctx.dry_run:
            try:
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path)
                else:
                    os.unlink(path)
            except FileNotFoundError:
                continue
        ctx.log("prune", None, "tmp-scratch", path=path)
        out.append(Outcome("-", Action.PRUNE_TMP, Status.OK,
                           f"{'would remove' if ctx.dry_run else 'removed'} {path}",
                           {"repo": repo}))
    for ref, oid in git.for_each_ref(repo, REF_PREFIX):
        sid = ref[len(REF_PREFIX):]
        if sid not in by_id:
            out.append(Outcome(sid, Action.PRUNE_REF, Status.NOTHING,
                               f"{ref} ({oid[:12]}) has no record; kept (git ao doctor "
                               "--recover)", {"repo": repo}))
            continue
        with ctx.lock(sid):
            s = ctx.store.get(sid)
            if s is None or git.rev_parse(repo, ref) != oid:
                continue  # changed under us: leave it for the next prune
            if s.save is not None and s.pending and s.save.preserved_commit == oid:
                continue
            where, why = work_whereabouts(s, oid, explain=True)
            if where:
                if not ctx.dry_run:
                    git.delete_ref(repo, ref, oid)
                    ctx.store.forget_ref(sid, oid)  # listings stop showing a deleted ref
                ctx.log("prune", sid, "ref-deleted", ref=ref, commit=oid, why=where)
                out.append(Outcome(sid, Action.PRUNE_REF, Status.OK,
                                   f"{'would delete' if ctx.dry_run else 'deleted'} {ref} "
                                   f"(was {oid}): its work is {where}", facts(s)))
            else:
                # Said every time: a kept ref no row points at (an old checkpoint, a
                # conflict left to resolve) is otherwise easy to forget.
                why = why or "its work is neither on the branch nor in the worktree"
                out.append(Outcome(sid, Action.PRUNE_REF, Status.NOTHING,
                                   f"kept {ref} ({oid[:12]}): {why}; see it with git stash "
                                   f"show -p --include-untracked {ref}", facts(s)))
    held = dict(git.for_each_ref(repo, REF_PREFIX))
    for sid in sorted(by_id):
        # A record naming a ref deleted by hand (`git update-ref -d` after a
        # conflict): listings would show a ref that is not there.
        with ctx.lock(sid):
            s = ctx.store.get(sid)
            save = s.save if s is not None else None
            if s is None or save is None or save.pending or not save.holds_ref \
                    or not save.preserved_commit or save.preserve_ref in held \
                    or git.rev_parse(repo, save.preserve_ref) is not None:
                continue
            if not ctx.dry_run:
                ctx.store.forget_ref(sid, save.preserved_commit)
            ctx.log("prune", sid, "record-in-step", ref=save.preserve_ref,
                    commit=save.preserved_commit)
            out.append(Outcome(sid, Action.PRUNE_RECORD, Status.OK,
                               f"{'would stop' if ctx.dry_run else 'stopped'} naming "
                               f"{save.preserve_ref} ({save.preserved_commit[:12]}) in the "
                               "record: the ref was deleted", facts(s)))
    for ref, oid in git.for_each_ref(repo, BEFORE_STOP_PREFIX):
        # Only the user knows whether the state a stop handler changed is wanted.
        out.append(Outcome(ref[len(BEFORE_STOP_PREFIX):], Action.PRUNE_REF, Status.NOTHING,
                           f"kept {ref} ({oid[:12]}): the worktree before its agents were "
                           "stopped; see it with git stash show -p --include-untracked "
                           f"{ref}, drop it with git update-ref -d {ref}", {"repo": repo}))
    return out


def _leftover_scratch(repo: str) -> list[str]:
    """Temporary index files and verification dirs left in the git dirs of `repo`
    by a killed git-ao (named `<prefix><pid>.`, their process gone)."""
    found = []
    dirs = [repo] + [os.path.join(repo, "worktrees", d)
                     for d in (os.listdir(os.path.join(repo, "worktrees"))
                               if os.path.isdir(os.path.join(repo, "worktrees")) else [])]
    for d in dirs:
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for name in names:
            prefix = next((p for p in capture.SCRATCH_PREFIXES if name.startswith(p)), None)
            if prefix is None:
                continue
            pid = name[len(prefix):].split(".")[0]
            if pid.isdigit() and _alive(int(pid)):
                continue
            found.append(os.path.join(d, name))
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _prune_trash(ctx: Context, expire_before: float | None,
                 pending: set[str], expire_text: str | None = None) -> list[Outcome]:
    """Delete the trash entries older than `expire_before`, under every trash root
    (`trash.entries`), with their size. Kept, and said: the entries restore reads
    for a session in `pending` (`trash.latest_for`, whole or for its ignored files,
    or one a killed restore was putting back; an older entry is judged like any
    other, named with the one restore uses), stray entries (a directory restore set
    aside), entries a restore found changed after the last capture or could not
    put back as saved (a merge driver, filter or rename decided), and any
    entry holding a file that is neither ignored nor in a saved tree, or a mount
    point (`witness.unsaved_in`), and an entry of a live session that no restore
    read, holding ignored files (`_never_read`). A deleted entry's ignored files
    (the only copy of an `.env`, say) are named in its outcome (`ignored`,
    top-level paths). Only what git-ao made is judged: a listed root not named as
    git-ao's and anything under a root that is no entry of git-ao's
    (`trash.not_ours`) is kept and named once."""
    out = _not_ours(ctx)
    used: dict[str, tuple[str | None, str | None]] = {}
    for sid in pending:
        put_back = trash.latest_for(ctx.store.dir, sid)
        env_from = trash.latest_for(ctx.store.dir, sid, environment=True)
        used[sid] = (put_back.path if put_back else None, env_from.path if env_from else None)
    for entry in trash.entries(ctx.store.dir):
        sid = entry.session_id
        size = trash.size(entry.path)
        data: OutcomeData = {"path": entry.path, "size": size}
        why = ""
        young = expire_before is not None and entry.created_ns / 1e9 >= expire_before
        whole, env = used.get(sid, (None, None))
        # Of a pending session only the entries restore reads are kept for that;
        # an older one is judged like any other entry, and the line says which
        # entry restore uses instead.
        other = ""
        if sid in pending and whole and entry.path != whole and entry.path != env \
                and not entry.meta.reinstating:
            other = f"restore of its pending session uses {whole}, not this entry; "
        if sid in pending and not other:
            if entry.meta.reinstating:
                why = ("its session is pending and a killed restore was putting this "
                       "entry back: git ao-restore finishes it")
            elif entry.path == whole:
                why = "its session is pending: restore puts this entry back"
            elif entry.path == env:
                why = ("its session is pending: restore takes the ignored files from "
                       "this entry")
            else:
                why = "its session is pending (restore brings it back)"
        elif entry.stray and entry.meta.checkout_trees:
            # git-ao's own interrupted checkout, set aside by the restore that ran
            # again: deleted after the grace period once proven only that checkout.
            if young:
                why = f"newer than {expire_text}" if expire_text else "not expired yet"
                why += "; --expire=now deletes it"
            else:
                why = witness.not_from_checkout(entry)
                if why:
                    why = f"set aside from an interrupted restore's checkout, but {why}"
        elif entry.stray:
            why = "a directory restore set aside; it may hold an agent's latest writes"
        elif entry.meta.environment_kept and entry.holds_worktree:
            kept = [str(p) for p in entry.meta.environment_kept]
            why = ("ignored files restore could not put back, such as "
                   f"{kept[0]}; take what you need, then remove it by hand")
        elif entry.meta.not_as_saved:
            paths = sorted(entry.meta.not_as_saved)
            why = ("restore could not put the save back as it was, such as "
                   f"{paths[0]}; remove it by hand once the work is back")
        elif entry.meta.commit_gone and entry.holds_worktree:
            why = ("it holds the session's work, whose saved commit was gone when restore "
                   "checked the worktree out again without it; take what you need, then "
                   "remove it by hand")
        elif entry.meta.unlike_save and entry.holds_worktree:
            changed = sorted(entry.meta.unlike_save)
            why = ("restore found it changed after the last capture, such as "
                   f"{changed[0]}; take what you need, then remove it by hand")
        elif young:
            # After the reasons that outlast it: those say what to do.
            why = f"newer than {expire_text}" if expire_text else "not expired yet"
            why += "; --expire=now deletes it"
        else:
            s = ctx.store.get(sid)
            why = witness.unsaved_in(entry, s.save.preserved_commit if s and s.save else None)
        if why:
            out.append(Outcome(sid, Action.PRUNE_TRASH, Status.NOTHING,
                               f"kept {entry.path} ({_size(size)}): {other}{why}", data))
            continue
        ignored = listing.entry_ignored(entry, s.common_dir if (s := ctx.store.get(sid))
                                        else None)
        data["ignored"] = ignored
        if ignored and _never_read(entry, s):
            shown = ", ".join(ignored[:5]) + (", ..." if len(ignored) > 5 else "")
            out.append(Outcome(sid, Action.PRUNE_TRASH, Status.NOTHING,
                               f"kept {entry.path} ({_size(size)}): its {len(ignored)} ignored "
                               f"path(s) ({shown}) never came back: the restore of its live "
                               "session did not read this copy (its file system not mounted "
                               "then?); take what you need, then remove it by hand", data))
            continue
        held = ""
        if ignored:
            shown = ", ".join(ignored[:10]) + (", ..." if len(ignored) > 10 else "")
            held = f"; it held {len(ignored)} ignored path(s), now gone: {shown}"
        if not ctx.dry_run:
            _remove_entry(entry)
            if os.path.lexists(entry.path):
                # Part of it could not be deleted (a file of another user, a read-only
                # file system): say so, and what is left stays for the next prune.
                ctx.log("prune", sid, "trash-not-deleted", path=entry.path)
                out.append(Outcome(sid, Action.PRUNE_TRASH, Status.FAILED,
                                   f"could not delete all of {entry.path}; what is left "
                                   "stays there", data))
                continue
        ctx.log("prune", sid, "trash-deleted", path=entry.path, size=size,
                ignored=" ".join(ignored) or None)
        if ctx.dry_run:
            held = held.replace(", now gone:", ":")
        out.append(Outcome(sid, Action.PRUNE_TRASH, Status.OK,
                           f"{'would delete' if ctx.dry_run else 'deleted'} {entry.path} "
                           f"({_size(size)}){held}", data))
    return out


def _never_read(entry: trash.Entry, s: Session | None) -> bool:
    """Is `entry` a copy preserve took of a session now live that no restore read?
    A restore puts an entry back whole (its `worktree/` goes) or takes its ignored
    files and marks it `restored`; one still holding its directory unmarked was
    away when its session came back (a trash root not mounted, given up by hand)."""
    return s is not None and s.live and entry.holds_worktree and not entry.stray \
        and not entry.meta.killed and not entry.meta.restored \
        and not entry.meta.reinstating


def _not_ours(ctx: Context) -> list[Outcome]:
    """One line for each listed trash root not named as git-ao's and each thing
    under a root that git-ao did not make: kept, never read, never deleted."""
    from git_ao.store.datadir import ROOTS_FILE, foreign_roots
    out = []
    try:
        listed = foreign_roots(ctx.store.dir)
    except OSError:
        listed = []
    for root in listed:
        out.append(Outcome("-", Action.PRUNE_TRASH, Status.NOTHING,
                           f"kept {root}: not a trash root git-ao makes (a line of "
                           f"{os.path.join(ctx.store.dir, ROOTS_FILE)} names it), so "
                           "nothing in it is read or deleted; remove that line",
                           {"path": root}))
    for path in trash.not_ours(ctx.store.dir):
        out.append(Outcome("-", Action.PRUNE_TRASH, Status.NOTHING,
                           f"kept {path}: not git-ao's (no entry.json of git-ao's names it: "
                           "made by someone else, or an entry from before git-ao wrote "
                           "one), so prune never deletes it",
                           {"path": path}))
    return out


def _size(n: int) -> str:
    """`n` bytes for a person: 512 B, 3.4 MiB."""
    if n < 1024:
        return f"{n} B"
    x = float(n)
    for unit in ("KiB", "MiB", "GiB"):
        x /= 1024
        if x < 1024 or unit == "GiB":
            break
    return f"{x:.1f} {unit}"


def _remove_entry(entry: trash.Entry) -> None:
    """Delete a trash entry that `witness.unsaved_in` cleared: it holds no mount point (the
    walk saw none), and rmtree does not follow symlinks."""
    if os.path.isdir(entry.path) and not os.path.islink(entry.path) \
            and not walk.is_mount_point(entry.path):
        shutil.rmtree(entry.path, ignore_errors=True)
    elif os.path.lexists(entry.path) and not os.path.isdir(entry.path):
        os.unlink(entry.path)
