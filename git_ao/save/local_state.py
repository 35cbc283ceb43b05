"""What a worktree keeps outside its commits: sparse-checkout patterns,
`config.worktree`, index flags (intent-to-add, assume-unchanged,
skip-worktree), permission bits git does not record and empty directories.
`collect` reads them into the save's private config (a JSON object,
records.Save.private_config); on the checkout path of a restore `put_config`
writes the admin files back before the checkout, `put_flags` the flags after
the apply (git_ao/save/apply.py) and `put_modes` the directories and bits last.
"""

from __future__ import annotations

import json
import os
import stat
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from operator import itemgetter
from typing import Any

from git_ao import git
from git_ao.fs import walk
from git_ao.git import index, parse, query
from git_ao.git.index import TempIndex
from git_ao.git.parse import ObjectId


@dataclass
class LocalState:
    """A save's private config: what the worktree keeps outside its commits.

    Stored as a JSON object (records.Save.private_config) whose keys are these
    field names; a field that is None is not written, and the keys are sorted,
    so a state read and written again gives the same bytes. Keys this git-ao
    does not know (a newer one wrote them) are kept in `other` as they were."""

    sparse_checkout: str | None = None  # info/sparse-checkout of the admin dir
    config_worktree: str | None = None  # config.worktree of the admin dir
    # Every index flag is recorded (sparse checkouts too): restore sets exactly these.
    exact_flags: bool | None = None
    assume_unchanged: list[str] | None = None  # `compact`ed lists of paths
    skip_worktree: list[str] | None = None
    skip_worktree_absent: list[str] | None = None  # skip-worktree and not on disk
    intent_to_add: list[str] | None = None
    # {path: "100755"|"100644"} of intent-to-add entries whose mode is not the one
    # `git add -N` gives the file now (a chmod after the add, a file gone).
    intent_to_add_modes: dict[str, str] | None = None
    mode_base: dict[str, str] | None = None  # {"file"|"exec"|"dir": octal text}
    modes: dict[str, str] | None = None  # {path: octal text} of files off the base
    dir_modes: dict[str, str] | None = None  # the same of directories ("." the worktree)
    empty_dirs: list[str] | None = None
    submodules: list[str] | None = None  # initialised submodules' paths
    submodule_heads: dict[str, str] | None = None  # {path: commit checked out}
    submodule_branches: dict[str, str] | None = None  # {path: local branch}
    recheckout: bool | None = None  # write the files again after the apply (attributes)
    worktree_refs: dict[str, str] | None = None  # {refs/worktree/...: commit}
    other: dict[str, Any] = field(default_factory=dict)

    def keys(self) -> set[str]:
        """The JSON keys this state holds."""
        return {f.name for f in fields(self) if f.name != "other"
                and getattr(self, f.name) is not None} | set(self.other)

    def to_json(self) -> str | None:
        """The JSON text (sorted keys), None when nothing is recorded."""
        out = dict(self.other)
        out.update({f.name: getattr(self, f.name) for f in fields(self)
                    if f.name != "other" and getattr(self, f.name) is not None})
        return json.dumps(out, sort_keys=True) if out else None

    @classmethod
    def from_json(cls, text: str | None) -> LocalState:
        """The state a private config JSON holds (an empty one for None or "")."""
        raw: dict[str, Any] = json.loads(text) if text else {}
        known = {f.name for f in fields(cls)} - {"other"}
        state = cls(**{k: v for k, v in raw.items() if k in known})
        state.other = {k: v for k, v in raw.items() if k not in known}
        return state


def collect(path: str, git_dir: str, conf: dict[str, str], flags: git.IndexFlags,
            st: git.Status, hidden: list[str], walked: walk.Walk | None = None
            ) -> LocalState:
    """What lives only in the worktree's private admin dir and shapes it. conf: `query.config_map`; flags: its index flags;
    st: its status; hidden: the paths index flags hide from status; walked: the
    walk of the worktree, whose stat data gives every file's permission bits
    (without it only the changed and untracked files are looked at)."""
    wc = LocalState(sparse_checkout=_read_admin(git_dir, os.path.join("info", "sparse-checkout")),
                    config_worktree=_read_admin(git_dir, "config.worktree"))
    # Every flag is recorded, and restore sets exactly these (clearing the others).
    # In a sparse checkout too: the patterns decide only what a fresh checkout
    # gives, and a `git reset --soft` or a pathspec reset keeps skip-worktree on
    # entries they no longer describe. "exact_flags" tells such a save from one
    # written before sparse checkouts' flags were recorded.
    if conf.get("core.sparsecheckout") == "true":
        wc.exact_flags = True
    paths: list[str] = []
    if len(flags.skip_worktree) >= COMPACT_FROM or len(flags.assume_unchanged) >= COMPACT_FROM:
        paths = flags.paths()
    if flags.assume_unchanged:
        wc.assume_unchanged = compact(flags.assume_unchanged, paths)
    if flags.skip_worktree:
        wc.skip_worktree = compact(flags.skip_worktree, paths)
        shown = set(hidden)
        absent = [p for p in flags.skip_worktree if p not in shown]
        if absent:
            wc.skip_worktree_absent = compact(absent, paths)
    if walked is not None:
        wc.mode_base, modes, dir_modes = _walked_modes(walked, st.ignored)
        top = stat.S_IMODE(os.lstat(path).st_mode)
        if top != int(wc.mode_base["dir"], 8):
            dir_modes["."] = f"{top:04o}"  # the worktree's own directory
        if dir_modes:
            wc.dir_modes = dir_modes
        # git keeps no directory: an empty one comes back only from this list.
        empty = [d for d in walked.empty if not walked.under_nested(d)
                 and not walk.under(d, st.ignored)]
        if empty:
            wc.empty_dirs = empty
    else:
        modes = _private_modes(path, [e.path for e in st.changed] + st.untracked)
    if modes:
        wc.modes = modes
    return wc


def _read_admin(git_dir: str, name: str) -> str | None:
    """The text of the admin dir's file `name`, None when there is none."""
    try:
        with open(os.path.join(git_dir, name), "rb") as fh:
            return fh.read().decode("utf-8", "surrogateescape")
    except FileNotFoundError:
        return None


# A flag list this long is written compactly: a directory whose every entry
# carries the flag stands for them all (`compact`). Below it, the paths as they are.
COMPACT_FROM = 64


def compact(flagged: list[str], paths: list[str]) -> list[str]:
    """`flagged` (index paths, in index order) with every directory whose entries in
    `paths` (the whole index) all carry the flag written once as "<dir>/", "/" for
    the whole index. A sparse checkout's skip-worktree entries, or every entry
    under `core.ignoreStat`, take a few lines instead of one per file. Returns
    `flagged` itself when it is shorter than COMPACT_FROM (paths may then be [])."""
    if len(flagged) < COMPACT_FROM:
        return list(flagged)
    marked = set(flagged)
    total: dict[str, int] = {}
    hits: dict[str, int] = {}
    for p in paths:
        hit = p in marked
        for d in _parents(p):
            total[d] = total.get(d, 0) + 1
            if hit:
                hits[d] = hits.get(d, 0) + 1
    full = {d for d, n in hits.items() if n == total[d]}
    out: list[str] = []
    seen: set[str] = set()
    for p in flagged:
        tops = [d for d in _parents(p) if d in full]
        item = tops[-1] + "/" if tops else p
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def expand(items: list[str], paths: list[str]) -> set[str]:
    """The paths of `paths` (the index now) that `compact`'s `items` name."""
    dirs = {i[:-1] for i in items if i.endswith("/")}
    out = {i for i in items if not i.endswith("/")}
    if dirs:
        out.update(p for p in paths if any(d in dirs for d in _parents(p)))
    return out


def _parents(path: str) -> list[str]:
    """The directories above `path`, innermost first, "" (the top) last."""
    out = []
    while True:
        cut = path.rfind("/")
        path = path[:cut] if cut >= 0 else ""
        out.append(path)
        if cut < 0:
            return out


def intent_to_add(st: git.Status, temp: TempIndex, index_tree: ObjectId, git_dir: str
                  ) -> tuple[list[str], ObjectId]:
    """(the intent-to-add entries of `temp`, a copy of the real index whose tree
    `write_tree` made is `index_tree`; the index tree, which leaves them out).
    `git status` shows each as added in the worktree (".A", "DA" over a path HEAD
    has) or, its file gone, as deleted ("DD"; ".D" with an empty blob, like a
    committed empty file deleted): only then is the index asked (one `git
    diff-index`).
    One whose blob is the one HEAD has at its path (an empty file) can still be in
    the tree git wrote, from a cache tree `git reset --hard` or `git read-tree`
    left naming it: when status shows such an entry the diff did not find, the
    tree is made again without the cache tree (`TempIndex.tree_past_cache`), so
    the index tree is what status sees and the entry is saved as intent-to-add."""
    sure = {e.path for e in st.changed if e.kind == "1" and (e.xy[1] == "A" or e.xy == "DD")}
    maybe = {e.path for e in st.changed if e.kind == "1" and e.xy[1] == "D"
             and e.index_oid in parse.EMPTY_BLOBS}
    if not sure and not maybe:
        return [], index_tree
    found = temp.intent_to_add(index_tree)
    missed = (sure | maybe) - set(found)
    if missed - sure and st.head is not None:
        # ".D" on a path HEAD has is a committed file deleted (an intent-to-add
        # entry there shows "DD").
        missed -= set(query.tree_entries_at(temp.cwd, st.head, sorted(missed - sure)))
    if not missed:
        return found, index_tree
    again = temp.tree_past_cache(git_dir, len(index_tree) // 2)
    if again is None:
        return found, index_tree
    tree, found = again
    return found, tree


def intent_to_add_modes(path: str, temp: TempIndex, intent: list[str]) -> dict[str, str]:
    """The modes of the intent-to-add entries `intent` of `temp` that `git add -N`
    would not give them again: a regular file's entry whose executable bit is not
    the file's (a chmod after the add), an executable entry whose file is gone (the
    restore marks it with an empty file it makes)."""
    if not intent:
        return {}
    held = temp.entries()
    out = {}
    for rel in intent:
        mode = held.get(rel, ("", ""))[0]
        if mode not in ("100644", "100755"):
            continue
        try:
            st = os.lstat(os.path.join(path, rel))
        except (FileNotFoundError, NotADirectoryError):
            if mode == "100755":
                out[rel] = mode
            continue
        if stat.S_ISREG(st.st_mode) and (mode == "100755") != bool(st.st_mode & stat.S_IXUSR):
            out[rel] = mode
    return out


def _umask() -> int:
    # Read, not set: os.umask() would change it for every thread of an -j run.
    try:
        with open("/proc/self/status") as fh:
            for ln in fh:
                if ln.startswith("Umask:"):
                    return int(ln.split()[1], 8)
    except OSError:
        pass
    return 0o022


def _private_modes(path: str, rels: list[str]) -> dict[str, str]:
    """{path: "0600"} for the files `rels` whose permission bits git would not give
    back: git records only 644 or 755, so a private key saved at 0600 would return
    world-readable, and a checkout makes files under the umask."""
    mask = _umask()
    out = {}
    for rel in rels:
        try:
            st = os.lstat(os.path.join(path, rel))
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) != _default(st.st_mode, mask):
            out[rel] = f"{stat.S_IMODE(st.st_mode):04o}"
    return out


def _walked_modes(walked: walk.Walk, ignored: list[str]
                  ) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """The permission bits of every file and directory the walk saw, from its stat
    data: (base, files, dirs). base: the bits most plain files, executables and
    directories have ({"file": "0644", "exec": "0755", "dir": "0755"}); files and
    dirs: {path: "0600"} for those with other bits, tracked and unchanged ones too
    (a committed file made 0600 is no change to git). With the base a restore
    under another umask gives back the bits the files had. Ignored paths and those
    of nested repositories are left out: they come back, if at all, by a rename
    that keeps their bits."""
    # One count of each full st_mode in C (a worktree has few distinct ones), then
    # a Python loop over the files only when some file is off its base.
    counts = Counter(map(itemgetter(1), walked.entries.values()))
    kinds: dict[str, Counter[int]] = {"file": Counter(), "exec": Counter(),
                                      "dir": Counter(map(stat.S_IMODE, walked.dirs.values()))}
    for mode, n in counts.items():
        if stat.S_ISREG(mode):
            kinds["exec" if mode & 0o100 else "file"][stat.S_IMODE(mode)] += n
    mask = _umask()
    base = {k: c.most_common(1)[0][0] if c else _default(0o100 * (k != "file"), mask)
            for k, c in kinds.items()}
    off = {mode for mode in counts if stat.S_ISREG(mode)
           and stat.S_IMODE(mode) != base["exec" if mode & 0o100 else "file"]}
    files, dirs = {}, {}
    for rel, e in walked.entries.items() if off else ():
        if e.mode in off and not walked.under_nested(rel) and not walk.under(rel, ignored):
            files[rel] = f"{stat.S_IMODE(e.mode):04o}"
    for rel, mode in walked.dirs.items():
        if stat.S_IMODE(mode) != base["dir"] and rel not in walked.nested \
                and not walked.under_nested(rel) and not walk.under(rel, ignored):
            dirs[rel] = f"{stat.S_IMODE(mode):04o}"
    return {k: f"{v:04o}" for k, v in base.items()}, files, dirs


def _default(mode: int, mask: int) -> int:
    """The permission bits a checkout gives a file of `mode` under the umask `mask`."""
    return (0o777 if mode & 0o100 else 0o666) & ~mask


def load(text: str | None) -> LocalState:
    """The private config JSON of a save (an empty state when there is none)."""
    return LocalState.from_json(text)


def needs_config_first(wc: LocalState) -> bool:
    """Must the worktree's private config be in place before its files are checked out?"""
    return wc.sparse_checkout is not None or wc.config_worktree is not None


def put_config(git_dir: str, wc: LocalState) -> None:
    """Write back the sparse-checkout patterns and config.worktree recorded in `wc`
    into the (new) worktree's private git dir, before its checkout."""
    for text, name in ((wc.sparse_checkout, os.path.join("info", "sparse-checkout")),
                       (wc.config_worktree, "config.worktree")):
        if text is not None:
            full = os.path.join(git_dir, name)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "wb") as fh:
                fh.write(text.encode("utf-8", "surrogateescape"))


def put_flags(path: str, wc: LocalState, *, fresh: bool = True) -> list[str]:
    """After the apply: give back the index flags recorded in `wc` (intent-to-add,
    assume-unchanged, skip-worktree; a skip-worktree file that was absent is taken
    away again when `fresh`, it was only just checked out). Returns the problems
    met, as lines. Raises GitError."""
    # `git stash apply --index` stages a file that W has and I lacks: take it out
    # of the index again and mark it intent-to-add, as it was.
    ita = wc.intent_to_add or []
    index.set_index_flag(path, ita, "--force-remove")
    problems = _intent_to_add(path, ita, wc.intent_to_add_modes or {})
    _put_index_flags(path, wc, fresh)
    return problems


def put_assume_unchanged(path: str, wc: LocalState) -> None:
    """Make the assume-unchanged flags of the worktree at `path` those `wc` records,
    setting and clearing nothing else. Raises GitError."""
    now = query.index_flags(path)
    items = wc.assume_unchanged or []
    want = expand(items, now.paths() if any(i.endswith("/") for i in items) else [])
    _set_assume_unchanged(path, now, want, set(now.paths()), exact=True)


def _set_assume_unchanged(path: str, now: git.IndexFlags, want: set[str], listed: set[str],
                          *, exact: bool) -> None:
    """Set assume-unchanged on the paths of `want` that are in `listed` and lack it;
    when `exact`, clear it from the paths outside `want`. Raises GitError."""
    au = set(now.assume_unchanged)
    index.set_index_flag(path, sorted(p for p in want - au if p in listed),
                            "--assume-unchanged")
    if exact:
        index.set_index_flag(path, sorted(au - want), "--no-assume-unchanged")


def put_modes(path: str, wc: LocalState, *, fresh: bool = True) -> list[str]:
    """Give back the empty directories (when `fresh`) and the permission bits `wc`
    records, after the apply. When the save has a base (`_walked_modes`) other
    than what this process's umask gives and the worktree is `fresh` (every file
    in it was just written under that umask), every file and directory takes its
    recorded bits or the base's; else only the recorded ones are set. `.git` and
    submodules' checkouts are left alone. Returns the paths whose bits could not
    be set."""
    files, dirs = dict(wc.modes or {}), dict(wc.dir_modes or {})
    base = wc.mode_base
    for rel in (wc.empty_dirs or []) if fresh else []:
        try:
            os.makedirs(os.path.join(path, rel), exist_ok=True)
        except OSError:
            pass  # a file stands in its way now: the work there wins
    written = []
    if base and fresh and base != _base(_umask()):
        written.append(".")
        for root, dnames, fnames in os.walk(path):
            dnames[:] = [d for d in dnames if d != ".git"
                         and not os.path.lexists(os.path.join(root, d, ".git"))]
            rel = os.path.relpath(root, path)
            written += [r if rel == "." else f"{rel}/{r}" for r in fnames + dnames if r != ".git"]
    return _chmod(path, set(written) | set(files) | set(dirs), files, dirs, base)


def settle_modes(path: str, wc: LocalState, leave: Sequence[str],
                 written: Sequence[str] = ()) -> list[str]:
    """After `--at`: every file and directory of the worktree at `path` takes the
    bits `wc` records for it, else its base's, so one whose bits changed after the
    entry was taken (a chmod, a file written under another umask) gets the entry's
    back, which the reset leaves on a file whose content it keeps and on every
    directory. `.git`, nested repositories and the paths under `leave` (ignored,
    or left in place: --at never touches them) are left alone. An entry with no
    base (saved before one was recorded) gives back only its recorded bits.
    written: files under `leave` that the run wrote all the same, which take the
    entry's bits too. Returns the paths whose bits could not be set."""
    if not wc.mode_base:
        return put_modes(path, wc, fresh=False)
    files, dirs = dict(wc.modes or {}), dict(wc.dir_modes or {})
    w = walk.walk(path)
    rels = [rel for rel, e in w.entries.items() if e.kind == "file"] + list(w.dirs)
    wrote = set(written)
    rels = [rel for rel in rels if rel not in w.nested and not w.under_nested(rel)
            and (rel in wrote or not walk.under(rel, leave))]
    return _chmod(path, {".", *rels}, files, dirs, wc.mode_base)


def unsettled(path: str, wc: LocalState, leave: Sequence[str], walked: walk.Walk
              ) -> list[str] | None:
    """The files and directories of the worktree at `path` (as `walked` saw them,
    "." the worktree itself) whose bits `settle_modes` would change to those `wc`
    records for them or its base's, the same paths left alone; None when `wc`
    records no base (its bits are compared only as recorded)."""
    if not wc.mode_base:
        return None
    files, dirs, base = wc.modes or {}, wc.dir_modes or {}, wc.mode_base
    out = []
    items = [(rel, e.mode) for rel, e in walked.entries.items() if e.kind == "file"]
    items += list(walked.dirs.items())
    for rel, mode in items:
        if rel in walked.nested or walked.under_nested(rel) or walk.under(rel, leave):
            continue
        if stat.S_ISREG(mode):
            want = files.get(rel) or base.get("exec" if mode & 0o100 else "file")
        elif stat.S_ISDIR(mode):
            want = dirs.get(rel) or base.get("dir")
        else:
            continue
        if want and stat.S_IMODE(mode) != int(want, 8):
            out.append(rel)
    top = stat.S_IMODE(os.lstat(path).st_mode)
    want = dirs.get(".") or base.get("dir")
    if want and top != int(want, 8):
        out.append(".")
    return out


def _chmod(path: str, rels: set[str], files: dict[str, str], dirs: dict[str, str],
           base: dict[str, str] | None) -> list[str]:
    """Give each of `rels` its bits: those `files` or `dirs` record, else the base's.
    Returns the paths whose bits could not be set."""
    failed = []
    # Deepest first: a directory's own bits come after what it holds.
    for rel in sorted(rels, key=lambda r: -r.count("/")):
        full = os.path.join(path, rel)
        try:
            st = os.lstat(full)
            if stat.S_ISREG(st.st_mode):
                want = files.get(rel) or (base or {}).get(
                    "exec" if st.st_mode & 0o100 else "file")
            elif stat.S_ISDIR(st.st_mode):
                want = dirs.get(rel) or (base or {}).get("dir")
            else:
                continue
            if want and stat.S_IMODE(st.st_mode) != int(want, 8):
                os.chmod(full, int(want, 8))
        except FileNotFoundError:
            continue
        except OSError:
            failed.append(rel)
    return failed


def _base(mask: int) -> dict[str, str]:
    """The base a checkout under the umask `mask` gives (see `_walked_modes`)."""
    return {"file": f"{_default(0, mask):04o}", "exec": f"{_default(0o100, mask):04o}",
            "dir": f"{_default(0o100, mask):04o}"}


def _put_index_flags(path: str, wc: LocalState, fresh: bool) -> None:
    """Make the assume-unchanged and skip-worktree flags those `wc` records: set the
    missing ones and clear the others (only set them for a sparse checkout saved
    before its flags were recorded). A file whose entry loses skip-worktree, or
    keeps it but was present, is written from the index where it is missing (a
    sparse checkout left it out); one whose entry gains it and was absent is taken
    away when `fresh`, with the directories it leaves empty. Raises GitError."""
    recorded = [wc.skip_worktree or [], wc.skip_worktree_absent or [],
                wc.assume_unchanged or []]
    if fresh and not any(recorded) and wc.sparse_checkout is None:
        return  # a fresh checkout without patterns has no flag (core.ignoreStat is off)
    now = query.index_flags(path)
    paths = now.paths() if any(i.endswith("/") for items in recorded for i in items) else []
    want_skip, absent, want_au = (expand(items, paths) for items in recorded)
    exact = bool(wc.exact_flags) or wc.sparse_checkout is None
    skip = set(now.skip_worktree)
    unskip = sorted(skip - want_skip) if exact else []
    shown = [p for p in now.skip_worktree if p in want_skip and p not in absent
             and not os.path.lexists(os.path.join(path, p))]
    index.set_index_flag(path, unskip + shown, "--no-skip-worktree")
    missing = [p for p in unskip if not os.path.lexists(os.path.join(path, p))] + shown
    if missing:
        index.checkout_paths(path, missing)
    # A path no longer in the index (its branch moved on) cannot take a flag.
    listed = set(paths or now.paths()) if want_skip or want_au else set()
    added = sorted(p for p in want_skip - skip if p in listed) + shown
    index.set_index_flag(path, added, "--skip-worktree")
    for rel in added if fresh else []:
        if rel in absent:
            _remove_file(path, rel)
    # After the removals: git clears skip-worktree of a file it finds present.
    if (unskip or added) and _sparse_index(path):
        index.collapse_sparse(path)
    _set_assume_unchanged(path, now, want_au, listed, exact=exact)


def _sparse_index(path: str) -> bool:
    """Is the worktree's index a sparse index (its `sdir` extension's signature is in
    the file; a path holding those letters costs one needless rewrite)?"""
    try:
        with open(os.path.join(git.repo_dirs(path).git_dir, "index"), "rb") as fh:
            return b"sdir" in fh.read()
    except FileNotFoundError:
        return False


def _remove_file(path: str, rel: str) -> None:
    """Unlink `rel` under `path`, then the directories above it it leaves empty."""
    try:
        os.unlink(os.path.join(path, rel))
    except FileNotFoundError:
        return
    for d in _parents(rel)[:-1]:
        try:
            os.rmdir(os.path.join(path, d))
        except OSError:
            return


def _intent_to_add(path: str, paths: list[str], modes: dict[str, str]) -> list[str]:
    """`git add -N` for `paths`. `git add` needs a file: for an entry whose file was
    gone, an empty one is written for the add and taken away again, with the
    directories made for it. git takes the entry's mode from the file: one whose
    recorded mode (`modes`) is not the file's has its owner's executable bit
    turned for the add and back after it. Returns the paths it could not mark (a
    parent that is a file or a symlink now), as problem lines."""
    made: list[str] = []
    problems = []
    marked = []
    turned: dict[str, int] = {}  # {full path: the bits to put back}
    for rel in paths:
        full = os.path.join(path, rel)
        if os.path.lexists(full):
            marked.append(rel)
            want = modes.get(rel)
            st = os.lstat(full)
            if want and stat.S_ISREG(st.st_mode) \
                    and (want == "100755") != bool(st.st_mode & stat.S_IXUSR):
                turned[full] = stat.S_IMODE(st.st_mode)
                os.chmod(full, stat.S_IMODE(st.st_mode) ^ stat.S_IXUSR)
            continue
        parent = os.path.dirname(full)
        missing = []
        while not os.path.lexists(parent):
            missing.append(parent)
            parent = os.path.dirname(parent)
        if os.path.islink(parent) or not os.path.isdir(parent):
            problems.append(f"'{rel}' not marked intent-to-add again: a parent is not a "
                            "directory")
            continue
        for d in reversed(missing):
            os.mkdir(d)
            made.append(d)
        with open(full, "xb"):
            made.append(full)
        if modes.get(rel) == "100755":
            os.chmod(full, 0o700)
        marked.append(rel)
    try:
        index.add_intent_to_add(path, marked)
    finally:
        for full, bits in turned.items():
            os.chmod(full, bits)
        for p in reversed(made):
            if os.path.isdir(p) and not os.path.islink(p):
                os.rmdir(p)
            else:
                os.unlink(p)
    return problems
