"""vibe-kanban: the workspaces in its SQLite database `db.v2.sqlite`.

Format, from BloopAI/vibe-kanban @ 4deb7eca8f381f7cbc1f9d15515a9ab8f8009053:

* Where: `asset_dir()/db.v2.sqlite` (crates/db/src/lib.rs DBService), asset_dir
  being directories' ProjectDirs("ai", "bloop", "vibe-kanban") data dir
  (crates/utils/src/assets.rs): `$XDG_DATA_HOME/vibe-kanban` (default
  `~/.local/share/vibe-kanban`) on Linux, `~/Library/Application
  Support/ai.bloop.vibe-kanban` on macOS. An older `db.sqlite` there is what
  versions before db.v2 used (crates/server/src/startup.rs copies it once).
  Journal mode DELETE: a rollback journal, no WAL.
* Format version: sqlx's `_sqlx_migrations` table, one row per applied migration
  of crates/db/migrations/, `version` being the file's timestamp prefix. This
  module reads databases from MIN_VERSION (workspaces gained `archived`,
  20251221000000_add_workspace_flags.sql) to LATEST_VERSION
  (20260317120000_cleanup_attachment_schema.sql); any other is refused. Before
  DELETED_VERSION (20260302113031_add_worktree_deleted_to_workspaces.sql) the
  cleanup cleared container_ref instead of setting `worktree_deleted` (commit
  9653d929d9, "preserve worktree path across cleanup"). A database at a known
  migration that lacks a table or column read below is refused too, naming what
  it lacks.
* Tables read (columns as the migrations leave them; ids are UUIDs stored as
  16-byte BLOBs): `workspaces` (id, container_ref, branch, archived, name,
  worktree_deleted; renamed from task_attempts by
  20251216142123_refactor_task_attempts_to_workspaces_sessions.sql, flags from
  20251221000000_add_workspace_flags.sql), `workspace_repos` (workspace_id,
  repo_id), `repos` (id, path, name; 20251209000000_add_project_repositories.sql),
  `sessions` (id, workspace_id, executor, created_at), `execution_processes`
  (id, session_id, run_reason, dropped, created_at) and `coding_agent_turns`
  (execution_process_id, agent_session_id).
* Worktrees: each repository of a workspace has a linked worktree at
  `<container_ref>/<repos.name>`, all on the workspace's branch; the old
  single-repository layout had the worktree at container_ref itself, a `.git`
  file in it (crates/workspace-manager/src/workspace_manager.rs create_workspace,
  migrate_legacy_worktree). A workspace of several repositories is one group.
* Not live: `archived` (the user archived it; its worktrees are removed an hour
  after its last activity), `worktree_deleted` (vibe-kanban's expired-workspace
  cleanup removed the worktrees, crates/local-deployment/src/container.rs
  cleanup_workspace). A workspace with no container_ref has no worktree yet and
  is skipped, unless archived: the cleanup before DELETED_VERSION cleared an
  archived workspace's container_ref, and it is reported with no worktree.
* Agent: the workspace's latest session (Session::find_latest_by_workspace_id:
  the newest non-devserver, non-dropped process, else the session's creation),
  its `executor` a BaseCodingAgent name (crates/executors/src/executors/mod.rs)
  mapped to the program that executor runs (crates/executors/src/executors/*.rs);
  the agent session id is that session's newest `coding_agent_turns.agent_session_id`
  of a non-dropped `codingagent` process (CodingAgentTurn::find_latest_session_info),
  which vibe-kanban resumes with (claude.rs: `--resume <id>`). No tmux.
"""

from __future__ import annotations

import os
import shlex
import uuid
from pathlib import Path
from typing import Any

from git_ao.importers.found import (
    INTEGER,
    PATH,
    TEXT,
    UUID,
    Found,
    Unreadable,
    read_database,
    wrong,
)
from git_ao.store import foreign
from git_ao.store.states import Kind

TOOL = "vibe-kanban"
DB = "db.v2.sqlite"
OLD_DB = "db.sqlite"
MIN_VERSION = 20251221000000
DELETED_VERSION = 20260302113031
LATEST_VERSION = 20260317120000
# The tables and columns read (see the module docstring); workspaces also has
# worktree_deleted from DELETED_VERSION on.
COLUMNS = {
    "workspaces": ("id", "container_ref", "branch", "archived", "name", "created_at"),
    "workspace_repos": ("workspace_id", "repo_id"),
    "repos": ("id", "path", "name"),
    "sessions": ("id", "workspace_id", "executor", "created_at"),
    "execution_processes": ("id", "session_id", "run_reason", "dropped", "created_at"),
    "coding_agent_turns": ("execution_process_id", "agent_session_id"),
}
# BaseCodingAgent (SCREAMING_SNAKE_CASE) -> the program its executor runs.
HARNESS = {
    "CLAUDE_CODE": "claude", "AMP": "amp", "GEMINI": "gemini", "CODEX": "codex",
    "OPENCODE": "opencode", "CURSOR_AGENT": "cursor-agent", "CURSOR": "cursor-agent",
    "QWEN_CODE": "qwen", "COPILOT": "copilot", "DROID": "droid",
}


def default_sources(home: Path) -> list[Path]:
    """vibe-kanban's database under `home` (and under $XDG_DATA_HOME when set):
    db.v2.sqlite, else the older db.sqlite, in each platform's data dir."""
    dirs = [home / ".local" / "share" / "vibe-kanban",
            home / "Library" / "Application Support" / "ai.bloop.vibe-kanban"]
    xdg = os.environ.get("XDG_DATA_HOME")
    if xdg and os.path.isabs(xdg):
        dirs.insert(0, Path(xdg) / "vibe-kanban")
    out: list[Path] = []
    for d in dict.fromkeys(dirs):
        out.append(d / DB if os.path.lexists(d / DB) or not os.path.lexists(d / OLD_DB)
                   else d / OLD_DB)
    return out


def _uuid(value: Any) -> str:
    """A UUID column as text: sqlx stores them as 16-byte BLOBs."""
    if isinstance(value, bytes) and len(value) == 16:
        return str(uuid.UUID(bytes=value))
    return str(value)


def read(source: Path) -> list[Found]:
    """The worktrees of every workspace in vibe-kanban database `source` (or the
    directory holding it). Opened read-only through git_ao.store.foreign, so no
    byte beside it changes. Raises Unreadable, one line naming the file, when it
    is not a vibe-kanban database or its migration version is not one this
    module was checked against."""
    path = source
    if source.is_dir():
        path = source / DB if (source / DB).exists() or not (source / OLD_DB).exists() \
            else source / OLD_DB
    return read_database(path, "vibe-kanban database", _read)


def _read(conn: Any, path: Path) -> list[Found]:
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "_sqlx_migrations" not in tables:
        raise Unreadable(f"'{path}' is not a vibe-kanban database (no _sqlx_migrations table)")
    version = conn.execute("SELECT max(version) FROM _sqlx_migrations").fetchone()[0]
    if not isinstance(version, int) or not MIN_VERSION <= version <= LATEST_VERSION:
        raise Unreadable(f"vibe-kanban database '{path}' is at migration {version}, a format "
                         f"this git-ao does not know (it reads {MIN_VERSION} to "
                         f"{LATEST_VERSION})")
    lacks = _lacks(conn, version)
    if lacks:
        raise Unreadable(f"vibe-kanban database '{path}' at migration {version}: "
                         f"{'; '.join(lacks)}; a format this git-ao does not know")
    out: list[Found] = []
    bad: list[str] = []
    deleted_col = "worktree_deleted" if version >= DELETED_VERSION else "0"
    rows = conn.execute(f"SELECT rowid, id, container_ref, branch, archived, {deleted_col}, name "
                        "FROM workspaces ORDER BY created_at, id").fetchall()
    for rowid, ws_id, container, branch, archived, deleted, ws_name in rows:
        wid = _uuid(ws_id)
        repos = conn.execute(
            "SELECT r.rowid, r.name, r.path FROM workspace_repos wr JOIN repos r "
            "ON r.id = wr.repo_id WHERE wr.workspace_id = ? ORDER BY r.name",
            (ws_id,)).fetchall()
        problems = [p for p in (
            wrong("id", ws_id, UUID, TOOL), wrong("container_ref", container, TEXT, TOOL, null=True),
            wrong("branch", branch, TEXT, TOOL), wrong("archived", archived, INTEGER, TOOL),
            wrong("worktree_deleted", deleted, INTEGER, TOOL),
            wrong("name", ws_name, TEXT, TOOL, null=True)) if p]
        problems += [f"its repository at row {n} {p}" for n, name, repo_path in repos
                     for p in (_repo_name(name), wrong("path", repo_path, PATH, TOOL)) if p]
        if not problems and (not repos or not (container or archived)):
            continue  # no worktree was ever made: nothing of it to save
        if not problems and container and (p := wrong("container_ref", container, PATH, TOOL)):
            problems.append(p)
        if not problems:
            try:
                harness, agent_id = _agent(conn, ws_id)
            except ValueError as exc:
                problems.append(str(exc))
        if problems:
            bad.append(f"vibe-kanban database '{path}': workspace "
                       f"{wid if isinstance(ws_id, bytes) and len(ws_id) == 16 else f'at row {rowid}'} "
                       f"{'; '.join(problems)}; not imported")
            continue
        note = None
        if archived:
            note = "archived in vibe-kanban"
        elif deleted:
            note = "vibe-kanban marked its worktree removed (worktree_deleted)"
        group = wid if len(repos) > 1 else None
        for _n, name, _repo_path in repos:
            wt: Path | None = None
            if container:
                root = Path(container)
                # The old layout: the workspace directory is the one worktree.
                wt = root if len(repos) == 1 and (root / ".git").is_file() else root / name
                label = root.name
            else:
                # Archived, its container cleared (the cleanup before worktree_deleted
                # did so): still an archived session, reported without a worktree.
                label = ws_name or branch or wid
            out.append(Found(
                tool=TOOL, tool_id=f"{wid}/{name}", worktree=wt, branch=branch or None,
                harness=harness, agent_session_id=agent_id, kind=Kind.WORKER,
                live=note is None, group=group,
                note=_still_there(note, wt) if wt else f"{note}; it records no worktree",
                name=label if len(repos) == 1 else f"{label}-{name}"))
    if bad:
        raise Unreadable(bad, out)
    return out


def _repo_name(name: object) -> str | None:
    """Why a repository's `name` is not as vibe-kanban writes it (the directory name
    of its worktree inside the workspace: text naming one directory), or None."""
    if p := wrong("name", name, TEXT, TOOL):
        return p
    if not name or name in (".", "..") or os.sep in str(name) or "\0" in str(name):
        return f"name {name!r} is no directory name, not as {TOOL} writes it"
    return None


def _lacks(conn: Any, version: int) -> list[str]:
    """What the database lacks of the tables and columns this module reads (COLUMNS),
    as its migrations leave them at `version`: empty when it has them all. A
    migration number alone does not prove the tables are there."""
    out = []
    for table, want in COLUMNS.items():
        have = foreign.columns(conn, table)
        if table == "workspaces" and version >= DELETED_VERSION:
            want = (*want, "worktree_deleted")
        if not have:
            out.append(f"no {table} table")
        elif missing := [c for c in want if c not in have]:
            out.append(f"{table} has no {', '.join(missing)}")
    return out


def _still_there(note: str | None, wt: Path) -> str | None:
    """A worktree vibe-kanban has not removed (yet: an archived workspace's goes an
    hour after the last activity; or its cleanup's removal failed): say so, and how
    to keep it; one that is gone is said to be gone, not taken as removed."""
    if note and os.path.isdir(wt):
        return f"{note}; its worktree is still there: `git ao add {shlex.quote(str(wt))}` keeps its work"
    if note and not os.path.lexists(wt):
        return f"{note}; its worktree is gone"
    return note


def _agent(conn: Any, ws_id: Any) -> tuple[str, str | None]:
    """(harness, agent session id) of the workspace's latest session. Raises
    ValueError when its executor or agent session id is not text (or null)."""
    row = conn.execute(
        "SELECT s.id, s.executor FROM sessions s LEFT JOIN ("
        " SELECT session_id, max(created_at) AS last_used FROM execution_processes"
        " WHERE run_reason != 'devserver' AND dropped = 0 GROUP BY session_id"
        ") ep ON ep.session_id = s.id WHERE s.workspace_id = ?"
        " ORDER BY coalesce(ep.last_used, s.created_at) DESC LIMIT 1", (ws_id,)).fetchone()
    if row is None:
        return "", None
    sid, executor = row
    if p := wrong("executor", executor, TEXT, TOOL, null=True):
        raise ValueError(f"its latest session {p}")
    turn = conn.execute(
        "SELECT t.agent_session_id FROM execution_processes ep"
        " JOIN coding_agent_turns t ON t.execution_process_id = ep.id"
        " WHERE ep.session_id = ? AND ep.run_reason = 'codingagent' AND ep.dropped = 0"
        " AND t.agent_session_id IS NOT NULL ORDER BY ep.created_at DESC LIMIT 1",
        (sid,)).fetchone()
    if turn and (p := wrong("agent_session_id", turn[0], TEXT, TOOL)):
        raise ValueError(f"its latest coding agent turn {p}")
    ex = executor or ""
    return HARNESS.get(ex, ex.lower()), turn[0] if turn else None
