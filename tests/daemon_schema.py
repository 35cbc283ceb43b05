"""An `ao.db` shaped like the ao daemon's at its schema points, for the import tests.

`daemon_db()` builds an `ao.db` the way the daemon's goose migrations leave it
at a given version (tables, column names, types, defaults and the
goose_db_version ledger), from the column facts below; the SQL is generated
here. The points: the development layout from before the daemon's first
migration was flattened, then versions 2, 9, 35 and 103 (the newest known).
`daemon_session()` is one row of its sessions table.
"""

from __future__ import annotations

import sqlite3

# goose versions that exist as migration files (gaps are numbers the daemon skipped).
VERSIONS = ([*range(1, 22), *range(23, 45), 47, 48, 49, 52, 53, 54, *range(66, 104)])

T, I, B, TS = "TEXT NOT NULL DEFAULT ''", "INTEGER NOT NULL DEFAULT 0", \
    "BOOLEAN NOT NULL DEFAULT FALSE", "TIMESTAMP NOT NULL DEFAULT '2026-06-01 00:00:00'"
# sessions columns by the version that added them (0002 dropped activity_source).
SESSION_COLS = [
    (1, "project_id", "TEXT NOT NULL REFERENCES projects (id)"), (1, "num", I),
    (1, "issue_id", T), (1, "kind", "TEXT NOT NULL DEFAULT 'worker'"), (1, "harness", T),
    (1, "activity_state", "TEXT NOT NULL DEFAULT 'idle'"), (1, "activity_last_at", TS),
    (1, "is_terminated", B), (1, "branch", T), (1, "workspace_path", T),
    (1, "runtime_handle_id", T), (1, "agent_session_id", T), (1, "prompt", T),
    (1, "created_at", TS), (1, "updated_at", TS), (3, "display_name", T),
    (10, "first_signal_at", "TIMESTAMP"), (17, "preview_url", T), (19, "preview_revision", I),
    (30, "cleanup_generation", I), (33, "runtime_launch_id", T),
    (34, "workspace_repo_path", T), (35, "terminate_on_pr_merge", B),
    (40, "diff_base_sha", T), (40, "diff_base_ref", T), (42, "reviewer_harness", T),
    (43, "is_pinned", "BOOLEAN NOT NULL DEFAULT 0"), (43, "pinned_at", "DATETIME"),
    (66, "session_mode", "TEXT NOT NULL DEFAULT 'tui'"), (66, "provider_conversation_id", T),
    (66, "controller_generation", T), (81, "browser_capability_verifier", T),
    (84, "auto_inject_review", "BOOLEAN NOT NULL DEFAULT TRUE"),
    (85, "latest_user_prompt", T), (85, "latest_assistant_update", T),
    (85, "native_transcript_path", T), (88, "auto_inject_ci", "BOOLEAN NOT NULL DEFAULT TRUE"),
    (91, "auto_review_enabled", I), (98, "agent_session_id_launch_id", T), (100, "model", T),
]
PROJECT_COLS = [(1, "path", "TEXT NOT NULL"), (1, "repo_origin_url", T), (1, "display_name", T),
                (1, "registered_at", TS), (1, "archived_at", "TIMESTAMP"), (8, "config", "TEXT"),
                (9, "kind", "TEXT NOT NULL DEFAULT 'single_repo'")]
WORKTREE_COLS = [(9, "session_id", "TEXT NOT NULL REFERENCES sessions(id)"),
                 (9, "repo_name", "TEXT NOT NULL"), (9, "branch", "TEXT NOT NULL"),
                 (9, "base_sha", "TEXT NOT NULL DEFAULT ''"),
                 (9, "worktree_path", "TEXT NOT NULL"), (9, "preserved_ref", T),
                 (9, "state", "TEXT NOT NULL DEFAULT 'active'"), (96, "base_ref", T)]
REPO_COLS = [(9, "project_id", "TEXT NOT NULL REFERENCES projects(id)"),
             (9, "name", "TEXT NOT NULL"), (9, "relative_path", "TEXT NOT NULL"),
             (9, "repo_origin_url", T), (9, "registered_at", TS), (86, "default_branch", T),
             (90, "git_status", "TEXT NOT NULL DEFAULT 'ready'")]

# The layout before the first migration was flattened: versions 1 and 2 meant this.
PRE_FLATTEN = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, project_id TEXT NOT NULL,
    issue_id TEXT NOT NULL DEFAULT '', kind TEXT NOT NULL DEFAULT 'worker',
    created_at TIMESTAMP, updated_at TIMESTAMP, revision INTEGER NOT NULL DEFAULT 0,
    session_state TEXT NOT NULL DEFAULT 'working', session_reason TEXT NOT NULL DEFAULT '',
    pr_state TEXT NOT NULL DEFAULT '', pr_reason TEXT NOT NULL DEFAULT '',
    runtime_state TEXT NOT NULL DEFAULT '', runtime_reason TEXT NOT NULL DEFAULT '',
    activity_state TEXT NOT NULL DEFAULT 'idle', activity_last_at TIMESTAMP,
    activity_source TEXT NOT NULL DEFAULT 'none');
CREATE TABLE session_metadata (session_id TEXT PRIMARY KEY REFERENCES sessions (id),
    branch TEXT NOT NULL DEFAULT '', workspace_path TEXT NOT NULL DEFAULT '',
    runtime_handle_id TEXT NOT NULL DEFAULT '', runtime_name TEXT NOT NULL DEFAULT '',
    agent_session_id TEXT NOT NULL DEFAULT '', prompt TEXT NOT NULL DEFAULT '',
    updated_at TIMESTAMP);
CREATE TABLE projects (id TEXT PRIMARY KEY, path TEXT NOT NULL,
    default_branch TEXT NOT NULL DEFAULT '', registered_at TIMESTAMP, archived_at TIMESTAMP);
"""
POINTS = ("pre-flatten", 2, 9, 35, 103)


def _table(name, cols, version, key, extra=""):
    body = [key] * bool(key) + [f"{c} {decl}" for since, c, decl in cols if since <= version
                    and not (c == "activity_source" and version >= 2)]
    return f"CREATE TABLE {name} (\n    " + ",\n    ".join(body + ([extra] if extra else [])) \
        + "\n);\n"


def schema_sql(version) -> str:
    """CREATE statements for the daemon's tables git-ao reads, at goose `version`."""
    sql = _table("projects", PROJECT_COLS, version, "id TEXT PRIMARY KEY")
    cols = SESSION_COLS[:]
    if version < 2:
        cols.insert(7, (1, "activity_source", "TEXT NOT NULL DEFAULT 'none'"))
    sql += _table("sessions", cols, version, "id TEXT PRIMARY KEY", "UNIQUE (project_id, num)")
    if version >= 9:
        sql += _table("workspace_repos", REPO_COLS, version, "",
                      "PRIMARY KEY (project_id, name)")
        sql += _table("session_worktrees", WORKTREE_COLS, version, "",
                      "PRIMARY KEY (session_id, repo_name)")
    return sql


GOOSE = """CREATE TABLE goose_db_version (id INTEGER PRIMARY KEY AUTOINCREMENT,
    version_id INTEGER NOT NULL, is_applied INTEGER NOT NULL,
    tstamp TIMESTAMP DEFAULT (datetime('now')));
INSERT INTO goose_db_version (version_id, is_applied) VALUES (0, 1);
"""


def daemon_db(path, point, *, projects=(), sessions=(), worktrees=(), repos=(), wal=True,
              goose=True):
    """Build an ao.db at schema `point` (one of POINTS) and insert rows: projects as
    (id, path[, kind]), sessions/worktrees/repos as dicts of column values. The
    daemon runs in WAL mode; wal=False leaves a rollback-journal database."""
    conn = sqlite3.connect(path)
    if wal:
        conn.execute("PRAGMA journal_mode = WAL")
    version = 2 if point == "pre-flatten" else point
    conn.executescript(PRE_FLATTEN if point == "pre-flatten" else schema_sql(version))
    if goose:
        conn.executescript(GOOSE)
        for v in VERSIONS:
            if v <= version:
                conn.execute("INSERT INTO goose_db_version (version_id, is_applied) "
                             "VALUES (?, 1)", (v,))
    for p in projects:
        if len(p) == 3:
            conn.execute("INSERT INTO projects (id, path, kind) VALUES (?, ?, ?)", p)
        else:
            conn.execute("INSERT INTO projects (id, path) VALUES (?, ?)", p)
    for table, rows in (("sessions", sessions), ("session_worktrees", worktrees),
                        ("workspace_repos", repos)):
        for r in rows:
            conn.execute(f"INSERT INTO {table} ({', '.join(r)}) VALUES "
                         f"({', '.join('?' * len(r))})", tuple(r.values()))
    conn.commit()
    conn.close()
    return path



def daemon_session(sid, project, path, **kw):
    return dict({"id": sid, "project_id": project, "num": int(sid.rsplit("-", 1)[1]),
                 "workspace_path": str(path), "branch": sid}, **kw)
