"""Build the preserve commit (SPEC 3) and apply it back (SPEC 5.2).

The commit is shaped exactly like `git stash push --include-untracked`:

    W  tree: tracked paths as in the worktree      parents: H, I[, U]
    I  tree: the real index (`git write-tree`)     parent:  H
    U  tree: untracked, not ignored files          no parent (only when there are some)

It is built through temporary index files inside the worktree's own git dir,
so the worktree, the real index and the stash list are never touched. The one
witness of what differs from HEAD is a single
`git status --porcelain=v2 -z --untracked-files=all --ignored=matching`.
"""

from __future__ import annotations

import os
import secrets
import shutil
from dataclasses import dataclass, field

from . import git
from .errors import AoError

TMP_PREFIX = "git-ao-index."

# State files of an operation in progress. They live in the worktree's private
# git dir and die with it, so a worktree in one of these states is not captured.
_IN_PROGRESS = {
    "MERGE_HEAD": "a merge", "CHERRY_PICK_HEAD": "a cherry-pick", "REVERT_HEAD": "a revert",
    "rebase-merge": "a rebase", "rebase-apply": "a rebase or am", "BISECT_LOG": "a bisect",
    "sequencer": "a cherry-pick or revert sequence",
}


class CannotCapture(AoError):
    """Some uncommitted work cannot be captured faithfully: nothing may be deleted."""


@dataclass
class Meta:
    """Facts about the session written into W's message as trailers."""

    session_id: str
    kind: str
    harness: str
    workspace_path: str


@dataclass
class Capture:
    """The result of `capture`: what was found and what was written.

    commit is W's id, or None when the worktree was clean (and HEAD attached).
    keep_reasons lists why the worktree must stay even though it was captured.
    """

    head: str
    branch: str | None
    index_tree: str | None = None
    worktree_tree: str | None = None
    untracked_tree: str | None = None
    commit: str | None = None
    changed: list = field(default_factory=list)
    untracked: list = field(default_factory=list)
    ignored: list = field(default_factory=list)
    keep_reasons: list = field(default_factory=list)

    @property
    def detached(self) -> bool:
        return self.branch is None

    @property
    def clean(self) -> bool:
        return not self.changed and not self.untracked


def _tmp_index(git_dir) -> str:
    return os.path.join(git_dir, f"{TMP_PREFIX}{os.getpid()}.{secrets.token_hex(4)}")


def _remove(path):
    for p in (path, path + ".lock"):
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


def inspect(path, git_dir) -> git.Status:
    """Read the worktree's state (one `git status`) and raise CannotCapture for states
    whose work would not survive: an unborn branch, unmerged paths, an operation in
    progress, an untracked nested repository. Returns the git.Status."""
    for name, what in _IN_PROGRESS.items():
        if os.path.exists(os.path.join(git_dir, name)):
            raise CannotCapture(f"{what} is in progress in '{path}'; finish or abort it first")
    st = git.status(path)
    if st.head is None:
        raise CannotCapture(f"branch '{st.branch}' in '{path}' has no commit yet (unborn); "
                            "commit once first")
    if st.unmerged:
        raise CannotCapture(f"'{path}' has unmerged paths ({st.unmerged[0]}); resolve them first")
    nested = [p for p in st.untracked if p.endswith("/")]
    if nested:
        raise CannotCapture(f"'{os.path.join(path, nested[0])}' is an untracked nested repository;"
                            " its files cannot be captured")
    return st


def capture(path, git_dir, meta: Meta | None, *, write=True, st=None) -> Capture:
    """Capture the worktree at `path` (its git dir `git_dir`) as a stash-shaped commit.

    meta: the trailers for W's message. write=False computes the trees only
    (used to recognise a worktree that already holds a save) and writes no commit.
    st: a git.Status from `inspect`, to avoid reading the worktree twice.
    Returns a Capture. Raises CannotCapture, GitError. Temporary index files are
    removed on every path out.
    """
    st = st or inspect(path, git_dir)
    cap = Capture(head=st.head, branch=st.branch,
                  changed=[e.path for e in st.changed], untracked=list(st.untracked),
                  ignored=list(st.ignored))
    if os.path.isdir(os.path.join(git_dir, "modules")):
        cap.keep_reasons.append("it has initialised submodules, whose work a superproject "
                                "commit cannot hold")
    if cap.clean:
        if not cap.detached or not write:
            head_tree = git.trees_of(path, [st.head])[0]
            cap.index_tree = cap.worktree_tree = head_tree
            return cap
        # A detached HEAD would become unreachable once the worktree is gone:
        # write a commit with no changes so the ref keeps it alive.
    tmp_i = _tmp_index(git_dir)
    tmp_u = _tmp_index(git_dir)
    try:
        real_index = os.path.join(git_dir, "index")
        if os.path.exists(real_index):
            # A copy keeps git's stat cache (unchanged files are not re-hashed)
            # and the skip-worktree bits of a sparse checkout.
            shutil.copyfile(real_index, tmp_i)
        cap.index_tree = git.write_tree(path, tmp_i)
        if any(e.xy[1] != "." for e in st.changed):
            git.run(["add", "-u"], path, env={"GIT_INDEX_FILE": tmp_i})
            cap.worktree_tree = git.write_tree(path, tmp_i)
        else:
            cap.worktree_tree = cap.index_tree
        if cap.untracked:
            git.update_index(path, tmp_u, cap.untracked)
            cap.untracked_tree = git.write_tree(path, tmp_u)
    finally:
        _remove(tmp_i)
        _remove(tmp_u)
    if not write:
        return cap
    label = st.branch or "(no branch)"
    short = st.head[:7]
    i_commit = git.commit_tree(path, cap.index_tree, [st.head], f"index on {label}: {short}\n")
    parents = [st.head, i_commit]
    if cap.untracked_tree:
        parents.append(git.commit_tree(path, cap.untracked_tree, [],
                                       f"untracked files on {label}: {short}\n"))
    cap.commit = git.commit_tree(path, cap.worktree_tree, parents, message(meta, cap))
    return cap


TRAILERS = ("Ao-Session", "Ao-Kind", "Ao-Harness", "Ao-Branch", "Ao-Workspace", "Ao-Head",
            "Ao-Detached")


def message(meta: Meta, cap: Capture) -> str:
    """W's commit message: a stash-like subject and trailers that describe the session,
    so `git ao doctor --recover` can rebuild a lost database from refs."""
    label = cap.branch or "(no branch)"
    values = (meta.session_id, meta.kind, meta.harness or "-", cap.branch or "-",
              meta.workspace_path, cap.head, "true" if cap.detached else "false")
    body = "\n".join(f"{k}: {v}" for k, v in zip(TRAILERS, values))
    return f"WIP on {label}: {cap.head[:7]} git-ao preserve of {meta.session_id}\n\n{body}\n"


def parse_trailers(text: str) -> dict:
    """The Ao-* trailers of a preserve commit message, as {name: value}."""
    out = {}
    for ln in text.splitlines():
        key, sep, value = ln.partition(": ")
        if sep and key in TRAILERS:
            out[key] = value
    return out


def saved_trees(cwd, commit) -> tuple:
    """(H, index tree, worktree tree, untracked tree or None) of a preserve commit."""
    parents = git.commit_parents(cwd, commit)
    revs = [commit, parents[1]] + ([parents[2]] if len(parents) > 2 else [])
    trees = git.trees_of(cwd, revs)
    return parents[0], trees[1], trees[0], trees[2] if len(parents) > 2 else None


def holds(path, git_dir, commit) -> bool:
    """Does the worktree at `path` hold exactly the work saved in `commit` (same HEAD,
    index, tracked and untracked trees)? Used to recognise a crash between save and removal."""
    try:
        cap = capture(path, git_dir, None, write=False)
    except CannotCapture:
        return False
    head, i_tree, w_tree, u_tree = saved_trees(path, commit)
    return (cap.head, cap.index_tree, cap.worktree_tree, cap.untracked_tree) == (
        head, i_tree, w_tree, u_tree)


@dataclass
class Applied:
    """What `apply` did. outcome: 'clean', 'unstaged' (applied, index part not restored),
    'conflict' (markers left) or 'blocked' (nothing applied)."""

    outcome: str
    detail: str = ""
    paths: list = field(default_factory=list)


def apply(path, commit) -> Applied:
    """Apply a preserve commit to the worktree at `path` like `git stash apply --index`,
    retrying without `--index` when only the index part conflicts.

    Before anything is written, untracked files of U that would land on an
    existing path are looked for: git would merge the tracked part and then fail
    on them, so in that case nothing is applied ('blocked', the paths listed).
    """
    parents = git.commit_parents(path, commit)
    if len(parents) > 2:
        clash = [p for p in git.ls_tree_paths(path, parents[2])
                 if os.path.lexists(os.path.join(path, p))]
        if clash:
            return Applied("blocked", "saved untracked files would overwrite existing paths",
                           clash)
    res = git.stash_apply(path, commit, index=True)
    if res.status == 0:
        return Applied("clean")
    if git.unmerged_paths(path):
        return Applied("conflict", res.errtext.strip(), git.unmerged_paths(path))
    res = git.stash_apply(path, commit, index=False)
    unmerged = git.unmerged_paths(path)
    if unmerged:
        return Applied("conflict", "conflicts left in the worktree", unmerged)
    if res.status == 0:
        return Applied("unstaged", "the index part conflicted; changes applied unstaged")
    return Applied("blocked", res.errtext.strip().splitlines()[-1] if res.errtext.strip()
                   else "git stash apply failed")
