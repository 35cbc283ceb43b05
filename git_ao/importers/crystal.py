"""crystal: the sessions in its SQLite database `~/.crystal/sessions.db`.

Format, from stravu/crystal @ 1e18e0bc981225f75b5226f82a300fa741970c6f:

* Where: the directory `--crystal-dir` names, else `$CRYSTAL_DIR` when set and
  not empty, else `~/.crystal` (main/src/utils/crystalDirectory.ts
  getCrystalDirectory; a development build run inside Crystal uses
  `~/.crystal_dev`); the database is `sessions.db` there
  (main/src/services/database.ts), written by better-sqlite3 with its default
  rollback journal. `$CRYSTAL_DIR` and `~/.crystal` are read (both when both
  exist); a directory given by the flag only: name it with --from.
* Schema: main/src/database/schema.sql, then DatabaseService.runMigrations
  (main/src/database/database.ts), which adds columns it finds missing, every
  start, in one order. There is no migration table and no version number: the
  columns are the format. This module needs `sessions` with REQUIRED columns
  (schema.sql's since the first release, and `archived`, which every release
  adds) and refuses a database without them (a format it does not know); newer
  optional columns are read when there: `is_main_repo`, `tool_type`,
  `claude_session_id`, `active_panel_id`, and the `tool_panels` table (id,
  session_id, type, state, created_at). `tool_panels` came in the release that
  added `active_panel_id`, before `tool_type`, so a database with either column
  and no `tool_panels` (or one without those columns) is refused too.
* A session's worktree is `sessions.worktree_path`, a linked worktree of its
  project (`<project>/worktrees/<worktree_name>` by default,
  main/src/services/worktreeManager.ts); crystal records no branch (git's is
  read). `is_main_repo` sessions run in the project's own directory, not a
  linked worktree, and are skipped.
* `archived` = 1: archived (crystal's delete archives the row and then runs
  `git worktree remove --force`, main/src/ipc/session.ts `sessions:delete`):
  reported, not imported as live. status ('pending', 'running', 'stopped',
  'completed', 'failed', models.ts) does not end a session: its worktree stays.
* Agent: `tool_type` 'claude' (also when NULL), 'codex' or 'none'
  (SessionManager.convertDbSessionToSession). The id that resumes it is an AI
  panel's (`tool_panels.type` 'claude' or 'codex') `state` JSON
  `customState.agentSessionId`, else the older `claudeSessionId` /
  `codexSessionId` (SessionManager.getPanelAgentSessionId; crystal runs
  `claude --resume <id>`, panels/claude/claudeCodeManager.ts): the active panel's
  when it is an AI panel, else the newest AI panel of the session's tool with
  one; a database from before panels has `sessions.claude_session_id`. No tmux;
  one session is one repository.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

from git_ao import git
from git_ao.errors import AoError
from git_ao.importers.found import (
    INTEGER,
    PATH,
    TEXT,
    Found,
    Unreadable,
    distinct,
    env_dir,
    read_database,
    row_name,
    wrong,
)
from git_ao.store import foreign
from git_ao.store.states import Kind

TOOL = "crystal"
DB = "sessions.db"
# The sessions columns every crystal writes: its first schema.sql's, and archived,
# which every release adds when it is missing.
REQUIRED = ("id", "worktree_path", "archived", "name", "initial_prompt", "worktree_name",
            "status")
# Columns crystal added to sessions in the release that made tool_panels (the
# panels came first, 2025-09-11; tool_type with 2025-09-16's agent choice), so a
# sessions table with one of them and no tool_panels is no shape crystal wrote.
PANEL_ERA = ("active_panel_id", "tool_type")
PANEL_COLUMNS = ("id", "session_id", "type", "state", "created_at")
AI_PANELS = ("claude", "codex")
_ID_KEYS = ("agentSessionId", "claudeSessionId", "codexSessionId")


def default_sources(home: Path) -> list[Path]:
    """crystal's database: `$CRYSTAL_DIR/sessions.db` when CRYSTAL_DIR is set and not
    empty (crystal then uses it alone; relative to the current directory), and its
    default `~/.crystal/sessions.db`, which may hold the sessions of runs made
    without it."""
    dirs = [env_dir("CRYSTAL_DIR"), home / ".crystal"]
    return distinct([d / DB for d in dirs if d is not None])


def read(source: Path) -> list[Found]:
    """The sessions of crystal database `source` (or the directory holding
    sessions.db), opened read-only through git_ao.store.foreign. Raises
    Unreadable, one line naming the file, when it cannot be read or lacks what
    every crystal with archiving writes."""
    path = source / DB if source.is_dir() else source
    return read_database(path, "crystal database", _read)


def _read(conn: Any, path: Path) -> list[Found]:
    cols = foreign.columns(conn, "sessions")
    panel_cols = foreign.columns(conn, "tool_panels")
    lacks = _lacks(cols, panel_cols)
    if lacks:
        raise Unreadable(f"crystal database '{path}': {'; '.join(lacks)}; a format this "
                         "git-ao does not know")
    panels = bool(panel_cols)

    def col(name: str) -> str:
        return name if name in cols else "NULL"

    rows = conn.execute(
        f"SELECT rowid, id, worktree_path, archived, {col('is_main_repo')}, {col('tool_type')}, "
        f"{col('claude_session_id')}, {col('active_panel_id')} FROM sessions "
        "ORDER BY rowid").fetchall()
    out: list[Found] = []
    bad: list[str] = []
    for rowid, sid, wt, archived, main_repo, tool_type, legacy_id, active in rows:
        problems = [p for p in (
            wrong("id", sid, TEXT, TOOL), wrong("is_main_repo", main_repo, INTEGER, TOOL, null=True),
            wrong("worktree_path", wt, TEXT, TOOL), wrong("archived", archived, INTEGER, TOOL),
            wrong("tool_type", tool_type, TEXT, TOOL, null=True),
            wrong("claude_session_id", legacy_id, TEXT, TOOL, null=True),
            wrong("active_panel_id", active, TEXT, TOOL, null=True)) if p]
        if not problems and (main_repo or not wt):
            continue  # the project's own directory: not a linked worktree
        if not problems and (p := wrong("worktree_path", wt, PATH, TOOL)):
            problems.append(p)
        harness = {"codex": "codex", "none": ""}.get(tool_type or "", "claude")
        agent_id = None
        if not problems and panels:
            try:
                harness, agent_id = _panel_agent(conn, sid, harness, active)
            except ValueError as exc:
                problems.append(str(exc))
        if problems:
            bad.append(f"crystal database '{path}': {row_name('session', sid, rowid)} "
                       f"{'; '.join(problems)}; not imported")
            continue
        if _main_worktree(wt):
            continue  # run in the repository's own directory, whatever the schema says
        if agent_id is None and legacy_id and harness == "claude":
            agent_id = legacy_id
        out.append(Found(
            tool=TOOL, tool_id=str(sid), worktree=Path(wt), branch=None, harness=harness,
            agent_session_id=agent_id, kind=Kind.WORKER, live=not archived,
            note=_archived_note(Path(wt)) if archived else None))
    if bad:
        raise Unreadable(bad, out)
    return out


def _main_worktree(path: str) -> bool:
    """Is `path` the top of a repository's main worktree (crystal's `is_main_repo`
    session, which a database without that column does not mark)? Git is asked
    only when `path/.git` is a directory, as a main worktree's is."""
    if not os.path.isdir(os.path.join(path, ".git")):
        return False
    try:
        dirs = git.repo_dirs(path)
    except AoError:
        return False
    return not dirs.is_bare and not dirs.is_linked_worktree and dirs.toplevel is not None \
        and os.path.realpath(dirs.toplevel) == os.path.realpath(path)


def _lacks(cols: set[str], panel_cols: set[str]) -> list[str]:
    """What a database lacks of the shape crystal writes: every column of sessions in
    REQUIRED, and the tool_panels table with PANEL_COLUMNS once sessions has a column
    crystal added with it (PANEL_ERA). Empty when it is that shape."""
    if not cols:
        return ["no sessions table"]
    out = []
    missing = [c for c in REQUIRED if c not in cols]
    if missing:
        out.append(f"sessions has no {', '.join(missing)}")
    era = [c for c in PANEL_ERA if c in cols]
    if era and not panel_cols:
        out.append(f"no tool_panels table, which crystal made with sessions.{era[0]}")
    elif panel_cols and (gaps := [c for c in PANEL_COLUMNS if c not in panel_cols]):
        out.append(f"tool_panels has no {', '.join(gaps)}")
    return out


def _archived_note(wt: Path) -> str:
    """Why an archived session is not imported; crystal removes its worktree right
    after archiving, so one still there is named with how to keep it."""
    if os.path.isdir(wt):
        return f"archived in crystal; its worktree is still there: `git ao add {shlex.quote(str(wt))}` keeps its work"
    return "archived in crystal"


def _agent_id(state: Any) -> str | None:
    """The resume id in one panel's `state` JSON text; None when it has none or the
    text is not JSON (crystal treats that panel as having no id either)."""
    try:
        custom = json.loads(state).get("customState") if state else None
    except (ValueError, AttributeError):
        return None
    if not isinstance(custom, dict):
        return None
    for key in _ID_KEYS:
        if isinstance(custom.get(key), str) and custom[key]:
            return str(custom[key])
    return None


def _panel_agent(conn: Any, sid: Any, harness: str, active: Any) -> tuple[str, str | None]:
    """(harness, agent session id) from the session's AI panels: the active panel
    when it is one with an id, else the newest panel of the session's tool with
    one; the tool's harness and None when no panel has an id. Raises ValueError
    naming each AI panel whose id or state is not as crystal writes it."""
    rows = conn.execute(
        "SELECT rowid, id, type, state FROM tool_panels WHERE session_id = ? AND type IN (?, ?) "
        "ORDER BY created_at DESC, rowid DESC", (sid, *AI_PANELS)).fetchall()
    problems = [f"its {row_name('tool panel', pid, n)} {p}" for n, pid, _typ, state in rows
                for p in (wrong("id", pid, TEXT, TOOL), wrong("state", state, TEXT, TOOL, null=True))
                if p]
    if problems:
        raise ValueError("; ".join(problems))
    with_id = [(pid, typ, _agent_id(state)) for _n, pid, typ, state in rows]
    with_id = [r for r in with_id if r[2]]
    for pid, typ, aid in with_id:
        if active is not None and pid == active:
            return typ, aid
    for _pid, typ, aid in with_id:
        if typ == harness:
            return typ, aid
    return harness, None
