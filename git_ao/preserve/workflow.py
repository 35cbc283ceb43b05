"""Preserve: save each session's uncommitted work in its ref, record it, then
take its worktree away.

The crash-safety order, per session, reads in `preserve_one`: check, capture,
write the ref, commit the database row, and only then remove the worktree. A
kill at any point leaves the session live with its worktree, or saved with its
work in the ref and the row committed; running the command again converges.
Nothing here prints: every function returns Outcomes and logs its decisions.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from git_ao import crashpoint, git, gitfiles
from git_ao.batch import NOT_STARTED, RepoCache, guarded, log_failure, run_each
from git_ao.context import (
    KEPT_PREFIX,
    Context,
    lookup,
    preserve_ref,
    work_present_elsewhere,
)
from git_ao.errors import AoError, GitError, Refused, TimedOut, past_timeout
from git_ao.fs import nested, walk
from git_ao.fs.gone import held_advice, moved_to, registration_holds, repo_gone_advice
from git_ao.git import lock as gitlock
from git_ao.git import parse, query, worktree
from git_ao.git.parse import BranchName, ObjectId
from git_ao.outcome import Action, Outcome, OutcomeData, Status, facts
from git_ao.outcome import warn as with_warnings
from git_ao.proof import witness
from git_ao.save import capture, daemon_refs, history, lacking, local_state, unchanged
from git_ao.store.database import Store
from git_ao.store.records import Save, Session, now_ns

if TYPE_CHECKING:  # the agents are looked at only by a preserve that removes worktrees
    from git_ao.agents import processes, stopping
    from git_ao.outcome import OutcomeData


def sessions_for_all(store: Store) -> list[Session]:
    """The sessions `--all` preserves: every live one, and every pending one whose
    directory is still there (a crash interrupted its removal, and running --all
    again finishes it: `removal.finish_interrupted`), unless a live session holds
    that path now (a new worktree made there: its own session, preserved as such)."""
    sessions = store.sessions()
    live = {s.worktree_path for s in sessions if s.live}
    return [s for s in sessions
            if s.live or (s.save is not None and s.pending
                          and s.save.worktree_path not in live
                          and os.path.lexists(s.save.worktree_path))]


def unregistered(store: Store, importing: Sequence[Session] = ()) -> dict[str, list[str]]:
    """By repository (common git dir) of the sessions recorded, the paths of its
    linked worktrees no live or pending session holds: those `--all` leaves
    unsaved. importing: the sessions a dry run's import would register (stored
    nowhere), which hold their worktrees as the real run's do. One `git worktree
    list` per repository; a repository that is gone or that git cannot list is
    left out (doctor names it)."""
    from git_ao.git.worktree import unheld
    sessions = [*store.sessions(), *importing]
    found = {}
    for repo in sorted({s.common_dir for s in sessions}):
        if not os.path.isdir(repo):
            continue
        try:
            entries = git.worktree_list(repo)
        except AoError:
            continue
        loose = unheld(entries, [s.worktree_path for s in sessions
                                 if s.common_dir == repo and (s.live or s.pending)])
        if loose:
            found[repo] = loose
    return found


def preserve(ctx: Context, sessions: Sequence[Session], *, keep_worktree: bool = False,
             jobs: int = 1, timeout: float | None = None,
             progress: Callable[[Outcome], object] | None = None,
             stop: threading.Event | None = None, settings: processes.Settings | None = None,
             shutdown: bool = False, trigger: str | None = None,
             unsaved: Mapping[str, Session] | None = None,
             pushing: bool = False, removed_by: str | None = None) -> list[Outcome]:
    """Preserve each session; one session's failure never stops the others.

    First the processes still working in the worktrees are found and dealt with
    by policy (`stopping.settle_agents`; settings: git-ao.toml's, shutdown: an
    `--all` run, whose default policy is to stop them).

    sessions: list of Session. jobs: sessions handled at once (threads; the work
    is in git processes). timeout: seconds after which no new session starts
    (those stay live, which is safe) and every git process a session in flight
    runs is stopped (`git.bounded`: a filter or merge driver that hangs); such a
    session fails where it stands, nothing of it removed (`_after_timeout`).
    progress: callback(Outcome) per session.
    stop: a threading.Event; once set (SIGTERM, SIGINT) no new session starts and
    the ones in flight run to their end. trigger: what the history entry names as
    its cause (history.TRIGGERS; default "checkpoint" with keep_worktree, else
    "preserve"). unsaved: on a dry run, by id, the sessions of `sessions` that an
    import would register (stored nowhere; see `preserve_one`). pushing: the saves
    go to a remote, so a clean worktree gets one too (`preserve_one`). removed_by:
    the tool removing the worktrees itself (`Save.removed_by`: the restore of
    every pending session leaves their saves).
    Returns one Outcome per session, in input order.
    """
    from git_ao.agents import stopping
    cache = RepoCache(batch=True)
    deadline = time.monotonic() + timeout if timeout is not None else None
    before_stop: dict[str, ObjectId] = {}

    def checkpoint(targets: Sequence[Session]) -> None:
        def one(s: Session) -> Outcome:
            with git.bounded(deadline):
                return guarded(functools.partial(preserve_one, ctx, s.id, True, cache), s.id,
                               Action.PRESERVE, ctx)

        for s, out in zip(targets, run_each(targets, one, jobs, None), strict=True):
            commit = out.data.get("preserved_commit")
            if out.status == Status.OK and commit:
                before_stop[s.id] = ObjectId(commit)
                _mark_stopping(ctx, s.id, commit)

    seen = {} if keep_worktree else stopping.settle_agents(
        sessions, settings if settings is not None else stopping.NoSettings(), shutdown=shutdown,
        dry_run=ctx.dry_run, before_stop=checkpoint)
    crashpoint.hit("preserve:after-agents")

    def one(s: Session) -> Outcome:
        if deadline is not None and time.monotonic() > deadline:
            return Outcome(s.id, Action.PRESERVE, Status.REFUSED,
                           "not started: --timeout spent; the session stays live")
        if stop is not None and stop.is_set():
            return Outcome(s.id, Action.PRESERVE, Status.REFUSED,
                           NOT_STARTED + "; the session stays live", started=False)
        agents_seen = seen.get(s.id)
        if agents_seen is not None and agents_seen.refused:
            out = Outcome(s.id, Action.PRESERVE, Status.REFUSED,
                          f"{agents_seen.line()}; the worktree is kept (stop them, or set "
                          "preserve.agents = \"stop\")", agents_seen.data())
        else:
            with git.bounded(deadline):
                out = guarded(lambda: preserve_one(
                    ctx, s.id, keep_worktree, cache, trigger=trigger,
                    unsaved=(unsaved or {}).get(s.id), pushing=pushing,
                    removed_by=removed_by,
                    working=agents_seen.left_running() if agents_seen else ()), s.id,
                    Action.PRESERVE, ctx)
            if ctx.dry_run and not keep_worktree and out.status == Status.OK:
                cache.taken_first.add(os.path.realpath(s.worktree_path))
            if out.data.get("timed_out"):
                _after_timeout(ctx, s.id, out, timeout)
            if agents_seen is not None:
                _tell_agents(ctx, out, agents_seen)
            earlier = _stopping_mark(ctx, s)
            if earlier is not None:
                # A run killed while the agents stopped: its checkpoint is the state
                # before, not this run's (taken after their stop handlers ran).
                before_stop[s.id] = earlier
            if s.id in before_stop:
                stopping.keep_before_stop(ctx, s, before_stop[s.id], out)
            _unmark_stopping(ctx, s.id)
        log_failure(ctx, out)
        crashpoint.hit("preserve:between-sessions")
        return out

    from git_ao import groups  # here: a checkpoint runs one session, in no waves
    try:
        return groups.in_waves(sessions, lambda part: run_each(part, one, jobs, progress),
                                       inner_first=True)
    finally:
        # Even when a session raised past guarded: what was moved away is deregistered.
        cache.flush_prunes(ctx, jobs)


_STOPPING = "before-stop"  # in the data dir: the checkpoints taken before agents stopped


def _mark_stopping(ctx: Context, session_id: str, commit: str) -> None:
    """Note, until the session's preserve is over, the checkpoint taken before its
    agents are stopped: a run killed meanwhile leaves it to the next run."""
    if ctx.dry_run:
        return
    from git_ao.store.datadir import ensure_private_dir, write_private
    d = os.path.join(ctx.store.dir, _STOPPING)
    ensure_private_dir(d)
    write_private(os.path.join(d, session_id), commit)


def _stopping_mark(ctx: Context, s: Session) -> ObjectId | None:
    """The checkpoint a killed run took before it stopped the agents of `s`, while it
    is still among the newest entries of the history (this run's preserve, and its
    own checkpoint before a stop, may follow it); else None."""
    try:
        with open(os.path.join(ctx.store.dir, _STOPPING, s.id), encoding="ascii") as fh:
            commit = fh.read().strip()
    except (OSError, ValueError):
        return None
    recent = history.entries(s.common_dir, s.id)[:3] if commit else []
    return ObjectId(commit) if any(e.save == commit for e in recent) else None


def _unmark_stopping(ctx: Context, session_id: str) -> None:
    if not ctx.dry_run:
        try:
            os.unlink(os.path.join(ctx.store.dir, _STOPPING, session_id))
        except FileNotFoundError:
            pass


def _after_timeout(ctx: Context, session_id: str, out: Outcome,
                   timeout: float | None) -> None:
    """Say where a session stopped at the `--timeout` deadline (`timeout` seconds)
    stands: live with its worktree as it was, or saved and recorded with its
    worktree still in place (the next `--all` run finishes the removal); and what
    to do: wait until nothing hangs, or, when nothing hung (`errors.past_timeout`),
    give the run more time."""
    s = ctx.store.get(session_id)
    reached = past_timeout(out.data.get("hung") or [], timeout)
    more = "with a longer --timeout (or a larger preserve.timeout)"
    if s is not None and s.pending:
        out.message += ("; saved and recorded, but the worktree was not removed: it is as it "
                        "was, and git ao-preserve --all finishes "
                        + (f"{more} ({reached})" if reached else "once nothing hangs"))
    elif reached:
        out.message += ("; nothing was removed and the worktree is as it was (the session "
                        f"stays live); {reached}: run git ao-preserve again {more}")
    else:
        out.message += ("; nothing was removed and the worktree is as it was (the session "
                        "stays live; run git ao-preserve again once nothing hangs)")


def _tell_agents(ctx: Context, out: Outcome, seen: stopping.Seen) -> None:
    """Add what was found working in the worktree to its outcome and the log; tell
    the user when their own shell sat in a worktree that is now gone."""
    out.data.update(seen.data())
    line = seen.line()
    if line:
        out.message += f"; {line}"
        ctx.log("preserve", out.session_id, "agents", policy=seen.policy,
                found=" ".join(str(a.pid) for a in seen.found))
    trash_copy = out.data.get("trash")
    in_trash = out.data.get("running_in_trash") or []
    running = [a for a in seen.found if a.pid in in_trash]
    if running and trash_copy:
        # Its writes from now on land in the trash copy, after every check.
        if out.status in (Status.OK, Status.NOTHING):
            out.status = Status.ATTENTION
        names = ", ".join(f"pid {a.pid} ({a.name})" for a in running)
        out.message += (f"; {names} still running when the worktree was moved: what it "
                        f"writes from now on lands in the trash copy {trash_copy}, which git "
                        "ao-restore brings back")
    if seen.ancestors and trash_copy:
        pids = ", ".join(str(a.pid) for a in seen.ancestors)
        out.message += (f"; your shell (pid {pids}) was working in it: its directory is gone "
                        f"(cd elsewhere); the copy is at {trash_copy}")
    if seen.pipeline and trash_copy:
        pids = ", ".join(f"{a.pid} ({a.name})" for a in seen.pipeline)
        out.message += (f"; the other commands of this pipeline (pid {pids}) were working "
                        f"in it, left running: their directory is gone")


def preserve_one(ctx: Context, session_id: str, keep_worktree: bool = False,
                 cache: RepoCache | None = None, unsaved: Session | None = None,
                 trigger: str | None = None, pushing: bool = False,
                 removed_by: str | None = None,
                 working: Sequence[processes.Agent] = ()) -> Outcome:
    """Preserve one session, strictly: check, capture and write the ref, append the
    save to the session's history, commit the row, then remove the verified
    worktree. Returns an Outcome; raises AoError on refusal.

    unsaved: on a dry run, a Session that `register` would create (not stored yet).
    trigger: the history entry's cause (see `preserve`). pushing: a clean worktree
    is saved too (a commit with no changes), so the ref a push sends carries its
    HEAD's commits to the remote. removed_by: see `preserve`. working: processes
    found working in the worktree that no stop ended; those still alive once it
    is moved are listed by pid (`running_in_trash`), asked before the check after
    the move (one that ended by then wrote all it wrote before that check)."""
    cache = cache or RepoCache()
    with ctx.lock(session_id):
        # read again under the lock
        s = unsaved if unsaved is not None and ctx.dry_run else lookup(ctx, session_id)
        if not s.live:
            if s.pending and not keep_worktree:
                from git_ao.preserve import removal
                finished = removal.finish_interrupted(ctx, s, cache)
                if finished is not None:
                    return finished
            if s.pending and s.save is not None and s.save.preserved_commit:
                # The save another run made is this one's final capture too
                # (`stopping.keep_before_stop` compares a checkpoint with it).
                return Outcome(s.id, Action.PRESERVE, Status.NOTHING, "already preserved",
                               facts(s, preserve_ref=preserve_ref(s.id),
                                     preserved_commit=s.save.preserved_commit))
            why = "already preserved" if s.pending else "session is terminated"
            return Outcome(s.id, Action.PRESERVE, Status.NOTHING, why, facts(s))
        if not s.branch and not s.worktree_path:
            return Outcome(s.id, Action.PRESERVE, Status.NOTHING, "skipped: no branch and no path")
        path = s.worktree_path
        entry, v = _check(ctx, s, cache, checkpoint=keep_worktree)
        if v is None:
            return _record_missing(ctx, s, entry, removed_by)
        # A checkpoint over work a conflicted restore left in the ref appends to the
        # history only: the ref and the record stay as they are, still holding it.
        held = keep_worktree and _holds_kept_work(s, path)
        # The walk, the witness for the removal, runs beside inspect's `git status`
        # and is over before the capture reads a file: its stat data is what the
        # check after the move compares with, and every entry touched since `since`
        # (taken before both) is compared by content there, so no write is missed.
        since = time.time_ns()
        # A checkpoint walks too: the walk's stat data gives the history entry every
        # path's permission bits and the empty directories.
        walking = None if ctx.dry_run else walk.Background(path, since)
        # What the capture reads that status does not decide (the config, the
        # index's flags and tree, the session's refs) is read beside it; status
        # reads a copy of the index (a dry run the real one, writing nothing).
        ahead = beside = None
        try:
            if not ctx.dry_run:
                ahead = capture.read_ahead(path, v.git_dir,
                                           lambda: cache.config(s.common_dir, path))
                beside = capture.Beside(lambda: _read_refs(s, path, v.git_dir))
            # A dry run leaves out the nested worktrees its real run removes first; a
            # checkpoint every nested one.
            st = capture.inspect(path, v.git_dir,
                                 cache.taken_first if ctx.dry_run and not keep_worktree else (),
                                 leave_nested=keep_worktree, ahead=ahead)
            # The time status wrote its copy back, for the trash's copy of the index
            # (`removal.take_away`): read before the capture turns the copy into W.
            fresh = (ahead.checksum, ahead.refreshed_ns()) \
                if ahead is not None and ahead.checksum and not keep_worktree \
                and not ctx.dry_run else None
            # A checkpoint waits for its walk only once the capture's trees are
            # written; a preserve's walk is over before the capture reads a file.
            walked = walking.result() if walking is not None and not keep_worktree else None
            read = _refs_of(beside)
        except BaseException as exc:
            if walking is not None:
                walking.abandon()
            if beside is not None:
                beside.wait()
            if ahead is not None:
                ahead.close()
            if isinstance(exc, capture.NestedWorktree):
                _refuse_nested_session(ctx, s, cache, exc)
            if isinstance(exc, capture.Unborn):
                raise history.unborn_refusal(s, exc) from None
            raise
        # A checkpoint's stat file for the next one is computed from the walk while
        # the capture's git processes run.
        signing = capture.Beside(lambda: unchanged.signatures(
            path, walking.result(), st.ignored, st.untracked)) \
            if keep_worktree and walking else None
        before = None if keep_worktree else walked
        # What keeps a worktree a removal would take away: a checkpoint removes none
        # (nor imports the removal's modules).
        keep: list[str] = []
        # The walk's blockers, whose lines end `keep`: grouped by reason in the
        # message (`_told`), one a path in the JSON and the log.
        blocked: list[walk.Blocker] = []
        if not keep_worktree:
            from git_ao.preserve import removal
            keep = removal.keep_reasons(v)
        if ctx.dry_run:
            # The real run keeps the worktree for these, which its capture finds and a
            # dry run's finds too (trees, no commit) where content conversion may
            # apply: a filter it runs may fail, a file may not come back byte for byte.
            made = capture.refuse(path, v.git_dir, st, lossy=True, lossy_ok=True,
                                  unfiltered_ok=True, leave_submodules=keep_worktree)
            what = "checkpoint" if keep_worktree else "preserve and remove"
            what = f"register and {what}" if unsaved is not None else what
            assert st.head is not None  # inspect refuses an unborn branch
            read_here = made is None
            if made is None:
                # No conversion: what the real capture names is read from status (a
                # name git will not store is in no save, nor a submodule's own state
                # a checkpoint leaves out), the config from git.
                left = capture.submodules_left_out(path, v.git_dir, st) \
                    if keep_worktree else {}
                hidden = capture.hidden_paths(path, query.index_flags(path))
                # A file that cannot be read is in no save (a tracked one saved as
                # the index holds it), and keeps the worktree.
                unread = capture.unreadable_files(path, capture.read_by_capture(st, hidden))
                only_unstaged = {e.path for e in st.changed if e.xy[0] == "."}
                made = capture.Capture(
                    head=st.head, branch=st.branch,
                    changed=[p for p in capture.saved_changes(st, left)
                             if p not in unread or p not in only_unstaged],
                    untracked=[p for p in st.untracked
                               if not walk.refused_name(p) and p not in unread],
                    unstorable=[p for p in st.untracked if walk.refused_name(p)],
                    config=query.config_map(path), submodules_left=left,
                    hidden=hidden, unreadable=unread)
            # As the real run counts and warns: what a required filter failed on, a
            # name git will not store, is no saved change.
            would = facts(s)
            # (Its walk names the directories that cannot be read, as the real one's.)
            blocked = [] if keep_worktree else _would_keep(ctx, s, path, st, cache, made)
            if keep_worktree:
                # The real checkpoint's capture names what its walk could not read
                # (a directory it cannot list or enter): so does its dry run.
                capture.unreadable_walked(made, st, walk.walk(path))
            if read_here:
                # As the real capture: each file that cannot be read, the walk's too
                # (an entry of a directory that cannot be searched), keeps the worktree.
                made.keep_reasons += capture.unreadable_reasons(path, made.unreadable,
                                                                st.untracked)
            warns = save_warnings(path, made, st.left_out if keep_worktree else [], would,
                                  inexact_kept=not keep_worktree)
            counts = f"{_counts(made)}, {len(st.ignored)} ignored"
            said = "".join(f"; warning: {w}" for w in warns)
            if not keep_worktree:
                keep += made.keep_reasons + [removal.where(path, b) for b in blocked]
            if keep and not keep_worktree:
                # As the real run: captured, recorded as a checkpoint, worktree kept.
                would["blocked"] = keep
                told = _told(path, keep, blocked)
                return with_warnings(Outcome(
                    s.id, Action.PRESERVE, Status.REFUSED, f"would save ({counts}{said}) "
                    f"and keep the worktree: {told}", would, would_save=True,
                    kept_for=told), warns)
            return with_warnings(Outcome(s.id, Action.PRESERVE, Status.OK,
                                         f"would {what}: {counts}{said}"
                                         + (held_note(s) if held else ""), would), warns)
        meta = capture.Meta(s.id, s.kind, s.harness, path, capture.session_facts(s))
        try:
            cap = capture.capture(path, v.git_dir, meta, st=st, walked=walked or walking,
                                  targeted=keep_worktree, defer=True, ahead=ahead,
                                  lossy_ok=True, always=pushing, unfiltered_ok=True,
                                  leave_submodules=keep_worktree, leave_nested=keep_worktree,
                                  keep_index=signing is not None)
        except BaseException:
            if signing is not None:
                signing.wait()
            raise
        finally:
            if walked is None and walking is not None:
                walking.abandon()
        if walked is None and walking is not None:
            walked = walking.result()
        crashpoint.hit("preserve:after-capture")
        keep += cap.keep_reasons
        if signing is not None and walked is not None and cap.ignored != st.ignored:
            # The capture read the worktree again: the stat file follows its reading.
            signing.wait()
            seen = walked
            signing = capture.Beside(lambda: unchanged.signatures(path, seen, cap.ignored,
                                                                  cap.untracked))
        if signing is not None:
            # What git can compare for the next checkpoint's proof, worked out while
            # the history's git processes run.
            signed = signing
            signing = capture.Beside(lambda: _stat_proof(signed, cap))
        prior = history.newest_of(read, s.id)  # what the entry below is compared with
        try:
            ref, appended, holder, not_appended = _store(
                ctx, s, path, cap, meta, read, held, v.git_dir,
                trigger or ("checkpoint" if keep_worktree else "preserve"))
            in_history = holder is not None
            captured: dict[str, str] = {}
            if before is not None:
                from git_ao.preserve import removal
                captured = witness.captured_blobs(path, cap.head, cap.worktree_tree,
                                                  cap.untracked_tree, cap.listed)
                # A file a required filter failed on, or that cannot be read, is named
                # by the capture's reason.
                blocked = [b for b in witness.blockers(
                    path, before, captured, cap.ignored, private_config=cap.private_config,
                    sessions=cache.session_paths(ctx, exclude=s.id))
                    if b.path not in cap.filter_failed and b.path not in cap.unreadable]
                keep += [removal.where(path, b) for b in blocked]
            private = _with_admin_only(ctx, s, path, cap.private_config, read, cap.head)
            if cap.ignored:
                ctx.log("preserve", s.id, "ignored-skipped", count=len(cap.ignored),
                        first=",".join(cap.ignored[:5]))
            terminate = not keep_worktree and not keep
            save = Save(s.id, s.common_dir, path, cap.branch, cap.head, cap.detached, ref,
                        cap.commit, private, now_ns(), removed_by=removed_by)
            if not held:  # else the record keeps the kept save and its attention
                # Committed (its fsync) while the stat proof is worked out beside it;
                # the stat file comes after the record, so a kill between them leaves
                # no stat file and the next checkpoint captures again.
                ctx.store.record_save(save, terminate=terminate)
            crashpoint.hit("preserve:after-db")
        finally:
            if signing is not None:
                signing.wait()
        if signing is not None and in_history and not cap.filter_failed \
                and not cap.unreadable:
            # (With a filter that failed, the next checkpoint runs it again: no stat
            # data shows the filter's program mended.)
            _record_unchanged(ctx, s, path, v.git_dir, cap, signing)
        data = facts(s, preserve_ref=ref, preserved_commit=cap.commit, changed=len(cap.changed),
                     untracked=len(cap.untracked), ignored=len(cap.ignored))
        if appended is not None:
            data["history_entry"] = appended.commit
        if not_appended:
            data["history_error"] = not_appended
        warns = save_warnings(path, cap, st.left_out if keep_worktree else [], data,
                              inexact_kept=not keep_worktree)
        warn = "; ".join(f"warning: {w}" for w in warns)
        hist = f"; not appended to the history: {not_appended}" if not_appended else ""
        top = holder if (keep_worktree and appended is None and cap.commit) else None
        if top is not None:
            # A checkpoint is its history entry; nothing appended: name the entry that
            # holds the state, and the preserve ref only as the ref it is. (A preserve
            # says the ref it saved in: the removal relies on that ref.)
            data["history_held"] = top.save
            at = s.save.preserved_commit if held and s.save is not None else cap.commit
            summary = _summary(cap, at, held_by=top, ref=preserve_ref(s.id))
        elif not cap.commit and appended is not None:
            # Clean, yet appended: "nothing to save" alone would hide the new entry.
            summary = _clean_entry(path, s.id, cap, prior) + _ignored_note(cap)
        else:
            summary = _summary(cap)
        summary += (f"; {warn}" if warn else "") + hist
        if held:
            assert s.save is not None
            ctx.log("preserve", s.id, "checkpoint", commit=cap.commit,
                    kept=s.save.preserved_commit)
            data["preserve_ref"] = preserve_ref(s.id)
            data["preserved_commit"] = s.save.preserved_commit
            data["kept_work"] = True
            # Its history entry is the only copy of this state: one that failed
            # needs the user.
            lost = "" if in_history else "; this capture is in no ref: run the checkpoint again"
            return with_warnings(Outcome(
                s.id, Action.CHECKPOINT, Status.ATTENTION if not in_history else Status.OK,
                f"{summary}{lost}; worktree kept" + held_note(s), data), warns)
        if keep_worktree:
            ctx.log("preserve", s.id, "checkpoint", ref=ref, commit=cap.commit)
            # A checkpoint is its history entry: one that failed needs the user.
            return with_warnings(Outcome(
                s.id, Action.CHECKPOINT, Status.ATTENTION if not_appended else Status.OK,
                f"{summary}; worktree kept", data), warns)
        if keep:
            ctx.log("preserve", s.id, "kept", ref=ref, commit=cap.commit, why="; ".join(keep))
            data["blocked"] = keep
            return with_warnings(Outcome(s.id, Action.PRESERVE, Status.REFUSED,
                                         f"{summary}; worktree kept: "
                                         f"{_told(path, keep, blocked)}", data), warns)
        assert before is not None
        from git_ao.preserve import removal
        from git_ao.store import trash
        # Not with entries git overlooks (assume-unchanged, skip-worktree): its
        # refresh marks them up to date unread, so their times would vouch for
        # files no one compared. Nor where the user's git compares fewer stat
        # fields than status did: an entry status saw changed by its ctime alone
        # is written as it was, and at a later time would look unchanged to it.
        flags = ahead.flags if ahead is not None else None
        overlooked = flags is None or bool(flags.assume_unchanged or flags.skip_worktree) \
            or not query.compares_every_stat_field(cap.config)
        taken = removal.take_away(ctx, s, v, cap.commit, before.started_ns,
                                  (fresh[0], fresh[1])
                                  if fresh and fresh[1] and not overlooked else None)
        if working:
            from git_ao.agents import processes
            still = processes.alive(working)
            if still:
                data["running_in_trash"] = [a.pid for a in still]
                ctx.log("preserve", s.id, "running-in-trash", trash=taken.worktree,
                        pids=" ".join(str(a.pid) for a in still))
        # Once the directory is in the trash its last steps (no program of the user's
        # runs in them) finish, whatever the bound.
        deadline = git.current_deadline()
        with git.unbounded():
            data["trash"] = taken.worktree
            volatile = ""
            kind = walk.fs_type(taken.path) if cap.ignored else None
            if kind in ("tmpfs", "ramfs"):
                # Only the trash copy holds them, and it shares the worktree's fate.
                data["volatile_trash"] = kind
                volatile = (f"; its {len(cap.ignored)} ignored path(s) are only in the trash "
                            f"copy {taken.worktree}, on a {kind} that a reboot clears")
            elif cap.ignored:
                # Ignored files are in no ref: say where they are, not that they are gone.
                volatile = (f"; its {len(cap.ignored)} ignored path(s) are kept in the trash copy "
                            f"{taken.worktree}, which git ao-restore brings back")
            summary = summary.replace(_ignored_note(cap), "") + volatile
            try:
                # The check after the move may run filters again: under the bound.
                with git.bounded(deadline):
                    settled = removal.settle(ctx, s, v, taken, before, cap, captured, save,
                                             meta)
            except TimedOut as exc:
                ctx.log("preserve", s.id, "late-check-timed-out", trash=taken.worktree,
                        hung=" | ".join(exc.hung))
                data["late_check_hung"] = exc.hung
                settled = removal.Settled(settled=False)
            late = settled.late
            trash.detach(taken)
            final = git.rev_parse(s.common_dir, ref) if settled.touched and ref else None
            lost = ""
            if final and final != cap.commit:
                # The capture after the move moved the ref on: name what it holds now.
                data["preserved_commit"] = final
                summary = _summary(cap, final).replace(_ignored_note(cap), "") + \
                    (f"; {warn}" if warn else "") + hist + volatile
                lost = _lost_late(ctx, s, cap.commit, final, data)
            if cache.batch:
                cache.defer_prune(s.common_dir, path)
            else:
                ctx.prune_worktrees(s.common_dir, only=[path])
            crashpoint.hit("preserve:after-remove")
            ctx.log("preserve", s.id, "preserved", ref=save.preserve_ref,
                    commit=final or save.preserved_commit, trash=taken.worktree,
                    late=len(late) + (not settled.settled) or None)
            if not settled.settled:
                data["still_changing"] = changing = late if settled.unsaved is None \
                    else settled.unsaved
                hung = data.get("late_check_hung")
                why = f"; {_late_check_note(hung)}" if hung is not None else ""
                return with_warnings(Outcome(
                    s.id, Action.PRESERVE, Status.ATTENTION,
                    f"{summary}; worktree removed, but what was written after the "
                    f"capture is not all in the ref ({', '.join(changing[:5]) or 'unchecked'}); "
                    f"its latest state is in {taken.worktree}, which restore brings back"
                    f"{why}{lost}", data), warns)
            if late:
                data["captured_late"] = late
                summary += f"; {len(late)} path(s) written after the first capture saved too"
            return with_warnings(Outcome(s.id, Action.PRESERVE,
                                         Status.ATTENTION if lost else Status.OK,
                                         f"{summary}; worktree removed{lost}", data), warns)


def _lost_late(ctx: Context, s: Session, first: str | None, final: str,
               data: OutcomeData) -> str:
    """After a capture from the moved copy replaced the first: when it lacks what the
    first held (a file deleted, or emptied, after the first capture), record that
    (`Save.holds_less_than`: only the history entry of the first still holds it)
    and return the clause naming it, else ""."""
    if not first:
        return ""
    try:
        paths = lacking.lost(s.common_dir, first, final)
    except AoError as exc:
        ctx.log("preserve", s.id, "late-loss-not-judged", error=str(exc))
        return ""
    if not paths:
        return ""
    ctx.store.mark_holds_less(s.id, first, final)
    data["holds_less_than"] = ObjectId(first)
    ctx.log("preserve", s.id, "holds-less", first=first, final=final, paths=len(paths))
    note, data["holds_less_entry"] = lacking.advice(s.common_dir, s.id, first, final=final,
                                                    judged=True,
                                                    then=f"after git ao-restore {s.id}, ")
    return f"; {note}" if note else ""


def _refuse_nested_session(ctx: Context, s: Session, cache: RepoCache,
                           exc: capture.NestedWorktree) -> None:
    """Raise NestedWorktree naming the session whose worktree `exc` found nested in
    `s`'s, when it is one (what to do then is to preserve that one first)."""
    inner = cache.session_paths(ctx, exclude=s.id).get(exc.path)
    if inner is not None:
        raise capture.NestedWorktree(
            f"session '{inner}' lives in '{exc.path}', nested in this worktree: preserve "
            "it first (git ao-preserve --all takes inner ones first)", exc.path) from None


def _late_check_note(hung: list[str]) -> str:
    """The note of a check after the move stopped at the `--timeout` deadline."""
    running = ", ".join(f"'{h}'" for h in hung[:3]) or "git"
    return f"the check after the move ran past --timeout, running {running}, and was stopped"


def _read_refs(s: Session, path: str, git_dir: str) -> dict[str, git.RefRead] | None:
    """Beside the status: the session's refs with the per-worktree ones and the
    history's newest entry in one reading (the session's lock is held: only
    another program moves them meanwhile, and every write compares and swaps),
    from git's files where they tell for sure (`query.refs_by_files`: loose refs
    and objects, as a save just written leaves them), else one `git for-each-ref`.
    None when git failed to give them (the steps that need them read them again
    and meet the failure there)."""
    refs = (preserve_ref(s.id), history.history_ref(s.id))
    read = query.refs_by_files(git_dir, refs, witness.ADMIN_REFS)
    if read is not None:
        return read
    try:
        return git.read_refs(path, *refs, *witness.ADMIN_REFS)
    except AoError:
        return None


def _refs_of(beside: capture.Beside | None) -> dict[str, git.RefRead] | None:
    """What `_read_refs` gave, None without it."""
    if beside is None:
        return None
    got = beside.result()
    assert got is None or isinstance(got, dict)
    return got


def _store(ctx: Context, s: Session, path: str, cap: capture.Capture, meta: capture.Meta,
           read: dict[str, git.RefRead] | None, held: bool, git_dir: str, trigger: str
           ) -> tuple[str, history.Entry | None, history.Entry | None, str | None]:
    """Write the capture's commits (capture(defer=True)), point the preserve ref at
    W (not when `held`: the ref keeps work a restore left) and append the save to
    the history. In the usual case that is one `git hash-object` (the entry's
    commit with the capture's), one ref transaction and one proof that every
    object is there (`_store_at_once`); anything else (a ref another program
    moved or wrote, a lock, an object pruned meanwhile, a message git would
    rewrite) takes the steps one at a time, reading the refs again
    (`_write_ref`, `_append_history`). Returns (the preserve ref written or "",
    the new entry or None, the newest entry holding the save or None, why it is
    not in the history)."""
    fast = _store_at_once(ctx, s, path, cap, meta, read, held, git_dir, trigger)
    if fast is not None:
        return fast
    capture.flush(path, cap)
    ref = _write_ref(ctx, s, path, cap, git_dir, meta) if cap.commit and not held else ""
    appended, holder, not_appended = _append_history(ctx, s, path, cap, meta, trigger)
    return ref, appended, holder, not_appended


def _store_at_once(ctx: Context, s: Session, path: str, cap: capture.Capture,
                   meta: capture.Meta, read: dict[str, git.RefRead] | None, held: bool,
                   git_dir: str, trigger: str
                   ) -> tuple[str, history.Entry | None, history.Entry | None, str | None] | None:
    """`_store` in one hash-object, one `git update-ref --stdin` moving both refs
    from what `read` holds (compare and swap: all or nothing) and one `git rev-list
    --objects`. None when it did not apply or did not go through: nothing of it
    stays (a ref moved is moved back), and `_store` takes the steps one by one."""
    top = history.newest_of(read, s.id)
    if read is None or isinstance(top, history.Unread):
        return None
    ref = preserve_ref(s.id)
    known = read.get(ref)
    older = known.oid if known is not None else None
    updates: list[tuple[str, str | None, str | None]] = []
    if cap.commit and not held:
        if older is not None and not daemon_refs.written_by_git_ao(
                path, older, known.message if known is not None and known.tree else None):
            return None  # another program's save: set aside first, one step at a time
        updates.append((ref, cap.commit, older))
    saved = cap
    entry: history.Entry | None = None
    more: list[tuple[ObjectId, bytes]] = []
    if not history.clean_as_newest(cap, top):
        if cap.commit is None:
            saved = dataclasses.replace(cap, unwritten=[])  # the capture says "nothing written"
            capture.ensure_commit(path, saved, meta, write=False)
            if not saved.unwritten:
                return None
        assert saved.commit is not None
        state = history.state_of(saved)
        if top is None or not top.same_state(state):
            plan = history.planned(s.id, saved.commit, state, trigger, changed=len(cap.changed),
                                   untracked=len(cap.untracked), top=top)
            if plan is None:
                return None
            entry, body = plan
            more = [*saved.unwritten] if saved is not cap else []
            more.append((entry.commit, body))
            updates.append((history.history_ref(s.id), entry.commit,
                            top.commit if top is not None else None))
    capture.flush(path, cap, more)
    holder = entry or top
    if not updates:
        return "", None, holder, None
    if entry is not None:
        crashpoint.hit("history:before-ref")
    try:
        moved = git.update_refs(path, updates, message=f"git-ao {trigger} {s.id}")
    except GitError as exc:
        ctx.log("preserve", s.id, "refs-one-by-one", error=str(exc))
        return None
    if not moved:
        return None
    written = "" if held or not cap.commit else ref
    if written:
        crashpoint.hit("preserve:after-ref")
    if entry is not None:
        crashpoint.hit("history:after-ref")
    # Every object the refs now need exists (a `git gc --prune=now` meanwhile)?
    tip = entry.commit if entry is not None else saved.commit
    assert tip is not None
    if not query.objects_complete(path, tip, cap.head, *([top.commit] if entry and top else [])):
        # Moved back (or deleted) from what was just written; then one step at a time,
        # which writes the capture again.
        ctx.log("preserve", s.id, "objects-pruned", commit=tip, attempt=0)
        if not git.update_refs(path, [(r, old, new) for r, new, old in updates],
                               message=f"git-ao {trigger} {s.id} (objects pruned)"):
            raise GitError(["update-ref", "--stdin"], 1,
                           f"{ref} moved while a pruned capture was taken back")
        return None
    if older and older != cap.commit and written:
        # The reflog keeps it while the ref lives; the log keeps its id for good.
        ctx.log("preserve", s.id, "superseded", ref=ref, commit=older)
    if entry is not None:
        ctx.log("preserve", s.id, "history-appended", trigger=trigger, entry=entry.commit,
                commit=entry.save)
    return written, entry, holder, None


def _append_history(ctx: Context, s: Session, path: str, cap: capture.Capture,
                    meta: capture.Meta, trigger: str,
                    top: history.Entry | None | history.Unread = history.UNREAD
                    ) -> tuple[history.Entry | None, history.Entry | None, str | None]:
    """Append the capture to the session's history (`history.add_capture`). The
    save itself is in the preserve ref already (or the worktree was clean), so a
    failure here is logged and said, and costs the preserve nothing. top: the
    newest entry as read before the capture (`history.newest_of`). Returns (the
    new entry or None, the newest entry now holding the capture or None when it
    could not be appended, why it could not be appended: with the lock file in the
    way, stale or held, see git_ao/git/lock.py)."""
    try:
        try:
            entry, holder = history.add_capture(path, s.id, cap, meta, trigger, top=top)
        except AoError as exc:
            # A killed git-ao's own lock on the history ref: removed, and once more.
            removed = None if ctx.dry_run else gitlock.clear_own_stale(str(exc))
            if removed is None:
                raise
            ctx.log("preserve", s.id, "removed-stale-lock", lock=removed)
            entry, holder = history.add_capture(path, s.id, cap, meta, trigger)
    except AoError as exc:
        ctx.log("preserve", s.id, "history-not-appended", error=str(exc))
        return None, None, gitlock.explain(str(exc), path)
    if entry is not None:
        ctx.log("preserve", s.id, "history-appended", trigger=trigger, entry=entry.commit,
                commit=entry.save)
    return entry, holder, None


def _stat_proof(signing: capture.Beside, cap: capture.Capture
                ) -> tuple[unchanged.Signed | None, unchanged.Delegated | None]:
    """`signing`'s `unchanged.signatures` and what of it `unchanged.delegate` leaves
    to git on the capture's index of W."""
    signed = signing.result()
    assert signed is None or isinstance(signed, unchanged.Signed)
    return signed, unchanged.delegate(signed, cap.worktree_index, cap.config)


def _record_unchanged(ctx: Context, s: Session, path: str, git_dir: str,
                      cap: capture.Capture, proof: capture.Beside) -> None:
    """Leave the stat file that lets the next checkpoint prove, without a capture,
    that nothing changed (`unchanged.record` of `proof`'s `_stat_proof`); a
    failure only costs that speed."""
    try:
        got = proof.result()
        assert isinstance(got, tuple)
        signed, delegated = got
        unchanged.record(ctx.store.dir, s.id, path, git_dir, s.common_dir, cap.branch,
                         signed, cap.config, delegated)
    except (OSError, AoError) as exc:
        ctx.log("preserve", s.id, "stat-not-recorded", error=str(exc))


def _would_keep(ctx: Context, s: Session, path: str, st: git.Status,
                cache: RepoCache, made: capture.Capture) -> list[walk.Blocker]:
    """A dry run's removal proof, without a capture: what in a walk of `path` no
    save would account for (the walk's own blockers, such as a mount point, a
    FIFO, an unreadable directory; a path neither tracked, changed, untracked nor
    ignored; a nested repository or worktree that must stay), as the real run's
    `witness.blockers` judges it with the saved trees, once the worktrees nested
    here that it removes first are gone. What `made`, the dry run's capture,
    names already is left out, as the real run leaves it out; the walk's
    unreadable directories are named in `made.unreadable`, as the real capture
    names them. Writes nothing."""
    assert st.head is not None  # inspect refuses an unborn branch
    real = os.path.realpath(path)
    # The worktrees nested here that this run removes first are gone by then.
    gone = frozenset(os.path.relpath(p, real) for p in cache.taken_first
                     if p.startswith(real.rstrip("/") + "/"))
    w = walk.walk(path, skip=gone)
    capture.unreadable_walked(made, st, w)
    tracked = set(query.ls_tree_paths(path, st.head))
    captured = {p for p in tracked | {e.path for e in st.changed} | set(st.untracked)
                if not walk.refused_name(p)}  # the capture leaves those out
    found = walk.unaccounted(w, captured, st.ignored, lambda paths: query.check_ignore(path, paths))
    found += nested.judge(path, w.nested, sessions=cache.session_paths(ctx, exclude=s.id),
                          submodules=tracked)
    return [b for b in sorted(found, key=lambda b: b.path)
            if b.path not in made.filter_failed and b.path not in made.unreadable]


def _told(path: str, keep: list[str], blocked: list[walk.Blocker]) -> str:
    """The message's words for why the worktree at `path` is kept: the reasons of
    `keep`, whose last lines are the `where` lines of `blocked`, those grouped by
    reason with a bounded list (`removal.grouped`)."""
    from git_ao.preserve import removal
    return "; ".join(keep[:len(keep) - len(blocked)] + removal.grouped(path, blocked))



def _with_admin_only(ctx: Context, s: Session, path: str, private: str | None,
                     read: dict[str, git.RefRead] | None = None, head: str | None = None
                     ) -> str | None:
    """Keep the commits only the worktree's admin dir holds (per-worktree refs, HEAD
    reflog entries) reachable under refs/ao/kept/<id>, and record the per-worktree
    refs in the save's private config so restore puts them back. read: the refs
    read before the capture (`git.read_refs`, with `witness.ADMIN_REFS`); head:
    HEAD as the capture found it. Returns the private config JSON."""
    found = witness.admin_only(path, read, head)
    if not found:
        return private
    witness.keep_alive(path, KEPT_PREFIX + s.id, found)
    ctx.log("preserve", s.id, "kept-alive", ref=KEPT_PREFIX + s.id, refs=len(found.refs),
            reflog=len(found.reflog))
    cfg = local_state.load(private)
    if found.refs:
        cfg.worktree_refs = dict(found.refs)
    return cfg.to_json()


def _write_ref(ctx: Context, s: Session, path: str, cap: capture.Capture, git_dir: str,
               meta: capture.Meta, read: dict[str, git.RefRead] | None = None) -> str:
    """Point the session's preserve ref at the capture, after setting aside a ref
    git-ao did not write, then prove every object the commit needs exists: a
    `git gc --prune=now` running between the objects' writing and the ref's could
    have pruned them. The capture is written again (once) when they are gone.
    read: the session's refs as read before the capture (`git.read_refs`), else
    the ref is read here. The ref moves only from the commit read (compare and
    swap): one written meanwhile by another program is read again and judged."""
    ref = preserve_ref(s.id)
    known = read.get(ref) if read is not None else None
    older = known.oid if known is not None else None if read is not None \
        else git.rev_parse(path, ref)
    message = known.message if known is not None and known.tree else None
    for _moved in range(3):
        if daemon_refs.set_aside_foreign(ctx, path, ref, older, s.id, message):
            older = None  # never replace another's save
        if older and older != cap.commit:
            # The reflog keeps it while the ref lives; the log keeps its id for good.
            ctx.log("preserve", s.id, "superseded", ref=ref, commit=older)
        try:
            _move_ref(ctx, s, path, cap, git_dir, meta, ref, older)
        except _RefMoved as exc:
            older, message = exc.now, None
            continue
        crashpoint.hit("preserve:after-ref")
        return ref
    raise GitError(["update-ref", ref], 1, f"{ref} kept moving while it was written")


class _RefMoved(Exception):
    """The preserve ref no longer held what was read (`now`: what it holds)."""

    def __init__(self, now: ObjectId | None) -> None:
        super().__init__(now)
        self.now = now


def _move_ref(ctx: Context, s: Session, path: str, cap: capture.Capture, git_dir: str,
              meta: capture.Meta, ref: str, older: ObjectId | None) -> None:
    """`_write_ref`'s write from `older` (None: the ref must not exist) and proof
    that every object is there. Raises _RefMoved, CannotCapture, GitError."""
    expect = older or git.NO_OBJECT
    for attempt in (1, 2):
        assert cap.commit is not None
        try:
            git.update_ref(path, ref, cap.commit, expect, message=f"git-ao preserve {s.id}")
            missing = witness.objects_missing(path, cap.commit, cap.head)
        except GitError:
            # update-ref itself refuses a commit that is gone.
            if not git.object_exists(path, cap.commit):
                missing = True
            else:
                now = git.rev_parse(path, ref)
                if now != (expect or None):
                    raise _RefMoved(now) from None
                raise
        if not missing:
            return
        ctx.log("preserve", s.id, "objects-pruned", commit=cap.commit, attempt=attempt)
        if attempt == 2:
            raise capture.CannotCapture(f"the objects of the capture of '{path}' were pruned "
                                         "while it was written (a git gc --prune=now?); run "
                                         "git ao-preserve again")
        expect = git.rev_parse(path, ref) or git.NO_OBJECT
        again = capture.capture(path, git_dir, meta,
                                leave_submodules=bool(cap.submodules_left),
                                leave_nested=bool(cap.nested_left))
        cap.commit, cap.worktree_tree, cap.index_tree, cap.untracked_tree = (
            again.commit, again.worktree_tree, again.index_tree, again.untracked_tree)


def _mirror_warning(path: str, conf: parse.Config) -> str:
    """A warning when a fetch refspec covers refs/ao/ (a mirror clone): the next
    `git fetch --prune` deletes the preserve refs (the trash copy still holds the
    work). conf: the repository's config, as the capture read it."""
    specs = witness.fetch_refspecs_covering(path, conf=conf)
    if not specs:
        return ""
    return (f"{specs[0]} covers refs/ao/, so git fetch --prune deletes the preserve "
            "ref; the trash keeps a copy")


def save_warnings(path: str, cap: capture.Capture, left_out: Sequence[str],
                  data: OutcomeData | None = None, *, inexact_kept: bool = False) -> list[str]:
    """The warnings a save of the worktree at `path` carries (`cap`, made by the
    real run or, with no commit, by its dry run): a fetch refspec covering
    refs/ao/, and what a checkpoint saved otherwise than byte for byte or left out
    rather than save nothing (a preserve's removal proof keeps the worktree for
    them, or its capture refuses a submodule's own state). left_out: the nested
    repositories and worktrees a checkpoint leaves out.
    inexact_kept: a preserve, which keeps the worktree for the inexact paths with
    a reason that names them (no warning of its own). Each list of paths also goes
    into `data` under its key. One line each, without "warning: "."""
    warns = [w for w in (_mirror_warning(path, cap.config),) if w]
    drivers = ", ".join(sorted(set(cap.filter_failed.values())))
    for key, paths, what in (
            ("inexact", cap.inexact, ("path(s) saved as git checks them out, not byte "
                                      "for byte (line-ending or filter conversion, "
                                      "core.fileMode)")),
            ("left_out", list(left_out),
             "nested repository or worktree path(s) left out of the save"),
            ("unstorable", cap.unstorable,
             "untracked path(s) whose names git will not store are in no save"),
            ("filter_failed", sorted(cap.filter_failed),
             (f"path(s) a required filter ({drivers}) failed on are saved as the index "
              "holds them, an untracked one not at all")),
            ("unreadable", sorted(cap.unreadable),
             ("path(s) that cannot be read (permission bits) are saved as the index holds "
              "them, an untracked one and what an unreadable directory holds not at all"))):
        if paths:
            if data is not None:
                data[key] = paths  # type: ignore[literal-required]
            if key == "inexact" and inexact_kept:
                continue
            shown = ", ".join(paths[:5]) + (", ..." if len(paths) > 5 else "")
            warns.append(f"{len(paths)} {what}: {shown}")
    subs = cap.submodules_left
    if subs:
        if data is not None:
            data["submodules_left_out"] = sorted(subs)
        named = [f"{p} ({why})" for p, why in sorted(subs.items())]
        shown = ", ".join(named[:5]) + (", ..." if len(named) > 5 else "")
        warns.append(f"{len(subs)} submodule(s) saved only as the commit each has checked "
                     f"out, their own state left out of the save: {shown}")
    return warns


def refusal(ctx: Context, s: Session, cache: RepoCache | None = None
            ) -> tuple[str, bool] | None:
    """Why `preserve_one` would not remove the worktree of the live session `s`, and
    whether it saves the work all the same (a file that would not come back byte
    for byte, a required filter that fails, a FIFO or socket, a stale index.lock, a
    locked worktree: the rest is saved as a checkpoint and the worktree kept), or
    None when it would go on (a session not live, or with nothing to save, is never
    refused). It is `preserve_one`'s own dry run (give a dry-run ctx: nothing is
    captured, locked or written), so every refusal and every reason to keep the
    worktree preserve has is judged here too, in its words; a git that fails there
    fails the preserve too, and is said the same way. A linked worktree nested in
    it that is a session is none (git ao-preserve --all takes inner ones first; its
    own refusal is its own)."""
    if not s.live or (not s.branch and not s.worktree_path):
        return None
    assert ctx.dry_run, "refusal runs preserve's dry run"
    cache = cache or RepoCache()
    try:
        out = preserve_one(ctx, s.id, False, cache)
    except capture.NestedWorktree as exc:
        return None if exc.path in cache.session_paths(ctx, exclude=s.id) else (str(exc), False)
    except AoError as exc:
        return str(exc), False
    if out.status == Status.REFUSED:
        # The words the run says (reasons of many paths grouped, `_told`).
        return (out.kept_for or out.message), bool(out.would_save)
    return None


def _check(ctx: Context, s: Session, cache: RepoCache, *, checkpoint: bool = False
           ) -> tuple[git.WorktreeEntry | None, worktree.Verified | None]:
    """preserve_one's checks before the capture. Returns (its registration, the
    verified worktree), or (its registration or None, None) when the worktree is
    gone or empty and is to be recorded missing. Raises Refused. checkpoint: the
    worktree stays, so work kept in the ref is no refusal (the ref is left alone)."""
    path = s.worktree_path
    if not os.path.isdir(s.common_dir):
        raise Refused(f"repository {s.common_dir} is gone, so there is nothing to save the "
                      f"worktree in; {repo_gone_advice(s, ctx.store.sessions())}")
    entries = cache.entries(s.common_dir)
    entry = worktree.find(entries, path)
    main = worktree.main_path(entries)
    if main and worktree.same_path(main, path):
        ctx.log("preserve", s.id, "refused-damaged", workspace=path)
        raise Refused(f"record of '{s.id}' names the main worktree {path}: the record is "
                      "damaged; nothing is removed")
    if walk.is_empty_dir(path):
        # An empty directory where the worktree was (a tmpfs mounted again after a
        # reboot, a `rm -rf` of its contents): as good as gone.
        _refuse_missing_with_state(s, entry)
        return entry, None
    if not os.path.lexists(path):
        moved = moved_to(entries, s)
        if moved:
            raise Refused(f"'{path}' was moved to {moved} (git worktree move; branch "
                          f"'{s.branch}' is checked out there): git worktree move {moved} "
                          f"{path} moves it back; nothing is recorded")
        _refuse_missing_with_state(s, entry)
        return entry, None
    if entry is None:
        raise Refused(_unregistered(s))
    if not checkpoint:
        _refuse_over_kept_work(ctx, s, path)
    return entry, worktree.verify(s.common_dir, path, entries)


def _unregistered(s: Session) -> str:
    """The refusal for a worktree git's registration does not name: when its `.git`
    file names an admin dir that is gone (a `rm -rf` of it; `git worktree repair`
    cannot rebuild one), says how to register the directory again with its files."""
    path = s.worktree_path
    why = f"'{path}' is not a worktree of {s.common_dir}; nothing is removed"
    named = gitfiles.read_gitfile(os.path.join(path, ".git"))
    if named is None or os.path.isdir(named):
        return why
    branch = s.branch or "<branch>"
    return (f"'{path}' is no worktree git knows: its .git file names {named}, which is gone; "
            f"nothing is removed. To save it, register it again: mv {path} {path}.old; git "
            f"worktree add {path} {branch}; copy the files of {path}.old except .git over "
            f"it; then git ao-preserve {s.id}")


def _holds_kept_work(s: Session, path: str) -> bool:
    """Does the session's ref still hold work a restore could not put back in full (a
    conflict, a blocked apply: `Save.needs_attention`) that is neither on the branch
    nor exactly in the worktree? Then a new capture must not replace the ref: restore
    deletes the ref with its reflog, so the older work would be lost. Runs `git
    rev-parse` (and more, only when the record needs attention)."""
    save = s.save
    if save is None or not save.needs_attention or not save.preserved_commit:
        return False
    oid = save.preserved_commit
    return git.rev_parse(path, preserve_ref(s.id)) == oid and not work_present_elsewhere(s, oid)


def held_note(s: Session) -> str:
    """What a checkpoint of a session whose ref holds kept work (`Save.needs_attention`)
    says of that ref."""
    return (f"; {preserve_ref(s.id)} is left as it is: it still holds the work the last "
            f"restore could not put back (git ao resolve {s.id} once applied)")


def _refuse_over_kept_work(ctx: Context, s: Session, path: str) -> None:
    """Raise Refused when `_holds_kept_work`: nothing is captured or removed; the
    user applies what they need and drops the ref, and a checkpoint meanwhile keeps
    the worktree's state in the history."""
    if not _holds_kept_work(s, path):
        return
    ref = preserve_ref(s.id)
    ctx.log("preserve", s.id, "refused-kept-work", ref=ref, commit=s.save and s.save.preserved_commit)
    raise Refused(f"{ref} still holds work the last restore could not put back "
                  f"(git stash show -p --include-untracked {ref}); apply what you need, then "
                  f"drop it with git ao resolve {s.id}; nothing is captured or removed "
                  f"(git ao checkpoint {s.id} appends the worktree's state to its history "
                  "meanwhile, leaving the ref as it is)")


def _refuse_missing_with_state(s: Session, entry: git.WorktreeEntry | None) -> None:
    """Raise Refused when the worktree directory is gone but its registration still
    holds state that differs from its HEAD (`gone.registration_holds`): recording
    it as gone would let restore prune the only copy of that index."""
    held = registration_holds(s, entry)
    if held is not None:
        raise Refused(f"{held_advice(s.worktree_path, *held)}; nothing is recorded")


def _record_missing(ctx: Context, s: Session, entry: git.WorktreeEntry | None,
                    removed_by: str | None = None) -> Outcome:
    """The user deleted the worktree directory: record a save with no ref so that
    restore re-adds the worktree from its branch (removed_by: see `preserve`)."""
    head = entry.head if entry else None
    branch = s.branch
    if entry and entry.branch:
        branch = BranchName(entry.branch.removeprefix("refs/heads/"))
    detached = bool(entry and entry.detached)
    if not head and branch:
        head = git.rev_parse(s.common_dir, f"refs/heads/{branch}")
    # A checkpoint (or a ref kept after a conflict) is the last known work of this
    # worktree: carry it over so restore applies it instead of forgetting it.
    ref = preserve_ref(s.id)
    kept = git.rev_parse(s.common_dir, ref)
    if not head and kept:
        # The branch went with the worktree (`git branch -D`): the save's first
        # parent is the HEAD it was taken on, which restore re-creates the branch at.
        head = git.rev_parse(s.common_dir, f"{kept}^1")
    # Nothing kept: the history may still hold work no save does (a prune dropped
    # the ref of a checkpoint whose work was in the worktree).
    note = "" if kept else history.newest_note(s.common_dir, s.id,
                                               then=f"after git ao-restore {s.id}, ")
    note = f"; nothing was saved, but {note}" if note else ""
    if ctx.dry_run:
        return Outcome(s.id, Action.PRESERVE, Status.OK,
                       f"would record the missing worktree{note}", facts(s))
    ctx.store.record_save(Save(s.id, s.common_dir, s.worktree_path, branch, head, detached,
                               ref if kept else "", kept, None, now_ns(),
                               removed_by=removed_by), terminate=True)
    ctx.log("preserve", s.id, "recorded-missing", workspace=s.worktree_path, branch=branch)
    return Outcome(s.id, Action.PRESERVE, Status.OK, "worktree directory was already gone; "
                   f"recorded so restore re-adds it{note}", facts(s))


def _summary(cap: capture.Capture, commit: str | None = None, *,
             held_by: history.Entry | None = None, ref: str = "") -> str:
    """What was saved; `commit` names the ref's commit when a later capture moved it;
    `held_by`: the history entry that already holds the capture (nothing appended),
    `ref` the preserve ref then named beside it."""
    ignored = _ignored_note(cap)
    if not cap.commit:
        return _clean_words(cap, "nothing to save") + ignored
    counts = _counts(cap)
    if held_by is not None:
        return (f"{counts}: history entry {held_by.number} ({preserve_ref_short(held_by.save)})"
                f" holds this state already ({ref} at {preserve_ref_short(commit or cap.commit)})"
                f"{ignored}")
    return f"{counts} saved in {preserve_ref_short(commit or cap.commit)}{ignored}"


def _counts(cap: capture.Capture) -> str:
    """The counts a save (or its dry run) names: changed, untracked, and the paths
    index flags hide."""
    # git status does not show what assume-unchanged or skip-worktree hides; the
    # capture saves it as it is on disk, so a count of the others alone misleads.
    hidden = (f", {len(cap.hidden)} behind index flags (assume-unchanged, skip-worktree)"
              if cap.hidden else "")
    return f"{len(cap.changed)} changed, {len(cap.untracked)} untracked{hidden}"


def _clean_entry(path: str, session_id: str, cap: capture.Capture,
                 prior: history.Entry | None | history.Unread) -> str:
    """What a clean capture that was appended to the history says: an entry was
    added (entry 1 now), and why the entry before did not hold this state (another
    branch, a HEAD that moved, changes gone since, other private state). prior:
    the newest entry before the append, as read beside the capture (read here,
    entry 2 now, when it was not)."""
    if isinstance(prior, history.Unread):
        try:
            prior = next((e for e in history.entries(path, session_id) if e.number == 2), None)
        except AoError:
            prior = None
    where = f"branch '{cap.branch}'" if cap.branch else "a detached HEAD"
    if prior is None:
        why = "the first entry of its history"
    elif prior.branch != cap.branch:
        why = "the entry before was taken on " + (
            f"branch '{prior.branch}'" if prior.branch else "a detached HEAD")
    elif prior.head != cap.head:
        why = f"the entry before was taken at {prior.head[:12]}"
    elif prior.changed or prior.untracked:
        why = f"the entry before held {prior.changed} changed, {prior.untracked} untracked"
    else:
        why = "the entry before held other private state (index flags, sparse patterns, modes)"
    return (f"{_clean_words(cap, 'no change against HEAD')}; history entry 1 added for HEAD "
            f"{cap.head[:12]} on {where} ({why})")


def _clean_words(cap: capture.Capture, then: str) -> str:
    """"clean, `then`", unless paths could not be read (`Capture.unreadable`: a
    directory that cannot be listed or entered, a file that cannot be read): then
    nothing says the worktree is clean, only that what could be read holds no
    change (the warning names those paths)."""
    if not cap.unreadable:
        return f"clean, {then}"
    return (f"{then} in what could be read ({len(cap.unreadable)} path(s) could not be read, "
            "their contents unknown)")


def _ignored_note(cap: capture.Capture) -> str:
    """The ignored paths of a worktree that stays: in no ref, left where they are."""
    return (f"; {len(cap.ignored)} ignored path(s) not in the ref, left in the worktree"
            if cap.ignored else "")


def preserve_ref_short(commit: str | None) -> str:
    """The short id printed for a preserve commit ('-' when none)."""
    return commit[:12] if commit else "-"
