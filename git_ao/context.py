"""What every workflow shares: the run's Context, session ids and their refs,
looking a session up, and the facts each Outcome carries."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass

from git_ao import git
from git_ao.errors import AoError, Refused, Usage, one_line
from git_ao.fs.gone import gone_worktree
from git_ao.outcome import Action, Outcome, Status, facts
from git_ao.store import locks, log
from git_ao.store.database import Store
from git_ao.store.records import Session

TYPE_CHECKING = False  # mypy takes any name TYPE_CHECKING as true; typing costs a listing
if TYPE_CHECKING:
    from typing import Any

REF_PREFIX = "refs/ao/preserved/"
# Commits only a taken-away worktree's admin dir kept alive (per-worktree refs,
# reflog entries), one commit per session with them as parents.
KEPT_PREFIX = "refs/ao/kept/"
# 200 bytes: the ao daemon's ids ("<project>-<n>") have no limit of their own, and
# the longest file name built from an id (trash/<id>.<19-digit ns>) must fit NAME_MAX 255.
MAX_ID = 200
ID_RE = re.compile(rf"^[A-Za-z0-9_][A-Za-z0-9._-]{{0,{MAX_ID - 1}}}$")


def give_up_hint(session_id: str) -> str:
    """How to give up a push or delete that cannot go through (a dead or mistyped
    remote): the local save stays. Here, below both, so the push lines and `git ao
    doctor` say it in one set of words."""
    return f"to give it up (the local save stays): git ao forget --push {session_id}"


@dataclass
class Context:
    """What every workflow call needs: the store and the run's switches."""

    store: Store
    dry_run: bool = False

    def lock(self, session_id: str) -> AbstractContextManager[None]:
        """Hold the session's lock (see locks.session_lock); none on a dry run, which
        writes nothing, not even a lock file."""
        if self.dry_run:
            return contextlib.nullcontext()
        return locks.session_lock(self.store.dir, session_id)

    def repo_lock(self, common_dir: str) -> AbstractContextManager[None]:
        """Hold the repository's lock (see locks.repo_lock); none on a dry run."""
        if self.dry_run:
            return contextlib.nullcontext()
        return locks.repo_lock(self.store.dir, common_dir)

    def prune_worktrees(self, common_dir: str, *, only: Collection[str] | None = None,
                        dry_run: bool = False) -> list[str]:
        """`git.worktree_prune` of the repository. only: the worktree paths whose
        registrations may go (those a command took away, or found stale at a path
        it restores to), every other registration staying; None (`git ao-prune`):
        every stale one but those `kept_registrations` names. Returns git's report
        lines."""
        if only is not None:
            return git.worktree_prune(common_dir, dry_run=dry_run, only=only)
        return git.worktree_prune(common_dir, dry_run=dry_run,
                                  keep=self.kept_registrations(common_dir))

    def kept_registrations(self, common_dir: str) -> list[str]:
        """The worktree paths whose registration a `git worktree prune` must keep
        although their directory is missing: a live session's (its disk not
        mounted yet: its index and HEAD live in that registration), and every
        one registered inside a pending session's worktree (made there after the
        capture, it went to the trash with it and comes back with it)."""
        real = os.path.realpath(common_dir)
        mine = [s for s in self.store.sessions() if os.path.realpath(s.common_dir) == real]
        # A directory that is there is looked at first: it is the common case, and
        # the cheaper question (one lstat against a realpath's one per component).
        kept = [s.worktree_path for s in mine
                if s.live and not os.path.lexists(s.worktree_path)]
        tops = tuple(os.path.realpath(s.save.worktree_path) + "/" for s in mine
                     if s.pending and s.save is not None
                     and not os.path.lexists(s.save.worktree_path))
        if tops:
            kept += [at for _admin, at in git.registrations(common_dir) if at.startswith(tops)]
        return kept

    def log(self, action: str, session_id: str | None, decision: str, **fields: Any) -> None:
        """Write one decision to the log (not on a dry run)."""
        if not self.dry_run:
            log.event(self.store.dir, action, session_id, decision, **fields)


def session_paths(store: Store) -> dict[str, str]:
    """{real worktree path: id} of the sessions that are live or pending (a worktree
    found nested in another's is named by it)."""
    return {os.path.realpath(s.worktree_path): s.id for s in store.sessions()
            if s.live or s.pending}


def preserve_ref(session_id: str) -> str:
    """The preserve ref of a session: refs/ao/preserved/<id>."""
    return REF_PREFIX + session_id


def validate_id(session_id: object) -> None:
    """Raise Usage unless `session_id` is 1 to MAX_ID of [A-Za-z0-9._-], not starting with
    '.' or '-', and refs/ao/preserved/<id> passes `git check-ref-format`."""
    if not isinstance(session_id, str) or not ID_RE.match(session_id) \
            or not git.check_ref_format(preserve_ref(session_id)):
        shown = one_line(str(session_id))  # one line, whatever was typed
        raise Usage(f"invalid session id '{shown}': use 1 to {MAX_ID} of A-Z a-z 0-9 "
                    ". _ -, not starting with '.' or '-', forming a valid ref name")


def lookup(ctx: Context, session_id: str) -> Session:
    """The session with this id; raises Usage for a malformed id, Refused for an unknown one."""
    validate_id(session_id)
    s = ctx.store.get(session_id)
    if s is None:
        raise Refused(f"no session '{session_id}' (see 'git ao list')")
    return s


def work_present_elsewhere(s: Session, oid: str) -> str:
    """Where the work of preserve commit `oid` provably is, besides the ref ('' if nowhere).

    On the branch: no untracked files, the branch tip's tree is the saved
    worktree tree, and the saved index holds nothing else (it is that tree, or
    the saved HEAD's tree with that HEAD in the branch's history, as after a
    checkpoint of unstaged edits that were committed later)."""
    return work_whereabouts(s, oid)[0]


def work_whereabouts(s: Session, oid: str, *, explain: bool = False) -> tuple[str, str]:
    """(`work_present_elsewhere`, why it is not) of preserve commit `oid`. The second
    is "" unless `explain` and the live worktree, though it may hold the work, was
    not proven to (`capture.unproven`: a file that would not come back byte for
    byte, a nested repository, an operation in progress, a git that failed)."""
    # Lazily: a listing imports this module, and the capture code it never runs.
    from git_ao.git import query
    from git_ao.save import capture
    try:
        head, i_tree, w_tree, u_tree = capture.saved_trees(s.common_dir, oid)
        if u_tree is None and s.branch:
            branch = f"refs/heads/{s.branch}"
            tip, head_tree = git.trees_of(s.common_dir, [branch, head])
            if tip == w_tree and (i_tree == w_tree or (
                    i_tree == head_tree and query.is_ancestor(s.common_dir, head, branch))):
                return f"committed on {s.branch}", ""
        if s.live and os.path.isdir(s.worktree_path):
            dirs = git.repo_dirs(s.worktree_path)
            if not explain:
                held = capture.holds(s.worktree_path, dirs.git_dir, oid)
                return (f"in the worktree {s.worktree_path}", "") if held else ("", "")
            why = capture.unproven(s.worktree_path, dirs.git_dir, oid)
            return (f"in the worktree {s.worktree_path}", "") if why is None else ("", why)
    except (AoError, IndexError) as exc:
        return "", (f"it could not be compared with the worktree: {exc}"
                    if explain and isinstance(exc, AoError) else "")
    return "", ""


def gone_live(sessions: Sequence[Session]) -> list[Outcome]:
    """An outcome that needs attention for each live session whose worktree is not
    at its path (moved, removed, or emptied: a worktree on a tmpfs is a mount point,
    which preserve keeps rather than remove, and a reboot clears it): nothing is
    pending, yet its work is not where it was. Says what brings it back."""
    out = []
    for s in sessions:
        gone = gone_worktree(s)
        if gone is not None:
            from git_ao.save import history
            out.append(Outcome(s.id, Action.RESTORE, Status.ATTENTION,
                               history.gone_advice(gone, s, sessions), facts(s),
                               not_restored=True))
    return out
