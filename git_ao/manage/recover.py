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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from git_ao import git
from git_ao.context import REF_PREFIX, validate_id
from git_ao.errors import AoError, Usage
from git_ao.git import query, worktree
from git_ao.git.parse import BranchName, ObjectId
from git_ao.outcome import Action, Outcome, Status
from git_ao.save import capture
from git_ao.store.records import Save, Session
from git_ao.store.states import KINDS

if TYPE_CHECKING:
    from git_ao.store.database import Store


# How deep `--recover DIR` looks for repositories, and what it never enters.
SCAN_DEPTH = 4
_SKIP = {".git", "node_modules", ".venv", "__pycache__"}


@dataclass
class Orphan:
    """A preserve ref whose session the database does not know."""

    repo: str  # absolute common git dir
    ref: str
    oid: ObjectId


def repositories(paths: Iterable[str] = (),
                 scan: Iterable[str] = ()) -> tuple[list[str], list[str]]:
    """Resolve repositories to look in.

    paths: directories inside repositories (each `-C`); scan: directories searched
    up to SCAN_DEPTH levels down for repositories (a `.git` entry, or a bare
    repository). Returns (sorted absolute common git dirs, list of problems as str).
    Runs `git rev-parse` in each candidate.
    """
    found: set[str] = set()
    problems: list[str] = []
    candidates = [(p, True) for p in paths]
    for top in scan:
        if not os.path.isdir(top):
            problems.append(f"'{top}' is not a directory")
            continue
        candidates += [(p, False) for p in _walk(top)]
    for path, named in candidates:
        try:
            # A git dir (`-C <repo>/.git`) names its repository too.
            found.add(os.path.realpath(git.common_dir_of(path)))
        except AoError as exc:
            if named:
                problems.append(str(exc))
    return sorted(found), problems


def _walk(top: str) -> Iterator[str]:
    """Directories under `top` that look like a repository (not following symlinks)."""
    for root, dirs, files in os.walk(top):
        depth = root[len(top):].count(os.sep)
        if ".git" in dirs or ".git" in files or {"HEAD", "objects", "refs"} <= set(dirs + files):
            yield root
        dirs[:] = [] if depth >= SCAN_DEPTH else \
            [d for d in dirs if d not in _SKIP and not os.path.islink(os.path.join(root, d))]


def orphans(store: Store, repos: Iterable[str]) -> list[Orphan]:
    """Preserve refs in `repos` (common git dirs) whose session id is not in the database
    (`git for-each-ref refs/ao/preserved/`)."""
    known = {s.id for s in store.sessions()}
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
    comes back pending. read: the commit's (time, message) when the repository
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
    path = t["Ao-Workspace"]
    saved_at = stamp * 1_000_000_000 if stamp is not None else 0
    live = os.path.isdir(path) and worktree.find(git.worktree_list(orphan.repo), path) is not None
    save = Save(sid, orphan.repo, path, branch, ObjectId(t["Ao-Head"]), detached, orphan.ref, orphan.oid,
                None, saved_at, saved_at if live else None)
    session = Session(sid, kind, "" if t["Ao-Harness"] == "-" else t["Ao-Harness"], orphan.repo,
                      branch, path, terminated=not live)
    for key, attr in capture.FACT_TRAILERS.items():
        if t.get(key):
            setattr(session, attr, t[key])
    return session, save


def recover(store: Store, repos: Iterable[str], *, dry_run: bool = False) -> list[Outcome]:
    """Rebuild the rows of every orphaned preserve ref in `repos`; returns one Outcome
    each (status ok, or refused for a ref that is not a git-ao preserve commit)."""
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
        facts = {"workspace_path": s.worktree_path, "kind": s.kind, "harness": s.harness,
                 "branch": s.branch, "repo": s.common_dir, "ref": o.ref, "commit": o.oid}
        if dry_run:
            out.append(Outcome(sid, Action.RECOVER, Status.OK, f"would recover as {state}", facts))
            continue
        if store.insert_recovered(s, save):
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
