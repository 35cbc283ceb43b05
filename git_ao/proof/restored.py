"""Proving that a directory put back from the trash holds exactly the saved work.

Two proofs, the first one tried first (`prove`):

- `settled`, cheap: the index put back is byte for byte the one the trees were
  made from (its checksum, true for its bytes, is the one the preserve commit
  records in its Ao-Index trailer), so the index
  tree and the flags are the saved ones; one `git status` then names every
  tracked file that differs from that index and every untracked file, and those
  must be exactly the paths where the saved worktree tree differs from the index
  tree, and the saved untracked tree, each hashing to the saved blob with the
  saved mode. Files git does not list did not change since the index recorded
  them (git's stat cache, with its racy-clean check). It only ever says "proven"
  or "cannot tell", never "different".
- `full`: a capture that writes nothing (`capture.capture(write=False)`); paths
  where its trees differ from the saved ones were written after the last capture
  and are returned as late writes.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field

from git_ao import git
from git_ao.errors import AoError
from git_ao.git import index, query
from git_ao.save import capture, local_state
from git_ao.store.records import Save

# Keys of a save's private config that leave `settled` nothing to say: index flags
# that hide files from git status, submodules, sparse checkouts, and files that
# must be written again. Only these may be present.
_PLAIN_KEYS = frozenset({"config_worktree", "mode_base", "modes", "dir_modes", "empty_dirs"})


@dataclass
class Proof:
    """What a proof found: ok, why not (`why`), the paths that differ from the
    saved trees because they were written after the last capture (`late`), and
    whether the assume-unchanged flags differ from the saved ones."""

    ok: bool
    why: str = ""
    late: list[str] = field(default_factory=list)
    # The assume-unchanged flags differ from the saved ones (set or cleared late).
    flags_changed: bool = False


def prove(path: str, save: Save, admin: str) -> Proof:
    """Prove the worktree at `path` (admin dir `admin`) holds the saved work:
    `settled`, and `full` when it cannot tell."""
    if settled(path, save, admin, index_from_commit=True):
        return Proof(True)
    return full(path, save)


def holds(path: str, git_dir: str, save: Save) -> bool:
    """Does the worktree at `path` (admin dir `git_dir`) hold exactly the save? The
    check after an apply: `settled` with the index compared to the saved index
    tree (its stat cache is fresh), else `capture.holds`."""
    assert save.preserved_commit
    return settled(path, save, git_dir, index_from_commit=False) or \
        capture.holds(path, git_dir, save.preserved_commit)


def _file_mode(st: os.stat_result) -> str | None:
    if stat.S_ISLNK(st.st_mode):
        return "120000"
    if stat.S_ISREG(st.st_mode):
        return "100755" if st.st_mode & 0o100 else "100644"
    return None


def _link_blob(path: str, oid_hex_len: int) -> str:
    """The blob id git stores for the symbolic link at `path`: its target's bytes."""
    target = os.readlink(os.fsencode(path))
    h = hashlib.sha1() if oid_hex_len == 40 else hashlib.sha256()
    h.update(b"blob %d\0" % len(target) + target)
    return h.hexdigest()


def settled(path: str, save: Save, admin: str, *, index_from_commit: bool) -> bool:
    """The cheap proof (module docstring): True when the worktree at `path` (admin
    dir `admin`) provably holds exactly the save, False when it cannot tell. The
    index is proven by the checksum the commit records (`index_from_commit`), else
    by comparing it to the saved index tree (`query.index_matches_tree`). Four or
    five git processes (cat-file, diff-index, status, diff-tree, hash-object); no
    file git lists as unchanged is read."""
    commit = save.preserved_commit
    if not commit or not save.head or set(local_state.load(save.private_config)) - _PLAIN_KEYS:
        return False
    index_file = os.path.join(admin, "index")
    try:
        _tree, parents, message = query.commit_object(path, commit)
        if len(parents) not in (2, 3) or parents[0] != save.head:
            return False
        if index_from_commit:
            recorded = capture.parse_trailers(message).get(capture.INDEX_TRAILER)
            if not recorded or index.checksum(index_file, len(commit)) != recorded:
                return False
        elif not os.path.isfile(index_file) or not query.index_matches_tree(
                path, query.commit_object(path, parents[1])[0]):
            return False
        st = git.status(path, ignored=False)
        lines = [[commit, parents[1]]] + ([[parents[2]]] if len(parents) == 3 else [])
        diffs = query.tree_diffs(path, lines)
    except AoError:
        return False
    if st.head != save.head or st.branch != (None if save.detached else save.branch):
        return False
    worktree_side = diffs.get(commit, {})
    untracked = diffs.get(parents[2], {}) if len(parents) == 3 else {}
    if any(e.kind != "1" for e in st.changed):
        return False
    changed = {e.path: e for e in st.changed if e.xy[1] != "."}
    if changed.keys() != worktree_side.keys() or set(st.untracked) != untracked.keys():
        return False
    want: dict[str, str] = {}
    for p, e in changed.items():
        c = worktree_side[p]
        if c.deleted:
            if e.xy[1] != "D":
                return False
        elif e.worktree_mode != c.mode or c.mode == "160000":
            return False
        else:
            want[p] = c.oid
    for p, c in untracked.items():
        try:
            mode = _file_mode(os.lstat(os.path.join(path, p)))
        except OSError:
            return False
        if mode != c.mode:
            return False
        want[p] = c.oid
    links = [p for p in want if os.path.islink(os.path.join(path, p))]
    files = [p for p in want if p not in set(links)]
    try:
        got = dict(zip(files, query.hash_paths(path, files), strict=True)) if files else {}
        got.update((p, _link_blob(os.path.join(path, p), len(commit))) for p in links)
    except (AoError, OSError):
        return False
    return got == want


_SKIP_KEYS = ("skip_worktree", "skip_worktree_absent")
_FLAG_KEYS = ("assume_unchanged", *_SKIP_KEYS)


def _flags(private_config: str | None) -> dict[str, object]:
    """The index flags a save's private config records (see capture.capture)."""
    conf = local_state.load(private_config)
    return {k: conf.get(k) for k in _FLAG_KEYS}


def full(path: str, save: Save) -> Proof:
    """The full proof: a capture that writes nothing (`capture.capture(write=False)`)
    must give the saved HEAD, branch and index tree; paths where its worktree or
    untracked tree differ from the saved ones were written after the last capture
    (the directory is the one taken away, so its files are the latest) and are
    returned in `late`."""
    try:
        dirs = git.repo_dirs(path)
        cap = capture.capture(path, dirs.git_dir, None, write=False)
    except AoError as exc:
        return Proof(False, f"the worktree cannot be read back ({exc})")
    commit = save.preserved_commit
    if commit:
        if not git.object_exists(path, commit):
            return Proof(False, f"preserved commit {commit} is missing")
        head, i_tree, w_tree, u_tree = capture.saved_trees(path, commit)
    else:
        if save.head is None:
            return Proof(False, "the save recorded no HEAD")
        head = save.head
        i_tree = w_tree = git.trees_of(path, [save.head])[0]
        u_tree = None
    if cap.head != head:
        return Proof(False, f"HEAD is {cap.head[:12]}, the save's is {str(head)[:12]}")
    if (cap.branch or None) != (None if save.detached else save.branch):
        return Proof(False, f"on {cap.branch or 'a detached HEAD'}, not the saved branch")
    if cap.index_tree != i_tree:
        return Proof(False, "the index is not the saved one")
    saved, now = _flags(save.private_config), _flags(cap.private_config)
    if commit and [saved[k] for k in _SKIP_KEYS] != [now[k] for k in _SKIP_KEYS]:
        return Proof(False, "the skip-worktree flags are not the saved ones")
    late = set(query.changed_between(path, w_tree, cap.worktree_tree))
    late.update(query.changed_between(path, u_tree, cap.untracked_tree))
    # An assume-unchanged flag set after the capture would hide a file's changes
    # from git status from then on: the caller puts the saved flags back.
    return Proof(True, "", sorted(late),
                 bool(commit) and saved["assume_unchanged"] != now["assume_unchanged"])
