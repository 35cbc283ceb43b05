"""Other programs' SQLite databases (the ao daemon's, agent tools'), read without
changing anything beside them: no -wal or -shm is created and no byte or mtime
changes. How depends on what is there:

* a rollback-journal database with no journal beside it: `mode=ro` (it takes
  shared locks only and creates no file);
* a WAL database with no -wal and no -shm (the program is stopped: SQLite removes
  both when its last connection closes): `immutable=1`, which needs no -shm;
* anything else (a -wal, -shm or -journal is there: the program is running or
  crashed): the database and its journal are copied into a private temporary
  directory and the copy is read, since even a `mode=ro` reader writes its read
  mark into the live -shm.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from urllib.parse import quote

from git_ao.errors import Fatal

Error = sqlite3.Error
Row = sqlite3.Row
Connection = sqlite3.Connection


def columns(conn: sqlite3.Connection, table: str) -> set[str]:
    """The column names of `table` (none when there is no such table)."""
    return {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}


def tables(conn: sqlite3.Connection) -> set[str]:
    """The names of the database's tables (none in an empty file)."""
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _is_wal(db_path: str) -> bool:
    """Bytes 18 and 19 of the header are 2 in a WAL database, 1 in a rollback one."""
    with open(db_path, "rb") as f:
        head = f.read(20)
    return len(head) == 20 and head[18] == 2


@contextlib.contextmanager
def read_only(db_path: str, what: str) -> Iterator[sqlite3.Connection]:
    """A read-only connection to another program's database `db_path` (`what` names
    it in messages) that leaves its directory untouched (see the module docstring
    for which mode when). Raises Fatal when it cannot be reached, read or opened."""
    _check_reachable(db_path, what)
    side = [s for s in ("-wal", "-shm", "-journal") if os.path.lexists(db_path + s)]
    tmp = None
    try:
        if side:
            tmp = tempfile.mkdtemp(prefix="git-ao-import-")
            target = _copy_stable(db_path, tmp)
            uri = f"file:{quote(target)}?mode=rw"
        elif _is_wal(db_path):
            uri = f"file:{quote(os.path.abspath(db_path))}?immutable=1"
        else:
            uri = f"file:{quote(os.path.abspath(db_path))}?mode=ro"
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=5)
            conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        except sqlite3.Error as exc:
            raise Fatal(f"cannot open '{db_path}' read-only: {exc}") from exc
        try:
            yield conn
        finally:
            conn.close()
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def _stamp(paths: list[str]) -> tuple[tuple[int, int, int] | None, ...]:
    out: list[tuple[int, int, int] | None] = []
    for p in paths:
        try:
            st = os.stat(p)
            out.append((st.st_ino, st.st_size, st.st_mtime_ns))
        except FileNotFoundError:
            out.append(None)
    return tuple(out)


def _copy_stable(db_path: str, tmp: str, attempts: int = 20) -> str:
    """Copy the database and its -wal or -journal (never the -shm: the copy rebuilds
    its index from the -wal) into `tmp`; retried until neither file changed while
    it was copied, so a checkpoint in between cannot pair an old file with a new
    log. Returns the copy's path. Raises Fatal when the files keep changing or
    cannot be read."""
    target = os.path.join(tmp, os.path.basename(db_path))
    srcs = [db_path, db_path + "-wal", db_path + "-journal"]
    for _ in range(attempts):
        before = _stamp(srcs)
        try:
            for src, suffix in zip(srcs, ("", "-wal", "-journal"), strict=True):
                if os.path.exists(src):
                    shutil.copyfile(src, target + suffix)
                elif os.path.exists(target + suffix):
                    os.unlink(target + suffix)
        except FileNotFoundError:
            continue  # a -wal removed between the check and the copy: copy again
        except PermissionError as exc:
            raise Fatal(f"cannot read '{exc.filename}': permission denied") from None
        if _stamp(srcs) == before:
            return target
    raise Fatal(f"'{db_path}' kept changing while it was copied for reading; try again")


def _check_reachable(db_path: str, what: str) -> None:
    """Fatal with the reason when the file cannot be stat'ed or read: a directory
    on the way that cannot be searched is permission denied, not 'no database'."""
    try:
        os.stat(db_path)
    except FileNotFoundError:
        raise Fatal(f"no {what} at '{db_path}' (use --from PATH)") from None
    except PermissionError:
        raise Fatal(f"cannot reach {what} '{db_path}': permission denied "
                    "(a directory on the way cannot be searched)") from None
    except OSError as exc:
        raise Fatal(f"cannot reach {what} '{db_path}': {exc.strerror}") from None
    if not os.path.isfile(db_path):
        raise Fatal(f"'{db_path}' is not a file")
    try:
        with open(db_path, "rb") as f:
            f.read(1)
    except PermissionError:
        raise Fatal(f"cannot read {what} '{db_path}': permission denied") from None
    except OSError as exc:
        raise Fatal(f"cannot read {what} '{db_path}': {exc.strerror}") from None
