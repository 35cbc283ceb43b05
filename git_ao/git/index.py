"""Named git operations on an index: flags of the real one, and a temporary one.

The processes start in git_ao/git/process.py (`git.run`); this module only names what they do,
so nothing else builds an `update-index`, `checkout-index` or `read-tree`
argument list, or points git at another index file.
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Sequence
from types import TracebackType
from typing import Self

from git_ao import git
from git_ao.git import parse, query
from git_ao.git.parse import ObjectId

# Temporary index files are named <TEMP_INDEX_PREFIX><pid>.<random> in a git dir:
# `git ao-prune` removes those whose process is gone.
TEMP_INDEX_PREFIX = "git-ao-index."


def set_index_flag(cwd: str, paths: Sequence[str], flag: str, *,
                   index_file: str | None = None) -> None:
    """`git update-index <flag> -z --stdin` for `paths`: flag is one of
    --[no-]assume-unchanged, --[no-]skip-worktree (only the flag changes), or
    --force-remove (the entry goes, the file stays). Raises GitError."""
    if not paths:
        return
    git.run(["update-index", flag, "-z", "--stdin"], cwd, env=git.index_env(index_file),
            input=git.join_z(paths))


def add_intent_to_add(cwd: str, paths: Sequence[str]) -> None:
    """`git add -N --sparse` for literal `paths` (read as NUL-separated pathspecs from
    stdin). --sparse: in a sparse checkout `git add` refuses a path outside the
    patterns without it, although such an entry is what was saved."""
    if not paths:
        return
    git.run(["--literal-pathspecs", "add", "-N", "--sparse", "--pathspec-from-file=-",
             "--pathspec-file-nul"], cwd, input=git.join_z(paths))


def collapse_sparse(cwd: str) -> None:
    """Write a sparse index again whole: read expanded (`-c index.sparse=false`) and
    written out, then read and written as a sparse index, so each directory outside
    the patterns is one entry again. `git update-index --[no-]skip-worktree` opens
    the directories it touches and git leaves them open."""
    git.run(["-c", "index.sparse=false", "update-index", "--force-write-index"], cwd)
    git.run(["update-index", "--force-write-index"], cwd)


def drop_fsmonitor(cwd: str) -> None:
    """`git update-index --no-fsmonitor`: the index loses its fsmonitor extension and
    with it every entry's fsmonitor-valid bit, so git looks at each file once."""
    git.run(["update-index", "--no-fsmonitor"], cwd)


def checkout_head(cwd: str) -> None:
    """`git read-tree -m -u HEAD` in a worktree added with --no-checkout: fills the index
    and the files from HEAD, honouring its sparse-checkout patterns."""
    git.run([*git.parallel_checkout(cwd), "read-tree", "-m", "-u", "HEAD"], cwd)


def checkout_paths(cwd: str, paths: Sequence[str], *, refresh: bool = False) -> None:
    """Write `paths` from the real index over the worktree (`git checkout-index -f -z
    --stdin`); refresh (-u) updates their stat data in the index too."""
    git.run(["checkout-index", "-f", *(["-u"] if refresh else []), "-z", "--stdin"], cwd,
            input=git.join_z(paths))


def tree_of(cwd: str, index_file: str) -> ObjectId:
    """`git write-tree` from another index file (a registration's, say); the tree id.
    Raises GitError (an index with unmerged entries has no tree)."""
    return ObjectId(git.line(["write-tree"], cwd, env=git.index_env(index_file)))


def checksum(index_file: str, oid_hex_len: int) -> str | None:
    """The trailing checksum of an index file (its last 20 or 32 bytes: `oid_hex_len`
    is 40 for SHA-1, 64 for SHA-256), as hex, when it is the true hash of every
    byte before it: two files with the same one hold the same entries, flags and
    stat data. git does not check it when it reads an index, so an edited file
    can keep an old one. None when the file is missing, written without one
    (`index.skipHash`), or it does not match."""
    size = oid_hex_len // 2
    try:
        with open(index_file, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    body, tail = data[:-size], data[-size:]
    if len(tail) != size or not any(tail):
        return None
    h = hashlib.sha1(body) if size == 20 else hashlib.sha256(body)
    return tail.hex() if h.digest() == tail else None


def stat_data(data: bytes, oid_len: int = 20) -> dict[bytes, tuple[int, ...]] | None:
    """The stat data an index file (its bytes, format version 2 to 4) holds for each
    entry, as git compares it with a file: {path: (ctime seconds, mtime seconds,
    inode, size, flags)}, the first four as git stores them (32 bits; git built
    without USE_NSEC compares times to the second only). oid_len: the object
    ids' length in bytes (32 in a SHA-256 repository). None for an index this
    does not read (another version, a conflict, a truncated file)."""
    if len(data) < 12 or data[:4] != b"DIRC":
        return None
    version, count = int.from_bytes(data[4:8], "big"), int.from_bytes(data[8:12], "big")
    if version not in (2, 3, 4):
        return None
    held: dict[bytes, tuple[int, ...]] = {}
    fixed = 40 + oid_len + 2
    # ctime and mtime seconds, inode, size, flags (the nanoseconds, device, mode,
    # uid, gid and object id skipped)
    unpack = struct.Struct(f">I4xI4x4xI12xI{oid_len}xH").unpack_from
    pos, prev, index_of = 12, b"", data.index
    try:
        for _ in range(count):
            st = unpack(data, pos)
            flags = st[4]
            if flags & 0x3000:
                return None  # a stage of a conflict
            name_at = pos + fixed
            if version == 2 or not flags & 0x4000:
                n = flags & 0xFFF
                if version < 4 and n < 0xFFF:  # the common case: one slice
                    end = name_at + n
                    held[data[name_at:end]] = st
                    pos += (end - pos + 8) & ~7  # NUL padding to a multiple of eight
                    continue
            else:
                name_at += 2  # extended flags
            if version == 4:
                strip, name_at = _varint(data, name_at)
                end = index_of(b"\0", name_at)
                prev = prev[:len(prev) - strip] + data[name_at:end]
                held[prev] = st
                pos = end + 1
            else:
                end = index_of(b"\0", name_at)
                held[data[name_at:end]] = st
                pos += (end - pos + 8) & ~7
    except (ValueError, struct.error, IndexError):
        return None
    return held


def without_cache_tree(data: bytes, oid_len: int = 20) -> bytes | None:
    """The bytes of an index file (format version 2 to 4) with its cache tree left
    out (the `TREE` extension, and `EOIE`, whose hash covers the extensions), its
    trailing checksum computed again (kept all zero when it is: `index.skipHash`).
    git writes the tree of an index from its cache tree where that says a
    directory is valid, and `git reset --hard` or `git read-tree` keeping an
    intent-to-add entry whose blob is the tree's (an empty file) leaves one
    naming that entry, which no tree of the index holds (`git status` shows the
    path deleted from the index). oid_len: the object ids' length in bytes (32 in
    a SHA-256 repository). None for an index this does not read."""
    if len(data) < 12 + oid_len or data[:4] != b"DIRC":
        return None
    version, count = int.from_bytes(data[4:8], "big"), int.from_bytes(data[8:12], "big")
    if version not in (2, 3, 4):
        return None
    fixed = 40 + oid_len + 2
    pos, index_of = 12, data.index
    body_end = len(data) - oid_len
    try:
        for _ in range(count):
            flags = int.from_bytes(data[pos + fixed - 2:pos + fixed], "big")
            name_at = pos + fixed + (2 if flags & 0x4000 and version >= 3 else 0)
            if version == 4:
                _, name_at = _varint(data, name_at)
                pos = index_of(b"\0", name_at) + 1
            else:
                n = flags & 0xFFF
                end = name_at + n if n < 0xFFF else index_of(b"\0", name_at)
                pos += (end - pos + 8) & ~7
        kept = [data[:pos]]
        while pos < body_end:
            size = int.from_bytes(data[pos + 4:pos + 8], "big")
            if pos + 8 + size > body_end:
                return None
            if data[pos:pos + 4] not in (b"TREE", b"EOIE"):
                kept.append(data[pos:pos + 8 + size])
            pos += 8 + size
    except (ValueError, IndexError):
        return None
    if pos != body_end:
        return None
    body = b"".join(kept)
    tail = data[body_end:]
    if any(tail):
        tail = (hashlib.sha1(body) if oid_len == 20 else hashlib.sha256(body)).digest()
    return body + tail


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """git's offset varint (varint.c) at `pos`: (value, the position after it)."""
    c = data[pos]
    pos += 1
    value = c & 127
    while c & 128:
        c = data[pos]
        pos += 1
        value = ((value + 1) << 7) + (c & 127)
    return value, pos


def gitlinks(cwd: str) -> list[str]:
    """The paths of the submodule entries in the index (`git ls-files -s -z`)."""
    return parse.gitlinks(git.run(["ls-files", "-s", "-z"], cwd))


def added_ids(cwd: str, paths: Sequence[str], scratch: str,
              env: dict[str, str] | None = None) -> list[str]:
    """The blob id `git add` would store for each of `paths` (files, relative to the
    worktree at `cwd`) beside the index git reads there; nothing is written.

    `query.hash_paths` (clean filters, end-of-line rules, ident) reads no index,
    and git's safer autocrlf does: where the conversion is automatic
    (core.autocrlf, text=auto), a file whose index blob holds a CRLF is stored
    with its CRLFs as they are, which hash-object turns into LFs. Those paths
    (`query.crlf_in_index`) are read by `git update-index --add --info-only`
    into a temporary index in the git dir `scratch` holding only their index
    entries, so git itself applies every rule. env: a worktree taken away and
    the index it is judged with (`added_ids_in`). Raises GitError."""
    if not paths:
        return []
    ids = dict(zip(paths, query.hash_paths(cwd, paths, env=env), strict=True))
    kept = query.crlf_in_index(cwd, paths, env)
    if kept:
        base = {k: v for k, v in (env or {}).items() if k != "GIT_INDEX_FILE"}
        with TempIndex(cwd, scratch, env=base) as tmp:
            tmp.seed(kept)
            tmp.update(sorted(kept), info_only=True)
            ids.update((p, oid) for p, (_, oid) in tmp.entries().items() if p in kept)
    return [ids[p] for p in paths]


def added_ids_in(common_dir: str, work_tree: str, paths: Sequence[str],
                 index_file: str) -> list[str]:
    """`added_ids` for a worktree taken away (see `query.ignored_in`): the files
    `paths` of `work_tree`, judged with the repository at `common_dir` and the
    index file `index_file` (the admin copy's; none when it is missing). The
    temporary index goes in `common_dir`. Raises GitError."""
    env = {"GIT_DIR": common_dir, "GIT_WORK_TREE": work_tree}
    if os.path.isfile(index_file):
        env["GIT_INDEX_FILE"] = index_file
        return added_ids(work_tree, paths, common_dir, env)
    return query.hash_paths(work_tree, paths, env=env)


# ---------------------------------------------------------------- temporary index


def beyond_link(cwd: str, paths: Sequence[str]) -> list[str]:
    """The `paths` (relative to `cwd`) one of whose leading directories is a
    symbolic link: git takes them as gone, and stores nothing through a link."""
    seen: dict[str, bool] = {}

    def linked(parent: str) -> bool:
        if parent not in seen:
            head = parent.rpartition("/")[0]
            seen[parent] = (bool(head) and linked(head)) \
                or os.path.islink(os.path.join(cwd, parent))
        return seen[parent]

    return [p for p in paths if "/" in p and linked(p.rpartition("/")[0])]


class TempIndex:
    """A temporary index file that this handle owns, in a worktree's git dir.

    `with TempIndex(cwd, git_dir) as idx:` names a fresh file
    (<git_dir>/git-ao-index.<pid>.<random>) and deletes it (and its .lock) on every
    way out. Its operations run git in worktree `cwd` pointed at it (git.index_env),
    so the real index is never touched.

    lenient: filter drivers not `required` for its operations but the checkout
    (`-c filter.<driver>.required=false`). git reads a file again whenever it
    writes an index that holds the file as racily clean, through its clean
    filter, and a required one that fails there stops the whole command, though
    nothing of that file is stored; not required, git takes the file's bytes as
    they are. Where an operation stores a file (`update`, `add_tracked`), the
    caller proves first that the filter cleans it (else git would store its
    bytes as they are)."""

    def __init__(self, cwd: str, git_dir: str, lenient: Sequence[str] = (),
                 env: dict[str, str] | None = None) -> None:
        self.cwd = cwd
        self.path = os.path.join(git_dir, f"{TEMP_INDEX_PREFIX}{os.getpid()}."
                                          f"{os.urandom(4).hex()}")
        # env: the repository and worktree of a worktree taken away (GIT_DIR, GIT_WORK_TREE).
        self._env = {**(env or {}), "GIT_INDEX_FILE": self.path}
        self.lenient = lenient

    @property
    def _opts(self) -> list[str]:
        return git.lenient_opts(self.lenient)

    def _run(self, args: list[str], input: bytes | None = None) -> bytes:
        return git.run([*self._opts, *args], self.cwd, env=self._env, input=input)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        for p in (self.path, self.path + ".lock"):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass

    def copy_from(self, index_file: str, *, mtime_ns: int | None = None) -> None:
        """Start from a copy of `index_file`. A copy keeps git's stat cache (unchanged
        files are not re-hashed) and the skip-worktree bits of a sparse checkout.
        The copy keeps the index's mtime too: git compares file times against it to spot
        "racily clean" entries, and a fresh mtime would hide an edit made in the same
        second as the last index write. mtime_ns: stamp the copy with this mtime
        instead (0: git judges no entry racy, for a copy no git process compares
        with the worktree). Raises OSError (FileNotFoundError: no such index)."""
        with open(index_file, "rb") as src, open(self.path, "wb") as dst:
            dst.write(src.read())
            st = os.fstat(src.fileno())
        os.utime(self.path, ns=(st.st_atime_ns, st.st_mtime_ns) if mtime_ns is None
                 else (mtime_ns, mtime_ns))

    def read(self) -> bytes:
        """The index file's bytes. Raises OSError."""
        with open(self.path, "rb") as fh:
            return fh.read()

    def read_tree(self, tree: str) -> None:
        """`git read-tree <tree>` into this index."""
        self._run(["read-tree", tree])

    def write_tree(self) -> ObjectId:
        """`git write-tree` from this index; the tree id."""
        return ObjectId(self._run(["write-tree"]).decode().strip())

    def update(self, paths: Sequence[str], *, info_only: bool = False) -> list[str]:
        """`git update-index --add --remove -z --stdin`: each path is read again from the
        worktree, updated when present, removed when gone. Returns the paths git
        would not store (a name `core.protectNTFS` or `.git` rules refuse, such as
        `GIT~1`), which git skips with "Ignoring path" and still exits 0.
        info_only: the blob ids only, no blob written (`--info-only`)."""
        if not paths:
            return []
        # A path below a symbolic link (its directory replaced by one) is gone to
        # git, yet `--remove` stops there ("beyond a symbolic link"): it goes alone.
        beyond = beyond_link(self.cwd, paths)
        if beyond:
            self.set_flag(beyond, "--force-remove")
            gone = set(beyond)
            paths = [p for p in paths if p not in gone]
            if not paths:
                return []
        res = git.call([*self._opts, "update-index", "--add", "--remove",
                        *(["--info-only"] if info_only else []), "-z", "--stdin"],
                       self.cwd, env=self._env, input=git.join_z(paths)).check()
        if not res.err:
            return []
        given = set(paths)
        said = res.err.decode("utf-8", "surrogateescape").splitlines()
        return [p for p in (ln.removeprefix("Ignoring path ") for ln in said
                            if ln.startswith("Ignoring path ")) if p in given]

    def tree_past_cache(self, git_dir: str, oid_len: int) -> tuple[ObjectId, list[str]] | None:
        """(the tree of this index, its intent-to-add entries) as git makes them with
        no cache tree (`without_cache_tree`): every directory's tree written from
        the entries, none taken from a cache tree naming an intent-to-add entry.
        A scratch copy in `git_dir` is written and removed; this index is left as
        it is. None when the index is one `without_cache_tree` does not read.
        Raises GitError."""
        bare = without_cache_tree(self.read(), oid_len)
        if bare is None:
            return None
        with TempIndex(self.cwd, git_dir, self.lenient, env={
                k: v for k, v in self._env.items() if k != "GIT_INDEX_FILE"}) as scratch:
            with open(scratch.path, "wb") as fh:
                fh.write(bare)
            # mtime 0: git judges no entry racy, so nothing hashes a file here.
            os.utime(scratch.path, ns=(0, 0))
            tree = scratch.write_tree()
            return tree, scratch.intent_to_add(tree)

    def intent_to_add(self, tree: str) -> list[str]:
        """The intent-to-add entries of this index: `git diff-index --cached
        --ita-visible-in-index` against `tree`, the tree `write_tree` made of this
        index (which leaves those entries out, so they are all that differs)."""
        return git.split_z(self._run(["diff-index", "--cached", "--ita-visible-in-index",
                                      "--name-only", "-z", tree]))

    def set_flag(self, paths: Sequence[str], flag: str) -> None:
        """`git update-index <flag>` for `paths` in this index (see set_index_flag)."""
        if paths:
            self._run(["update-index", flag, "-z", "--stdin"], input=git.join_z(paths))

    def add_tracked(self, leave_out: Sequence[str] = ()) -> None:
        """`git add -u --sparse`: every tracked path as it is in the worktree, but those
        in `leave_out` (literal paths, kept as this index holds them). --sparse:
        without it `git add` leaves alone a file present outside the sparse-checkout
        patterns, although git status reports its change."""
        if not leave_out:
            self._run(["add", "-u", "--sparse"])
            return
        specs = [".", *(f":(exclude,literal){p}" for p in leave_out)]
        self._run(["add", "-u", "--sparse", "--pathspec-from-file=-", "--pathspec-file-nul"],
                  input=git.join_z(specs))

    def seed(self, entries: dict[str, tuple[str, str]]) -> None:
        """Put {path: (mode, object id)} into this index as stage-0 entries with no
        stat data (`git update-index -z --index-info`), so git reads each file again."""
        if entries:
            self._run(["update-index", "-z", "--index-info"], input=b"".join(
                f"{mode} {oid}\t".encode() + os.fsencode(p) + b"\0"
                for p, (mode, oid) in entries.items()))

    def entries(self) -> dict[str, tuple[str, str]]:
        """{path: (mode, object id)} of the stage-0 entries of this index (`git ls-files
        -s -z`)."""
        return parse.stage0_entries(self._run(["ls-files", "-s", "-z"]))

    def paths(self) -> list[str]:
        """Every path of this index (`git ls-files -z`)."""
        return git.split_z(self._run(["ls-files", "-z"]))

    def checkout_all(self, prefix: str, paths: Sequence[str] | None = None) -> None:
        """`git checkout-index -a -f --prefix=<prefix>`: every entry (or only `paths`,
        read from stdin), written under `prefix` with the same conversion a checkout
        applies, required filters required (a restore's checkout would stop too)."""
        if paths is None:
            git.run(["checkout-index", "-a", "-f", f"--prefix={prefix}"], self.cwd,
                    env=self._env)
        elif paths:
            git.run(["checkout-index", "-f", f"--prefix={prefix}", "-z", "--stdin"], self.cwd,
                    env=self._env, input=git.join_z(paths))

    def checkout_paths(self, paths: Sequence[str]) -> None:
        """`git checkout-index -f -z --stdin`: write `paths` from this index over the
        worktree."""
        git.run(["checkout-index", "-f", "-z", "--stdin"], self.cwd, env=self._env,
                input=git.join_z(paths))
