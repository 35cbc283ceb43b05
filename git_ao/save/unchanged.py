"""Proving, without reading a file, that a worktree has not changed since its last
checkpoint.

A checkpoint of an unchanged worktree must cost less than the `git status` it
would otherwise run. After a checkpoint whose state is the newest entry of the
history, `record` writes a stat file in the data dir (`<data dir>/history-stat/
<id>`): the stat data (mtime, ctime, size, inode) of every path the walk saw
that is not ignored, of every directory that is not ignored, and of every file
git reads to decide what the state is (the index, HEAD, the branch's ref and
packed-refs, the history's ref, the config and ignore and attribute files).
`unchanged` then stats the same paths (`fstatat` from the worktree's
descriptor): all equal means nothing changed, since

- a file written, truncated, touched or chmod'ed since has a new ctime (git's
  own stat cache relies on the same; no call sets ctime back);
- a path created, removed or renamed changes its directory's mtime and ctime,
  so an untracked file added anywhere not ignored is seen;
- the index, HEAD and every ref are replaced by a rename when git writes them
  (a new inode and ctime).

Most paths are tracked files, and git stats those faster (in threads) than
Python can: W's index, with the stat data the capture's status refreshed, is
kept beside the stat file (`<data dir>/history-index/<id>`), and one `git
diff-files --quiet` on it compares them instead (quickgit.py). git compares
times to the second, so a tracked file written in the walk's second, or whose
stat data in the index is not what the walk saw, stays in the stat file
(`delegate`).

The racy case: file times come from a clock that ticks every few
milliseconds (every two seconds on FAT), so `record` writes nothing when any
recorded time lies within its racy window of the start of the checkpoint's
walk (`walk.near`: a later write in the same tick could leave the times as
they were); the next checkpoint then takes the full path. A write through a
shared memory mapping into a page already dirty sets no file time at all (git's
own stat cache misses it too), so a stat file proves nothing once it is older
than TRUSTED_NS: the next checkpoint reads every untracked file again, and the
timer, every five minutes, bounds how long such a change goes unsaved.
Anything unusual (submodules, a reftable, another git environment, a stat file
from another version) also means the full path.
"""

from __future__ import annotations

import marshal
import os
import stat
import time

# The check below runs before anything else is imported: not even typing
# (mypy takes any name TYPE_CHECKING as true).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from hashlib import sha1

    from git_ao.fs import walk
else:
    try:  # the C module hashlib wraps, without loading OpenSSL for one digest
        from _sha1 import sha1
    except ImportError:  # a Python built without its own hash modules
        from hashlib import sha1

VERSION = 5
_DIR = "history-stat"
_INDEX_DIR = "history-index"
# Files git reads from the worktree even when an ignore rule covers them (a cache
# directory's own '.gitignore' of '*'): an edit may make an ignored file untracked.
_RULES = (".gitignore", ".gitattributes")
# The checks this process answered no, each with the stat file it read: the entry
# point's check is followed by the checkpoint's own, for the same change.
_changed: set[tuple[str, str, str, tuple[int, int, int, int]]] = set()
# Variables that change where git reads its config, ignore and attribute files.
_ENV = ("HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM",
        "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_COUNT")


def _file(data_dir: str, session_id: str) -> str:
    return os.path.join(data_dir, _DIR, session_id)


def _index_file(data_dir: str, session_id: str) -> str:
    return os.path.join(data_dir, _INDEX_DIR, session_id)


def _by_path(data_dir: str, path: str) -> str:
    """The file naming the session whose worktree is at `path`."""
    return os.path.join(data_dir, _DIR,
                        "path-" + sha1(os.fsencode(path)).hexdigest())


def session_at(data_dir: str, path: str) -> str | None:
    """The id of the session a stat file was recorded for at worktree `path`, or None."""
    try:
        with open(_by_path(data_dir, path), encoding="utf-8") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def _sig(st: os.stat_result) -> tuple[int, int, int, int]:
    # The order of walk.Entry's fields from `size` on, so its slice is the signature.
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _history_ref(common_dir: str, session_id: str) -> str:
    return os.path.join(common_dir, "refs", "ao", "history", session_id)


def _watched(path: str, git_dir: str, common_dir: str, session_id: str,
             branch: str | None, conf: dict[str, str]) -> list[str]:
    """The files outside the worktree's walk whose change may change its state."""
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    files = [os.path.join(git_dir, n) for n in ("index", "HEAD", "config.worktree",
                                                os.path.join("info", "sparse-checkout"))]
    files += [os.path.join(common_dir, n) for n in (
        "config", "packed-refs", os.path.join("info", "exclude"),
        os.path.join("info", "attributes"))]
    files.append(_history_ref(common_dir, session_id))
    if branch:
        files.append(os.path.join(common_dir, "refs", "heads", *branch.split("/")))
    files += [os.path.expanduser("~/.gitconfig"), os.path.join(xdg, "git", "config"),
              os.path.join(xdg, "git", "ignore"), os.path.join(xdg, "git", "attributes"),
              os.environ.get("GIT_CONFIG_GLOBAL") or "", "/etc/gitconfig"]
    for key in ("core.excludesfile", "core.attributesfile"):
        if conf.get(key):
            files.append(os.path.expanduser(conf[key]))
    # The files include.path and includeIf.<condition>.path name: a relative one
    # lies beside the file that includes it, which the listing does not say, so
    # every place it may be is watched.
    bases = [os.path.expanduser("~"), os.path.join(xdg, "git"), common_dir, git_dir]
    for key, value in getattr(conf, "pairs", ()):
        k = key.lower()
        if k == "include.path" or (k.startswith("includeif.") and k.endswith(".path")):
            named = os.path.expanduser(value)
            if os.path.isabs(named):
                files.append(named)
                bases.append(os.path.dirname(named))
            else:
                files += [os.path.join(b, named) for b in bases]
    return [f for f in files if f]


class Signed:
    """What `signatures` read for a stat file: the names and signatures (size,
    mtime_ns, ctime_ns, ino as int64s) of every path whose changes only its stat
    data can show (`names`, `sigs`: the directories, the untracked files, the rule
    files git reads though ignored), those of the tracked files (`tracked`,
    `tracked_sigs`), which `git diff-files` can compare instead against the
    checkpoint's index, and the walk's start (ns)."""

    __slots__ = ("names", "sigs", "started", "tracked", "tracked_sigs")

    def __init__(self, names: list[str], sigs: bytes, tracked: list[str],
                 tracked_sigs: bytes, started: int) -> None:
        self.names, self.sigs, self.started = names, sigs, started
        self.tracked, self.tracked_sigs = tracked, tracked_sigs


def signatures(path: str, walked: walk.Walk, ignored: list[str],
               untracked: list[str] | None = None) -> Signed | None:
    """The stat file's paths (every directory and walked entry of the worktree at
    `path` that is not ignored, and every .gitignore and .gitattributes, which git
    reads though ignored) and their signatures, the heavy half of `record`,
    computed while a caller's git processes run. walked: the checkpoint's walk
    (its start bounds the racy window); ignored: the status's ignored paths
    ('dir/' for a whole directory); untracked: its untracked files, which tells
    the tracked ones apart (None: every path counts as untracked). None when the
    stat file must not be written: nested repositories, blockers, a time within
    the racy window, a directory that cannot be stat'ed."""
    from git_ao.fs import walk  # here: `unchanged` must import nothing heavy
    if walked.nested or walked.blockers:
        return None
    started, near = walked.started_ns, walk.near
    ign_files = {p for p in ignored if not p.endswith("/")}
    ign_dirs = tuple(p for p in ignored if p.endswith("/"))
    names: list[str] = []
    from array import array  # here: the check below reads the signatures without it
    sigs, tracked_sigs = array("q"), array("q")
    tracked: list[str] = []
    # A directory's signature is the walk's lstat of it, taken before the walk
    # listed it: one changed since differs from it at the next check, and one
    # changed after the walk began is near its start.
    dir_sigs = walked.dir_sigs
    for rel in [".", *walked.dirs]:
        if ign_dirs and rel != "." and (rel + "/").startswith(ign_dirs):
            continue
        sig = dir_sigs.get(rel)
        if sig is None:
            try:
                sig = _sig(os.lstat(os.path.join(path, rel)))
            except OSError:
                return None
        if near(sig[1], sig[2], started):
            return None
        names.append(rel)
        sigs.extend(sig)
    untracked_set = set(untracked) if untracked is not None else None
    any_ignored = bool(ign_files or ign_dirs)
    # No time before this can be near the start (walk.near), so the exact test runs
    # only for an entry at or after it: one comparison per file instead of calls.
    cold = started - walk.COARSE_NS
    add_tracked, add_tracked_sig = tracked.append, tracked_sigs.extend
    add_name, add_sig = names.append, sigs.extend
    for rel, e in walked.entries.items():
        if any_ignored and (rel in ign_files or rel.startswith(ign_dirs)):
            if rel.rpartition("/")[2] not in _RULES:
                continue
            is_tracked = False  # an ignored rule file
        else:
            is_tracked = untracked_set is not None and rel not in untracked_set
        if (e[3] >= cold or e[4] >= cold) and near(e[3], e[4], started):
            return None
        if is_tracked:
            add_tracked(rel)
            add_tracked_sig(e[2:6])  # size, mtime_ns, ctime_ns, ino
        else:
            add_name(rel)
            add_sig(e[2:6])
    return Signed(names, sigs.tobytes(), tracked, tracked_sigs.tobytes(), started)


class Delegated:
    """What `delegate` leaves to git: W's index (its bytes), and the names and
    signatures this process still compares beside it."""

    __slots__ = ("index", "names", "sigs")

    def __init__(self, index: bytes, names: list[str], sigs: bytes) -> None:
        self.index, self.names, self.sigs = index, names, sigs


def delegate(signed: Signed | None, index: bytes | None, conf: dict[str, str]
             ) -> Delegated | None:
    """Leave to `git diff-files` on `index` (W's index, Capture.worktree_index) the
    tracked files whose stat data it holds as the walk saw it, from a second
    before the walk began; the others stay with `signed.names`: a file whose
    stat data in the index is not the walk's changed after the walk read it, and
    git compares times to the second (a chmod later in the walk's second would
    not show). None when git is left nothing, or the index cannot be read.
    Pure computation (about 40 ms for 20,000 files): run beside git."""
    if signed is None or index is None or not signed.tracked:
        return None
    from array import array

    from git_ao.git import index as index_file
    held = index_file.stat_data(index, 32 if conf.get("extensions.objectformat") == "sha256"
                                else 20)
    if not held:
        return None
    second, low = signed.started // 1_000_000_000, 0xFFFFFFFF
    names, sigs = list(signed.names), array("q", signed.sigs)
    walked = memoryview(signed.tracked_sigs).cast("q")
    encoded = os.fsencode("\0".join(signed.tracked)).split(b"\0")
    left = 0
    # Each field as a list of its own (one C pass each), zipped: cheaper than a
    # slice of four per file.
    fields = (walked[k::4].tolist() for k in range(4))
    # A time before the walk's second is one before this, in ns: no division for it.
    first_ns, get = second * 1_000_000_000, held.get
    for k, (rel, size, mtime, ctime, ino) in enumerate(zip(encoded, *fields, strict=True)):
        h = get(rel)
        if h is not None and mtime < first_ns and ctime < first_ns \
                and h[0] == ctime // 1_000_000_000 & low \
                and h[1] == mtime // 1_000_000_000 & low and h[2] == ino & low \
                and h[3] == size & low:
            left += 1
        else:
            names.append(signed.tracked[k])
            sigs.extend((size, mtime, ctime, ino))
    return Delegated(index, names, sigs.tobytes()) if left else None


def record(data_dir: str, session_id: str, path: str, git_dir: str, common_dir: str,
           branch: str | None, signed: Signed | None, conf: dict[str, str],
           delegated: Delegated | None = None) -> bool:
    """After a checkpoint whose state the history's newest entry holds: write the
    stat file `unchanged` compares with. signed: `signatures` of the checkpoint's
    walk; conf: `query.config_map`; delegated: `delegate` of the same walk, whose
    index is kept beside the stat file so that `git diff-files` compares the
    tracked files it holds instead of this process. Returns whether it was written (not
    when `signed` is None, the worktree has submodules, git uses a reftable, or a
    file git reads (the index, HEAD, a ref, a config) changed since the walk
    began: the capture may have read it before that change).
    Raises Fatal when its directory in the data dir cannot be made private."""
    drop(data_dir, session_id)
    if signed is None or os.path.exists(os.path.join(common_dir, "reftable")) \
            or os.path.exists(os.path.join(git_dir, "modules")) \
            or os.path.exists(os.path.join(common_dir, "modules")):
        return False
    from git_ao.fs import walk
    names, sigs, started = signed.names, signed.sigs, signed.started
    own = _history_ref(common_dir, session_id)  # this run wrote it
    watch: list[tuple[str, tuple[int, int, int, int] | None]] = []
    for f in _watched(path, git_dir, common_dir, session_id, branch, conf):
        try:
            st = os.stat(f)
        except FileNotFoundError:
            watch.append((f, None))
            continue
        except OSError:
            return False
        if f != own and walk.near(st.st_mtime_ns, st.st_ctime_ns, started):
            return False
        watch.append((f, _sig(st)))
    from git_ao.store.datadir import ensure_private_dir, write_private
    kept = None
    if delegated is not None:
        names, sigs = delegated.names, delegated.sigs
        kept = _index_file(data_dir, session_id)
        ensure_private_dir(os.path.dirname(kept))
        if not write_private(kept, delegated.index):
            return False
        index_sig = _sig(os.stat(kept))
    else:
        names = names + signed.tracked
        sigs = sigs + signed.tracked_sigs
    doc = {"v": VERSION, "path": path, "env": [os.environ.get(k) for k in _ENV],
           "watch": watch, "names": os.fsencode("\0".join(names)), "sigs": sigs,
           "at": started}
    if kept is not None:
        doc.update(index=index_sig, git_dir=git_dir)
    target = _file(data_dir, session_id)
    ensure_private_dir(os.path.dirname(target))
    return write_private(target, marshal.dumps(doc)) and \
        write_private(_by_path(data_dir, path), session_id)


def drop(data_dir: str, session_id: str) -> None:
    """Forget the stat file of a session, and the index kept beside it (its
    worktree changed in ways git-ao made)."""
    for f in (_file(data_dir, session_id), _index_file(data_dir, session_id)):
        try:
            os.unlink(f)
        except FileNotFoundError:
            pass


# How long a stat file proves anything (ns): a write through a shared mapping into
# a page already dirty changes no file time, so after this a checkpoint reads the
# worktree again. The timer checkpoints every five minutes too.
TRUSTED_NS = 300 * 1_000_000_000
# From this many paths on, `unchanged` shares the stat calls among processes.
_SPLIT_FROM = 4000
_MAX_SHARES = 4


def _same(fd: int, names: list[bytes], want: memoryview, lo: int) -> bool:
    """Do `names` (relative to the directory `fd`; the signatures' from index `lo`
    on) have the signatures `want` holds for them? False when one cannot be
    stat'ed (gone: a change)."""
    lstat, hi = os.lstat, lo + len(names)
    # Each field as a list of its own (one C pass each): a loop that indexes the
    # view per path costs more than the comparison it makes.
    sizes, mtimes, ctimes, inodes = (want[4 * lo + k:4 * hi:4].tolist() for k in range(4))
    try:
        for rel, size, mtime, ctime, ino in zip(names, sizes, mtimes, ctimes, inodes,
                                                strict=True):
            st = lstat(rel, dir_fd=fd)
            if st.st_ctime_ns != ctime or st.st_ino != ino or st.st_mtime_ns != mtime \
                    or st.st_size != size:
                return False
    except (OSError, ValueError):
        return False
    return True


def _share(blob: bytes, start: int, end: int, want: memoryview, fd: int) -> bool:
    """`_same` for the NUL-separated names in blob[start:end], split here, in the
    process that stats them (splitting 20,000 names before the fork costs 1.4 ms
    of a 50 ms check)."""
    return _same(fd, blob[start:end].split(b"\0"), want, blob.count(b"\0", 0, start))


def _same_shared(fd: int, blob: bytes, want: memoryview) -> bool:
    """`_same` over all the NUL-separated names in `blob`, shared among one process
    per core (at most _MAX_SHARES), as git's preload-index shares its lstat calls
    among threads: a stat costs mostly the kernel's time, and Python threads would
    hand the GIL back and forth on every call. Each forked child compares its share
    and says the answer by its exit status; a fork that fails leaves the share to
    this process."""
    n = blob.count(b"\0") + 1
    shares = min(os.cpu_count() or 1, _MAX_SHARES) if n >= _SPLIT_FROM else 1
    cuts = [0]
    for k in range(1, shares):  # each cut just after a NUL near the k-th fraction
        cut = blob.find(b"\0", max(len(blob) * k // shares, cuts[-1]))
        if cut >= 0:
            cuts.append(cut + 1)
    cuts.append(len(blob) + 1)
    first, *rest = zip(cuts, [c - 1 for c in cuts[1:]], strict=False)
    mine = [first]
    children = []
    for start, end in rest:
        try:
            pid = os.fork()
        except OSError:
            mine.append((start, end))
            continue
        if pid == 0:  # the child: compare, answer, and leave without cleanup
            code = 1
            try:
                code = 0 if _share(blob, start, end, want, fd) else 1
            finally:  # whatever happens, never back into the parent's code
                os._exit(code)
        children.append(pid)
    ok = all(_share(blob, start, end, want, fd) for start, end in mine)
    for pid in children:
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            ok = False
            continue
        ok = ok and os.waitstatus_to_exitcode(status) == 0
    return ok


def unchanged_any(data_dir: str, session_id: str) -> bool:
    """`unchanged` at whatever worktree path the session's stat file names."""
    try:
        with open(_file(data_dir, session_id), "rb") as fh:
            doc = marshal.load(fh)
    except (OSError, EOFError, ValueError, TypeError):
        return False
    path = doc.get("path") if isinstance(doc, dict) else None
    return isinstance(path, str) and unchanged(data_dir, session_id, path, doc)


def unchanged(data_dir: str, session_id: str, path: str, doc: object = None) -> bool:
    """Is the worktree at `path` provably as it was at the checkpoint `record`
    described, and the history's newest entry still that checkpoint's? Stats every
    recorded path and leaves the tracked files the kept index holds to one `git
    diff-files --quiet`. False whenever it cannot tell (and from then on in this
    process, for the same session, path and stat file)."""
    try:
        key = (data_dir, session_id, path, _sig(os.stat(_file(data_dir, session_id))))
    except OSError:
        return False
    if key in _changed:
        return False
    same = _unchanged(data_dir, session_id, path, doc)
    if not same:
        _changed.add(key)
    return same


def _unchanged(data_dir: str, session_id: str, path: str, doc: object) -> bool:
    if doc is None:
        try:
            with open(_file(data_dir, session_id), "rb") as fh:
                doc = marshal.load(fh)
        except (OSError, EOFError, ValueError, TypeError):
            return False
    if not isinstance(doc, dict) or doc.get("v") != VERSION or doc.get("path") != path \
            or doc.get("env") != [os.environ.get(k) for k in _ENV]:
        return False
    at = doc.get("at")
    if not isinstance(at, int) or not 0 <= time.time_ns() - at <= TRUSTED_NS:
        return False
    for f, want in doc["watch"]:
        try:
            st = os.stat(f)
        except FileNotFoundError:
            if want is not None:
                return False
            continue
        except OSError:
            return False
        if want is None or _sig(st) != want:
            return False
    try:  # the signatures as int64s, read in place (array would import collections)
        want_sigs = memoryview(doc["sigs"]).cast("q")
    except (TypeError, ValueError):
        return False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        blob = doc["names"]
        if not (isinstance(blob, bytes) and len(want_sigs) == 4 * (blob.count(b"\0") + 1)
                and stat.S_ISDIR(os.fstat(fd).st_mode) and _same_shared(fd, blob, want_sigs)):
            return False
    finally:
        os.close(fd)
    return "index" not in doc or _index_unchanged(data_dir, session_id, path, doc)


def _index_unchanged(data_dir: str, session_id: str, path: str, doc: dict[str, object]) -> bool:
    """Do the tracked files match the stat data of the index kept beside the stat
    file? `git diff-files --quiet` compares them as git's own stat cache does (the
    files not older than the index by content), in as many threads as it likes
    (core.preloadIndex), and stops at the first difference."""
    kept, git_dir = _index_file(data_dir, session_id), doc.get("git_dir")
    try:
        if _sig(os.stat(kept)) != doc["index"] or not isinstance(git_dir, str):
            return False
    except OSError:
        return False
    from git_ao import quickgit
    return quickgit.exit_status(["-c", "core.preloadIndex=true", "diff-files", "--quiet"],
                                {"GIT_DIR": git_dir, "GIT_WORK_TREE": path,
                                 "GIT_INDEX_FILE": kept}) == 0
