"""The one place that touches SQLite and the data dir's files.

Data dir: `$AO_DATA_DIR`, else `~/.ao/data` (mode 0700, files 0600). The
database `git-ao.db` runs in WAL mode with `synchronous=FULL`; its schema
version lives in `PRAGMA user_version` and newer schemas are refused, never
rewritten. The locks live in git_ao/store/locks.py, the data dir's permission checks in
git_ao/store/datadir.py.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterator

from git_ao.errors import Fatal, Refused
from git_ao.store.datadir import (
    DB_NAME,
    data_dir,
    db_stamp,
    ensure_private_dir,
    read_only_uri,
    tighten,
    uri_path,
)
from git_ao.store.locks import LOCK_DIR
from git_ao.store.migrations import MIGRATIONS, SCHEMA_VERSION
from git_ao.store.records import Save, Session, now_ns

LOG_DIR = "logs"
TRASH_DIR = "trash"
BUSY_TIMEOUT_MS = 10_000



class DamagedDatabase(Fatal):
    """The database file is not a database or is corrupt (exit 128); `git ao doctor
    --recover` moves it aside and rebuilds from refs."""


# Files or directories that only a data dir already used by git-ao holds. A
# database missing (or emptied) beside them was lost, not never made.
_USED_MARKERS = (LOG_DIR, LOCK_DIR, TRASH_DIR)
RECOVER_HINT = ("rebuild the records of pending sessions from their preserve refs with "
                "'git ao doctor --recover -C REPO' (or 'git ao doctor --recover DIR' to scan)")


# How a remote_pushes row's error starts when the remote answered and refused the
# push or delete (another machine's save there, a hook), rather than not being
# reached: git_ao/remote/pushes.py tries such a row again only for the commands
# it concerns, and `git ao doctor` names it.
PUSH_REFUSED = "refused by the remote: "


class Store:
    """The database and the data dir. One instance per command; safe across threads.

    Raises Fatal on an unreadable or damaged database, a newer schema, a data dir
    that belongs to another user, or a database that is missing (or emptied) in
    a data dir that was used before. recover=True (for `git ao doctor
    --recover`) instead moves a damaged database aside (never deletes it) and
    starts a new one; `moved_aside` then names where it went. `new` is True when
    no database file was there before this one (created now, or an empty one in
    memory for a read-only command): a data dir never used, or one lost whole.
    """

    read_only: str | None = None  # why writes are refused, when they are

    def __init__(self, path: str | None = None, *, recover: bool = False,
                 read_only: bool = False):
        self.dir = path or data_dir()
        self.db_path = os.path.join(self.dir, DB_NAME)
        self._local = threading.local()
        self.moved_aside: str | None = None
        self.new = False
        self._ro = read_only and self._open_read_only()
        if self._ro:
            return
        ensure_private_dir(self.dir)
        if not recover:
            self._refuse_lost_db()
            self._open_checked()
            return
        try:
            self._open_checked()
        except DamagedDatabase:
            self._move_aside()
            self._open_checked()

    def _open_read_only(self) -> bool:
        """For a command that only reads (list, show, doctor): create nothing. With no
        database, an empty one in memory; otherwise the file opened read-only. False
        when the file needs a migration first (then it is opened as usual). The
        ownership and mode checks still run on what exists."""
        if os.path.lexists(self.dir):
            ensure_private_dir(self.dir)  # it exists: checks and tightens, creates nothing
        if os.path.lexists(self.db_path):
            self._create_db_file()  # it exists: checks and tightens, creates nothing
        else:
            self.new = True
        self._refuse_lost_db()
        try:
            conn = self._connect_ro()
            version = conn.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from exc
        if version > SCHEMA_VERSION:
            conn.close()
            raise Fatal(f"database '{self.db_path}' has schema version {version}, newer than "
                        f"this git-ao knows ({SCHEMA_VERSION}); upgrade git-ao")
        if version < SCHEMA_VERSION:
            conn.close()
            return False
        self._local.conn = conn
        self.read_only = "a read-only command"
        return True

    def _connect_ro(self) -> sqlite3.Connection:
        if not os.path.exists(self.db_path):
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            self._migrate(conn)
        else:
            # Nothing written beside the database (no -wal, no -shm, no mtime):
            # see read_only_uri, and _query for the check after each read.
            uri, self._local.stamp = read_only_uri(self.db_path)
            conn = sqlite3.connect(uri, uri=True,
                                   timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                   check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.row_factory = sqlite3.Row
        return conn

    def _stale(self) -> bool:
        """Has the database changed since this thread's immutable connection opened
        (a writer came, or came and went)? Never for a connection that locks."""
        stamp = getattr(self._local, "stamp", None)
        return stamp is not None and db_stamp(self.db_path) != stamp

    def _reconnect(self) -> None:
        old = getattr(self._local, "conn", None)
        if old is not None:
            old.close()
        self._local.conn = self._connect_ro()

    def _refuse_lost_db(self) -> None:
        try:
            size = os.stat(self.db_path).st_size
        except FileNotFoundError:
            size = None
        if size and size > 0:
            return
        if not any(os.path.exists(os.path.join(self.dir, m)) for m in _USED_MARKERS):
            return  # a data dir never used: a new database is expected
        what = "is missing" if size is None else "is empty (truncated)"
        raise Fatal(f"database '{self.db_path}' {what}, but this data dir was used before; "
                    f"nothing is changed; {RECOVER_HINT}")

    def _move_aside(self) -> None:
        """Rename the damaged database (and its -wal, -shm) to git-ao.db.damaged.<ns>."""
        target = f"{self.db_path}.damaged.{time.time_ns()}"
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(self.db_path + suffix):
                os.rename(self.db_path + suffix, target + suffix)
        self.moved_aside = target

    # -------------------------------------------------------------- files

    def _create_db_file(self) -> None:
        if os.path.lexists(self.db_path):
            st = os.lstat(self.db_path)
            if not stat.S_ISREG(st.st_mode):
                raise Fatal(f"database '{self.db_path}' is not a regular file; refusing to use it")
            if st.st_uid != os.geteuid():
                raise Fatal(f"database '{self.db_path}' is owned by uid {st.st_uid}, not by you; "
                            "refusing to use it")
            tighten(self.db_path, st, 0o600, "database")
            return
        try:
            fd = os.open(self.db_path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            os.close(fd)
            self.new = True
        except FileExistsError:
            pass
        except OSError as exc:
            raise Fatal(f"cannot create database '{self.db_path}': {exc.strerror}") from exc

    def _connect(self) -> sqlite3.Connection:
        if getattr(self, "_ro", False):
            return self._connect_ro()
        conn = sqlite3.connect(self.db_path, timeout=BUSY_TIMEOUT_MS / 1000,
                               isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = ON")
        return conn

    def _open_checked(self) -> None:
        if not os.access(self.dir, os.W_OK):
            # Checked first: sqlite would report a read-only directory as a file it
            # cannot open, and a read-only database only at the first write.
            raise Fatal(f"data dir '{self.dir}' is not writable (read-only?); nothing is "
                        "changed")
        self._create_db_file()
        try:
            conn = self._connect()
            self._migrate(conn)
            # A cheap check (milliseconds on a database this size) that turns a
            # truncated or scribbled file into one clear error up front.
            row = conn.execute("PRAGMA quick_check").fetchone()
            if row[0] != "ok":
                raise DamagedDatabase(f"database '{self.db_path}' is damaged (quick_check: "
                                      f"{row[0]}); nothing is changed; see 'git ao doctor'; "
                                      f"{RECOVER_HINT}")
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from exc
        self._local.conn = conn
        for suffix in ("-wal", "-shm"):
            p = self.db_path + suffix
            if os.path.exists(p):
                st = os.lstat(p)
                if st.st_uid != os.geteuid():
                    raise Fatal(f"'{p}' is owned by uid {st.st_uid}, not by you; refusing to "
                                "use the database")
                tighten(p, st, 0o600, "database file")
        self.read_only = None if os.access(self.db_path, os.W_OK) else \
            f"database '{self.db_path}' is not writable"

    def _migrate(self, conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise Fatal(f"database '{self.db_path}' has schema version {version}, newer than "
                        f"this git-ao knows ({SCHEMA_VERSION}); upgrade git-ao")
        if version == SCHEMA_VERSION:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            for n in range(version, SCHEMA_VERSION):
                for stmt in MIGRATIONS[n].split(";"):
                    if stmt.strip():
                        conn.execute(stmt)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    @property
    def conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = self._local.conn = self._connect()
            except sqlite3.DatabaseError as exc:
                raise Fatal(f"database '{self.db_path}' is unreadable ({exc})") from exc
        return conn

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT; rolled back on any exception. Yields the connection."""
        if self.read_only:
            raise Fatal(f"{self.read_only}; nothing was recorded, so nothing is removed")
        conn = self.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.DatabaseError as exc:
            raise Refused(f"cannot write the database '{self.db_path}': {exc}") from exc
        try:
            yield conn
            conn.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            # A full disk or a read-only file: this change is not recorded, and the
            # caller (record_save comes before any removal) removes nothing.
            _rollback(conn)
            raise Refused(f"cannot write the database '{self.db_path}': {exc}") from exc
        except BaseException:
            _rollback(conn)
            raise

    def integrity_ok(self) -> tuple[bool, str]:
        """`PRAGMA integrity_check`: (ok, first line of the answer)."""
        row = self._query("PRAGMA integrity_check")[0]
        return row[0] == "ok", row[0]

    # -------------------------------------------------------------- reads

    _SELECT = """
        SELECT s.*, w.session_id AS w_session_id, w.repo AS w_repo, w.worktree_path,
               w.branch AS w_branch, w.head, w.detached, w.preserve_ref, w.preserved_commit,
               w.worktree_config, w.saved_at, w.restored_at, w.needs_attention,
               w.restore_started_at, w.pending AS w_pending, w.ref_held, w.holds_less_than,
               w.removed_by
        FROM sessions s LEFT JOIN session_worktrees w ON w.session_id = s.id
    """

    @staticmethod
    def _row(row: sqlite3.Row) -> Session:
        save = None
        if row["w_session_id"] is not None:
            save = Save(row["w_session_id"], row["w_repo"], row["worktree_path"], row["w_branch"],
                        row["head"], bool(row["detached"]), row["preserve_ref"],
                        row["preserved_commit"], row["worktree_config"], row["saved_at"],
                        row["restored_at"], bool(row["needs_attention"]),
                        row["restore_started_at"], bool(row["w_pending"]),
                        bool(row["ref_held"]), row["holds_less_than"], row["removed_by"])
        return Session(row["id"], row["kind"], row["harness"], row["repo"], row["branch"],
                       row["workspace_path"], row["agent_session_id"], row["prompt"],
                       bool(row["terminated"]), row["created_at"], row["updated_at"], save,
                       row["group_id"], row["session_mode"], row["provider_conversation_id"],
                       row["tool"], row["tool_id"], row["tmux_session"])

    def _error(self, exc: sqlite3.DatabaseError) -> Fatal:
        """Damage (not a database, corrupt) or trouble around it (a full disk, I/O, a
        file it cannot open): only damage is worth a rebuild from refs."""
        name = getattr(exc, "sqlite_errorname", "") or ""
        if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
            return DamagedDatabase(f"database '{self.db_path}' is unreadable or damaged ({exc}); "
                                   f"nothing is changed; see 'git ao doctor'; {RECOVER_HINT}")
        return Fatal(f"database '{self.db_path}' cannot be used ({exc}; a full disk?); nothing "
                     "is changed")

    def _query(self, sql: str, args: tuple[object, ...] = ()) -> list[sqlite3.Row]:
        try:
            if not self._ro:
                return self.conn.execute(sql, args).fetchall()
            # An immutable connection sees no writer: checked before and after
            # each read, and read again on a fresh connection when the file moved.
            for _attempt in range(5):
                if self._stale():
                    self._reconnect()
                rows = self.conn.execute(sql, args).fetchall()
                if not self._stale():
                    return rows
            self._local.stamp = None  # still moving: read through SQLite's locks
            self._local.conn.close()
            conn = sqlite3.connect(f"file:{uri_path(self.db_path)}?mode=ro", uri=True,
                                   timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                   check_same_thread=False)
            conn.row_factory = sqlite3.Row
            self._local.conn = conn
            return conn.execute(sql, args).fetchall()
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from exc

    def read(self, sql: str, args: tuple[object, ...] = ()) -> list[sqlite3.Row]:
        """Run one SELECT and return its rows; a read-only command's read never sees a
        stale file (`_query`). Raises Fatal on a damaged database."""
        return self._query(sql, args)

    def get(self, session_id: str) -> Session | None:
        """The session with this id, or None. Raises Fatal on a damaged database."""
        if not session_id.isascii():
            return None  # no record has one: ids are ASCII (and SQLite takes no lone surrogate)
        rows = self._query(self._SELECT + " WHERE s.id = ?", (session_id,))
        return self._row(rows[0]) if rows else None

    def sessions(self) -> list[Session]:
        """Every session, ordered by repository then id. Raises Fatal on a damaged database."""
        rows = self._query(self._SELECT + " ORDER BY s.repo, s.id")
        return [self._row(r) for r in rows]

    def pending_pushes(self) -> list[tuple[str, str, str, str | None]]:
        """(session id, remote, the commit to push or '' to delete, why the last try
        failed or None) of every remote_pushes row still to do, by repository and id.
        Raises Fatal on a damaged database."""
        rows = self._query("SELECT session_id, remote, want, error FROM remote_pushes "
                           "WHERE want != have ORDER BY repo, session_id, remote")
        return [(r["session_id"], r["remote"], r["want"], r["error"]) for r in rows]

    def holder_of(self, workspace_path: str) -> Session | None:
        """The live or pending session recorded at this workspace path, or None: the
        live one first (a new worktree made at a pending save's path is a session of
        its own, `live_at`, and the pending save waits beside it)."""
        rows = self._query(self._SELECT + " WHERE s.workspace_path = ? ORDER BY s.repo, s.id",
                           (workspace_path,))
        held = [s for s in map(self._row, rows) if s.live or s.pending]
        return next((s for s in held if s.live), held[0] if held else None)

    def live_at(self, workspace_path: str) -> Session | None:
        """The live session recorded at this workspace path, or None. At most one
        session is live at a path; pending ones may share it with it."""
        rows = self._query(self._SELECT + " WHERE s.workspace_path = ? AND s.terminated = 0 "
                           "ORDER BY s.id LIMIT 1", (workspace_path,))
        return self._row(rows[0]) if rows else None

    # -------------------------------------------------------------- writes

    def insert(self, s: Session) -> None:
        """Register a new live session. Raises Refused when the id or the path is taken."""
        t = now_ns()
        with self.transaction() as c:
            if c.execute("SELECT 1 FROM sessions WHERE id = ?", (s.id,)).fetchone():
                raise Refused(f"session '{s.id}' already exists")
            c.execute(
                "INSERT INTO sessions (id, kind, harness, repo, branch, workspace_path, "
                "agent_session_id, prompt, terminated, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)",
                (s.id, s.kind, s.harness, s.common_dir, s.branch, s.worktree_path,
                 s.agent_session_id, s.prompt, t, t))
        s.created_at = s.updated_at = t

    def repoint(self, session_id: str, old_repo: str, common_dir: str, worktree_path: str,
                branch: str | None) -> bool:
        """Point a session, and its save's row, at its repository and worktree where
        they are now (the repository moved), in one commit, only while the record
        still names `old_repo`. Returns False (nothing changed) when it does not."""
        t = now_ns()
        with self.transaction() as c:
            done = c.execute("UPDATE sessions SET repo = ?, workspace_path = ?, "
                             "branch = COALESCE(?, branch), updated_at = ? "
                             "WHERE id = ? AND repo = ?",
                             (common_dir, worktree_path, branch, t, session_id, old_repo))
            if not done.rowcount:
                return False
            c.execute("UPDATE session_worktrees SET repo = ?, worktree_path = ? "
                      "WHERE session_id = ?", (common_dir, worktree_path, session_id))
        return True

    def set_agent(self, session_id: str, harness: str, agent_session_id: str | None,
                  was: tuple[str, str | None]) -> bool:
        """Record the agent of a session (its harness and the agent's own session id),
        only while the record still holds `was` (harness, agent session id). Returns
        False (nothing changed) when it does not."""
        with self.transaction() as c:
            done = c.execute("UPDATE sessions SET harness = ?, agent_session_id = ?, "
                             "updated_at = ? WHERE id = ? AND harness IS ? AND "
                             "agent_session_id IS ?",
                             (harness, agent_session_id, now_ns(), session_id, was[0], was[1]))
            return bool(done.rowcount)

    def set_daemon_facts(self, session_id: str, *, group_id: str | None = None,
                         session_mode: str | None = None,
                         provider_conversation_id: str | None = None) -> None:
        """Record the facts an import read from the ao daemon for a registered session."""
        with self.transaction() as c:
            c.execute("UPDATE sessions SET group_id = ?, session_mode = ?, "
                      "provider_conversation_id = ?, updated_at = ? WHERE id = ?",
                      (group_id, session_mode, provider_conversation_id, now_ns(), session_id))

    def set_tool_facts(self, session_id: str, *, tool: str, tool_id: str,
                       tmux_session: str | None, group_id: str | None, harness: str,
                       agent_session_id: str | None) -> None:
        """Record what an import read from a tool for a registered session (the caller
        merges them with what the session already had)."""
        with self.transaction() as c:
            c.execute("UPDATE sessions SET tool = ?, tool_id = ?, tmux_session = ?, "
                      "group_id = ?, harness = ?, agent_session_id = ?, updated_at = ? "
                      "WHERE id = ?",
                      (tool, tool_id, tmux_session, group_id, harness, agent_session_id,
                       now_ns(), session_id))

    def import_notes(self, source: str) -> dict[str, tuple[str, int]]:
        """{daemon id: (reason, noted_at ns)} of the rows of the daemon database at
        `source` that an import could not register and already reported."""
        rows = self._query("SELECT daemon_id, reason, noted_at FROM import_notes "
                           "WHERE source = ?", (source,))
        return {r["daemon_id"]: (r["reason"], r["noted_at"]) for r in rows}

    def note_import(self, source: str, daemon_id: str, reason: str) -> None:
        """Remember that the daemon row `daemon_id` of `source` could not be registered."""
        with self.transaction() as c:
            c.execute("INSERT OR REPLACE INTO import_notes (source, daemon_id, reason, noted_at) "
                      "VALUES (?, ?, ?, ?)", (source, daemon_id, reason, now_ns()))

    def drop_import_note(self, source: str, daemon_id: str) -> None:
        """Forget a note: the row was registered, or is gone from the daemon."""
        with self.transaction() as c:
            c.execute("DELETE FROM import_notes WHERE source = ? AND daemon_id = ?",
                      (source, daemon_id))

    def record_save(self, save: Save, *, terminate: bool) -> None:
        """Write the save row and (terminate=True) mark the session terminated, in one commit.

        terminate=False is a checkpoint: the save counts as already restored, so
        nothing becomes pending. The row is replaced whole: a restore started for an
        older save (restore_started_at) is not this save's. A checkpoint keeps the
        row's holds_less_than (the earlier capture is still to be brought back or
        resolved); a preserve's save starts without one. `save.removed_by` (the tool
        that removed the worktree itself) is kept only on a save that terminates."""
        with self.transaction() as c:
            if not terminate:
                save.restored_at = save.saved_at
                row = c.execute("SELECT holds_less_than FROM session_worktrees WHERE "
                                "session_id = ?", (save.session_id,)).fetchone()
                save.holds_less_than = row["holds_less_than"] if row is not None else None
            else:
                save.holds_less_than = None
            save.pending_state = terminate
            save.ref_state = bool(save.preserve_ref)
            if not terminate:
                save.removed_by = None
            c.execute(
                "INSERT OR REPLACE INTO session_worktrees (session_id, repo, worktree_path, "
                "branch, head, detached, preserve_ref, preserved_commit, worktree_config, "
                "saved_at, restored_at, pending, ref_held, holds_less_than, removed_by) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (save.session_id, save.common_dir, save.worktree_path, save.branch, save.head,
                 int(save.detached), save.preserve_ref, save.preserved_commit,
                 save.private_config, save.saved_at, save.restored_at, int(terminate),
                 int(bool(save.preserve_ref)), save.holds_less_than, save.removed_by))
            c.execute("UPDATE sessions SET terminated = ?, branch = COALESCE(?, branch), "
                      "updated_at = ? WHERE id = ?",
                      (int(terminate), save.branch, now_ns(), save.session_id))

    def insert_recovered(self, s: Session, save: Save,
                         replace_if_missing: Callable[[str], bool] | None = None) -> bool:
        """Insert a session and its save rebuilt from a preserve ref (`git ao doctor
        --recover`), in one commit. Returns False (and changes nothing) when the id exists,
        unless `replace_if_missing` is given and says False of the existing record's
        repository (it is missing: moved, unmounted): then that record is replaced."""
        with self.transaction() as c:
            row = c.execute("SELECT repo FROM sessions WHERE id = ?", (s.id,)).fetchone()
            if row is not None:
                if replace_if_missing is None or row["repo"] == s.common_dir \
                        or replace_if_missing(row["repo"]):
                    return False
                # The private config (intent-to-add entries, flags, modes) is in
                # no commit: the old row's goes with the same save.
                old = c.execute("SELECT worktree_config FROM session_worktrees WHERE "
                                "session_id = ? AND preserved_commit = ?",
                                (s.id, save.preserved_commit)).fetchone()
                if old is not None and save.private_config is None:
                    save.private_config = old["worktree_config"]
                c.execute("DELETE FROM session_worktrees WHERE session_id = ?", (s.id,))
                c.execute("DELETE FROM sessions WHERE id = ?", (s.id,))
            t = now_ns()
            c.execute(
                "INSERT INTO sessions (id, kind, harness, repo, branch, workspace_path, "
                "agent_session_id, prompt, terminated, created_at, updated_at, group_id, "
                "session_mode, provider_conversation_id) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?)",
                (s.id, s.kind, s.harness, s.common_dir, s.branch, s.worktree_path,
                 s.agent_session_id, int(s.terminated), save.saved_at, t, s.group_id,
                 s.session_mode, s.provider_conversation_id))
            c.execute(
                "INSERT INTO session_worktrees (session_id, repo, worktree_path, branch, head, "
                "detached, preserve_ref, preserved_commit, worktree_config, saved_at, "
                "restored_at, pending, ref_held) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)",
                (save.session_id, save.common_dir, save.worktree_path, save.branch, save.head,
                 int(save.detached), save.preserve_ref, save.preserved_commit,
                 save.private_config, save.saved_at,
                 save.restored_at, int(save.restored_at is None)))
        return True

    def mark_restored(self, session_id: str, *, ref_kept: bool = False,
                      attention: bool | None = None) -> None:
        """Mark the save restored (not pending) and the session live, in one commit.

        ref_kept: the preserve ref stays (a conflict, a blocked apply, late writes
        restored from the trash): listings keep showing it (ref_held). attention
        (default: ref_kept): the ref holds work the worktree may lack, so no later
        preserve replaces it before that work is back (needs_attention).
        restored_at is the wall-clock time, for display only: pending is a state
        of its own, never a comparison of times."""
        t = now_ns()
        attention = ref_kept if attention is None else attention
        with self.transaction() as c:
            c.execute("UPDATE session_worktrees SET restored_at = ?, pending = 0, ref_held = ?, "
                      "needs_attention = ?, removed_by = NULL WHERE session_id = ?",
                      (t, int(ref_kept), int(attention), session_id))
            c.execute("UPDATE sessions SET terminated = 0, updated_at = ? WHERE id = ?",
                      (t, session_id))

    def mark_holds_less(self, session_id: str, earlier: str | None,
                        saved: str | None = None) -> None:
        """Record (earlier: None clears it) that the save whose commit is `saved` (None:
        nothing was saved) holds less than the earlier capture `earlier` of the same
        preserve, only while the row is still that save's."""
        with self.transaction() as c:
            if earlier is None:
                c.execute("UPDATE session_worktrees SET holds_less_than = NULL "
                          "WHERE session_id = ?", (session_id,))
            else:
                c.execute("UPDATE session_worktrees SET holds_less_than = ? "
                          "WHERE session_id = ? AND preserved_commit IS ?",
                          (earlier, session_id, saved))

    def mark_restore_started(self, session_id: str) -> None:
        """Record, in its own commit, that a restore of the pending save is about to add
        the worktree: a rerun that finds the worktree unfinished knows it is its own."""
        with self.transaction() as c:
            c.execute("UPDATE session_worktrees SET restore_started_at = ? WHERE session_id = ?",
                      (now_ns(), session_id))

    def forget_ref(self, session_id: str, commit: str) -> None:
        """The save's ref (at `commit`) was deleted while nothing was pending (prune):
        the row stops naming it. A pending save is never changed."""
        with self.transaction() as c:
            c.execute("UPDATE session_worktrees SET preserve_ref = '', preserved_commit = NULL, "
                      "needs_attention = 0, ref_held = 0 WHERE session_id = ? "
                      "AND preserved_commit = ? AND pending = 0",
                      (session_id, commit))

    def mark_terminated(self, session_id: str) -> None:
        """Mark a session terminated (a kill): it stays on record with nothing pending."""
        with self.transaction() as c:
            c.execute("UPDATE sessions SET terminated = 1, updated_at = ? WHERE id = ?",
                      (now_ns(), session_id))

    def delete(self, session_id: str) -> None:
        """Drop a session's rows (the sessions row and its save)."""
        with self.transaction() as c:
            c.execute("DELETE FROM session_worktrees WHERE session_id = ?", (session_id,))
            c.execute("DELETE FROM sessions WHERE id = ?", (session_id,))


def _rollback(conn: sqlite3.Connection) -> None:
    try:
        conn.execute("ROLLBACK")
    except sqlite3.DatabaseError:
        pass  # the failed statement may already have ended the transaction
