"""The order of the steps of register, preserve, restore, kill, forget and prune.

The crash-safety invariant, per session: capture, write the ref, commit the
database row, and only then remove the worktree (`preserve_one`). A kill at
any point leaves the session live with its worktree, or saved with its work in
the ref and the row committed; running the command again converges.

Nothing here prints: every function returns Outcome records for the command
layer to render, and writes its decisions to the log.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from . import crashpoint, git, locks, log, snapshot, worktree
from .errors import AoError, GitError, Refused, Usage
from .store import Save, Session, Store, TRASH_DIR, now_ns

REF_PREFIX = "refs/ao/preserved/"
KINDS = ("worker", "orchestrator")
_ID_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$")

# Outcome statuses and the exit status each implies (SPEC 8).
STATUS_EXIT = {"ok": 0, "nothing": 0, "attention": 3, "refused": 1, "failed": 1}


@dataclass
class Outcome:
    """What happened to one session: status is one of STATUS_EXIT's keys."""

    session_id: str
    action: str
    status: str
    message: str
    data: dict = field(default_factory=dict)

    @property
    def exit_status(self) -> int:
        return STATUS_EXIT[self.status]


def exit_status(outcomes) -> int:
    """The worst status wins: 1, then 3, then 0 (128 is raised as Fatal, never returned)."""
    codes = {o.exit_status for o in outcomes}
    for code in (1, 3):
        if code in codes:
            return code
    return 0


@dataclass
class Context:
    """What every lifecycle call needs: the store and the run's switches."""

    store: Store
    dry_run: bool = False

    def lock(self, session_id: str) -> AbstractContextManager[None]:
        """Hold the session's lock (see locks.session_lock)."""
        return locks.session_lock(self.store.dir, session_id)

    def repo_lock(self, common_dir: str) -> AbstractContextManager[None]:
        """Hold the repository's lock (see locks.repo_lock)."""
        return locks.repo_lock(self.store.dir, common_dir)

    def log(self, action, session_id, decision, **fields):
        if not self.dry_run:
            log.event(self.store.dir, action, session_id, decision, **fields)


def preserve_ref(session_id) -> str:
    """The preserve ref of a session: refs/ao/preserved/<id>."""
    return REF_PREFIX + session_id


def validate_id(session_id):
    """Raise Usage unless `session_id` is 1 to 64 of [A-Za-z0-9._-], not starting with
    '.' or '-', and refs/ao/preserved/<id> passes `git check-ref-format`."""
    if not isinstance(session_id, str) or not _ID_RE.match(session_id) \
            or not git.check_ref_format(preserve_ref(session_id)):
        raise Usage(f"invalid session id '{session_id}': use 1 to 64 of A-Z a-z 0-9 . _ -, "
                    "not starting with '.' or '-', forming a valid ref name")


def lookup(ctx, session_id) -> Session:
    """The session with this id; raises Usage for a malformed id, Refused for an unknown one."""
    validate_id(session_id)
    s = ctx.store.get(session_id)
    if s is None:
        raise Refused(f"no session '{session_id}' (see 'git ao list')")
    return s


# ---------------------------------------------------------------- register


def register(ctx, path, *, session_id=None, kind="worker", harness="", agent_session_id=None,
             prompt=None) -> Session:
    """Register the linked worktree containing `path` as a live session.

    Returns the Session (not stored on a dry run). Raises Fatal (not a
    repository), Usage (bad id or kind, a bare repository, a main worktree,
    a path git cannot name in a trailer) or Refused (id or worktree taken).
    """
    if kind not in KINDS:
        raise Usage(f"invalid kind '{kind}': use worker or orchestrator")
    dirs = git.repo_dirs(path)
    if dirs.is_bare:
        raise Usage(f"'{path}' is a bare repository, not a linked worktree")
    if not dirs.is_linked_worktree:
        raise Usage(f"'{dirs.toplevel}' is the main worktree of its repository; "
                    "sessions live in linked worktrees (git worktree add)")
    top = os.path.realpath(dirs.toplevel)
    if "\n" in top:
        raise Usage("worktree paths with a newline are not supported")
    sid = session_id if session_id is not None else os.path.basename(dirs.git_dir.rstrip("/"))
    try:
        validate_id(sid)
    except Usage as exc:
        if session_id is not None:
            raise
        raise Usage(f"{exc} (the worktree's name); name the session with --id") from None
    holder = ctx.store.holder_of(top)
    if holder is not None:
        raise Refused(f"'{top}' already belongs to session '{holder.id}' ({holder.state})")
    if ctx.store.get(sid) is not None:
        raise Refused(f"session '{sid}' already exists")
    res = git.call(["symbolic-ref", "-q", "--short", "HEAD"], top)
    branch = res.text.strip() if res.status == 0 else None
    s = Session(sid, kind, harness or "", os.path.realpath(dirs.common_dir), branch, top,
                agent_session_id, prompt)
    if not ctx.dry_run:
        ctx.store.insert(s)
        ctx.log("register", sid, "registered", kind=kind, harness=harness, workspace=top)
    return s


def current_session(ctx, path=".") -> Session:
    """The session of the linked worktree containing `path`, registering it first
    (id from the worktree's name) when it is not known."""
    dirs = git.repo_dirs(path, inherit_repo_env=True)
    if dirs.is_bare or not dirs.is_linked_worktree:
        raise Usage("not inside a linked worktree: name sessions, or use --all")
    top = os.path.realpath(dirs.toplevel)
    for s in ctx.store.sessions():
        if s.workspace_path == top and s.live:
            return s
    return register(ctx, top)


# ---------------------------------------------------------------- preserve


class _RepoCache:
    """One `git worktree list` per repository per run, shared across threads.

    batch=True (a `preserve` run): worktrees are deregistered by one
    `git worktree prune` per repository at the end of the run (`flush_prunes`),
    not one per session."""

    def __init__(self, batch=False):
        self._lists = {}
        self._lock = threading.Lock()
        self.batch = batch
        self._prune = set()

    def defer_prune(self, common_dir):
        with self._lock:
            self._prune.add(common_dir)

    def flush_prunes(self, ctx):
        """Run the deferred `git worktree prune`s. A failure leaves only a prunable
        registration of a directory already gone (restore and `git ao-prune` prune
        it), so it is logged, not raised."""
        with self._lock:
            repos, self._prune = sorted(self._prune), set()
        for repo in repos:
            try:
                git.worktree_prune(repo)
            except AoError as exc:
                ctx.log("preserve", None, "worktree-prune-failed", repo=repo, error=str(exc))

    def entries(self, common_dir, fresh=False):
        with self._lock:
            if fresh or common_dir not in self._lists:
                self._lists[common_dir] = git.worktree_list(common_dir)
            return self._lists[common_dir]


def preserve(ctx, sessions, *, keep_worktree=False, jobs=1, timeout=None,
             progress=None, stop=None) -> list[Outcome]:
    """Preserve each session (SPEC 4); one session's failure never stops the others.

    sessions: list of Session. jobs: sessions handled at once (threads; the work
    is in git processes). timeout: seconds after which no new session starts
    (those stay live, which is safe). progress: callback(Outcome) per session.
    stop: a threading.Event; once set (SIGTERM, SIGINT) no new session starts and
    the ones in flight run to their end.
    Returns one Outcome per session, in input order.
    """
    cache = _RepoCache(batch=True)
    deadline = time.monotonic() + timeout if timeout is not None else None

    def one(s):
        if deadline is not None and time.monotonic() > deadline:
            return Outcome(s.id, "preserve", "refused",
                           "not started: --timeout spent; the session stays live")
        if stop is not None and stop.is_set():
            return Outcome(s.id, "preserve", "refused", NOT_STARTED + "; the session stays live")
        out = guarded(lambda: preserve_one(ctx, s.id, keep_worktree, cache), s.id, "preserve")
        _log_failure(ctx, out)
        crashpoint.hit("preserve:between-sessions")
        return out

    try:
        return _each(sessions, one, jobs, progress)
    finally:
        # Even when a session raised past guarded: what was moved away is deregistered.
        cache.flush_prunes(ctx)


# The start of the message of a session a signal kept from starting (cli.common counts them).
NOT_STARTED = "not started: interrupted by a signal"


def _each(sessions, one, jobs, progress) -> list[Outcome]:
    """Run one(session) -> Outcome for every session, `jobs` at a time in worker
    threads (in this thread when jobs is 1), calling progress(Outcome) from the
    thread that ran it. Returns the Outcomes in input order."""
    results = [None] * len(sessions)

    def work(i):
        out = one(sessions[i])
        results[i] = out
        if progress:
            progress(out)

    if jobs <= 1 or len(sessions) <= 1:
        for i in range(len(sessions)):
            work(i)
    else:
        with ThreadPoolExecutor(max_workers=jobs, initializer=_main_thread_signals) as pool:
            list(pool.map(work, range(len(sessions))))
    return results


def _log_failure(ctx, out):
    """A session refused or failed is a decision too: logged with git-ao's message
    (the shutdown that hit it has no terminal)."""
    if out.status in ("refused", "failed"):
        ctx.log(out.action, out.session_id, out.status, detail=out.message)


def _main_thread_signals():
    """Block SIGTERM and SIGINT in a worker thread (and the threads it starts), so the
    kernel delivers them to the main thread, whose handler then runs at once even
    while it waits for the workers, and no new session starts late."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})


def guarded(fn, session_id, action) -> Outcome:
    """Run fn() for one session; its refusal or failure becomes that session's
    Outcome (status refused or failed) so the others go on."""
    try:
        return fn()
    except AoError as exc:
        status = "refused" if isinstance(exc, (Refused, Usage, snapshot.CannotCapture)) \
            else "failed"
        return Outcome(session_id, action, status, str(exc))
    except OSError as exc:
        # A full disk or a read-only file in the middle of one session: that session
        # fails where it stands (its worktree goes only after its row is committed),
        # and the others go on.
        where = f": {exc.filename}" if exc.filename else ""
        return Outcome(session_id, action, "failed", f"{exc.strerror or exc}{where}")


def preserve_one(ctx, session_id, keep_worktree=False, cache=None, unsaved=None) -> Outcome:
    """Preserve one session, strictly: check, capture and write the ref, commit the row,
    then remove the verified worktree. Returns an Outcome; raises AoError on refusal.

    unsaved: on a dry run, a Session that `register` would create (not stored yet)."""
    cache = cache or _RepoCache()
    with ctx.lock(session_id):
        # read again under the lock
        s = unsaved if unsaved is not None and ctx.dry_run else lookup(ctx, session_id)
        if not s.live:
            if s.pending and not keep_worktree:
                finished = _finish_removal(ctx, s, cache)
                if finished is not None:
                    return finished
            why = "already preserved" if s.pending else "session is terminated"
            return Outcome(s.id, "preserve", "nothing", why, _facts(s))
        if not s.branch and not s.workspace_path:
            return Outcome(s.id, "preserve", "nothing", "skipped: no branch and no path")
        path = s.workspace_path
        if not os.path.isdir(s.repo):
            raise Refused(f"repository {s.repo} is gone; see 'git ao-prune'")
        entries = cache.entries(s.repo)
        entry = worktree.find(entries, path)
        main = worktree.main_path(entries)
        if main and worktree.same_path(main, path):
            ctx.log("preserve", s.id, "refused-damaged", workspace=path)
            raise Refused(f"record of '{s.id}' names the main worktree {path}: the record is "
                          "damaged; nothing is removed")
        if not os.path.lexists(path):
            moved = _moved_to(entries, s, path)
            if moved:
                raise Refused(f"'{path}' is gone and branch '{s.branch}' is checked out in "
                              f"{moved} (git worktree move?); move it back to {path}; "
                              "nothing is recorded")
            return _record_missing(ctx, s, entry)
        if entry is None:
            raise Refused(f"'{path}' is not a worktree of {s.repo}; nothing is removed")
        _refuse_over_kept_work(ctx, s, path)
        v = worktree.verify(s.repo, path, entries)
        st = snapshot.inspect(path, v.git_dir)
        keep = _keep_reasons(v)
        if ctx.dry_run:
            what = "checkpoint" if keep_worktree else "preserve and remove"
            what = f"register and {what}" if unsaved is not None else what
            return Outcome(s.id, "preserve", "ok", f"would {what}: {len(st.changed)} changed, "
                           f"{len(st.untracked)} untracked, {len(st.ignored)} ignored",
                           _facts(s))
        meta = snapshot.Meta(s.id, s.kind, s.harness, path)
        cap = snapshot.capture(path, v.git_dir, meta, st=st)
        crashpoint.hit("preserve:after-capture")
        keep += cap.keep_reasons
        ref = ""
        if cap.commit:
            ref = preserve_ref(s.id)
            older = git.rev_parse(path, ref)
            if older and older != cap.commit:
                # The reflog keeps it while the ref lives; the log keeps its id for good.
                ctx.log("preserve", s.id, "superseded", ref=ref, commit=older)
            git.update_ref(path, ref, cap.commit, message=f"git-ao preserve {s.id}")
            crashpoint.hit("preserve:after-ref")
        if cap.ignored:
            ctx.log("preserve", s.id, "ignored-skipped", count=len(cap.ignored),
                    first=",".join(cap.ignored[:5]))
        terminate = not keep_worktree and not keep
        save = Save(s.id, s.repo, path, cap.branch, cap.head, cap.detached, ref, cap.commit,
                    cap.worktree_config, now_ns())
        ctx.store.record_save(save, terminate=terminate)
        crashpoint.hit("preserve:after-db")
        facts = _facts(s, preserve_ref=ref, preserved_commit=cap.commit, changed=len(cap.changed),
                       untracked=len(cap.untracked), ignored=len(cap.ignored))
        summary = _summary(cap)
        if keep_worktree:
            ctx.log("preserve", s.id, "checkpoint", ref=ref, commit=cap.commit)
            return Outcome(s.id, "checkpoint", "ok", f"{summary}; worktree kept", facts)
        if keep:
            ctx.log("preserve", s.id, "kept", ref=ref, commit=cap.commit, why="; ".join(keep))
            return Outcome(s.id, "preserve", "refused",
                           f"{summary}; worktree kept: {'; '.join(keep)}", facts)
        trash = worktree.take_away(v, ctx.store.subdir(TRASH_DIR), s.id, crashpoint.hit,
                                   prune=not cache.batch)
        if cache.batch:
            cache.defer_prune(s.repo)
        crashpoint.hit("preserve:after-remove")
        facts["trash"] = trash
        ctx.log("preserve", s.id, "preserved", ref=ref, commit=cap.commit, trash=trash)
        return Outcome(s.id, "preserve", "ok", f"{summary}; worktree removed", facts)


def _refuse_over_kept_work(ctx, s, path):
    """Raise Refused when the session's ref still holds work a restore could not put
    back in full (a conflict, a blocked apply: `Save.needs_attention`) and that work
    is neither on the branch nor exactly in the worktree: a new capture would
    replace the ref, and restore deletes the ref with its reflog, so the older work
    would be lost. Nothing is captured or removed; the user applies what they need
    and drops the ref."""
    save = s.save
    if save is None or not save.needs_attention or not save.preserved_commit:
        return
    ref = preserve_ref(s.id)
    oid = save.preserved_commit
    if git.rev_parse(path, ref) != oid or _work_present_elsewhere(s, oid):
        return
    ctx.log("preserve", s.id, "refused-kept-work", ref=ref, commit=oid)
    raise Refused(f"{ref} still holds work the last restore could not put back "
                  f"(git stash show -p --include-untracked {ref}); apply what you need, then "
                  f"drop it with git update-ref -d {ref} {oid}; nothing is captured or removed")


def _finish_removal(ctx, s, cache) -> Outcome | None:
    """Finish a removal a crash interrupted (the row was committed, the worktree is
    still there): take the verified worktree away only when it holds exactly the saved
    work (`snapshot.holds`, or clean at the saved HEAD when nothing was saved).
    Returns an Outcome, or None when there is no worktree left to remove."""
    save = s.save
    path = save.worktree_path
    if not os.path.isdir(s.repo) or not os.path.lexists(path):
        return None
    entries = cache.entries(s.repo, fresh=True)
    if worktree.find(entries, path) is None:
        return None
    v = worktree.verify(s.repo, path, entries)
    keep = _keep_reasons(v)
    if keep:
        return Outcome(s.id, "preserve", "refused", f"already preserved; worktree kept: "
                       f"{'; '.join(keep)}", _facts(s))
    if not _holds_save(path, v.git_dir, save):
        ctx.log("preserve", s.id, "kept-changed", workspace=path)
        return Outcome(s.id, "preserve", "refused", f"already preserved, but {path} changed "
                       "since; it is kept (git ao-restore reuses it)", _facts(s))
    if ctx.dry_run:
        return Outcome(s.id, "preserve", "ok", "would finish the interrupted removal",
                       _facts(s))
    trash = worktree.take_away(v, ctx.store.subdir(TRASH_DIR), s.id, crashpoint.hit,
                               prune=not cache.batch)
    if cache.batch:
        cache.defer_prune(s.repo)
    crashpoint.hit("preserve:after-remove")
    ctx.log("preserve", s.id, "removal-finished", ref=save.preserve_ref, trash=trash)
    return Outcome(s.id, "preserve", "ok", "already preserved; finished the interrupted "
                   "removal", _facts(s, trash=trash))


def _holds_save(path, git_dir, save) -> bool:
    """Does the worktree hold exactly what `save` recorded (nothing newer), with the
    preserve ref still holding it too? (A restore killed after deleting the ref
    leaves the worktree as the work's only home.)"""
    if save.preserved_commit:
        return git.rev_parse(path, save.preserve_ref) == save.preserved_commit and \
            snapshot.holds(path, git_dir, save.preserved_commit)
    try:
        cap = snapshot.capture(path, git_dir, None, write=False)
    except snapshot.CannotCapture:
        return False
    return cap.clean and cap.head == save.head and cap.branch == save.branch


def _keep_reasons(v) -> list:
    reasons = []
    if v.entry.locked is not None:
        why = f" ({v.entry.locked})" if v.entry.locked else ""
        reasons.append(f"it is locked{why} (git worktree unlock)")
    lock = os.path.join(v.git_dir, "index.lock")
    if os.path.exists(lock):
        reasons.append(f"its index is locked by another process: {lock}")
    return reasons


def _moved_to(entries, s, path) -> str | None:
    """Another existing worktree holding the session's branch, when its recorded path
    is gone (a `git worktree move`): recording it missing would hide where it went."""
    if not s.branch:
        return None
    for e in entries:
        if e.branch == f"refs/heads/{s.branch}" and not worktree.same_path(e.path, path) \
                and os.path.isdir(e.path):
            return e.path
    return None


def _record_missing(ctx, s, entry) -> Outcome:
    """The user deleted the worktree directory: record a save with no ref so that
    restore re-adds the worktree from its branch."""
    head = entry.head if entry else None
    branch = s.branch
    if entry and entry.branch:
        branch = entry.branch.removeprefix("refs/heads/")
    detached = bool(entry and entry.detached)
    if not head and branch:
        head = git.rev_parse(s.repo, f"refs/heads/{branch}")
    # A checkpoint (or a ref kept after a conflict) is the last known work of this
    # worktree: carry it over so restore applies it instead of forgetting it.
    ref = preserve_ref(s.id)
    kept = git.rev_parse(s.repo, ref)
    if ctx.dry_run:
        return Outcome(s.id, "preserve", "ok", "would record the missing worktree", _facts(s))
    ctx.store.record_save(Save(s.id, s.repo, s.workspace_path, branch, head, detached,
                               ref if kept else "", kept, None, now_ns()), terminate=True)
    ctx.log("preserve", s.id, "recorded-missing", workspace=s.workspace_path, branch=branch)
    return Outcome(s.id, "preserve", "ok", "worktree directory was already gone; recorded so "
                   "restore re-adds it", _facts(s))


def _summary(cap) -> str:
    ignored = f"; {len(cap.ignored)} ignored path(s) not saved" if cap.ignored else ""
    if not cap.commit:
        return "clean, nothing to save" + ignored
    return (f"{len(cap.changed)} changed, {len(cap.untracked)} untracked saved in "
            f"{preserve_ref_short(cap.commit)}{ignored}")


def preserve_ref_short(commit) -> str:
    return commit[:12] if commit else "-"


def _facts(s: Session, **extra) -> dict:
    d = {"workspace_path": s.workspace_path, "kind": s.kind, "harness": s.harness,
         "branch": s.branch, "repo": s.repo}
    d.update(extra)
    return d


# ---------------------------------------------------------------- restore


def restore(ctx, sessions, *, jobs=1, progress=None, stop=None) -> list[Outcome]:
    """Restore each pending session (SPEC 5); one failure never stops the others.

    sessions: list of Session. jobs: sessions handled at once (threads); sessions
    of one repository place their worktrees one at a time (`restore_one`) and
    apply their work in parallel. progress: callback(Outcome) per session, called
    from the thread that ran it. stop: a threading.Event; once set (SIGTERM,
    SIGINT) no new session starts, the ones in flight run to their end and the
    rest stay pending. Returns one Outcome per session, in input order.
    """
    def one(s):
        if stop is not None and stop.is_set():
            return Outcome(s.id, "restore", "refused", NOT_STARTED + "; the session stays pending")
        out = guarded(lambda: restore_one(ctx, s.id), s.id, "restore")
        _log_failure(ctx, out)
        crashpoint.hit("restore:between-sessions")
        return out

    return _each(sessions, one, jobs, progress)


def restore_one(ctx, session_id) -> Outcome:
    """Re-create the session's worktree at its recorded path on its branch, apply the
    preserved commit, delete the ref after a clean apply, mark the session live.

    The repository's lock (`locks.repo_lock`) makes the check that the branch
    and the path are free and the `git worktree add` one step among threads and
    processes. Returns an Outcome; raises Refused (branch taken, path taken,
    repository gone) or another AoError, the session staying pending."""
    with ctx.lock(session_id):
        s = lookup(ctx, session_id)
        if not s.pending:
            return Outcome(s.id, "restore", "nothing",
                           "live, nothing pending" if s.live else "terminated, nothing pending",
                           _facts(s))
        save = s.save
        path = save.worktree_path
        if not os.path.isdir(s.repo):
            raise Refused(f"repository {s.repo} is gone; the session stays pending until it "
                          "is back (if it moved: git ao forget --force "
                          f"{s.id}, then git ao doctor --recover -C <its new path>)")
        want_branch = None if save.detached else save.branch
        with ctx.repo_lock(s.repo):
            reused = _place_worktree(ctx, s, save, path, want_branch)
            if ctx.dry_run:
                how = "reuse the worktree at" if reused else "re-create the worktree at"
                return Outcome(s.id, "restore", "ok", f"would {how} {path}", _facts(s))
        if not reused:
            crashpoint.hit("restore:after-worktree-add")
        outcome = _apply_saved(ctx, s, save, path, reused)
        # An "ok" apply dropped the ref (under this session's lock nothing rewrites it).
        kept = outcome.status != "ok" and bool(save.preserve_ref) \
            and git.rev_parse(s.repo, save.preserve_ref) is not None
        ctx.store.mark_restored(s.id, ref_kept=kept)
        crashpoint.hit("restore:after-db")
        ctx.log("restore", s.id, outcome.status, detail=outcome.message, workspace=path)
        return outcome


def _place_worktree(ctx, s, save, path, want_branch) -> bool:
    """Step 1 of restore, under the repository's lock: prune a stale registration of
    `path`, refuse a branch checked out elsewhere or a path that is not this
    session's worktree, then `git worktree add` (not on a dry run).
    Returns True when the worktree at `path` is reused; raises Refused."""
    entries = git.worktree_list(s.repo)
    entry = worktree.find(entries, path)
    if entry is not None and entry.locked is not None and not entry.is_main \
            and not os.path.lexists(path) and save.restore_interrupted and not ctx.dry_run:
        _unlock_interrupted_add(ctx, s, path)
        entries = git.worktree_list(s.repo)
        entry = worktree.find(entries, path)
    if entry is not None and entry.prunable and not os.path.lexists(path):
        if not ctx.dry_run:
            git.worktree_prune(s.repo)
        entries = git.worktree_list(s.repo) if not ctx.dry_run else \
            [e for e in entries if e is not entry]
        entry = None
    if want_branch:
        for e in entries:
            if e.branch == f"refs/heads/{want_branch}" and not worktree.same_path(e.path, path):
                raise Refused(f"branch '{want_branch}' is checked out in {e.path}; "
                              "free it and run git ao-restore again (still pending)")
    reused = os.path.lexists(path)
    if reused:
        try:
            _check_reusable(s, save, entry, path, want_branch)
        except Refused as exc:
            if save.restore_interrupted:
                raise Refused(f"{exc}; a restore of this session was interrupted while adding "
                              "it: if nothing there is yours, remove it and run git ao-restore "
                              "again") from None
            raise
        if save.restore_interrupted and not ctx.dry_run \
                and _set_aside_unfinished(ctx, s, save, path, entries):
            reused = False
    if not reused and not ctx.dry_run:
        ctx.store.mark_restore_started(s.id)
        _add_worktree(s.repo, path, save, want_branch)
    return reused


def _set_aside_unfinished(ctx, s, save, path, entries) -> bool:
    """The worktree at `path` is what an interrupted restore of this save left (the
    row says a restore started and never finished, so no agent has worked there).
    When it does not already hold the saved work, and every untracked path in it is
    one the saved commit or its HEAD has, so nothing in it exists only there, move
    it into the trash and deregister it, so the restore starts again.
    Returns True when it was set aside."""
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
    if st.untracked:
        known = set()
        if commit:
            head, i_tree, w_tree, u_tree = snapshot.saved_trees(s.repo, commit)
            for tree in (i_tree, w_tree, u_tree):
                if tree:
                    known.update(git.ls_tree_paths(s.repo, tree))
        if save.head:
            known.update(git.ls_tree_paths(s.repo, f"{save.head}^{{tree}}"))
        if any(p not in known for p in st.untracked):
            return False
    v = worktree.verify(s.repo, path, entries)
    if v.entry.locked is not None:
        _unlock_interrupted_add(ctx, s, path)
    trash = worktree.take_away(v, ctx.store.subdir(TRASH_DIR), s.id, crashpoint.hit)
    ctx.log("restore", s.id, "interrupted-restore-set-aside", workspace=path, trash=trash)
    return True


def _unlock_interrupted_add(ctx, s, path):
    """Unlock the registration of `path` that this session's killed restore left:
    git locks a new worktree ("initializing") until its `git worktree add` is done,
    and git's prune keeps locked registrations, so the next add would fail."""
    git.worktree_unlock(s.repo, path)
    ctx.log("restore", s.id, "interrupted-add-unlocked", workspace=path)


def _check_reusable(s, save, entry, path, want_branch):
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


def _add_worktree(repo, path, save, want_branch):
    """`git worktree add` at the recorded path; when the save recorded private config
    (sparse-checkout patterns, config.worktree) it is put in place before checkout."""
    wc = snapshot.load_config(save.worktree_config)
    first = snapshot.needs_config_first(wc)
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
        snapshot.put_config(git.repo_dirs(path).git_dir, wc)
        git.checkout_head(path)


def _apply_saved(ctx, s, save, path, reused) -> Outcome:
    """Step 2 of restore: apply, then delete the ref only after a clean apply."""
    facts = _facts(s, preserve_ref=save.preserve_ref, preserved_commit=save.preserved_commit)
    commit = save.preserved_commit
    wc = snapshot.load_config(save.worktree_config)
    if not commit:
        problems = [] if reused else snapshot.put_flags(path, wc)
        if problems:
            return Outcome(s.id, "restore", "attention", f"worktree back at {path}; "
                           + "; ".join(problems), facts)
        return Outcome(s.id, "restore", "ok", f"worktree back at {path} (nothing was saved)",
                       facts)
    dirs = git.repo_dirs(path)
    ref = save.preserve_ref
    if not git.object_exists(path, commit):
        return Outcome(s.id, "restore", "attention", f"preserved commit {commit} is missing; "
                       "worktree is back without the work", facts)
    if reused and snapshot.holds(path, dirs.git_dir, commit):
        _drop_ref(path, ref, commit)
        return Outcome(s.id, "restore", "ok", f"worktree at {path} already held the preserved "
                       "work", facts)
    if reused and not git.status(path, ignored=False).clean:
        return Outcome(s.id, "restore", "attention",
                       f"worktree at {path} has other changes; the work stays in {ref}: "
                       f"git stash apply --index {ref}", facts)
    crashpoint.hit("restore:during-apply")
    applied = snapshot.apply(path, commit, sparse="sparse_checkout" in wc)
    crashpoint.hit("restore:after-apply")
    if applied.outcome == "clean":
        if wc.get("recheckout"):
            snapshot.recheckout(path, dirs.git_dir, commit)
        problems = snapshot.put_flags(path, wc, fresh=not reused)
        head = git.rev_parse(path, "HEAD")
        if not problems and head == save.head \
                and not snapshot.holds(path, dirs.git_dir, commit):
            # The proof: the worktree must now capture to exactly the saved trees.
            problems.append("the worktree does not hold exactly the saved work")
        if problems:
            facts["placed"] = snapshot.saved_paths(path, commit)
            return Outcome(s.id, "restore", "attention", f"applied at {path}, but "
                           f"{'; '.join(problems)}; work kept in {ref}", facts)
        crashpoint.hit("restore:before-ref-delete")
        _drop_ref(path, ref, commit)
        crashpoint.hit("restore:after-ref-delete")
        moved = f" (its branch moved since the save: HEAD was {save.head[:12]}, now " \
            f"{head[:12]})" if save.head and head and head != save.head else ""
        return Outcome(s.id, "restore", "ok", f"restored at {path}{moved}", facts)
    facts["paths"] = applied.paths
    facts["placed"] = applied.placed
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
    return Outcome(s.id, "restore", "attention", msg, facts)


def _drop_ref(cwd, ref, commit):
    # `git update-ref -d <ref> <commit>` deletes only while the ref still points at
    # `commit`, so one process does both; a ref that moved or is gone is left alone,
    # and only a failure with the ref still at `commit` is an error.
    if not ref:
        return
    res = git.call(["update-ref", "-d", ref, commit], cwd)
    if res.status != 0 and git.rev_parse(cwd, ref) == commit:
        res.check()


# ---------------------------------------------------------------- kill, forget


def kill(ctx, session_id) -> Outcome:
    """End a live session: remove its worktree only when it is clean (`git worktree
    remove`, never forced), and mark it terminated with nothing pending."""
    with ctx.lock(session_id):
        s = lookup(ctx, session_id)
        if s.pending:
            raise Refused(f"session '{s.id}' has preserved work pending; restore it, or "
                          f"'git ao forget --force {s.id}'")
        if not s.live:
            return Outcome(s.id, "kill", "nothing", "already terminated", _facts(s))
        path = s.workspace_path
        if os.path.lexists(path):
            v = worktree.verify(s.repo, path)
            st = snapshot.inspect(path, v.git_dir)
            if not st.clean:
                raise Refused(f"'{path}' has uncommitted work ({len(st.changed)} changed, "
                              f"{len(st.untracked)} untracked); commit it or preserve it")
            if st.branch is None and not git.is_reachable_from_refs(path, st.head):
                raise Refused(f"'{path}' is detached at {st.head[:12]}, which no ref holds; "
                              "create a branch first")
            if ctx.dry_run:
                return Outcome(s.id, "kill", "ok", f"would remove {path}", _facts(s))
            git.worktree_remove(s.repo, path)
        elif ctx.dry_run:
            return Outcome(s.id, "kill", "ok", "would mark terminated", _facts(s))
        ctx.store.mark_terminated(s.id)
        ctx.log("kill", s.id, "killed", workspace=path)
        return Outcome(s.id, "kill", "ok", f"terminated; {path} removed", _facts(s))


def forget(ctx, session_id, force=False) -> Outcome:
    """Drop a session's record. Refuses while work is pending unless `force`; the
    preserve ref itself is left for `git ao-prune --force ID` or for recovery."""
    with ctx.lock(session_id):
        s = lookup(ctx, session_id)
        if s.pending and not force:
            raise Refused(f"session '{s.id}' has preserved work pending; restore it, or use "
                          "--force")
        if ctx.dry_run:
            return Outcome(s.id, "forget", "ok", "would drop the record", _facts(s))
        ctx.store.delete(s.id)
        ctx.log("forget", s.id, "forgotten", forced=force or None)
        kept = f"; {s.save.preserve_ref} kept" if s.pending and s.save.preserve_ref else ""
        return Outcome(s.id, "forget", "ok", f"record dropped{kept}", _facts(s))


# ---------------------------------------------------------------- prune


def prune(ctx, *, expire_before=None, force_ids=()) -> list[Outcome]:
    """Clean what can be cleaned without losing work (SPEC 6).

    expire_before: epoch seconds; trash entries older are deleted (None: all).
    force_ids: sessions the user named with --force: their refs and records go.
    Returns one Outcome per thing done (or that would be done on a dry run).
    """
    out = []
    sessions = ctx.store.sessions()
    repos = sorted({s.repo for s in sessions})
    named = set(force_ids)
    unknown = sorted(named - {s.id for s in sessions})
    if unknown:
        # Checked before anything is touched: a typo must not run the rest of prune.
        raise Refused(f"no session '{unknown[0]}' (see 'git ao list'); nothing pruned")
    for listed in sessions:
        # Decide under the session's lock, on a fresh read: a preserve or restore
        # running at the same moment must not have its record or ref pulled away.
        with ctx.lock(listed.id):
            s = ctx.store.get(listed.id)
            if s is None:
                continue
            if s.id in named:
                out.append(_prune_forced(ctx, s))
            elif not os.path.isdir(s.repo):
                out.append(_prune_record(ctx, s, f"repository {s.repo} is gone"))
            elif not s.live and not s.pending:
                out.append(_prune_record(ctx, s, "terminated, nothing pending"))
    for repo in repos:
        if os.path.isdir(repo):
            out += _prune_repo(ctx, repo, {s.id: s for s in sessions if s.repo == repo})
    pending = {s.id for s in ctx.store.sessions() if s.pending}
    out += _prune_trash(ctx, expire_before, pending)
    return out


def _prune_record(ctx, s, why) -> Outcome:
    if not ctx.dry_run:
        ctx.store.delete(s.id)
    ctx.log("prune", s.id, "record-dropped", why=why)
    return Outcome(s.id, "prune-record", "ok", f"{'would drop' if ctx.dry_run else 'dropped'} "
                   f"record ({why})", _facts(s))


def _prune_forced(ctx, s) -> Outcome:
    ref = preserve_ref(s.id)
    oid = git.rev_parse(s.repo, ref) if os.path.isdir(s.repo) else None
    if not ctx.dry_run:
        if oid:
            git.delete_ref(s.repo, ref, oid)
        ctx.store.delete(s.id)
    ctx.log("prune", s.id, "forced", ref=ref if oid else None, commit=oid)
    verb = "would delete" if ctx.dry_run else "deleted"
    what = f"{ref} (was {oid})" if oid else "no ref"
    return Outcome(s.id, "prune-ref", "ok", f"{verb} {what} and the record", _facts(s))


def _prune_repo(ctx, repo, by_id) -> list[Outcome]:
    out = []
    for ln in git.worktree_prune(repo, dry_run=ctx.dry_run):
        ctx.log("prune", None, "worktree-prune", repo=repo, detail=ln)
        out.append(Outcome("-", "prune-worktree", "ok", ln, {"repo": repo}))
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
        out.append(Outcome("-", "prune-tmp", "ok", f"{'would remove' if ctx.dry_run else 'removed'}"
                           f" {path}", {"repo": repo}))
    for ref, oid in git.for_each_ref(repo, REF_PREFIX):
        sid = ref[len(REF_PREFIX):]
        if sid not in by_id:
            out.append(Outcome(sid, "prune-ref", "nothing", f"{ref} ({oid[:12]}) has no record; "
                               "kept (git ao doctor --recover)", {"repo": repo}))
            continue
        with ctx.lock(sid):
            s = ctx.store.get(sid)
            if s is None or git.rev_parse(repo, ref) != oid:
                continue  # changed under us: leave it for the next prune
            if s.pending and s.save.preserved_commit == oid:
                continue
            where = _work_present_elsewhere(s, oid)
            if where:
                if not ctx.dry_run:
                    git.delete_ref(repo, ref, oid)
                    ctx.store.forget_ref(sid, oid)  # listings stop showing a deleted ref
                ctx.log("prune", sid, "ref-deleted", ref=ref, commit=oid, why=where)
                out.append(Outcome(sid, "prune-ref", "ok",
                                   f"{'would delete' if ctx.dry_run else 'deleted'} {ref} "
                                   f"(was {oid}): its work is {where}", _facts(s)))
            else:
                # Said every time: a kept ref no row points at (an old checkpoint, a
                # conflict left to resolve) is otherwise easy to forget.
                out.append(Outcome(sid, "prune-ref", "nothing",
                                   f"kept {ref} ({oid[:12]}): its work is neither on the branch "
                                   "nor in the worktree; see it with git stash show -p "
                                   f"--include-untracked {ref}", _facts(s)))
    return out


def _work_present_elsewhere(s, oid) -> str:
    """Where the work of preserve commit `oid` provably is, besides the ref ('' if nowhere).

    On the branch: no untracked files, the branch tip's tree is the saved
    worktree tree, and the saved index holds nothing else (it is that tree, or
    the saved HEAD's tree with that HEAD in the branch's history, as after a
    checkpoint of unstaged edits that were committed later)."""
    try:
        head, i_tree, w_tree, u_tree = snapshot.saved_trees(s.repo, oid)
        if u_tree is None and s.branch:
            branch = f"refs/heads/{s.branch}"
            tip, head_tree = git.trees_of(s.repo, [branch, head])
            if tip == w_tree and (i_tree == w_tree or (
                    i_tree == head_tree and git.is_ancestor(s.repo, head, branch))):
                return f"committed on {s.branch}"
        if s.live and os.path.isdir(s.workspace_path):
            dirs = git.repo_dirs(s.workspace_path)
            if snapshot.holds(s.workspace_path, dirs.git_dir, oid):
                return f"in the worktree {s.workspace_path}"
    except (AoError, IndexError):
        return ""
    return ""


def _leftover_scratch(repo) -> list:
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
            prefix = next((p for p in snapshot.SCRATCH_PREFIXES if name.startswith(p)), None)
            if prefix is None:
                continue
            pid = name[len(prefix):].split(".")[0]
            if pid.isdigit() and _alive(int(pid)):
                continue
            found.append(os.path.join(d, name))
    return found


def _alive(pid) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _prune_trash(ctx, expire_before, pending) -> list[Outcome]:
    """Delete trash entries older than `expire_before`, except those of sessions in
    `pending`: their ignored files (.env, local settings) may still be wanted."""
    trash = os.path.join(ctx.store.dir, TRASH_DIR)
    if not os.path.isdir(trash):
        return []
    out = []
    for name in sorted(os.listdir(trash)):
        path = os.path.join(trash, name)
        if name.rsplit(".", 1)[0] in pending:
            continue
        stamp = name.rsplit(".", 1)[-1]
        when = int(stamp) / 1e9 if stamp.isdigit() else os.lstat(path).st_mtime
        if expire_before is not None and when >= expire_before:
            continue
        if not ctx.dry_run:
            shutil.rmtree(path, ignore_errors=True) if os.path.isdir(path) else os.unlink(path)
        ctx.log("prune", name.rsplit(".", 1)[0], "trash-deleted", path=path)
        out.append(Outcome(name.rsplit(".", 1)[0], "prune-trash", "ok",
                           f"{'would delete' if ctx.dry_run else 'deleted'} {path}"))
    return out


def list_json(s: Session) -> dict:
    """A session as a JSON-ready dict (the `git ao list --json` record)."""
    save = s.save
    return {
        "id": s.id, "kind": s.kind, "harness": s.harness, "state": s.state,
        "branch": s.branch, "workspace_path": s.workspace_path, "repo": s.repo,
        "agent_session_id": s.agent_session_id,
        "preserve_ref": save.preserve_ref if save and save.holds_ref else None,
        "preserved_commit": save.preserved_commit if save and save.holds_ref else None,
        "detached": save.detached if save else None,
        "saved_at": _iso(save.saved_at) if save else None,
        # a checkpoint records restored_at = saved_at: it was never restored
        "restored_at": _iso(save.restored_at) if save and save.restored_at
        and save.restored_at > save.saved_at else None,
        "created_at": _iso(s.created_at),
    }


def _iso(ns) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ns / 1e9))


def show_stat(s: Session) -> str:
    """What `git stash show --stat --include-untracked` prints for the session's saved work."""
    if not s.save or not s.save.preserved_commit or not os.path.isdir(s.repo):
        return ""
    if not git.object_exists(s.repo, s.save.preserved_commit):
        return ""
    return git.diff_stat(s.repo, s.save.preserved_commit)


def dumps(obj) -> str:
    return json.dumps(obj, indent=2, sort_keys=False)
