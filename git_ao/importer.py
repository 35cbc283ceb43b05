"""Read the ao daemon's `ao.db`, read-only, for `git ao import`.

The daemon's layout: table `sessions` (id, project_id, kind, harness,
is_terminated, branch, workspace_path, agent_session_id, prompt) and table
`projects` (id, path). Extra columns are ignored; of the optional ones, a
missing column reads as empty. The file is opened with SQLite's URI
`mode=ro`, so git-ao never writes to it.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from urllib.parse import quote

from .errors import Fatal

DAEMON_DB = "ao.db"
REQUIRED = ("id", "workspace_path")
OPTIONAL = ("project_id", "kind", "harness", "is_terminated", "branch", "agent_session_id",
            "prompt")


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


def default_path(data_dir) -> str:
    """The daemon's database in the same data dir: `<data dir>/ao.db`."""
    return os.path.join(data_dir, DAEMON_DB)


def _columns(conn, table) -> set:
    return {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}


def live_sessions(db_path) -> list[DaemonSession]:
    """The daemon's sessions that are not terminated, ordered by id.

    Raises Fatal when the file is missing, unreadable, or has no `sessions`
    table with the required columns (id, workspace_path)."""
    if not os.path.isfile(db_path):
        raise Fatal(f"no ao daemon database at '{db_path}' (use --from PATH)")
    try:
        conn = sqlite3.connect(f"file:{quote(os.path.abspath(db_path))}?mode=ro", uri=True,
                               timeout=5)
    except sqlite3.Error as exc:
        raise Fatal(f"cannot open '{db_path}' read-only: {exc}") from exc
    try:
        cols = _columns(conn, "sessions")
        missing = [c for c in REQUIRED if c not in cols]
        if not cols or missing:
            raise Fatal(f"'{db_path}' is not an ao daemon database: table sessions lacks "
                        f"{', '.join(missing or REQUIRED)}")
        select = ", ".join(f"s.{c}" if c in cols else f"NULL AS {c}"
                           for c in REQUIRED + OPTIONAL)
        join = ""
        if "project_id" in cols and {"id", "path"} <= _columns(conn, "projects"):
            select += ", p.path AS project_path"
            join = " LEFT JOIN projects p ON p.id = s.project_id"
        else:
            select += ", NULL AS project_path"
        conn.row_factory = sqlite3.Row
        rows = conn.execute(f"SELECT {select} FROM sessions s{join} ORDER BY s.id").fetchall()
    except sqlite3.Error as exc:
        raise Fatal(f"cannot read '{db_path}': {exc}") from exc
    finally:
        conn.close()
    out = []
    for r in rows:
        if _truthy(r["is_terminated"]):
            continue
        out.append(DaemonSession(
            id=str(r["id"]), kind=(r["kind"] or "worker"), harness=r["harness"] or "",
            branch=r["branch"], workspace_path=r["workspace_path"] or "",
            agent_session_id=None if r["agent_session_id"] is None else str(r["agent_session_id"]),
            prompt=r["prompt"], project_path=r["project_path"]))
    return out


def _truthy(value) -> bool:
    if value is None:
        return False
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "t")
    return bool(value)
