"""Run one workflow over many sessions: threads, signals, and one session's error
kept from stopping the others."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Sequence

from git_ao import git, gitfiles
from git_ao.context import Context, session_paths
from git_ao.errors import AoError, Refused, TimedOut, Usage
from git_ao.git import lock as gitlock
from git_ao.git import parse, query
from git_ao.outcome import Action, Outcome, Status
from git_ao.save import capture
from git_ao.store.records import Session

# The start of the message of a session a signal kept from starting (its Outcome
# says started=False, which the report of an interrupted run counts).
NOT_STARTED = "not started: interrupted by a signal"


def default_jobs() -> int:
    """Sessions handled at once when neither -j nor the setting says: two per core
    (at least 4, at most 64). A session's work is mostly waiting on git processes
    and the disk, not on this process, so more threads than cores keep both busy;
    four per core cost more CPU than they hid (a `preserve --all` of 200 sessions
    on two cores: -j 8 took 12.6 to 13.3 s and 18.3 to 19.3 s of CPU, -j 4 about
    11 s and 17.2 s, alternating runs at loads of 1.7 to 4)."""
    return max(4, min(64, 2 * (os.cpu_count() or 1)))


def run_each(sessions: Sequence[Session], one: Callable[[Session], Outcome], jobs: int,
             progress: Callable[[Outcome], object] | None) -> list[Outcome]:
    """Run one(session) -> Outcome for every session, `jobs` at a time in worker
    threads (in this thread when jobs is 1), calling progress(Outcome) from the
    thread that ran it. Returns the Outcomes in input order."""
    results: list[Outcome | None] = [None] * len(sessions)

    def work(i: int) -> None:
        out = one(sessions[i])
        results[i] = out
        if progress:
            progress(out)

    if jobs <= 1 or len(sessions) <= 1:
        for i in range(len(sessions)):
            work(i)
    else:
        from concurrent.futures import ThreadPoolExecutor  # here: one session needs none
        with ThreadPoolExecutor(max_workers=jobs, initializer=_main_thread_signals) as pool:
            list(pool.map(work, range(len(sessions))))
    return [r for r in results if r is not None]


def log_failure(ctx: Context, out: Outcome) -> None:
    """A session refused or failed is a decision too: logged with git-ao's message
    (the shutdown that hit it has no terminal)."""
    if out.status in (Status.REFUSED, Status.FAILED):
        ctx.log(out.action, out.session_id, out.status, detail=out.message)


def _main_thread_signals() -> None:
    """Block SIGTERM and SIGINT in a worker thread (and the threads it starts), so the
    kernel delivers them to the main thread, whose handler then runs at once even
    while it waits for the workers, and no new session starts late."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})


def guarded(fn: Callable[[], Outcome], session_id: str, action: Action,
            ctx: Context | None = None) -> Outcome:
    """Run fn() for one session; its refusal or failure becomes that session's
    Outcome (status refused or failed) so the others go on. A git process
    stopped at the `--timeout` deadline (TimedOut) fails the session, with
    data "timed_out", "hung" (the programs it was running) and "removed" (the
    lock and scratch files the stopped git left, removed).

    A failure on a lock of git-ao's own under refs/ao/ that no process holds (a
    killed git-ao left it, git_ao/git/lock.py `clear_own_stale`) removes the lock,
    logs it in `ctx` (not on a dry run, nor without ctx) and runs fn() again, so running again converges; at most
    a few times, each a lock found stale anew."""
    for attempt in range(_OWN_LOCK_RETRIES + 1):
        try:
            return fn()
        except (TimedOut, AoError, OSError) as exc:
            removed = None
            if isinstance(exc, AoError) and ctx is not None and not ctx.dry_run \
                    and attempt < _OWN_LOCK_RETRIES:
                removed = gitlock.clear_own_stale(str(exc))
            if removed is None or ctx is None:
                return _failed(exc, session_id, action)
            ctx.log(action.value, session_id, "removed-stale-lock", lock=removed)
    raise AssertionError("unreachable: the last attempt returns")


# Stale locks of git-ao's own removed for one session before its failure is said.
_OWN_LOCK_RETRIES = 4


def _failed(exc: TimedOut | AoError | OSError, session_id: str, action: Action) -> Outcome:
    """The Outcome of a session fn() failed for (see guarded)."""
    if isinstance(exc, TimedOut):
        # Its git and what git ran are stopped; the session is where a kill at that
        # step leaves it, which every step is made to survive.
        return Outcome(session_id, action, Status.FAILED, str(exc),
                       {"timed_out": True, "hung": exc.hung, "removed": exc.removed})
    if isinstance(exc, AoError):
        status = Status.REFUSED if isinstance(exc, (Refused, Usage, capture.CannotCapture)) \
            else Status.FAILED
        # A lock file a killed git left is the common cause: say whether it is stale.
        return Outcome(session_id, action, status, gitlock.explain(str(exc)),
                       names_state=exc.names_state)
    # A full disk or a read-only file in the middle of one session: that session
    # fails where it stands (its worktree goes only after its row is committed),
    # and the others go on.
    where = f": {exc.filename}" if exc.filename else ""
    return Outcome(session_id, action, Status.FAILED, f"{exc.strerror or exc}{where}")


class RepoCache:
    """One `git worktree list` per repository per run, shared across threads.

    batch=True (a `preserve` run): worktrees are deregistered by one
    `git worktree prune` per repository at the end of the run (`flush_prunes`),
    not one per session."""

    def __init__(self, batch: bool = False) -> None:
        self._lists: dict[str, list[git.WorktreeEntry]] = {}
        self._lock = threading.Lock()
        self.batch = batch
        self._prune: dict[str, set[str]] = {}  # {common dir: worktree paths taken away}
        self._sessions: dict[str, str] | None = None
        self._configs: dict[str, tuple[query.ConfigStamp, parse.Config]] = {}
        self._config_locks: dict[str, threading.Lock] = {}
        # A dry run's sessions that the real run would remove: a worktree nested in
        # another is gone by the time the outer one is captured.
        self.taken_first: set[str] = set()

    def defer_prune(self, common_dir: str, path: str) -> None:
        """Deregister the worktree at `path`, taken away, with the run's one prune of
        its repository (`flush_prunes`)."""
        with self._lock:
            self._prune.setdefault(common_dir, set()).add(path)

    def flush_prunes(self, ctx: Context, jobs: int = 1) -> None:
        """Run the deferred `git worktree prune`s, `jobs` repositories at a time (each
        its own repository's: nothing one does is seen by another). A failure leaves
        only a prunable registration of a directory already gone (restore and `git
        ao-prune` prune it), so it is logged, not raised. A registration an earlier
        run took the worktree of and was killed before deregistering (a pending
        session's, its directory gone) is deregistered too."""
        with self._lock:
            taken, self._prune = self._prune, {}
        if not ctx.dry_run:
            for repo, paths in _left_registered(ctx).items():
                taken.setdefault(repo, set()).update(paths)
        repos = sorted(taken)

        def prune(repo: str) -> None:
            try:
                # Under the repository's lock, as every prune git-ao runs: one run's
                # locks for its prune are never taken for another's.
                with ctx.repo_lock(repo):
                    ctx.prune_worktrees(repo, only=taken[repo])
            except AoError as exc:
                ctx.log("preserve", None, "worktree-prune-failed", repo=repo, error=str(exc))

        if jobs <= 1 or len(repos) <= 1:
            for repo in repos:
                prune(repo)
            return
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=jobs, initializer=_main_thread_signals) as pool:
            list(pool.map(prune, repos))

    def session_paths(self, ctx: Context, exclude: str) -> dict[str, str]:
        """{real worktree path: id} of the sessions that are live or pending, but
        `exclude` (read once per run: nested sessions are named by it)."""
        with self._lock:
            if self._sessions is None:
                self._sessions = session_paths(ctx.store)
            return {p: i for p, i in self._sessions.items() if i != exclude}

    def config(self, common_dir: str, path: str) -> parse.Config:
        """The config as `git config --list` gives it in the worktree at `path` of the
        repository `common_dir`: one reading per repository per run, shared by its
        worktrees while it holds for all of them (`query.config_is_shared`: no
        include, no per-worktree config) and the files it was read from are as
        they were (`query.config_stamp`); else read in this worktree. Raises
        GitError."""
        with self._lock:
            reading = self._config_locks.setdefault(common_dir, threading.Lock())
        with reading:  # the worktrees of a repository starting at once wait for one reading
            stamp = query.config_stamp(common_dir)  # taken before the reading it stands for
            known = self._configs.get(common_dir)
            if stamp is not None and known is not None and known[0] == stamp:
                return _copy(known[1])
            conf = query.config_map(path)
            if stamp is not None and query.config_is_shared(conf):
                self._configs[common_dir] = (stamp, conf)
            return _copy(conf)

    def entries(self, common_dir: str, fresh: bool = False) -> list[git.WorktreeEntry]:
        with self._lock:
            if fresh or common_dir not in self._lists:
                self._lists[common_dir] = git.worktree_list(common_dir)
            return self._lists[common_dir]


def _left_registered(ctx: Context) -> dict[str, set[str]]:
    """{common dir: paths} of the registrations a run killed between its move and
    its prune left: a pending session's, its directory gone, whose trash entry
    was taken from that path, with no restore of it started and no live session
    at that path, and whose admin dir (its `commondir`) is older than the save
    (a worktree made there since is not the one taken away). Read from the
    records, the trash entries' names and each `worktrees/<id>/`, no process."""
    sessions = ctx.store.sessions()
    live = {os.path.realpath(s.worktree_path) for s in sessions if s.live and s.worktree_path}
    gone: dict[str, dict[str, Session]] = {}
    for s in sessions:
        save = s.save
        if not s.pending or save is None or save.restore_started_at is not None:
            continue
        real = os.path.realpath(save.worktree_path)
        if real not in live and not os.path.lexists(save.worktree_path):
            gone.setdefault(s.common_dir, {})[real] = s
    if not gone:
        return {}
    from git_ao.store import trash  # only when a pending session's directory is gone
    left: dict[str, set[str]] = {}
    for repo, by_path in gone.items():
        for admin, at in git.registrations(repo):
            owner = by_path.get(at)
            save = owner.save if owner is not None else None
            if owner is None or save is None:
                continue
            made = gitfiles.registered_ns(admin)
            taken = any(e.meta.path and os.path.realpath(e.meta.path) == at
                        for e in trash.entries(ctx.store.dir, owner.id))
            if taken and made is not None and made < save.saved_at:
                left.setdefault(repo, set()).add(save.worktree_path)
    return left


def _copy(conf: parse.Config) -> parse.Config:
    """A Config of its own for each caller: what one session does with it is never
    seen by another."""
    copy = parse.Config(conf)
    copy.pairs = list(conf.pairs)
    return copy
