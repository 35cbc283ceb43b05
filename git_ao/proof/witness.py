"""Prove that taking a worktree away loses nothing.

Three proofs, each against the directory itself rather than git's view of it:

- before the removal, `blockers`: every file the walk found is in the
  preserve commit, ignored by the repository, or inside a nested repository
  that is safe elsewhere; mount points, unreadable directories and names git
  will not store block;
- after the move into the trash, `changed_after_move`: a second walk of the
  moved directory matches the first one (stat data, and the content of files
  whose times were too recent to trust), so writes that landed after the
  capture are seen and captured again;
- around the ref, `objects_missing`: every object the preserve commit needs
  exists, so a `git gc --prune=now` that ran between writing the objects and
  the ref cannot leave a ref that restore cannot read.

Plus what only the worktree's admin dir keeps alive (`admin_only`): its
per-worktree refs and the commits only its HEAD reflog reaches; and, for a
trash entry, what it holds that no save has (`unsaved_in`: prune keeps such an
entry) and, after a fallback restore, every way it differs from the save that
came back (`unlike_save`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from git_ao import git
from git_ao.fs import nested, walk
from git_ao.fs.walk import Blocker, Walk
from git_ao.git import index, parse, query
from git_ao.git.parse import ObjectId
from git_ao.save import capture, local_state

TYPE_CHECKING = False  # mypy takes any name TYPE_CHECKING as true
if TYPE_CHECKING:
    from git_ao.store import trash  # a checkpoint, proving no trash entry, loads none


def captured_blobs(cwd: str, head: str, worktree_tree: str | None,
                   untracked_tree: str | None,
                   listed: dict[str, str] | None = None) -> dict[str, str]:
    """{path: object id} of everything a save holds for the worktree at `cwd`: the
    worktree tree (HEAD's when nothing was written) and the untracked tree.
    listed: those trees' listing the capture took already (`Capture.listed`)."""
    if listed is not None:
        return listed
    tree = worktree_tree or git.trees_of(cwd, [head])[0]
    assert tree is not None
    return query.trees_blobs(cwd, [tree, untracked_tree] if untracked_tree else [tree])


def blockers(path: str, w: Walk, captured: dict[str, str], ignored: list[str], *,
             private_config: str | None, sessions: dict[str, str]) -> list[Blocker]:
    """What in the walk `w` of the worktree at `path` stops its removal.

    captured: `captured_blobs`. ignored: `git status --ignored=matching`'s list.
    private_config: the save's per-worktree config JSON (its `submodules` are
    judged by the capture). sessions: {real path: id} of known sessions."""
    found = walk.unaccounted(w, set(captured), ignored,
                             lambda paths: query.check_ignore(path, paths))
    subs = set(local_state.load(private_config).submodules or [])
    found += nested.judge(path, w.nested, sessions=sessions, submodules=subs)
    return sorted(found, key=lambda b: b.path)


def changed_after_move(before: Walk, moved: str, captured: dict[str, str],
                       ignored: list[str], git_dir: str) -> tuple[list[str], Walk]:
    """The paths of the moved directory `moved` (its admin dir `git_dir`, still
    registered) whose state differs from the walk `before` (taken before the
    capture) and that the repository does not ignore, with the new walk. Files
    whose times were within the racy window of `before` are compared by content
    (as `git add` reads them, `index.added_ids`), since a write in the same
    clock tick leaves their stat data as it was. Where every directory and file
    still has its stat data (`walk.unchanged_since`, one lstat each), the moved
    directory is not walked again: the walk returned is `before`'s, rooted there."""
    if walk.unchanged_since(before, moved, ignored):
        after, changed = replace(before, root=moved), set()
    else:
        after = walk.walk(moved)
        changed = set(walk.changed_since(before, after))
    racy = [p for p in walk.racy_paths(before, captured)
            if p not in changed and (e := after.entries.get(p)) is not None and e.kind == "file"]
    if racy:
        for p, oid in zip(racy, index.added_ids(moved, racy, git_dir), strict=True):
            if oid != captured.get(p):
                changed.add(p)
    relevant = [p for p in changed if not before.under_nested(p) and not after.under_nested(p)
                and not walk.ignored_file(p, ignored)]
    unknown = [p for p in relevant if p not in captured]
    ign = query.check_ignore(moved, unknown) if unknown else set()
    return sorted(p for p in relevant if p not in ign), after


def objects_missing(cwd: str, commit: str, head: str) -> bool:
    """Does any object the commit `commit` needs beyond `head` fail to exist
    (`git rev-list --objects`, which fails on a missing object)?"""
    return not query.objects_complete(cwd, commit, head)


@dataclass
class AdminOnly:
    """Commits only a worktree's private admin dir keeps alive: its per-worktree
    refs ({name: id}) and the commits of its HEAD reflog no ref reaches."""

    refs: dict[str, ObjectId] = field(default_factory=dict)
    reflog: list[ObjectId] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.refs or self.reflog)


# The per-worktree refs a worktree's admin dir holds (seen from inside it).
ADMIN_REFS = ("refs/worktree/", "refs/bisect/")


def admin_only(path: str, read: dict[str, git.RefRead] | None = None,
               head: str | None = None) -> AdminOnly:
    """Read the per-worktree refs (`refs/worktree/*`, `refs/bisect/*`, seen from
    inside the worktree) and the HEAD reflog commits that nothing else reaches.
    read: refs read already in the worktree with ADMIN_REFS among the patterns
    (`git.read_refs`); head: the worktree's HEAD, reachable by definition."""
    found = AdminOnly()
    if read is None:
        for ref, oid in git.for_each_ref(path, *ADMIN_REFS):
            found.refs[ref] = oid
    else:
        found.refs = {ref: r.oid for ref, r in sorted(read.items()) if ref.startswith(ADMIN_REFS)}
    # --all from inside a worktree counts the refs and every worktree's HEAD, but
    # not reflogs: what it does not reach dies with this worktree's reflog.
    logged = set(query.head_reflog_commits(path)) - {head} - set(found.refs.values())
    found.reflog = query.unreachable_from_all(path, sorted(logged))
    return found


def keep_alive(path: str, ref: str, found: AdminOnly, older: str | None | bool = True) -> str:
    """Point `ref` at a commit whose parents are every commit of `found`, so they
    stay reachable after the admin dir is gone, and what `ref` kept before (an
    earlier preserve's or kill's: a commit only it reaches counts as reachable,
    so `found` leaves it out). older: what `ref` holds, when the caller read it
    (None: nothing); True reads it here. Returns the commit id."""
    if older is True:
        older = git.rev_parse(path, ref)
    assert older is None or isinstance(older, str)
    parents = sorted(set(found.refs.values()) | set(found.reflog) | ({older} if older else set()))
    empty = git.empty_tree(path)
    lines = [f"{name} {oid}" for name, oid in sorted(found.refs.items())]
    lines += [f"reflog {oid}" for oid in found.reflog]
    if older and older not in found.refs.values():
        lines.append(f"kept-before {older}")
    commit = git.commit_tree(path, empty, parents,
                             "git-ao: commits kept alive for a preserved worktree\n\n"
                             + "\n".join(lines) + "\n")
    git.update_ref(path, ref, commit, message="git-ao keep per-worktree commits")
    return commit


def fetch_refspecs_covering(cwd: str, prefix: str = "refs/ao/", *,
                            conf: parse.Config | None = None) -> list[str]:
    """The `remote.<name>.fetch` refspecs whose destination covers `prefix`
    (a mirror clone's `+refs/*:refs/*`): `git fetch --prune` would delete the
    preserve refs there. conf: the repository's config, read already."""
    out = []
    for key, value in query.fetch_refspecs(cwd, conf):
        dst = value.lstrip("+").partition(":")[2]
        if not dst:
            continue
        if dst.endswith("*"):
            covered = prefix.startswith(dst[:-1]) or dst[:-1].startswith(prefix)
        else:
            covered = dst.startswith(prefix)
        if covered:
            out.append(f"{key} = {value}")
    return out


def unsaved_in(entry: trash.Entry, saved_commit: str | None) -> str:
    """Why the trash entry must be kept, or '' when everything in its directory is
    ignored by the repository or, byte for byte, in a saved tree (the entry's
    commit, the session's save `saved_commit`, or the HEAD of its admin copy).
    Walks the entry
    (`walk.walk`: no symlink followed, no mount crossed; a mount point or an
    unreadable directory keeps it) and asks git with `--git-dir=<common dir>
    --work-tree=<the copy>` and the admin copy's index, since the copy's own
    `.git` file names an admin dir that is gone."""
    if walk.is_mount_point(entry.path):
        return "it is a mount point"
    if entry.legacy:
        return ""  # written before entries recorded their repository: as before
    if not entry.holds_worktree:
        return ""
    common = str(entry.meta.common_dir or "")
    if not common or not os.path.isdir(common):
        return "its repository is gone, so what it holds cannot be checked"
    w, why = _walk_copy(entry)
    if why:
        return why
    commits = [c for c in (entry.meta.commit, saved_commit) if c]
    trees = []
    for c in commits:
        if git.object_exists(common, c):
            h, i_tree, w_tree, u_tree = capture.saved_trees(common, c)
            trees += [t for t in (f"{h}^{{tree}}", i_tree, w_tree, u_tree) if t]
    head = _admin_head(common, entry.admin)
    if head:
        trees.append(f"{head}^{{tree}}")
    known = query.blobs_by_path(common, trees)
    index_file = os.path.join(entry.admin, "index")
    rest = sorted(w.entries)
    ign = query.check_ignore_in(common, entry.worktree, index_file, rest) if rest else set()
    rest = [p for p in rest if p not in ign]
    missing = [p for p in rest if p not in known]
    if missing:
        return f"{len(missing)} file(s) in no saved tree and not ignored, such as {missing[0]}"
    files = [p for p in rest if w.entries[p].kind == "file"]
    for p, oid in zip(files, index.added_ids_in(common, entry.worktree, files, index_file),
                      strict=True):
        if oid not in known[p]:
            return f"{p} differs from every saved copy"
    return ""


def _walk_copy(entry: trash.Entry) -> tuple[Walk, str]:
    """The walk of a trash entry's worktree copy, and why it alone keeps the entry
    ('' when nothing does): the first blocker (a mount, an unreadable directory)
    or a nested repository, neither of which a prune judges."""
    w = walk.walk(entry.worktree)
    if w.blockers:
        return w, f"{w.blockers[0]}"
    if w.nested:
        return w, f"it holds a nested repository: {w.nested[0]}"
    return w, ""


def partly_written(common_dir: str, file: str, oids: set[str]) -> bool:
    """Is `file` a strict beginning of one of the blobs `oids` (what a checkout or
    apply cut short by a full disk or a kill leaves), not an edit? Compared as
    stored: a file written through a smudge filter is never taken for one."""
    with open(file, "rb") as fh:
        head = fh.read()
    return any(len(blob) > len(head) and blob.startswith(head)
               for blob in (query.blob_bytes(common_dir, o) for o in sorted(oids)))


def not_from_checkout(entry: trash.Entry) -> str:
    """Why a stray entry restore set aside from its own interrupted checkout must be
    kept, or '' when all its directory holds is provably what that checkout was
    writing: each file and symlink is, at its path, a blob of the entry's
    `checkout_trees` (the HEAD it checked out and the save's trees), or the start
    of one (the file the kill cut short). Anything else keeps it, named: a path
    none of them has (an ignored file too: it may be the only copy of an `.env`),
    other content, a mount point, a nested repository, trees that are gone. The
    walk follows no symlink and crosses no mount; each file is read as `git add`
    reads it with the admin copy's index (`index.added_ids_in`: the repository's
    filters, which checked the files out, and its end-of-line rules)."""
    trees = [str(t) for t in entry.meta.checkout_trees or []]
    common = str(entry.meta.common_dir or "")
    if walk.is_mount_point(entry.path):
        return "it is a mount point"
    if not entry.holds_worktree:
        return ""
    if not common or not os.path.isdir(common):
        return "its repository is gone, so what it holds cannot be checked"
    if not trees or not all(git.object_exists(common, t) for t in trees):
        return "the trees its checkout was writing are gone, so what it holds cannot be checked"
    w, why = _walk_copy(entry)
    if why:
        return why
    known = query.blobs_by_path(common, trees)
    rest = sorted(w.entries)
    missing = [p for p in rest if p not in known or w.entries[p].kind == "other"]
    if missing:
        return (f"it holds {len(missing)} path(s) its checkout did not write, such as {missing[0]}; "
                "take what you need, then remove it by hand")
    files = [p for p in rest if w.entries[p].kind == "file"]
    for p, oid in zip(files, index.added_ids_in(common, entry.worktree, files,
                                                os.path.join(entry.admin, "index")),
                      strict=True):
        if oid not in known[p] and not partly_written(
                common, os.path.join(entry.worktree, p), known[p]):
            return (f"{p} differs from what its checkout wrote; take what you need, then "
                    "remove it by hand")
    for p in (p for p in rest if w.entries[p].kind == "link"):
        target = os.fsencode(os.readlink(os.path.join(entry.worktree, p)))
        if not any(query.blob_bytes(common, o) == target for o in sorted(known[p])):
            return (f"{p} differs from what its checkout wrote; take what you need, then "
                    "remove it by hand")
    return ""


def _admin_head(common: str, admin: str) -> str | None:
    """The commit the admin copy's HEAD names, when it still exists."""
    try:
        with open(os.path.join(admin, "HEAD"), encoding="utf-8") as fh:
            text = fh.read().strip()
    except OSError:
        return None
    rev = text.removeprefix("ref: ")
    return git.rev_parse(common, rev)


_KIND = {"100644": "file", "100755": "file", "120000": "link", "160000": "gitlink"}


def unlike_save(entry: trash.Entry, head: str | None, commit: str | None,
                ignored: Sequence[str], common_dir: str | None = None) -> dict[str, str]:
    """{path: how it differs} for every path of the trash copy that is not what the
    save holds: 'deleted', 'new', 'changed' (content), 'mode changed',
    'type changed', or why the walk could not read it. The save is the commit
    `commit` (its worktree and untracked trees), or the commit `head` when
    nothing was written ({} when neither is known). Paths the repository ignores
    (`ignored`: `query.ignored_in` of the copy, a wholly ignored directory
    ending in '/') are not compared.

    Exact where it matters and cheap where it can be: the path sets and the modes
    are compared whole (a deletion touches no file), the content only of files
    touched since the walk before the capture (`walked_ns` in the entry; ctime
    cannot be set back), or of every file when the entry does not say. A path
    outside the sparse cone (skip-worktree in the admin copy's index) may be
    absent; a gitlink must be a directory; a nested repository no save has is
    'new'. `common_dir`: the repository as the record has it now, read when the
    one the entry names is missing (the repository moved since, the record
    re-pointed by `git ao doctor --recover -C`). Raises GitError (the repository
    unreadable) and OSError."""
    common = str(entry.meta.common_dir or "")
    if common_dir and not os.path.isdir(common):
        common = common_dir
    copy = entry.worktree
    if not common or not (commit or head):
        return {}
    w = walk.walk(copy, skip=frozenset(p.rstrip("/") for p in ignored if p.endswith("/")))
    out = {b.path: b.reason for b in w.blockers}
    if commit:
        _, _, w_tree, u_tree = capture.saved_trees(common, commit)
    else:
        w_tree, u_tree = f"{head}^{{tree}}", None
    saved = query.ls_tree_entries(common, w_tree or f"{head}^{{tree}}")
    if u_tree:
        saved.update(query.ls_tree_entries(common, u_tree))
    present = {p: e for p, e in w.entries.items() if not w.under_nested(p)}
    index_file = os.path.join(entry.admin, "index")
    gone = [p for p, (mode, _) in saved.items()
            if (not os.path.isdir(os.path.join(copy, p)) if mode == "160000"
                else p not in present)]
    if gone and os.path.exists(index_file):
        sparse = query.skip_worktree_in(common, copy, index_file)
        gone = [p for p in gone if p not in sparse]
    out.update((p, "deleted") for p in gone)
    gitlinks = {p for p, (mode, _) in saved.items() if mode == "160000"}
    ign = set(ignored)

    def is_ignored(p: str) -> bool:
        parts = p.split("/")
        return p in ign or any("/".join(parts[:i]) + "/" in ign for i in range(1, len(parts) + 1))

    out.update((p, "new") for p in w.nested if p not in gitlinks and not is_ignored(p))
    out.update((p, "new") for p in present if p not in saved and not is_ignored(p))
    since = entry.meta.walked_ns
    conf: dict[str, str] | None = None
    files = []
    for p, e in present.items():
        if p not in saved:
            continue
        mode, oid = saved[p]
        kind = _KIND.get(mode, "other")
        if kind != e.kind or (kind == "file" and bool(e.mode & stat.S_IXUSR) != (mode == "100755")):
            # core.symlinks=false checks a symlink out as a file, core.fileMode=false
            # keeps the index's bits: then git itself sees no change.
            conf = query.config_map(common) if conf is None else conf
            off = {k for k in ("core.symlinks", "core.filemode")
                   if conf.get(k, "true") in ("false", "0", "no", "off")}
            if kind != e.kind and not (kind == "link" and "core.symlinks" in off):
                out[p] = "type changed"
                continue
            if kind == e.kind and "core.filemode" not in off:
                out[p] = "mode changed"
                continue
        if isinstance(since, int) and not e.touched_since(since):
            continue
        if e.kind == "link" and kind == "link":
            target = os.fsencode(os.readlink(os.path.join(copy, p)))
            if target != query.blob_bytes(common, oid):
                out[p] = "changed"
        elif e.kind == "file":
            files.append(p)
    for p, got in zip(files, index.added_ids_in(common, copy, files, index_file), strict=True):
        if got != saved[p][1]:
            out[p] = "changed"
    return dict(sorted(out.items()))
