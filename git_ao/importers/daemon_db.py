"""Read the ao daemon's `ao.db` without changing anything beside it.

The daemon (agent-orchestrator's Go backend) keeps its schema with goose: the
table `goose_db_version` records each migration applied. git-ao judges a
database by what it reads, not by its version number: every column it reads
(SCHEMA, by the version that added it) must be there with the type affinity it
knows (TYPES), else the import is refused with one line, because a renamed or
retyped column would otherwise read as a default (a terminated session as live,
an orchestrator as a worker). A version newer than the newest tested one
(KNOWN_MAX) is read the same way, needing every column of SCHEMA. A value
outside what git-ao knows (a new kind, a boolean that is neither 0/1 nor
'true'/'false') refuses that session only. docs/daemon-schema.md lists what
each version gives.

Reading leaves the daemon's directory exactly as it was (`store.foreign.read_only`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from git_ao.errors import Fatal
from git_ao.importers.found import PATH, TEXT, wrong
from git_ao.store import foreign

DAEMON_DB = "ao.db"

# The newest goose version git-ao was tested against (migration 0103).
KNOWN_MAX = 103
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
# The type affinity (SQLite's rules, `_affinity`) of each column read that is not
# TEXT. A boolean is a BOOLEAN (NUMERIC affinity) or INTEGER column, and may hold
# 'true'/'false' text (`as_bool`).
TYPES = {("sessions", "is_terminated"): ("NUMERIC", "INTEGER")}
# session_worktrees.state values that name a worktree that should be on disk.
ACTIVE_WORKTREE = "active"
# sessions.kind values git-ao knows (the daemon's default is 'worker').
KINDS = ("worker", "orchestrator")


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
    problem: str | None = None  # why it is not imported: a value git-ao does not know


@dataclass
class DaemonDb:
    """What one read of `ao.db` gave: its schema version and its live sessions."""

    path: str
    version: int
    sessions: list[DaemonSession]
    # Why the file holds no daemon session at all, though SQLite reads it (an empty
    # file, a database with none of the daemon's tables): None for a daemon's.
    holds_none: str | None = None


def default_path(data_dir: str) -> str:
    """The daemon's database in the same data dir: `<data dir>/ao.db`."""
    return os.path.join(data_dir, DAEMON_DB)


def read(db_path: str) -> DaemonDb:
    """Read the daemon's live (not terminated) sessions, ordered by id.

    An empty file, or an SQLite database with none of the daemon's tables (no
    goose_db_version, sessions, projects, session_worktrees or workspace_repos),
    holds no session: read as none (`DaemonDb.holds_none` says why), not refused.
    Raises Fatal when the path is missing, cannot be reached or read (the
    message says permission denied and names the path), is not an SQLite
    database, has no goose_db_version table beside a daemon table, or has a
    schema version or layout git-ao does not know. Changes nothing in the
    database's directory."""
    with foreign.read_only(db_path, "ao daemon database") as conn:
        try:
            if not foreign.tables(conn) & _DAEMON_TABLES:
                empty = os.path.getsize(db_path) == 0
                return DaemonDb(db_path, 0, [], holds_none="an empty file" if empty else
                                "an SQLite database with none of the ao daemon's tables")
            version = schema_version(conn, db_path)
            cols = {t: _column_types(conn, t) for t in
                    ("sessions", "projects", "session_worktrees", "workspace_repos")}
            check_layout(db_path, version, cols)
            return DaemonDb(db_path, version, _sessions(conn, version))
        except foreign.Error as exc:
            raise Fatal(f"cannot read '{db_path}': {exc}") from exc





# The tables the daemon's schema has (SCHEMA's and goose's): a database with none of
# them is no daemon's, and holds no session of one.
_DAEMON_TABLES = frozenset({"goose_db_version", *(t for _, t, _ in SCHEMA)})


def _column_types(conn: foreign.Connection, table: str) -> dict[str, str]:
    """{column: its declared type, '' for none} of `table` (PRAGMA table_info)."""
    return {r[1]: r[2] or "" for r in conn.execute(f"PRAGMA table_info({table})")}


def _affinity(declared: str) -> str:
    """SQLite's type affinity of a declared column type, by its documented rules in
    their order: INTEGER, TEXT, BLOB, REAL, else NUMERIC (BOOLEAN is NUMERIC)."""
    t = declared.upper()
    if "INT" in t:
        return "INTEGER"
    if any(k in t for k in ("CHAR", "CLOB", "TEXT")):
        return "TEXT"
    if not t or "BLOB" in t:
        return "BLOB"
    if any(k in t for k in ("REAL", "FLOA", "DOUB")):
        return "REAL"
    return "NUMERIC"


def as_bool(value: object) -> bool | None:
    """A boolean as the daemon may store it: 0/1 (SQLite's BOOLEAN) or the text
    'true'/'false' (also '0'/'1'), any case and spacing; None for anything else."""
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        return {"true": True, "false": False, "1": True, "0": False}.get(value.strip().lower())
    return None


def schema_version(conn: foreign.Connection, db_path: str) -> int:
    """The goose version of the database: the highest version_id whose newest row in
    goose_db_version says is_applied. Raises Fatal when there is no such table
    (a database the daemon did not write, or one git-ao cannot date)."""
    has = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' "
                       "AND name = 'goose_db_version'").fetchone()
    if not has:
        what = ("has a sessions table but no goose_db_version table, so its schema "
                "version is unknown" if foreign.columns(conn, "sessions") else
                "is not an ao daemon database (no goose_db_version table)")
        raise Fatal(f"'{db_path}' {what}; git-ao imports only a database the ao daemon "
                    "wrote")
    # goose appends a row per apply and per rollback; the newest row of a version wins.
    row = conn.execute(
        "SELECT MAX(g.version_id) FROM goose_db_version g WHERE g.is_applied AND g.id = "
        "(SELECT MAX(h.id) FROM goose_db_version h WHERE h.version_id = g.version_id)"
    ).fetchone()
    return int(row[0] or 0)


def check_layout(db_path: str, version: int, cols: dict[str, dict[str, str]]) -> None:
    """Raise Fatal unless the tables have every column SCHEMA lists up to `version`
    (all of them past KNOWN_MAX), each with its known type affinity (TYPES, else
    TEXT). cols: {table: {column: declared type}}. A version number alone refuses
    nothing: every daemon release adds migrations."""
    if version < 1:
        raise Fatal(f"'{db_path}' has no ao daemon migration applied; nothing imported")
    if "is_terminated" not in cols["sessions"] and "session_state" in cols["sessions"]:
        # The daemon's first layout (sessions plus session_metadata), numbered 1 and 2
        # before its migrations were flattened into today's 0001; never released.
        raise Fatal(f"'{db_path}' has the ao daemon's development layout from before its "
                    f"first migration was flattened (version {version}, with "
                    "session_metadata); git-ao does not import it; nothing imported")
    for since, table, names in SCHEMA:
        if since > version and version <= KNOWN_MAX:
            continue
        missing = [c for c in names if c not in cols[table]]
        if missing:
            raise Fatal(f"'{db_path}' (ao daemon schema version {version}): table {table} "
                        f"lacks {', '.join(missing)}, which git-ao reads (renamed or "
                        "dropped); nothing imported")
        for c in names:
            want = TYPES.get((table, c), ("TEXT",))
            if _affinity(cols[table][c]) not in want:
                raise Fatal(f"'{db_path}' (ao daemon schema version {version}): column "
                            f"{table}.{c} has type {cols[table][c] or '(none)'}, not "
                            f"{' or '.join(want)} as git-ao reads it; nothing imported")


# The text columns read, each as the daemon writes it (null allowed but for id), and
# those holding a path, which the daemon records absolute.
_TEXT = ("id", "kind", "harness", "branch", "agent_session_id", "prompt", "project_path",
         "session_mode", "provider_conversation_id")
_PATHS = ("workspace_path",)
_WORKTREE_TEXT = ("repo_name", "branch", "preserved_ref", "state")


def _wrong_types(r: foreign.Row, keys: list[str], trees: list[DaemonWorktree]) -> list[str]:
    """Why session row `r` (and its session_worktrees rows) holds a value of another
    type than the daemon writes (a BLOB, a number where text, a relative path): one
    phrase per field, naming it; empty when every one is as written."""
    tool = "the ao daemon"
    out = [p for k in _TEXT if k in keys
           if (p := wrong(k, r[k], TEXT, tool, null=k != "id"))]
    out += [p for k in _PATHS if r[k] != "" and (p := wrong(k, r[k], PATH, tool, null=True))]
    for w in trees:
        out += [f"its worktree {w.repo_name!r} {p}" for k in _WORKTREE_TEXT
                if (p := wrong(k, getattr(w, k), TEXT, tool, null=k != "repo_name"))]
        if w.worktree_path != "" and (p := wrong("worktree_path", w.worktree_path, PATH, tool,
                                                 null=True)):
            out.append(f"its worktree {w.repo_name!r} {p}")
    return out


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
        terminated = as_bool(r["is_terminated"])
        if terminated:
            continue
        keys = r.keys()
        kind = r["kind"] or "worker"
        problem: str | None = None
        typed = _wrong_types(r, keys, trees.get(r["id"], []))
        if typed:
            problem = f"{'; '.join(typed)}; not imported"
        elif terminated is None:
            problem = (f"its is_terminated is {r['is_terminated']!r}, not a boolean git-ao "
                       "knows (0/1, 'true'/'false'); not imported")
        elif kind not in KINDS:
            problem = (f"its kind is {kind!r}, which git-ao does not know "
                       f"({', '.join(KINDS)}); not imported")
        out.append(DaemonSession(
            id=r["id"] if isinstance(r["id"], str) else repr(r["id"]), kind=str(kind), harness=r["harness"] or "",
            branch=r["branch"] or None, workspace_path=r["workspace_path"] or "",
            agent_session_id=r["agent_session_id"] or None, prompt=r["prompt"] or None,
            project_path=r["project_path"],
            session_mode=(r["session_mode"] or None) if "session_mode" in keys else None,
            provider_conversation_id=(r["provider_conversation_id"] or None)
            if "provider_conversation_id" in keys else None,
            worktrees=trees.get(r["id"], []), problem=problem))
    return out
