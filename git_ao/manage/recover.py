"""Rebuild lost session records from preserve refs (`git ao doctor --recover`).

Each preserve commit describes itself in its message's `Ao-*` trailers
(capture.TRAILERS): session id, kind, harness, branch, workspace path, HEAD,
detached. For every `refs/ao/preserved/<id>` whose id the database does not
know, those trailers give back the session row and its save, so that
`git ao-restore` can bring the work back. Nothing here deletes anything, and a
known session is never overwritten.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from git_ao import git
from git_ao.context import REF_PREFIX, validate_id
from git_ao.errors import AoError, Usage
from git_ao.git import query, worktree
from git_ao.git.parse import BranchName, ObjectId
from git_ao.outcome import Action, Outcome, OutcomeData, Status
from git_ao.save import capture
from git_ao.store.records import Save, Session
from git_ao.store.states import KINDS

if TYPE_CHECKING:
    from git_ao.store.database import Store


# How deep `--recover DIR` (and its default, the home directory) looks for
# repositories, for how long (seconds), and the names it never enters.
SCAN_DEPTH = 5
SCAN_SECONDS = 30.0
_SKIP = {".git", "node_modules", ".venv", "__pycache__"}


@dataclass
class Search:
    """How a search for repositories went: the directories looked in and where
    it stopped for time (None when it finished)."""

    dirs: int = 0
    stopped_at: str | None = None
    skipped: list[str] = field(default_factory=list)  # other file systems not entered


@dataclass
class Orphan:
    """A preserve ref whose session the database does not know."""

    repo: str  # absolute common git dir
    ref: str
    oid: ObjectId


def repositories(paths: Iterable[str] = (), scan: Iterable[str] = (), *,
                 seconds: float = SCAN_SECONDS, search: Search | None = None
                 ) -> tuple[list[str], list[str]]:
    """Resolve repositories to look in.

    paths: directories inside repositories (each `-C`); scan: directories searched
    for repositories (see `_walk`: SCAN_DEPTH levels down, what git would skip
    left out), all of them within `seconds`; `search`, when given, says how the
    search went. Returns (sorted absolute common git dirs, list of problems as
    str). Runs `git rev-parse` in each candidate.
    """
    found: set[str] = set()
    problems: list[str] = []
    candidates = [(p, True) for p in paths]
    search = search if search is not None else Search()
    deadline = time.monotonic() + seconds
    for top in scan:
        if not os.path.isdir(top):
            problems.append(f"'{top}' is not a directory")
            continue
        candidates += [(p, False) for p in _walk(top, deadline, search)]
    for path, named in candidates:
        try:
            # A git dir (`-C <repo>/.git`) names its repository too.
            found.add(os.path.realpath(git.common_dir_of(path)))
        except AoError as exc:
            if named:
                problems.append(str(exc))
    return sorted(found), problems


def _walk(top: str, deadline: float, search: Search) -> Iterator[str]:
    """Directories under `top` that look like a repository (a `.git` entry, or a
    bare repository's HEAD, objects and refs), up to SCAN_DEPTH levels down, until
    `deadline` (time.monotonic()). Left out, as git's own discovery and walk
    leave them: symbolic links, other file systems (git stops its discovery at
    one unless GIT_DISCOVERY_ACROSS_FILESYSTEM is set), `.git` dirs, and, inside
    a repository's worktree, the directories it ignores (`query.ignored_dirs`);
    also node_modules, .venv and __pycache__ anywhere."""
    across = os.environ.get("GIT_DISCOVERY_ACROSS_FILESYSTEM", "").lower() in (
        "1", "true", "yes", "on")
    try:
        device = os.stat(top).st_dev
    except OSError:
        return
    # (directory, depth, ignored dirs of the worktree it is in: absolute paths)
    todo: list[tuple[str, int, frozenset[str]]] = [(top, 0, frozenset())]
    while todo:
        if time.monotonic() > deadline:
            search.stopped_at = todo[0][0]
            return
        root, depth, ignored = todo.pop()
        search.dirs += 1
        try:
            with os.scandir(root) as it:
                entries = list(it)
        except OSError:
            continue  # unreadable: git could not look there either
        names = {e.name for e in entries}
        if ".git" in names or {"HEAD", "objects", "refs"} <= names:
            yield root
            if ".git" in names and depth < SCAN_DEPTH:
                try:
                    ignored = frozenset(os.path.join(root, p) for p in query.ignored_dirs(root))
                except AoError:
                    pass  # git cannot read it: judged by the names alone
        if depth >= SCAN_DEPTH:
            continue
        for e in sorted(entries, key=lambda e: e.name, reverse=True):
            if e.name in _SKIP or not e.is_dir(follow_symlinks=False):
                continue
            path = e.path
            if path in ignored:
                continue
            try:
                if not across and e.stat(follow_symlinks=False).st_dev != device:
                    search.skipped.append(path)
                    continue
            except OSError:
                continue
            todo.append((path, depth + 1, ignored))


def orphans(store: Store | None, repos: Iterable[str]) -> list[Orphan]:
    """Preserve refs in `repos` (common git dirs) whose session id is not in the database,
    or is there with a repository that is missing (`git for-each-ref refs/ao/preserved/`).
    store None: no usable database, every ref is one."""
    # A record whose repository is missing (moved, on an unmounted disk) does not
    # hide its ref found elsewhere: recovering there re-points the record.
    known = {s.id for s in store.sessions() if os.path.isdir(s.common_dir)} if store else set()
    out = []
    for repo in repos:
        for ref, oid in git.for_each_ref(repo, REF_PREFIX):
            if ref[len(REF_PREFIX):] not in known:
                out.append(Orphan(repo, ref, oid))
    return out


def rebuild(store: Store | None, orphan: Orphan, read: tuple[int | None, str] | None = None
            ) -> tuple[Session, Save]:
    """The session and save that the preserve commit of `orphan` describes.

    A session whose workspace path is still a worktree of its repository comes
    back live, its save counted as a checkpoint (nothing pending); otherwise it
    comes back pending. A record of the session whose repository is missing (this
    one, moved) gives where its worktree is now (`_where_now`). read: the commit's (time, message) when the repository
    does not hold it (a dry run's scratch fetch). Raises Usage when the commit is not a git-ao preserve
    commit or its trailers do not match the ref (`git log -1 --format=%ct%n%B`).
    """
    sid = orphan.ref[len(REF_PREFIX):]
    stamp, body = read if read is not None else \
        query.commit_time_and_message(orphan.repo, orphan.oid)
    t = capture.parse_trailers(body)
    missing = [k for k in capture.TRAILERS if k not in t]
    if missing:
        raise Usage(f"{orphan.ref} ({orphan.oid[:12]}) is not a git-ao preserve commit "
                    f"(no {missing[0]} trailer); left as it is")
    if t["Ao-Session"] != sid:
        raise Usage(f"{orphan.ref} names session '{t['Ao-Session']}'; left as it is")
    validate_id(sid)
    kind = t["Ao-Kind"]
    if kind not in KINDS or not os.path.isabs(t["Ao-Workspace"]):
        raise Usage(f"{orphan.ref} has a malformed Ao-Kind or Ao-Workspace; left as it is")
    branch = None if t["Ao-Branch"] == "-" else BranchName(t["Ao-Branch"])
    detached = t["Ao-Detached"] == "true"
    path = _where_now(store, sid, orphan.repo, t["Ao-Workspace"])
    saved_at = stamp * 1_000_000_000 if stamp is not None else 0
    live = os.path.isdir(path) and worktree.find(git.worktree_list(orphan.repo), path) is not None
    save = Save(sid, orphan.repo, path, branch, ObjectId(t["Ao-Head"]), detached, orphan.ref, orphan.oid,
                _private_config(orphan.repo, sid, orphan.oid) or t.get(capture.LOCAL_TRAILER),
                saved_at,
                saved_at if live else None)
    session = Session(sid, kind, "" if t["Ao-Harness"] == "-" else t["Ao-Harness"], orphan.repo,
                      branch, path, terminated=not live)
    for key, attr in capture.FACT_TRAILERS.items():
        if t.get(key):
            setattr(session, attr, t[key])
    return session, save


def _where_now(store: Store | None, sid: str, repo: str, path: str) -> str:
    """The worktree path to record for session `sid` recovered from `repo`: when its
    record names another repository that is missing (this one, moved: `recover`
    replaces that record), the path that record holds (it says where the worktree
    was) moved with it if it was inside it (`gone.moved_with`); else `path`, the
    one the save's trailer names."""
    old = store.get(sid) if store is not None else None
    if old is None or old.common_dir == repo or os.path.isdir(old.common_dir):
        return path
    from git_ao.fs.gone import moved_with
    return moved_with(old.worktree_path or path, old.common_dir, repo)


def _private_config(repo: str, session_id: str, save: str) -> str | None:
    """What the worktree kept outside its commits at `save` (permission bits, empty
    directories, flags), which the record held: the history entry of that save
    has it whole (what the save's own message has leaves out the admin dir's
    part). None when no entry here holds it."""
    from git_ao.save import history
    try:
        return next((e.private_config for e in history.entries(repo, session_id)
                     if e.save == save), None)
    except AoError:
        return None


def recover(store: Store | None, repos: Iterable[str], *, dry_run: bool = False
            ) -> list[Outcome]:
    """Rebuild the rows of every orphaned preserve ref in `repos`; returns one Outcome
    each (status ok, or refused for a ref that is not a git-ao preserve commit).
    dry_run: only say what it would rebuild (store None: no usable database)."""
    out = []
    for o in orphans(store, repos):
        sid = o.ref[len(REF_PREFIX):]
        if _daemon_ref(o):
            from git_ao.save.daemon_refs import advice
            out.append(Outcome(sid, Action.RECOVER, Status.NOTHING, "saved by the ao daemon, not git-ao; "
                               f"left as it is: {advice(o.ref)}", {"repo": o.repo,
                                                                   "ref": o.ref}))
            continue
        try:
            s, save = rebuild(store, o)
        except AoError as exc:
            out.append(Outcome(sid, Action.RECOVER, Status.REFUSED, str(exc), {"repo": o.repo}))
            continue
        state = "pending" if save.pending else "live (its worktree is there; ref kept)"
        facts: OutcomeData = {"workspace_path": s.worktree_path, "kind": s.kind, "harness": s.harness,
                 "branch": s.branch, "repo": s.common_dir, "ref": o.ref, "commit": o.oid}
        if dry_run:
            out.append(Outcome(sid, Action.RECOVER, Status.OK, f"would recover as {state}", facts))
            continue
        assert store is not None  # only a dry run goes without one
        if store.insert_recovered(s, save, replace_if_missing=os.path.isdir):
            out.append(Outcome(sid, Action.RECOVER, Status.OK, f"recovered as {state} from {o.ref}",
                               facts))
        else:
            out.append(Outcome(sid, Action.RECOVER, Status.NOTHING, "already known", facts))
    return out


def _daemon_ref(o: Orphan) -> bool:
    """Is the orphan the ao daemon's own preserve ref (daemon_refs.is_daemon_commit)?"""
    from git_ao.save.daemon_refs import is_daemon_commit
    try:
        return is_daemon_commit(o.repo, o.oid)
    except AoError:
        return False
