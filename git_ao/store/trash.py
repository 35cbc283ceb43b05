"""Where a taken-away worktree goes, and how it is laid out there.

Preserve never deletes a worktree: it renames the directory into a trash
entry, one `rename(2)`, so what git did not capture (ignored files such as
`.env`, `node_modules/`) and writes that land after the capture are kept, and
restore can put the whole directory back with one rename.

A rename only works within one file system, so the trash root is chosen per
worktree, the first of these on the worktree's own file system:

1. `<data dir>/trash`;
2. `<common git dir>/ao-trash` (inside a `.git`: no `git status` sees it);
3. `.git-ao-trash-<uid>` in the highest writable directory above the
   worktree on its file system and its mount (at worst its parent, which
   preserve can write to, since it renames out of it).

"Its file system" is the device and the mount: a bind mount of a directory of
the same file system keeps the device, but a rename across it fails (EXDEV).

Roots other than the first are listed in `<data dir>/trash-roots`, so prune
and restore find them. An entry is a directory `<session id>.<ns>/` (mode
0700) holding:

    entry.json   what was moved, from where, and the save it belongs to
    admin/       a copy of the worktree's private git dir (index, HEAD, reflog,
                 per-worktree refs, config.worktree, sparse-checkout)
    worktree/    the worktree directory as it was taken away

An entry is git-ao's when its name has that form and its entry.json names
the same session, with a time (`ours`); only those are read and deleted. Anything
else under a root (a directory of yours, and an entry written before entry.json
existed: a bare directory named `<session id>.<ns>`, which nothing tells apart
from one made by hand) is kept, and prune names it (`not_ours`). Roots are taken
only when named as git-ao names them (`datadir.trash_roots`).

Two more kinds of entry share the layout. `<session id>.<ns>.stray/` holds, as
its `worktree/`, a directory restore found at a session's recorded path and
set aside (entry.json: "stray": true); prune never deletes one, except one
restore set aside from its own interrupted checkout ("checkout_trees": the
trees it was writing) whose every file is in those trees. And an entry
restore has put back has no `worktree/` left (entry.json: "reinstated_to");
one whose ignored files a fallback restore moved out says "restored": true.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, fields, replace
from typing import Any

from git_ao.git.worktree import Verified
from git_ao.mounts import mount_of, mount_points
from git_ao.store.datadir import ROOTS_FILE, TRASH_DIR, root_name
from git_ao.store.datadir import trash_roots as roots

META = "entry.json"
# An entry's name: `<session id>.<ns>`, `.stray` after it for a stray entry.
_ENTRY_NAME = re.compile(r"(.+)\.([0-9]+)(\.stray)?")
# Scratch a git-ao writes into a worktree's admin dir; not worth keeping.
_ADMIN_SKIP = ("git-ao-index.", "git-ao-verify.", "index.lock")


def _dev(path: str) -> int | None:
    try:
        return os.stat(path).st_dev
    except OSError:
        return None


def _highest_writable(start: str, dev: int, mount: str | None) -> str | None:
    """The highest directory from `start` upwards on device `dev` and on the mount
    `mount` (None: the table is unknown) that this user can write to, or None."""
    best = None
    cur = os.path.realpath(start)
    while True:
        if _dev(cur) != dev or (mount is not None and mount_of(cur) != mount):
            break
        if os.access(cur, os.W_OK | os.X_OK):
            best = cur
        parent = os.path.dirname(cur)
        if parent == cur:
            break
        cur = parent
    return best


def root_for(worktree: str, data_dir: str, common_dir: str) -> str:
    """The trash root for the worktree at `worktree`: a directory on its file
    system and its mount (a rename across a bind mount of the same file system
    fails too; see the module docstring). Creates nothing."""
    parent = os.path.dirname(os.path.realpath(worktree)) or "/"
    dev, mount = _dev(parent), mount_of(parent)

    def same(path: str) -> bool:
        return _dev(path) == dev and (mount is None or mount_of(path) == mount)

    own = os.path.join(data_dir, TRASH_DIR)
    if dev is None or same(data_dir):
        return own
    if same(common_dir):
        return os.path.join(common_dir, "ao-trash")
    top = _highest_writable(parent, dev, mount)
    if top is None:
        return own  # the rename will fail with EXDEV and say so
    return os.path.join(top, root_name())


def ensure_root(data_dir: str, root: str) -> None:
    """Create `root` (0700) and list it in `trash-roots` when it is not the data
    dir's own. The listing is appended before the root is used, so a crash never
    leaves an entry that prune cannot find."""
    if root != os.path.join(data_dir, TRASH_DIR) and root not in roots(data_dir):
        with open(os.path.join(data_dir, ROOTS_FILE), "a", encoding="utf-8",
                  errors="surrogateescape") as fh:
            fh.write(root + "\n")
            fh.flush()
            os.fsync(fh.fileno())
    os.makedirs(root, mode=0o700, exist_ok=True)


@dataclass
class Meta:
    """An entry's entry.json. Its keys are these field names; a field that is None
    is not written, except `commit`, which an entry taken from a worktree always
    records (null: the worktree had no save). Keys are sorted, and keys this
    git-ao does not know are kept in `other`, so what is read is written back
    byte for byte."""

    session: str | None = None
    created_ns: int | None = None
    path: str | None = None  # the worktree's recorded path
    common_dir: str | None = None
    commit: str | None = None  # the save's preserve commit
    has_commit: bool = False  # whether `commit` is written (null when None)
    walked_ns: int | None = None  # when the walk before the move started
    killed: bool | None = None  # taken away by `git ao kill`
    stray: bool | None = None  # a directory restore found in a session's way
    interrupted_restore: bool | None = None  # left by a restore that was interrupted
    # the trees git-ao's own interrupted checkout and apply were writing (a stray
    # set aside from a restore's unfinished worktree): prune deletes the entry once
    # all it holds is in them (`witness.not_from_checkout`)
    checkout_trees: list[str] | None = None
    files: list[str] | None = None  # a stray's first files, to name them
    count: int | None = None  # how many files a stray holds
    restored: bool | None = None  # put back whole by a restore
    environment_kept: list[str] | None = None  # ignored paths a fallback restore moved out
    not_as_saved: list[str] | None = None  # paths that differ from the save
    unlike_save: list[str] | None = None
    # a fallback restore found the save's commit gone: the copy holds the only work
    commit_gone: bool | None = None
    reinstating: str | None = None  # the path a restore is moving the directory to
    admin: str | None = None  # the admin dir a restore made for it
    proof_failed: bool | None = None  # put back, then not proven and moved in again
    other: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object entry.json holds."""
        out = dict(self.other)
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("other", "has_commit"):
                continue
            if value is not None or (f.name == "commit" and self.has_commit):
                out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Meta:
        """The Meta of a parsed entry.json."""
        known = {f.name for f in fields(cls)} - {"other", "has_commit"}
        meta = cls(**{k: v for k, v in raw.items() if k in known})
        meta.has_commit = "commit" in raw
        meta.other = {k: v for k, v in raw.items() if k not in known}
        return meta


@dataclass
class Entry:
    """One trash entry: its directory and its entry.json (`Meta`)."""

    path: str
    meta: Meta = field(default_factory=Meta)

    @property
    def legacy(self) -> bool:
        return not os.path.exists(os.path.join(self.path, META))

    @property
    def worktree(self) -> str:
        return self.path if self.legacy else os.path.join(self.path, "worktree")

    @property
    def admin(self) -> str:
        return os.path.join(self.path, "admin")

    @property
    def session_id(self) -> str:
        sid = self.meta.session
        return sid if isinstance(sid, str) else os.path.basename(self.path).rsplit(".", 1)[0]

    @property
    def created_ns(self) -> int:
        v = self.meta.created_ns
        if isinstance(v, int):
            return v
        stamp = os.path.basename(self.path).rsplit(".", 1)[-1]
        return int(stamp) if stamp.isdigit() else os.lstat(self.path).st_mtime_ns

    @property
    def holds_worktree(self) -> bool:
        return os.path.isdir(self.worktree) and not os.path.islink(self.worktree)

    @property
    def stray(self) -> bool:
        """A directory restore found in a session's way and set aside."""
        return bool(self.meta.stray)

    @property
    def candidate(self) -> bool:
        """Could restore put this entry's directory back whole? (It holds one, and it
        was taken away by preserve: not killed, not a stray, not used already.)"""
        return self.holds_worktree and not self.legacy and not self.stray \
            and not self.meta.killed and not self.meta.restored \
            and not self.meta.proof_failed


def new_entry(root: str, session_id: str, meta: Meta) -> Entry:
    """Make an empty entry under `root` for `session_id` and write its entry.json."""
    now = time.time_ns()
    path = os.path.join(root, f"{session_id}.{now}")
    os.mkdir(path, 0o700)
    meta = replace(meta, session=session_id, created_ns=now)
    with open(os.path.join(path, META), "w", encoding="utf-8") as fh:
        json.dump(meta.to_dict(), fh, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    return Entry(path, meta)


def copy_admin(entry: Entry, admin_dir: str) -> None:
    """Copy the worktree's private git dir into the entry (small files: the index,
    HEAD, the reflog, per-worktree refs, config.worktree, sparse-checkout)."""
    import shutil  # here: a save that keeps its worktree touches no trash
    shutil.copytree(admin_dir, entry.admin, symlinks=True,
                    ignore=lambda _d, names: [n for n in names if n.startswith(_ADMIN_SKIP)])


def mark(entry: Entry, **changes: Any) -> None:
    """Set `changes` (Meta fields; None takes a key out) in the entry's entry.json
    (written to a temporary file, fsynced, then renamed over it, so a crash leaves
    the old or the new one). Raises OSError (a full disk), the old entry.json left
    in place; TypeError for a name that is no Meta field."""
    entry.meta = replace(entry.meta, **changes)
    tmp = os.path.join(entry.path, META + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(entry.meta.to_dict(), fh, sort_keys=True)
            fh.flush()
            os.fsync(fh.fileno())
        os.rename(tmp, os.path.join(entry.path, META))
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def detach(entry: Entry) -> None:
    """Point the `.git` file of the entry's worktree copy at a path that never
    exists (`<entry>/admin-taken-away`), once nothing here needs git in it. The
    admin dir it named is pruned, and a later `git worktree add` of the same
    basename takes that name again: an agent still running in the copy would
    then commit onto another worktree's branch. git now refuses there instead;
    a restore writes the link anew. The old file is unlinked and a new one made
    under the same name (no file beside it, which could be an agent's), so a hard
    link to it elsewhere keeps its bytes; cut short, it names no admin dir
    either. Errors are ignored (a copy without a `.git` file, a read-only entry)."""
    link = os.path.join(entry.worktree, ".git")
    if os.path.islink(link) or not os.path.isfile(link):
        return
    line = f"gitdir: {os.path.join(entry.path, 'admin-taken-away')}\n"
    with contextlib.suppress(OSError):
        os.unlink(link)  # a file mounted there refuses (EBUSY): nothing is written
        fd = os.open(link, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        try:
            os.write(fd, os.fsencode(line))
        finally:
            os.close(fd)


def set_aside(data_dir: str, session_id: str, path: str, common_dir: str,
              meta: Meta) -> Entry:
    """Move the directory `path` (not a worktree: the caller proved what it holds)
    into a stray entry `<session id>.<ns>.stray/` of the session's trash root, one
    rename. Returns the Entry; raises OSError when the rename fails (the half-made
    entry, which holds only entry.json, is removed then)."""
    root = root_for(path, data_dir, common_dir)
    ensure_root(data_dir, root)
    now = time.time_ns()
    entry = Entry(os.path.join(root, f"{session_id}.{now}.stray"),
                  replace(meta, session=session_id, created_ns=now, path=path, stray=True))
    os.mkdir(entry.path, 0o700)
    try:
        mark(entry)
        os.rename(path, entry.worktree)
    except OSError:
        import shutil
        shutil.rmtree(entry.path, ignore_errors=True)
        raise
    return entry


def load(path: str) -> Entry:
    """The entry at `path` (entry.json read when present)."""
    meta = Meta()
    try:
        with open(os.path.join(path, META), encoding="utf-8") as fh:
            loaded = json.load(fh)
            if isinstance(loaded, dict):
                meta = Meta.from_dict(loaded)
    except (OSError, ValueError, TypeError):
        pass
    return Entry(path, meta)


def ours(path: str) -> Entry | None:
    """The entry at `path` when git-ao made it: named `<session id>.<ns>` (or
    `.stray` after it), holding an entry.json that names that session and a
    time; else None."""
    m = _ENTRY_NAME.fullmatch(os.path.basename(path))
    if m is None or not os.path.isdir(path) or os.path.islink(path):
        return None
    entry = load(path)
    if entry.meta.session != m.group(1) or not isinstance(entry.meta.created_ns, int):
        return None
    return entry


def entries(data_dir: str, session_id: str | None = None) -> Iterator[Entry]:
    """Every entry git-ao made (`ours`) under every trash root, oldest first within
    a root; with `session_id`, only that session's (read from the directories
    named for it: an entry's name starts with its session's id and a dot, so a
    restore of many sessions reads each entry once, not once per session)."""
    prefix = None if session_id is None else session_id + "."
    for root in roots(data_dir):
        try:
            names = os.listdir(root)
        except OSError:
            continue
        found = [e for n in names if prefix is None or n.startswith(prefix)
                 if (e := ours(os.path.join(root, n))) is not None]
        yield from sorted((e for e in found if session_id is None or e.session_id == session_id),
                          key=lambda e: e.created_ns)


def not_ours(data_dir: str) -> list[str]:
    """What lies under a trash root that git-ao did not make (`ours`): a directory
    or file of someone else's, or an entry from before entry.json. Never read as
    an entry, never deleted."""
    out = []
    for root in roots(data_dir):
        try:
            names = sorted(os.listdir(root))
        except OSError:
            continue
        out += [os.path.join(root, n) for n in names if ours(os.path.join(root, n)) is None]
    return out


def unreachable_roots(data_dir: str, path: str) -> list[str]:
    """The listed trash roots `.git-ao-trash-<uid>` that are missing while the
    worktree path `path` (as recorded, or its real path) lies under their parent
    directory, the top of the file system preserve made them on, and that
    directory is no mount point now: that file system is likely not mounted, and
    the entry of the worktree at `path` may be in the root. A root whose parent
    is a mount point again (a tmpfs after a reboot) went with that file system's
    contents and is not named. Raises OSError when the list cannot be read."""
    targets = {os.path.abspath(path), os.path.realpath(path)}
    out = []
    points: set[str] | None = None
    for root in roots(data_dir):
        if os.path.basename(root) != root_name() or os.path.isdir(root):
            continue
        top = os.path.dirname(root)
        if not any(t == top or t.startswith(top.rstrip("/") + "/") for t in targets):
            continue
        if os.path.isdir(top):
            points = mount_points() if points is None else points
            if os.path.ismount(top) or os.path.realpath(top) in points:
                continue
        out.append(root)
    return out


def latest_for(data_dir: str, session_id: str, *, environment: bool = False) -> Entry | None:
    """The newest entry of `session_id` that restore could put back whole
    (`Entry.candidate`), or None. environment=True: the newest whose ignored files
    a fallback restore may still move out (one whose proof failed counts too)."""
    best = None
    for e in entries(data_dir, session_id):
        ok = e.candidate or (environment and e.holds_worktree and not e.legacy
                             and not e.stray and not e.meta.killed
                             and not e.meta.restored)
        if e.session_id == session_id and ok and (
                best is None or e.created_ns > best.created_ns):
            best = e
    return best


def of_session(data_dir: str, session_id: str) -> list[Entry]:
    """Every entry of `session_id` under every root, oldest first."""
    return sorted(entries(data_dir, session_id), key=lambda e: e.created_ns)


def size(path: str) -> int:
    """The disk space `path` and everything under it take, in bytes, as `du -s -x`
    counts it (allocated blocks, a file with several links once): a trash
    entry of many small files takes far more than their sizes add up to. Does
    not follow symlinks nor cross a mount point."""
    try:
        top = os.lstat(path)
    except OSError:
        return 0
    seen = {(top.st_dev, top.st_ino)}
    total = top.st_blocks * 512
    for root, dirs, files in os.walk(path):
        inside = []
        for name in dirs + files:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if st.st_dev != top.st_dev:
                continue  # a mount point: neither counted nor entered
            if stat.S_ISDIR(st.st_mode):
                inside.append(name)
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
        entered = set(inside)
        dirs[:] = [d for d in dirs if d in entered]
    return total


def move_in(data_dir: str, session_id: str, v: Verified, meta: Meta) -> Entry:
    """Take the verified linked worktree `v` away into a new entry: copy its
    admin dir, then rename the directory (one `rename(2)`, so an agent writing
    there keeps writing into the entry, never into nothing). Raises OSError when
    the rename fails (EBUSY for a mount point, EXDEV across file systems); the
    half-made entry, which holds only copies, is removed then."""
    if not isinstance(v, Verified):  # the one path that removes a worktree: proof or nothing
        raise TypeError("refusing to move an unverified path into the trash")
    if os.path.islink(v.path):  # a rename would move the link, not the worktree
        raise OSError(errno.ELOOP, "the worktree's path is a symlink", v.path)
    root = root_for(v.path, data_dir, v.common_dir)
    ensure_root(data_dir, root)
    entry = new_entry(root, session_id, replace(meta, path=v.path, common_dir=v.common_dir,
                                                has_commit=True))
    try:
        copy_admin(entry, v.git_dir)
        os.rename(v.path, entry.worktree)
    except OSError:
        import shutil
        shutil.rmtree(entry.path, ignore_errors=True)
        raise
    return entry
