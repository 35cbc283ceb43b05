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
from collections.abc import Sequence
from dataclasses import dataclass, field

from git_ao import git
from git_ao.errors import AoError
from git_ao.git import index, parse, query
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
    # ok, but with nothing to compare the files with: the saved commit is gone
    # (its ref deleted, then git gc), so only HEAD, the branch and a readable
    # index were proven. The directory is the one preserve took away, the only
    # copy of the work left, so it stays; the caller says so.
    unproven: bool = False


def prove(path: str, save: Save, admin: str) -> Proof:
    """Prove the worktree at `path` (admin dir `admin`) holds the saved work:
    `settled`, and `full` when it cannot tell. A repository or worktree nested
    in it is in no save and is left out of the comparison: the directory is the
    one preserve took away, and it comes back whole."""
    if settled(path, save, admin, index_from_commit=True):
        return Proof(True)
    return full(path, save, leave_nested=True)


def holds(path: str, git_dir: str, save: Save, left: Sequence[str] = (), *,
          leave_submodules: bool = False) -> bool:
    """Does the worktree at `path` (admin dir `git_dir`) hold exactly the save? The
    one answer to it (after an apply, after a crash between save and removal, for
    a worktree an interrupted restore left): `settled` with the index compared to
    the saved index tree, else `capture.holds` (a capture that writes nothing).
    `prove` answers the same for a directory back from the trash, whose index
    the commit's checksum proves. left: untracked paths that do not count (see
    `capture.holds`); leave_submodules: a submodule's own state does not count
    either (an --at that left it as it was)."""
    assert save.preserved_commit
    return settled(path, save, git_dir, index_from_commit=False, left=left) or \
        capture.holds(path, git_dir, save.preserved_commit, left,
                      leave_submodules=leave_submodules)


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


def settled(path: str, save: Save, admin: str, *, index_from_commit: bool,
            left: Sequence[str] = ()) -> bool:
    """The cheap proof (module docstring): True when the worktree at `path` (admin
    dir `admin`) provably holds exactly the save, False when it cannot tell. The
    index is proven by the checksum the commit records (`index_from_commit`), else
    by comparing it to the saved index tree (`query.index_matches_tree`). Four or
    five git processes (cat-file, diff-index, status, diff-tree, hash-object), up
    to five more when a changed tracked file holds a carriage return
    (`index.added_ids`); no file git lists as unchanged is read."""
    commit = save.preserved_commit
    if not commit or not save.head or local_state.load(save.private_config).keys() - _PLAIN_KEYS:
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
    if changed.keys() != worktree_side.keys() \
            or set(st.untracked) - set(left) != untracked.keys():
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
        # git add keeps the CRLFs of a file whose index blob holds some (safer
        # autocrlf), hash-object reads no index: a tracked file holding a CR is
        # read as git add reads it. One holding none gets no CRLF to keep.
        crs = [p for p in files if p in changed and _holds_cr(os.path.join(path, p))]
        plain = [p for p in files if p not in set(crs)]
        got = dict(zip(plain, query.hash_paths(path, plain), strict=True)) if plain else {}
        got.update(zip(crs, index.added_ids(path, crs, admin), strict=True))
        got.update((p, _link_blob(os.path.join(path, p), len(commit))) for p in links)
    except (AoError, OSError):
        return False
    return got == want


def _holds_cr(file: str) -> bool:
    """Does the file hold a carriage return?"""
    with open(file, "rb") as fh:
        while chunk := fh.read(1 << 20):
            if b"\r" in chunk:
                return True
    return False


_SKIP_KEYS = ("skip_worktree", "skip_worktree_absent")
_FLAG_KEYS = ("assume_unchanged", *_SKIP_KEYS)


def _flags(private_config: str | None) -> dict[str, object]:
    """The index flags a save's private config records (see capture.capture)."""
    conf = local_state.load(private_config)
    return {k: getattr(conf, k) for k in _FLAG_KEYS}


def full(path: str, save: Save, *, leave_nested: bool = False) -> Proof:
    """The full proof: a capture that writes nothing (`capture.capture(write=False)`)
    must give the saved HEAD, branch and index tree; paths where its worktree or
    untracked tree differ from the saved ones were written after the last capture
    (the directory is the one taken away, so its files are the latest) and are
    returned in `late`. leave_nested: repositories nested in it are left out
    (else the capture refuses them)."""
    try:
        dirs = git.repo_dirs(path)
        cap = capture.capture(path, dirs.git_dir, None, write=False, leave_nested=leave_nested)
    except AoError as exc:
        return Proof(False, f"the worktree cannot be read back ({exc})")
    commit = save.preserved_commit
    if commit:
        if not git.object_exists(path, commit):
            # Nothing to compare with, and nothing else holds the work: the
            # directory is kept when it is on the saved HEAD and branch.
            return _head_and_branch(cap, save) or Proof(True, unproven=True)
        head, i_tree, w_tree, u_tree = capture.saved_trees(path, commit)
    else:
        if save.head is None:
            return Proof(False, "the save recorded no HEAD")
        head = save.head
        i_tree = w_tree = git.trees_of(path, [save.head])[0]
        u_tree = None
    wrong = _head_and_branch(cap, save, head)
    if wrong is not None:
        return wrong
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


def _head_and_branch(cap: capture.Capture, save: Save, head: str | None = None
                     ) -> Proof | None:
    """The failed Proof when the capture `cap` is not on `head` (the save's HEAD by
    default) and the saved branch (or detached as saved); None when it is."""
    head = head or save.head
    if cap.head != head:
        return Proof(False, f"HEAD is {cap.head[:12]}, the save's is {str(head)[:12]}")
    if (cap.branch or None) != (None if save.detached else save.branch):
        return Proof(False, f"on {cap.branch or 'a detached HEAD'}, not the saved branch")
    return None


Entry = tuple[str, str] | None  # (mode, object id) of a path, None when absent


def not_as_saved(path: str, save: Save,
                 wc: local_state.LocalState | None = None) -> dict[str, str]:
    """After a clean apply of the save onto a branch that moved since it (HEAD is
    no longer the saved one): {path: how} for every path the save changed (its
    worktree tree or index tree against its HEAD, and its untracked files) that
    the worktree or the index does not hold as git's plain three-way merge of
    that change onto the new HEAD gives it. A clean `git stash apply` still lets
    a merge driver (`merge=ours`), a clean or smudge filter, or rename detection
    decide for a path; this is what proves the ref may go.

    The worktree side is read as `git add` would (clean filters, end-of-line
    rules and the index's CRLFs, `index.added_ids`), the index side with `git
    ls-files -s`. A path
    changed on both sides is compared with `git merge-file` of the stored blobs,
    and counts as held too when merging the save's change into what is there
    changes nothing (another diff algorithm placed the same lines). Submodules,
    skip-worktree entries (the worktree side) are left to the flags' own checks;
    an intent-to-add entry (of `wc`, by default the recorded private state) must
    be an empty blob in the index. Raises AoError or OSError when
    git or the file system cannot be read (the caller keeps the ref then)."""
    commit = save.preserved_commit
    assert commit
    parents = git.commit_parents(path, commit)
    base = parents[0]
    w_side = query.raw_changes(path, base, commit)
    i_side = query.raw_changes(path, base, parents[1])
    branch = query.raw_changes(path, base, "HEAD")
    untracked = query.ls_tree_entries(path, parents[2]) if len(parents) > 2 else {}
    at_base = query.ls_tree_entries(path, base)

    def side_of(changes: dict[str, parse.Change], p: str) -> Entry:
        c = changes.get(p)
        if c is None:
            return at_base.get(p)
        return None if c.deleted else (c.mode, c.oid)

    if wc is None:
        wc = local_state.load(save.private_config)
    ita = set(wc.intent_to_add or [])
    flags = query.index_flags(path)
    skipped = set(flags.skip_worktree)
    filemode = query.config_map(path).get("core.filemode", "true") not in (
        "false", "0", "no", "off")
    paths = sorted(set(w_side) | set(i_side) | set(untracked))
    scratch = git.repo_dirs(path).git_dir
    now_w = _worktree_entries(path, [p for p in paths if p not in skipped], len(commit), scratch)
    now_i = query.staged_entries(path, paths)
    out: dict[str, str] = {}
    for p in paths:
        b, theirs = at_base.get(p), side_of(branch, p)
        if "160000" in {e[0] for e in (b, theirs, side_of(w_side, p)) if e}:
            continue
        hows = []
        if p not in skipped:
            want = untracked[p] if p in untracked else side_of(w_side, p)
            got = now_w.get(p)
            if not filemode:
                want, got = _no_exec(want), _no_exec(got)
            if not _merged_as(path, scratch, b, theirs, want, got, os.path.join(path, p)):
                hows.append(_how(want, got, theirs, "in the worktree"))
        if p not in ita and p not in untracked:
            want = side_of(i_side, p)
            got = now_i.get(p)
            if not _merged_as(path, scratch, b, theirs, want, got, None):
                hows.append(_how(want, got, theirs, "in the index"))
        elif p in untracked and p in now_i and p not in ita:
            hows.append("staged, the save had it untracked")
        if p in ita and now_i.get(p, ("", ""))[1] not in parse.EMPTY_BLOBS:
            # An intent-to-add entry is an empty blob in the index.
            hows.append("not intent-to-add in the index" if p not in now_i
                        else "staged, the save had it intent-to-add")
        if hows:
            out[p] = "; ".join(hows)
    for p in sorted(ita - set(paths)):
        # Its file was gone at the save: in no tree, only in the private config.
        if p not in now_i:
            out[p] = "not intent-to-add in the index"
    return out


def _worktree_entries(path: str, paths: list[str], oid_hex_len: int,
                      scratch: str) -> dict[str, tuple[str, str]]:
    """{path: (mode, blob id as `git add` would store it, `index.added_ids`)} of
    those of `paths` that are a file or a symbolic link in the worktree at `path`
    (git dir `scratch`)."""
    got: dict[str, tuple[str, str]] = {}
    files = []
    for p in paths:
        full = os.path.join(path, p)
        try:
            st = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):
            continue
        if stat.S_ISLNK(st.st_mode):
            got[p] = ("120000", _link_blob(full, oid_hex_len))
        elif stat.S_ISREG(st.st_mode):
            got[p] = ("100755" if st.st_mode & 0o100 else "100644", "")
            files.append(p)
    for p, oid in zip(files, index.added_ids(path, files, scratch), strict=True):
        got[p] = (got[p][0], oid)
    return got


def _no_exec(e: Entry) -> Entry:
    return ("100644", e[1]) if e and e[0] == "100755" else e


def _merged_as(cwd: str, scratch: str, base: Entry, branch: Entry, saved: Entry,
               got: Entry, file: str | None) -> bool:
    """Does `got` hold the save's side `saved` merged onto the branch's `branch`
    (all three against the save's HEAD, `base`)? One side unchanged: the other
    one, exactly. Both changed the same file: `git merge-file`'s result, or
    anything into which the save's change merges again without a change (read
    from the object store, else from `file` when its bytes are what git stores)."""
    if saved == base:
        want: Entry = branch
    elif branch in (base, saved):
        want = saved
    else:
        if not (base and branch and saved and got) or got[0] == "120000" \
                or {base[0], branch[0], saved[0]} - {"100644", "100755"}:
            return False
        mode = saved[0] if branch[0] == base[0] else branch[0]
        if got[0] != mode:
            return False
        texts = [query.blob_bytes(cwd, e[1]) for e in (base, branch, saved)]
        merged = query.merge_texts(cwd, scratch, *texts)
        if merged is not None and query.hash_bytes(cwd, merged) == got[1]:
            return True
        there = _stored_bytes(cwd, got[1], file)
        # What is there already holds the save's change when merging it in once more
        # changes nothing (the apply's diff algorithm placed the same lines otherwise).
        return there is not None and query.merge_texts(
            cwd, scratch, texts[0], there, texts[2]) == there
    return got == want


def _stored_bytes(cwd: str, oid: str, file: str | None) -> bytes | None:
    """The content of blob `oid`: from the object store, else from `file` when its
    bytes are what git stores for it (no conversion on the way in); None when
    neither holds it."""
    if git.object_exists(cwd, oid):
        return query.blob_bytes(cwd, oid)
    if file is None:
        return None
    with open(file, "rb") as fh:
        data = fh.read()
    return data if query.hash_bytes(cwd, data) == oid else None


def _how(want: Entry, got: Entry, branch: Entry, where: str) -> str:
    """How a path differs from what the save gives it, in a few words."""
    if got is None:
        return f"missing {where}"
    if want is None:
        return f"{where} although the save deleted it"
    if got == branch:
        return f"the branch's version {where}, not the saved one"
    if got[1] == want[1]:
        return f"another mode {where} ({got[0]}, saved {want[0]})"
    return f"other content {where} than the save gives"
