"""Where git-ao's state lives, and the one database read that must start fast.

The data dir is `$AO_DATA_DIR` if set and non-empty, else `~/.ao/data`.
Shell completion reads session ids on every TAB, so that read lives here, with
nothing imported but os, sqlite3 and urllib.parse: importing git_ao/store/database.py (its
record classes are built at import) cost completion about a fifth of its
start-up. Everything else that touches the database is in git_ao/store/database.py.
"""

from __future__ import annotations

import os
import sqlite3
import stat

from git_ao.errors import Fatal, current_directory
from git_ao.store.states import PENDING_SQL, RESTORES_SQL, State

TYPE_CHECKING = False  # mypy takes any name TYPE_CHECKING as true; typing costs a TAB
if TYPE_CHECKING:
    from typing import Any

DB_NAME = "git-ao.db"


TRASH_DIR = "trash"
ROOTS_FILE = "trash-roots"


def root_name() -> str:
    """The name of the trash root preserve makes at the top of a file system
    (`.git-ao-trash-<uid>`)."""
    return f".git-ao-trash-{os.getuid()}"


def _is_root(path: str) -> bool:
    """Is `path` named as a trash root git-ao makes: absolute, and either
    `.git-ao-trash-<uid>` (this user's) or `ao-trash` in a repository's common git
    dir (one holding HEAD; a repository that is gone is judged by the name alone)?
    Where it lies is not checked: which directory was the highest writable one
    when preserve chose it can change since, and a root refused here hides its
    entries from restore."""
    if not os.path.isabs(path):
        return False
    name = os.path.basename(path)
    if name == root_name():
        return True
    parent = os.path.dirname(path)
    return name == "ao-trash" and (not os.path.lexists(parent)
                                   or os.path.isfile(os.path.join(parent, "HEAD")))


def _listed(data_dir: str) -> list[str]:
    """The lines of `trash-roots`, each once, in order; [] without the file. Raises
    OSError when it cannot be read."""
    out: list[str] = []
    try:
        with open(os.path.join(data_dir, ROOTS_FILE), encoding="utf-8",
                  errors="surrogateescape") as fh:
            for ln in fh:
                p = ln.rstrip("\n")
                if p and p not in out:
                    out.append(p)
    except FileNotFoundError:
        pass
    return out


def trash_roots(data_dir: str) -> list[str]:
    """Every trash root in use: the data dir's own, then those listed in
    `trash-roots` that are named as git-ao names its roots (`_is_root`: a line
    added by hand naming another directory is not read, so nothing in it is
    deleted; prune names it, `foreign_roots`). Missing ones are listed too (their
    readers skip them). Here, not in git_ao/store/trash.py, so a listing reads
    them without loading the trash's record classes. Raises OSError when the
    list cannot be read."""
    own = os.path.join(data_dir, TRASH_DIR)
    return [own] + [p for p in _listed(data_dir) if p != own and _is_root(p)]


def foreign_roots(data_dir: str) -> list[str]:
    """The lines of `trash-roots` that `trash_roots` does not take: not named as a
    trash root git-ao makes. Raises OSError when the list cannot be read."""
    own = os.path.join(data_dir, TRASH_DIR)
    return [p for p in _listed(data_dir) if p != own and not _is_root(p)]


# What a path keeps unencoded in an SQLite URI (urllib.parse.quote's safe set).
_URI_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~/")


def uri_path(path: str) -> str:
    """`path` percent-encoded for an SQLite `file:` URI, as urllib.parse.quote
    encodes it (UTF-8; undecodable bytes kept as in the file name), without
    importing urllib: a TAB and a listing open the database read-only this way."""
    return "".join(c if c in _URI_SAFE else "".join(
        f"%{b:02X}" for b in c.encode("utf-8", "surrogateescape")) for c in path)


def data_dir() -> str:
    """The data dir path: `$AO_DATA_DIR` if set and non-empty, else `~/.ao/data`."""
    env = os.environ.get("AO_DATA_DIR")
    if env:
        return os.path.abspath(os.path.expanduser(env))
    return os.path.join(os.path.expanduser("~"), ".ao", "data")


def pin_data_dir() -> None:
    """Resolve a relative `$AO_DATA_DIR` once, against the directory the command was
    started in, before -C changes it: every later use (and every child, such as a
    relaunch command) then sees the same absolute path. Raises Fatal when that
    directory no longer exists."""
    env = os.environ.get("AO_DATA_DIR")
    if env and not os.path.isabs(os.path.expanduser(env)):
        # Fatal in git's words when that directory is gone.
        os.environ["AO_DATA_DIR"] = os.path.normpath(
            os.path.join(current_directory(), os.path.expanduser(env)))


def pin_home() -> str | None:
    """With HOME unset or empty (a minimal shutdown environment), set it to the
    user's home directory from the password database, so that git, reading
    `~/.gitconfig`, `~/.config/git/ignore` and a `core.excludesFile` starting
    with `~` through HOME only, ignores what it would for the user at a
    terminal, and the data dir is the same `~/.ao/data` either way. Returns
    None, or the one-line warning when no such directory is known (git then
    reads no global config and no global excludes)."""
    if os.environ.get("HOME"):
        return None
    import pwd
    try:
        home = pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        home = ""
    if home and os.path.isabs(home) and os.path.isdir(home):
        os.environ["HOME"] = home
        return None
    return (f"HOME is not set and uid {os.getuid()} has no home directory "
            f"({home or 'no password entry'}): git reads no global config and no global "
            "excludes, so files ignored only there count as untracked")


Stamp = tuple[int, int, int, int]


def db_stamp(db_path: str) -> Stamp | None:
    """(inode, size, mtime ns, ctime ns) of the database file, or None when a -wal or
    -shm is beside it (another connection is open, or one crashed)."""
    if any(os.path.lexists(db_path + s) for s in ("-wal", "-shm")):
        return None
    try:
        st = os.stat(db_path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def read_only_uri(db_path: str) -> tuple[str, Stamp | None]:
    """A URI that reads git-ao's database without writing beside it, and the stamp
    it is good for. SQLite makes -wal and -shm when it opens a WAL database, even
    with mode=ro; with neither there (no connection is open: the last one to close
    removes both) `immutable=1` reads the file alone. Immutable means SQLite neither
    locks nor looks for changes, so the caller must check `db_stamp` is still the
    returned stamp after each read (a writer that came and went changed the file's
    mtime) and read again otherwise. With a -wal or -shm there, plain mode=ro
    (stamp None): the files exist already and SQLite's locking keeps it current."""
    stamp = db_stamp(db_path)
    if stamp is not None:
        return f"file:{uri_path(db_path)}?immutable=1", stamp
    return f"file:{uri_path(db_path)}?mode=ro", None


def _read_only(sql: str, args: tuple[object, ...] = ()) -> list[tuple[Any, ...]] | None:
    """The rows of `sql` from `git-ao.db`, opened read-only (`read_only_uri`) and read
    again when a writer came and went meanwhile; [] when there is no database,
    None when it cannot be read (sqlite3.Error)."""
    path = os.path.join(data_dir(), DB_NAME)
    if not os.path.exists(path):
        return []
    rows: list[tuple[Any, ...]] = []
    for _attempt in range(3):
        uri, stamp = read_only_uri(path)
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=1)
            try:
                rows = conn.execute(sql, args).fetchall()
            finally:
                conn.close()
        except sqlite3.Error:
            return None
        if stamp is None or db_stamp(path) == stamp:
            return rows
    return rows


def completion_rows(state: str) -> list[tuple[str, str]]:
    """(id, description) of the sessions for shell completion, the description
    being the session's state and branch ("pending, fix-parser"), read without
    creating or migrating anything.

    state: 'live', 'pending', 'restore' (the pending ones a restore naming none
    brings back: states.RESTORES_SQL) or 'all'. Opens `git-ao.db` read-only, writing nothing
    beside it (`read_only_uri`); returns [] when there is no database or it cannot be read."""
    where = {"live": "WHERE s.terminated = 0",
             "pending": f"WHERE {PENDING_SQL}",
             "restore": f"WHERE {RESTORES_SQL}"}.get(state, "")
    rows = _read_only(
        "SELECT s.id, s.terminated, "
        f"CASE WHEN {PENDING_SQL} THEN 1 ELSE 0 END, s.branch, w.needs_attention "
        "FROM sessions s LEFT JOIN session_worktrees w "
        f"ON w.session_id = s.id {where} ORDER BY s.id")
    if rows is None:
        # A database not migrated yet has no removed_by: every pending save.
        return completion_rows("pending") if state == "restore" else []
    out = []
    for sid, terminated, pending, branch, attention in rows:
        # The ref is not checked here (no git on a TAB): "attention" may be stale.
        word = State.LIVE if not terminated else State.PENDING if pending else State.TERMINATED
        if word == State.LIVE and attention:
            word = State.ATTENTION
        out.append((sid, f"{word}, {branch or 'detached'}"))
    return out


def completion_session(session_id: str | None, worktree: str | None) -> tuple[str, str] | None:
    """(id, common git dir) of the live session named `session_id`, or with none of
    the one whose worktree is `worktree` (a real path), for a TAB after `--at`
    (which takes a live session only); read as `completion_rows` reads, writing
    nothing. None when there is none, no database, or it cannot be read."""
    if session_id is None and worktree is None:
        return None
    sql, arg = ("SELECT id, repo FROM sessions WHERE id = ? AND terminated = 0", session_id) \
        if session_id is not None else \
        ("SELECT id, repo FROM sessions WHERE workspace_path = ? AND terminated = 0", worktree)
    rows = _read_only(sql, (arg,))
    return (str(rows[0][0]), str(rows[0][1])) if rows else None


def ensure_private_dir(path: str) -> None:
    """Create `path` with mode 0700, refuse it when another user owns it or it is not a
    directory, tighten loose modes (refusing it when they cannot be tightened)."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.stat(path)
    except OSError as exc:
        raise Fatal(f"cannot create data dir '{path}': {exc.strerror}") from exc
    if not stat.S_ISDIR(st.st_mode):
        raise Fatal(f"data dir '{path}' is not a directory; refusing to use it")
    if st.st_uid != os.geteuid():
        raise Fatal(f"data dir '{path}' is owned by uid {st.st_uid}, not by you; "
                    "refusing to use it")
    tighten(path, st, 0o700, "data dir")


def read_private(path: str) -> str | None:
    """The text of a small file of the data dir, None when it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            return fh.read()
    except OSError:
        return None


def write_private(path: str, text: str | bytes) -> bool:
    """Replace the data dir's file `path` with `text`, mode 0600 whatever the umask:
    written beside it and renamed, so a reader sees the old content or the new,
    never half. Returns False when it cannot be written (nothing is left behind)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False
    return True


def tighten(path: str, st: os.stat_result, mode: int, what: str) -> None:
    """chmod `path` to `mode` when group or others have any access; Fatal when that fails."""
    if stat.S_IMODE(st.st_mode) & 0o077:
        try:
            os.chmod(path, mode)
        except OSError as exc:
            raise Fatal(f"{what} '{path}' is open to other users (mode "
                        f"{stat.S_IMODE(st.st_mode):04o}) and cannot be made private: "
                        f"{exc.strerror}; refusing to use it") from exc
