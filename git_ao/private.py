"""What a worktree keeps outside its commits: sparse-checkout patterns,
`config.worktree`, index flags (intent-to-add, assume-unchanged,
skip-worktree) and permission bits git does not record. `collect` reads them
into the save's private config (a JSON object, records.Save.private_config);
`put_config` writes the admin files back before the checkout and `put_flags`
the flags and modes after the apply (replay.py).
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any

from . import git, gitindex, gitparse
from .gitindex import TempIndex


def collect(path: str, git_dir: str, conf: dict[str, str], flags: git.IndexFlags,
            st: git.Status, hidden: list[str]) -> dict[str, Any]:
    """What lives only in the worktree's private admin dir and shapes it, as the
    private config's keys. conf: `gitquery.config_map`; flags: its index flags;
    st: its status; hidden: the paths index flags hide from status."""
    wc: dict[str, Any] = {}
    for key, name in (("sparse_checkout", os.path.join("info", "sparse-checkout")),
                      ("config_worktree", "config.worktree")):
        try:
            with open(os.path.join(git_dir, name), "rb") as fh:
                wc[key] = fh.read().decode("utf-8", "surrogateescape")
        except FileNotFoundError:
            pass
    sparse = conf.get("core.sparsecheckout") == "true"
    if flags.assume_unchanged:
        wc["assume_unchanged"] = flags.assume_unchanged
    if flags.skip_worktree and not sparse:
        wc["skip_worktree"] = flags.skip_worktree
        absent = [p for p in flags.skip_worktree if p not in hidden]
        if absent:
            wc["skip_worktree_absent"] = absent
    modes = _private_modes(path, [e.path for e in st.changed] + st.untracked)
    if modes:
        wc["modes"] = modes
    return wc


def intent_to_add(st: git.Status, index: TempIndex, index_tree: str) -> list[str]:
    """The intent-to-add entries of `index` (a copy of the real one) whose tree is
    `index_tree`. `git status` shows each as added in the worktree (".A", "DA"
    over a staged deletion) or, its file gone, as an empty blob deleted (".D",
    like a committed empty file): only then is the index asked (one `git
    diff-index`)."""
    if not any(e.kind == "1" and (e.xy[1] == "A" or (
            e.xy[1] == "D" and e.index_oid in gitparse.EMPTY_BLOBS)) for e in st.changed):
        return []
    return index.intent_to_add(index_tree)


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
    """{path: "0600"} for saved files whose permission bits git would not give back:
    git records only 644 or 755, so a private key saved at 0600 would return
    world-readable. Only the changed and untracked files are looked at."""
    mask = _umask()
    out = {}
    for rel in rels:
        try:
            st = os.lstat(os.path.join(path, rel))
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        perm = stat.S_IMODE(st.st_mode)
        default = (0o777 if perm & 0o100 else 0o666) & ~mask
        if perm != default:
            out[rel] = f"{perm:04o}"
    return out


def load(text: str | None) -> dict[str, Any]:
    """The private config JSON of a save as a dict ({} when there is none)."""
    return json.loads(text) if text else {}


def needs_config_first(wc: dict[str, Any]) -> bool:
    """Must the worktree's private config be in place before its files are checked out?"""
    return "sparse_checkout" in wc or "config_worktree" in wc


def put_config(git_dir: str, wc: dict[str, Any]) -> None:
    """Write back the sparse-checkout patterns and config.worktree recorded in `wc`
    into the (new) worktree's private git dir, before its checkout."""
    for key, name in (("sparse_checkout", os.path.join("info", "sparse-checkout")),
                      ("config_worktree", "config.worktree")):
        if key in wc:
            full = os.path.join(git_dir, name)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "wb") as fh:
                fh.write(wc[key].encode("utf-8", "surrogateescape"))


def put_flags(path: str, wc: dict[str, Any], *, fresh: bool = True) -> list[str]:
    """After the apply: give back the index flags recorded in `wc` (intent-to-add,
    assume-unchanged, skip-worktree; a skip-worktree file that was absent is taken
    away again when `fresh`, it was only just checked out) and the permission bits.
    Returns the problems met, as lines. Raises GitError."""
    # `git stash apply --index` stages a file that W has and I lacks: take it out
    # of the index again and mark it intent-to-add, as it was.
    ita = wc.get("intent_to_add", [])
    gitindex.set_index_flag(path, ita, "--force-remove")
    problems = _intent_to_add(path, ita)
    for rel, mode in wc.get("modes", {}).items():
        full = os.path.join(path, rel)
        if os.path.isfile(full) and not os.path.islink(full):
            os.chmod(full, int(mode, 8))
    gitindex.set_index_flag(path, wc.get("assume_unchanged", []), "--assume-unchanged")
    gitindex.set_index_flag(path, wc.get("skip_worktree", []), "--skip-worktree")
    for rel in wc.get("skip_worktree_absent", []) if fresh else []:
        try:
            os.unlink(os.path.join(path, rel))
        except FileNotFoundError:
            pass
    return problems


def _intent_to_add(path: str, paths: list[str]) -> list[str]:
    """`git add -N` for `paths`. `git add` needs a file: for an entry whose file was
    gone, an empty one is written for the add and taken away again, with the
    directories made for it. Returns the paths it could not mark (a parent that is
    a file or a symlink now), as problem lines."""
    made: list[str] = []
    problems = []
    marked = []
    for rel in paths:
        full = os.path.join(path, rel)
        if os.path.lexists(full):
            marked.append(rel)
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
        marked.append(rel)
    try:
        gitindex.add_intent_to_add(path, marked)
    finally:
        for p in reversed(made):
            if os.path.isdir(p) and not os.path.islink(p):
                os.rmdir(p)
            else:
                os.unlink(p)
    return problems
