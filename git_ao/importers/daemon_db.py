"""Read the ao daemon's `ao.db` without changing anything beside it.

The daemon (agent-orchestrator's Go backend) keeps its schema with goose: the
table `goose_db_version` records each migration applied. git-ao reads only a
schema version it has been tested against (KNOWN_MAX and the column checks in
SCHEMA), and refuses anything else with one line, because a renamed column
would otherwise read as a default (a terminated session as live, an
orchestrator as a worker). docs/daemon-schema.md lists what each version gives.

Reading leaves the daemon's directory exactly as it was (`store.foreign.read_only`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from git_ao.errors import Fatal
from git_ao.store import foreign

DAEMON_DB = "ao.db"

# The newest goose version git-ao was tested against (migration 0103).
KNOWN_MAX = 103
# The goose versions whose databases the tests build (tests/test_import_schema.py).
TESTED = (2, 9, 35, 103)
# Columns each fact is read from, by the first version that has them. A database at
# version v must have every column of every entry with since <= v; a missing one
# means a layout git-ao does not know (a rename), and the import is refused.
SCHEMA = (
    (1, "sessions", ("id", "project_id", "kind", "harness", "is_terminated", "branch",
                     "workspace_path", "agent_session_id", "prompt")),
    (1, "projects", ("id", "path")),
    (9, "projects", ("kind",)),
    (9, "session_worktrees", ("session_id", "repo_name", "branch", "worktree_path",
                              "preserved_ref", "state")),
    (9, "workspace_repos", ("project_id", "name", "relative_path")),
    (66, "sessions", ("session_mode", "provider_conversation_id")),
)
# session_worktrees.state values that name a worktree that should be on disk.
ACTIVE_WORKTREE = "active"


@dataclass
class DaemonWorktree:
    """One session_worktrees row: a repository's worktree inside a workspace session."""

    repo_name: str
    branch: str
    worktree_path: str
    preserved_ref: str
    state: str


@dataclass
class DaemonSession:
    """One live session as the daemon recorded it (prompt is never logged)."""

    id: str
    kind: str
    harness: str
    branch: str | None
    workspace_path: str
    agent_session_id: str | None
    prompt: str | None
    project_path: str | None
    session_mode: str | None = None
    provider_conversation_id: str | None = None
    worktrees: list[DaemonWorktree] = field(default_factory=list)  # workspace sessions only


@dataclass
class DaemonDb:
    """What one read of `ao.db` gave: its schema version and its live sessions."""

    path: str
    version: int
    sessions: list[DaemonSession]


def default_path(data_dir: str) -> str:
    """The daemon's database in the same data dir: `<data dir>/ao.db`."""
    return os.path.join(data_dir, DAEMON_DB)


def read(db_path: str) -> DaemonDb:
    """Read the daemon's live (not terminated) sessions, ordered by id.

    Raises Fatal when the path is missing, cannot be reached or read (the
    message says permission denied and names the path), is not an SQLite
    database, has no goose_db_version table, or has a schema version or layout
    git-ao does not know. Changes nothing in the database's directory."""
    with foreign.read_only(db_path, "ao daemon database") as conn:
        try:
            version = schema_version(conn, db_path)
            cols = {t: _columns(conn, t) for t in
                    ("sessions", "projects", "session_worktrees", "workspace_repos")}
            check_layout(db_path, version, cols)
            return DaemonDb(db_path, version, _sessions(conn, version))
        except foreign.Error as exc:
            raise Fatal(f"cannot read '{db_path}': {exc}") from exc


def _columns(conn: foreign.Connection, table: str) -> set[str]:
    return {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}


def schema_version(conn: foreign.Connection, db_path: str) -> int:
    """The goose version of the database: the highest version_id whose newest row in
    goose_db_version says is_applied. Raises Fatal when there is no such table
    (a database the daemon did not write, or one git-ao cannot date)."""
    has = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' "
                       "AND name = 'goose_db_version'").fetchone()
    if not has:
        what = ("has a sessions table but no goose_db_version table, so its schema "
                "version is unknown" if _columns(conn, "sessions") else
                "is not an ao daemon database (no goose_db_version table)")
        raise Fatal(f"'{db_path}' {what}; git-ao imports only a database the ao daemon "
                    "wrote")
    # goose appends a row per apply and per rollback; the newest row of a version wins.
    row = conn.execute(
        "SELECT MAX(g.version_id) FROM goose_db_version g WHERE g.is_applied AND g.id = "
        "(SELECT MAX(h.id) FROM goose_db_version h WHERE h.version_id = g.version_id)"
    ).fetchone()
    return int(row[0] or 0)


def check_layout(db_path: str, version: int, cols: dict[str, set[str]]) -> None:
    """Raise Fatal unless `version` is one git-ao knows and the tables have the
    columns SCHEMA expects at that version. cols: {table: set of column names}."""
    if version > KNOWN_MAX:
        raise Fatal(f"'{db_path}' has ao daemon schema version {version}, newer than the "
                    f"newest git-ao knows ({KNOWN_MAX}); upgrade git-ao; nothing imported")
    if version < 1:
        raise Fatal(f"'{db_path}' has no ao daemon migration applied; nothing imported")
    if "is_terminated" not in cols["sessions"] and "session_state" in cols["sessions"]:
        # The daemon's first layout (sessions plus session_metadata), numbered 1 and 2
        # before its migrations were flattened into today's 0001; never released.
        raise Fatal(f"'{db_path}' has the ao daemon's development layout from before its "
                    f"first migration was flattened (version {version}, with "
                    "session_metadata); git-ao does not import it; nothing imported")
    for since, table, names in SCHEMA:
        if since > version:
            continue
        missing = [c for c in names if c not in cols[table]]
        if missing:
            raise Fatal(f"'{db_path}' says ao daemon schema version {version}, but table "
                        f"{table} lacks {', '.join(missing)}; git-ao does not know this "
                        "layout; nothing imported")


def _sessions(conn: foreign.Connection, version: int) -> list[DaemonSession]:

    conn.row_factory = foreign.Row
    extra = ", s.session_mode, s.provider_conversation_id" if version >= 66 else ""
    rows = conn.execute(
        "SELECT s.id, s.kind, s.harness, s.is_terminated, s.branch, s.workspace_path, "
        f"s.agent_session_id, s.prompt, p.path AS project_path{extra} FROM sessions s "
        "LEFT JOIN projects p ON p.id = s.project_id ORDER BY s.id").fetchall()
    trees: dict[str, list[DaemonWorktree]] = {}
    if version >= 9:
        for w in conn.execute("SELECT session_id, repo_name, branch, worktree_path, "
                              "preserved_ref, state FROM session_worktrees "
                              "ORDER BY session_id, repo_name"):
            trees.setdefault(w["session_id"], []).append(DaemonWorktree(
                w["repo_name"], w["branch"], w["worktree_path"], w["preserved_ref"],
                w["state"]))
    out = []
    for r in rows:
        if r["is_terminated"]:
            continue
        keys = r.keys()
        out.append(DaemonSession(
            id=str(r["id"]), kind=r["kind"] or "worker", harness=r["harness"] or "",
            branch=r["branch"] or None, workspace_path=r["workspace_path"] or "",
            agent_session_id=r["agent_session_id"] or None, prompt=r["prompt"] or None,
            project_path=r["project_path"],
            session_mode=(r["session_mode"] or None) if "session_mode" in keys else None,
            provider_conversation_id=(r["provider_conversation_id"] or None)
            if "provider_conversation_id" in keys else None,
            worktrees=trees.get(r["id"], [])))
    return out
