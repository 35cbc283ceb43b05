"""The ao daemon's own preserve refs, which share git-ao's `refs/ao/preserved/<id>`.

The daemon saves a dirty worktree as a commit whose parent is HEAD (no parent on
an unborn branch) and whose whole message is `ao preserved <session id>`, under
`refs/ao/preserved/<id>`, and restores it with `git cherry-pick --no-commit`;
after a conflict it keeps the ref. git-ao's preserve commits carry `Ao-*`
trailers (capture.TRAILERS), so the two are told apart by the `Ao-Session`
trailer. A commit git-ao did not write is never replaced: it is moved to
`refs/ao/daemon/<id>` first, where `git ao show` reports it.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from git_ao import git
from git_ao.git import query
from git_ao.git.parse import ObjectId

DAEMON_PREFIX = "refs/ao/daemon/"
DAEMON_SUBJECT = "ao preserved "


class _Logger(Protocol):
    """What set_aside_foreign needs of the run's Context (a layer above): its log."""

    def log(self, action: str, session_id: str | None, decision: str,
            **fields: Any) -> None: ...


def written_by_git_ao(cwd: str, oid: str, message: str | None = None) -> bool:
    """Does commit `oid` carry an Ao-Session trailer (git-ao wrote it)?

    message: the commit's message, read already (`git.read_refs`): when its last
    paragraph is all trailers, as git-ao writes it, it is read here; else (and
    without it) `git log -1 --format=%(trailers:key=Ao-Session,valueonly)` decides.
    Raises GitError when `oid` is not a commit of the repository at `cwd`."""
    if message is not None:
        # git reads trailers in the last paragraph, never in the subject's.
        title, sep, last = message.strip("\n").rpartition("\n\n")
        block = last.split("\n")
        if sep and title and all(_TRAILER.match(ln) for ln in block):
            return any(ln.startswith("Ao-Session: ") and ln[12:].strip() for ln in block)
    return bool(query.trailer(cwd, oid, "Ao-Session"))


# One line of a trailer block as git-ao writes them ("Key: value").
_TRAILER = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*: \S")


def is_daemon_commit(cwd: str, oid: str) -> bool:
    """Is commit `oid` the ao daemon's preserve commit (subject `ao preserved <id>`,
    no Ao-Session trailer)? Raises GitError when it is not a commit."""
    if written_by_git_ao(cwd, oid):
        return False
    return query.commit_object(cwd, oid)[2].startswith(DAEMON_SUBJECT)


def daemon_ref(session_id: str) -> str:
    """Where a preserve commit git-ao did not write is kept: refs/ao/daemon/<id>."""
    return DAEMON_PREFIX + session_id


def set_aside_foreign(ctx: _Logger, cwd: str, ref: str, oid: ObjectId | None,
                      session_id: str, message: str | None = None) -> str | None:
    """Before git-ao writes `ref`, which holds `oid` (None: no such ref): when that
    is a commit git-ao did not write (the daemon's), move it to
    refs/ao/daemon/<id> (refs/ao/daemon/<id>.<oid> when that name holds another
    commit), so it stays reachable and `git ao show` names it. message: the
    commit's message when read already (`written_by_git_ao`). Returns the new
    ref, or None when there was nothing to move. Raises GitError when git cannot
    write or delete the refs (then git-ao writes nothing)."""
    if oid is None or written_by_git_ao(cwd, oid, message):
        return None
    target = daemon_ref(session_id)
    held = git.rev_parse(cwd, target)
    if held is not None and held != oid:
        target = f"{target}.{oid[:12]}"
        held = git.rev_parse(cwd, target)
    if held is None:
        git.update_ref(cwd, target, oid, git.NO_OBJECT, message=f"git-ao: kept {ref} (not git-ao's)")
    git.delete_ref(cwd, ref, oid)
    ctx.log("preserve", session_id, "foreign-ref-kept", ref=ref, commit=oid, kept_as=target)
    return target


def kept_refs(repo: str, session_id: str) -> list[tuple[str, ObjectId]]:
    """(ref, oid) of the commits set aside for `session_id` in `repo` (a common git dir):
    refs/ao/daemon/<id> and refs/ao/daemon/<id>.<oid>."""
    out = []
    for ref, oid in git.for_each_ref(repo, DAEMON_PREFIX):
        name = ref[len(DAEMON_PREFIX):]
        if name == session_id or (name.startswith(session_id + ".")
                                  and len(name) == len(session_id) + 13):
            out.append((ref, oid))
    return out


def advice(ref: str) -> str:

    """What a user can do with the daemon's preserve ref `ref` (one line)."""
    return (f"the ao daemon restores it itself; if the daemon is gone, apply it in its "
            f"worktree with 'git cherry-pick --no-commit {ref}' (its parent is the HEAD it "
            "was saved on), or run 'git ao import' while the daemon's database still lists "
            "the session")
