"""The notice every command gives when its repository holds preserve refs that no
record knows (a lost data dir, a new home directory), at no cost when it holds
none: the file system says so before any git process or heavy import."""

from __future__ import annotations

import os

from git_ao import gitfiles

TYPE_CHECKING = False  # mypy takes any name TYPE_CHECKING as true; typing costs a listing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from git_ao.store.database import Store


def may_hold_preserve_refs(path: str) -> bool:
    """Might the repository `path` is in hold refs under refs/ao/preserved/? From the
    file system alone, so that a command run anywhere pays nothing when it holds
    none: a loose ref under `refs/ao/preserved/`, the name in `packed-refs`, or a
    reftable (which only git can read). False outside a repository."""
    git_dir = gitfiles.git_dir_above(path)
    if git_dir is None:
        return False
    common = gitfiles.common_dir(git_dir)
    loose = os.path.join(common, "refs", "ao", "preserved")
    try:
        with os.scandir(loose) as it:
            if any(True for _ in it):
                return True
    except OSError:
        pass
    if os.path.isdir(os.path.join(common, "reftable")):
        return True
    try:
        with open(os.path.join(common, "packed-refs"), "rb") as fh:
            return any(b" refs/ao/preserved/" in line for line in fh)
    except OSError:
        return False


def _listed_by_files(path: str, prefix: str) -> list[str] | None:
    """The refs under `prefix` of the repository git's discovery finds from `path`,
    as `git for-each-ref` there lists them, read from git's files where those
    tell for sure (`gitfiles.refs_under`); None where only git can tell: a
    discovery boundary set in the environment, a repository or worktree another
    user owns (safe.directory), another file system on the way up, a reftable,
    a ref that is not a plain file."""
    if any(os.environ.get(v) for v in ("GIT_CEILING_DIRECTORIES",
                                       "GIT_DISCOVERY_ACROSS_FILESYSTEM")):
        return None
    found = gitfiles.discover(path)
    common = gitfiles.discovered_as_git_would(path, found) if found is not None else None
    if common is None:
        return None
    read = gitfiles.refs_under(common, prefix)
    return None if read is None else list(read)


def unrecorded_here(path: str, open_store: Callable[[], Store],
                    refs: Iterable[str] | None = None) -> str | None:
    """When the repository `path` is in holds git-ao preserve refs that no record of
    the database knows (a lost data dir, a new home directory): one line saying
    so and what rebuilds them; None otherwise, also when the database cannot be
    read (the command said so). Costs no process unless such refs may exist
    (`may_hold_preserve_refs`); then the refs, from git's files where they tell
    (`_listed_by_files`) else `git for-each-ref`, one read of the sessions
    and `git log -1` per unknown ref (the ao daemon's are left out). refs: the
    repository's preserve refs when the caller read them already (which answer
    for the file system's)."""
    if refs is None and not may_hold_preserve_refs(path):
        return None
    from git_ao.errors import AoError
    from git_ao.manage.listing import PRESERVED
    try:
        listed = list(refs) if refs is not None else _listed_by_files(path, PRESERVED)
        if listed is None:
            from git_ao import git
            listed = [ref for ref, _ in git.for_each_ref(path, PRESERVED)]
        if not listed:
            return None
        known = {s.id for s in open_store().sessions()}
        unknown = [r for r in listed if r[len(PRESERVED):] not in known]
        if not unknown:
            return None
        from git_ao import git  # here: refs every record knows need no git module
        from git_ao.manage.doctor import shell_path, split_daemon_refs, worktree_of
        ours = split_daemon_refs(path, unknown)[0]
        if not ours:
            return None
        repo = os.path.realpath(git.common_dir_of(path))
    except AoError:
        return None
    more = f" and {len(ours) - 3} more" if len(ours) > 3 else ""
    return (f"{repo} holds preserve refs no record knows ({', '.join(ours[:3])}{more}): "
            f"git ao doctor --recover -C {shell_path(worktree_of(repo))} rebuilds their "
            "records")
