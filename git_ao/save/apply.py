"""Put a preserve commit's work back into a worktree: its private config before the
checkout, the stash-shaped commit applied like `git stash apply --index`, then
the index flags, file modes and submodules the commit cannot carry.

The commit's shape is described in git_ao/save/capture.py, which builds it.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass, field
from enum import StrEnum

from git_ao import git
from git_ao.errors import git_message
from git_ao.git import index, query
from git_ao.git.parse import ObjectId
from git_ao.save import local_state


class ApplyResult(StrEnum):
    """How an apply ended."""

    CLEAN = "clean"
    UNSTAGED = "unstaged"  # applied, the index part not restored
    CONFLICT = "conflict"  # markers left in the worktree
    BLOCKED = "blocked"  # nothing applied: saved untracked files would overwrite paths
    FAILED = "failed"  # git failed, maybe part way (a full disk)


@dataclass
class Applied:
    """What `apply` did. paths: what could not be placed (clashes or conflicts);
    placed: the saved paths that were written."""

    outcome: ApplyResult
    detail: str = ""
    paths: list[str] = field(default_factory=list)
    placed: list[str] = field(default_factory=list)


def saved_paths(cwd: str, commit: str) -> list[str]:
    """Every path the preserve commit changes: tracked paths W or I changes against H
    (`git diff-tree`), plus the files of U. Sorted."""
    parents = git.commit_parents(cwd, commit)
    out: set[str] = set()
    for rev in (commit, parents[1]):
        out.update(query.changed_paths(cwd, parents[0], rev))
    if len(parents) > 2:
        out.update(query.ls_tree_paths(cwd, parents[2]))
    return sorted(out)


def intent_to_add_of(cwd: str, commit: str) -> list[str]:
    """The intent-to-add entries a preserve commit itself shows: the paths its W tree
    has and its I tree lacks. W is I with the tracked files read again (`git add
    -u` on a copy of the index), and `git write-tree` leaves out only intent-to-add
    entries, so nothing else is there. For a save whose private config is not
    known (a record rebuilt from its ref); an entry whose file was gone is in
    neither tree and cannot be told. Sorted. Raises GitError."""
    parents = git.commit_parents(cwd, commit)
    in_index = query.ls_tree_entries(cwd, parents[1])
    return sorted(p for p, c in query.raw_changes(cwd, parents[1], commit).items()
                  if not c.deleted and p not in in_index and c.mode != "160000")


def _emptied(path: str, full: str, removed: set[str]) -> bool:
    """Is `full` a real directory whose every file the apply removes (so git takes the
    directory away before writing a saved file in its place)?"""
    if os.path.islink(full) or not os.path.isdir(full):
        return False
    for root, dirs, files in os.walk(full):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            if os.path.relpath(os.path.join(root, name), path) not in removed:
                return False
    return True


def _blocked_by(path: str, rel: str, removed: set[str]) -> bool:
    """Would writing the file `rel` under `path` hit something already there: the
    path itself, or a parent that is not a real directory (a file or a symlink)?
    Paths in `removed` do not count: the tracked part of the apply deletes them
    first (a file the saved work replaced by a directory, say)."""
    full = os.path.join(path, rel)
    if rel not in removed and os.path.lexists(full) and not _emptied(path, full, removed):
        return True
    parts = rel.split("/")
    for i in range(1, len(parts)):
        pre_rel = "/".join(parts[:i])
        pre = os.path.join(path, pre_rel)
        if pre_rel in removed:
            continue
        if os.path.islink(pre) or (os.path.lexists(pre) and not os.path.isdir(pre)):
            return True
        if not os.path.lexists(pre):
            return False
    return False


def _materialise(path: str, commit: str) -> None:
    """Clear skip-worktree on the paths the save changes and check them out from the
    index, so the apply writes them: in a sparse checkout a saved edit of a file
    outside the patterns would otherwise land in the index only, never on disk.
    (git itself clears the bit of a file present in a sparse checkout.)"""
    wanted = set(saved_paths(path, commit))
    skipped = [p for p in query.index_flags(path).skip_worktree if p in wanted]
    if skipped:
        index.set_index_flag(path, skipped, "--no-skip-worktree")
        index.checkout_paths(path, skipped)


def apply(path: str, commit: str, *, sparse: bool = False) -> Applied:
    """Apply a preserve commit to the worktree at `path` like `git stash apply --index`,
    retrying without `--index` when only the index part conflicts.

    Before anything is written, untracked files of U that would land on an
    existing path (or under a parent that is a file or a symlink) are looked for:
    git would merge the tracked part and then fail on them, so in that case
    nothing is applied ('blocked', the paths listed). sparse: the worktree is a
    sparse checkout (see `_materialise`).
    """
    parents = git.commit_parents(path, commit)
    if len(parents) > 2:
        removed = set(query.changed_paths(path, parents[0], commit, deleted_only=True))
        clash = [p for p in query.ls_tree_paths(path, parents[2])
                 if _blocked_by(path, p, removed)]
        if clash:
            return Applied(ApplyResult.BLOCKED, "saved untracked files would overwrite existing paths",
                           clash)
    if sparse:
        _materialise(path, commit)
    # In a sparse checkout the patterns are off for the apply, so the merge does not take
    # the saved files outside them away again (`_materialise` made them ordinary files).
    res = git.stash_apply(path, commit, index=True, sparse_off=sparse)
    if res.status == 0:
        return Applied(ApplyResult.CLEAN)
    if query.unmerged_paths(path):
        unmerged = query.unmerged_paths(path)
        return Applied(ApplyResult.CONFLICT, res.errtext.strip(), unmerged,
                       [p for p in saved_paths(path, commit) if p not in set(unmerged)])
    res = git.stash_apply(path, commit, index=False, sparse_off=sparse)
    unmerged = query.unmerged_paths(path)
    if unmerged:
        return Applied(ApplyResult.CONFLICT, "conflicts left in the worktree", unmerged,
                       [p for p in saved_paths(path, commit) if p not in set(unmerged)])
    if res.status == 0:
        return Applied(ApplyResult.UNSTAGED, "the index part conflicted; changes applied unstaged",
                       [], saved_paths(path, commit))
    return Applied(ApplyResult.FAILED, git_message(res.errtext, res.status) if res.errtext.strip()
                   else "git stash apply failed")


def index_differences(path: str, commit: str) -> list[str]:
    """After an apply that could not keep the index part (a conflict: git stash
    applies the files and leaves the index as the merge made it): the saved
    paths, unmerged ones aside, staged otherwise than in the save, each as
    '<path> (staged now, not when saved)' or '<path> (staged when saved, not
    now)'. Reads the saved H, I and W of `commit` and the worktree's index."""
    parents = git.commit_parents(path, commit)
    saved_staged = set(query.changed_paths(path, parents[0], parents[1]))
    saved_unstaged = set(query.changed_paths(path, parents[1], commit))
    staged, unstaged = query.staged_and_unstaged(path)
    unmerged = set(query.unmerged_paths(path))
    out = []
    for p in sorted((saved_staged | saved_unstaged) - unmerged):
        if p in staged and p not in saved_staged:
            out.append(f"{p} (staged now, not when saved)")
        elif p in saved_staged and p not in staged:
            out.append(f"{p} (staged when saved, not now)")
        elif p in saved_unstaged and p in saved_staged and p not in unstaged:
            out.append(f"{p} (partly staged when saved, all staged now)")
    return out


def recheckout(path: str, git_dir: str, commit: str) -> None:
    """Write every present file of the saved work again with `git checkout-index -f`,
    so content conversion uses the attributes the apply just brought back. Files
    the index already holds as saved come from the real index with `-u` (their
    stat data is refreshed too: git calls a file whose size changed modified
    without looking at its content); the others from W's and U's trees through a
    temporary index. Used when the saved work changes a `.gitattributes` and
    conversion is on."""
    parents = git.commit_parents(path, commit)
    i_tree, w_tree = git.trees_of(path, [parents[1], commit])
    assert i_tree and w_tree
    unstaged = set(query.changed_paths(path, i_tree, w_tree))
    tracked = [p for p in query.ls_tree_paths(path, commit)
               if os.path.lexists(os.path.join(path, p))]
    same = [p for p in tracked if p not in unstaged]
    for p in same:
        # checkout-index leaves a file whose stat matches its entry alone, even
        # with -f; the bytes are in the index and in the kept preserve ref.
        os.unlink(os.path.join(path, p))
    index.checkout_paths(path, same, refresh=True)
    for rev, paths in ((commit, [p for p in tracked if p in unstaged]),
                       (parents[2] if len(parents) > 2 else None, None)):
        if rev is None:
            continue
        if paths is None:
            paths = [p for p in query.ls_tree_paths(path, rev)
                     if os.path.lexists(os.path.join(path, p))]
        if not paths:
            continue
        with index.TempIndex(path, git_dir) as tmp:
            tmp.read_tree(rev)
            tmp.checkout_paths(paths)


def _submodule_on_branch(full: str, branch: str) -> str:
    """Put the submodule checked out at `full` back on its local `branch`, at the
    commit it has now. A branch it lacks (a fresh clone) is created there; one
    that is at another commit is moved only when it is exactly its upstream (what
    a fresh clone made of the remote's branch: nothing of its own is lost), else
    it is left and said. Returns '' or the problem, as words after the path."""
    if not os.path.lexists(os.path.join(full, ".git")) or git.current_branch(full) == branch:
        return ""
    head = git.rev_parse(full, "HEAD")
    if head is None:
        return f"not put back on its branch '{branch}' (no HEAD)"
    at = git.rev_parse(full, f"refs/heads/{branch}")
    reset = at is not None and at != head
    if at is not None and reset and at != git.rev_parse(full, f"{branch}@{{upstream}}"):
        return (f"left detached at {head[:12]}: its branch '{branch}' is at {at[:12]} "
                "here, with commits of its own")
    if not git.checkout_branch_at(full, branch, head, reset=reset):
        return f"not put back on its branch '{branch}'"
    return ""


def put_flags(path: str, wc: local_state.LocalState, *, fresh: bool = True,
              leave: Collection[str] = ()) -> list[str]:
    """After the apply: give back the index flags recorded in `wc` (intent-to-add,
    assume-unchanged, skip-worktree; a skip-worktree file that was absent is taken
    away again when `fresh`, it was only just checked out) and re-initialise
    submodules (`git submodule update --init`). leave: submodules left as they are
    (an --at leaves a submodule's own work untouched). Returns the problems met,
    as lines."""
    problems = local_state.put_flags(path, wc, fresh=fresh)
    subs = [rel for rel in wc.submodules or [] if rel not in leave]
    if subs:
        res = git.submodule_update_init(path, subs)
        if res.status != 0:
            problems.append("submodules not re-initialised: "
                            f"{git_message(res.errtext, res.status)}")
    # A submodule checked out at another commit than the one recorded comes back
    # on that commit (update --init checks out the recorded one).
    for rel, oid in (wc.submodule_heads or {}).items():
        if rel in leave:
            continue
        full = os.path.join(path, rel)
        # Only a submodule checked out (its .git present): in an empty directory
        # git would find the superproject and move its HEAD instead.
        if os.path.lexists(os.path.join(full, ".git")) and git.rev_parse(full, "HEAD") != oid \
                and not git.checkout_detached(full, oid):
            problems.append(f"submodule '{rel}' not put back on {oid[:12]}")
    for rel, branch in (wc.submodule_branches or {}).items():
        if rel in leave:
            continue
        problem = _submodule_on_branch(os.path.join(path, rel), branch)
        if problem:
            problems.append(f"submodule '{rel}' {problem}")
    for name, oid in (wc.worktree_refs or {}).items():
        git.update_ref(path, name, ObjectId(oid), message="git-ao restore per-worktree ref")
    return problems
