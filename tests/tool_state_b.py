"""claude-squad, vibe-kanban and crystal state built the way each tool writes it.

claude-squad: `~/.claude-squad/state.json` is Go's json.MarshalIndent (two
spaces) of its State struct, `instances` an array of InstanceData (field order
and names of session/storage.go; times RFC 3339 with nanoseconds; `status` the
Status int); worktrees `~/.claude-squad/worktrees/<branch>_<hex nanoseconds>`.
vibe-kanban: `db.v2.sqlite` in its data dir (`$XDG_DATA_HOME/vibe-kanban`), a
rollback-journal database whose tables are those its migrations leave (written
out here as the final CREATE TABLE of each table read), `_sqlx_migrations` as
sqlx keeps it, ids as 16-byte BLOBs; worktrees `<container_ref>/<repo name>`.
crystal: `sessions.db` in `$CRYSTAL_DIR` (else `~/.crystal`), the sessions table after its migrations,
projects and tool_panels (state a JSON ToolPanelState); worktrees
`<project>/worktrees/<name>`.
"""

from __future__ import annotations

import json
import os
import sqlite3
import uuid
from pathlib import Path

from tests.support import git

# --- claude-squad --------------------------------------------------------------

RFC3339 = "2026-12-02T10:00:00.123456789Z"


def squad_worktree(repo: Path, title: str, *, prefix: str = "user/") -> tuple[Path, str]:
    """A worktree made as claude-squad's NewGitWorktree + Setup make one."""
    branch = prefix + title.lower().replace(" ", "-")
    base = Path(os.environ["HOME"]) / ".claude-squad" / "worktrees"
    base.mkdir(parents=True, exist_ok=True)
    path = base / f"{branch.replace('/', '-')}_{0x187d2c4e5a1b3f00 + len(title):x}"
    head = git("rev-parse", "HEAD", cwd=repo).strip()
    git("worktree", "add", "-q", "-b", branch, str(path), head, cwd=repo)
    return path, branch


def squad_instance(repo: Path, wt: Path, title: str, branch: str, *, status: int = 0,
                   program: str = "claude") -> dict:
    """One InstanceData as claude-squad serializes it."""
    return {
        "title": title, "path": str(repo), "branch": branch, "status": status,
        "height": 40, "width": 120, "created_at": RFC3339, "updated_at": RFC3339,
        "auto_yes": False, "program": program,
        "worktree": {"repo_path": str(repo), "worktree_path": str(wt), "session_name": title,
                     "branch_name": branch, "base_commit_sha": "0" * 40,
                     "is_existing_branch": False},
        "diff_stats": {"added": 3, "removed": 1, "content": "diff --git a/x b/x\n"},
    }


def squad_state(instances: list[dict]) -> Path:
    """Write `~/.claude-squad/state.json` as SaveState does."""
    d = Path(os.environ["HOME"]) / ".claude-squad"
    d.mkdir(parents=True, exist_ok=True)
    path = d / "state.json"
    path.write_text(json.dumps({"help_screens_seen": 1, "instances": instances}, indent=2))
    return path


def squad_pause(repo: Path, wt: Path, title: str):
    """What Instance.Pause does: commit a dirty worktree, remove it, prune."""
    if git("status", "--porcelain", cwd=wt).strip():
        git("add", "-A", cwd=wt)
        git("commit", "-q", "-m", f"[claudesquad] update from '{title}' on 02 Dec 26 10:00 UTC "
            "(paused)", cwd=wt)
    git("worktree", "remove", "-f", str(wt), cwd=repo)
    git("worktree", "prune", cwd=repo)


# --- vibe-kanban ---------------------------------------------------------------

VK_LATEST = 20260317120000
VK_TABLES = """
CREATE TABLE _sqlx_migrations (version BIGINT PRIMARY KEY, description TEXT NOT NULL,
  installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, success BOOLEAN NOT NULL,
  checksum BLOB NOT NULL, execution_time BIGINT NOT NULL);
CREATE TABLE repos (id BLOB PRIMARY KEY, path TEXT NOT NULL UNIQUE, name TEXT NOT NULL,
  display_name TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (datetime('now', 'subsec')),
  updated_at TEXT NOT NULL DEFAULT (datetime('now', 'subsec')),
  setup_script TEXT, cleanup_script TEXT, copy_files TEXT,
  parallel_setup_script INTEGER NOT NULL DEFAULT 0, dev_server_script TEXT,
  default_target_branch TEXT, default_working_dir TEXT, archive_script TEXT);
CREATE TABLE workspaces (id BLOB PRIMARY KEY, task_id BLOB, container_ref TEXT,
  branch TEXT NOT NULL, setup_completed_at TEXT,
  created_at TEXT NOT NULL DEFAULT (datetime('now', 'subsec')),
  updated_at TEXT NOT NULL DEFAULT (datetime('now', 'subsec')),
  archived INTEGER NOT NULL DEFAULT 0, pinned INTEGER NOT NULL DEFAULT 0, name TEXT,
  worktree_deleted BOOLEAN NOT NULL DEFAULT FALSE);
CREATE TABLE workspace_repos (id BLOB PRIMARY KEY, workspace_id BLOB NOT NULL,
  repo_id BLOB NOT NULL, target_branch TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (datetime('now', 'subsec')),
  updated_at TEXT NOT NULL DEFAULT (datetime('now', 'subsec')),
  FOREIGN KEY (workspace_id) REFERENCES workspaces(id) ON DELETE CASCADE,
  FOREIGN KEY (repo_id) REFERENCES repos(id) ON DELETE CASCADE,
  UNIQUE (workspace_id, repo_id));
CREATE TABLE sessions (id BLOB PRIMARY KEY, workspace_id BLOB NOT NULL, executor TEXT,
  created_at TEXT NOT NULL DEFAULT (datetime('now', 'subsec')),
  updated_at TEXT NOT NULL DEFAULT (datetime('now', 'subsec')),
  agent_working_dir TEXT, name TEXT,
  FOREIGN KEY (workspace_id) REFERENCES workspaces(id) ON DELETE CASCADE);
CREATE TABLE execution_processes (id BLOB PRIMARY KEY, session_id BLOB NOT NULL,
  executor_action TEXT NOT NULL DEFAULT '{}',
  status TEXT NOT NULL DEFAULT 'running'
    CHECK (status IN ('running','completed','failed','killed')),
  exit_code INTEGER, dropped INTEGER NOT NULL DEFAULT 0,
  started_at TEXT NOT NULL DEFAULT (datetime('now', 'subsec')), completed_at TEXT,
  created_at TEXT NOT NULL DEFAULT (datetime('now', 'subsec')),
  updated_at TEXT NOT NULL DEFAULT (datetime('now', 'subsec')),
  run_reason TEXT NOT NULL DEFAULT 'setupscript'
    CHECK (run_reason IN ('setupscript','cleanupscript','archivescript','codingagent',
                          'devserver')),
  FOREIGN KEY (session_id) REFERENCES sessions(id) ON DELETE CASCADE);
CREATE TABLE coding_agent_turns (id BLOB PRIMARY KEY, execution_process_id BLOB NOT NULL,
  agent_session_id TEXT, prompt TEXT, summary TEXT,
  created_at TEXT NOT NULL DEFAULT (datetime('now', 'subsec')),
  updated_at TEXT NOT NULL DEFAULT (datetime('now', 'subsec')),
  seen INTEGER NOT NULL DEFAULT 0, agent_message_id TEXT,
  FOREIGN KEY (execution_process_id) REFERENCES execution_processes(id) ON DELETE CASCADE);
"""


def vk_db(version: int = VK_LATEST) -> Path:
    """An empty vibe-kanban database in its Linux data dir, migrated to `version`."""
    d = Path(os.environ["XDG_DATA_HOME"]) / "vibe-kanban"
    d.mkdir(parents=True, exist_ok=True)
    path = d / "db.v2.sqlite"
    conn = sqlite3.connect(path)
    tables = VK_TABLES
    if sqlite3.sqlite_version_info < (3, 42):  # no 'subsec' modifier: it gives NULL
        tables = tables.replace("datetime('now', 'subsec')", "datetime('now')")
    conn.executescript(tables)
    for v in (20250617183714, 20251216142123, version):
        conn.execute("INSERT OR IGNORE INTO _sqlx_migrations (version, description, success, "
                     "checksum, execution_time) VALUES (?, 'm', 1, x'00', 1)", (v,))
    conn.commit()
    conn.close()
    return path


def vk_workspace(db: Path, repos: list[Path], *, label: str, branch: str,
                 archived: bool = False, executor: str = "CLAUDE_CODE",
                 agent_session_id: str | None = None, make: bool = True) -> tuple[str, Path]:
    """A workspace over `repos` as vibe-kanban creates it: the container dir
    `/…/worktrees/<4 hex>-<label>`, one linked worktree per repository named after
    it on `branch`, a session with a coding-agent process and its turn. Returns
    (workspace id, container dir)."""
    wid = uuid.uuid4()
    container = Path(os.environ["HOME"]) / "vk-tmp" / "worktrees" / f"{wid.hex[:4]}-{label}"
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO workspaces (id, container_ref, branch, archived, name) "
                 "VALUES (?, ?, ?, ?, ?)", (wid.bytes, str(container), branch, int(archived),
                                            label))
    for repo in repos:
        row = conn.execute("SELECT id FROM repos WHERE path = ?", (str(repo),)).fetchone()
        rid = row[0] if row else uuid.uuid4().bytes
        if not row:
            conn.execute("INSERT INTO repos (id, path, name, display_name) VALUES (?, ?, ?, ?)",
                         (rid, str(repo), repo.name, repo.name))
        conn.execute("INSERT INTO workspace_repos (id, workspace_id, repo_id, target_branch) "
                     "VALUES (?, ?, ?, 'main')", (uuid.uuid4().bytes, wid.bytes, rid))
        if make:
            container.mkdir(parents=True, exist_ok=True)
            git("worktree", "add", "-q", "-b", branch, str(container / repo.name), cwd=repo)
    sid, ep = uuid.uuid4().bytes, uuid.uuid4().bytes
    conn.execute("INSERT INTO sessions (id, workspace_id, executor) VALUES (?, ?, ?)",
                 (sid, wid.bytes, executor))
    conn.execute("INSERT INTO execution_processes (id, session_id, run_reason, status) "
                 "VALUES (?, ?, 'codingagent', 'completed')", (ep, sid))
    conn.execute("INSERT INTO coding_agent_turns (id, execution_process_id, agent_session_id, "
                 "prompt) VALUES (?, ?, ?, 'fix it')", (uuid.uuid4().bytes, ep, agent_session_id))
    conn.commit()
    conn.close()
    return str(wid), container


def vk_cleanup(db: Path, wid: str, container: Path, repos: list[Path]):
    """What vibe-kanban's expired-workspace cleanup does: remove the worktrees, then
    set worktree_deleted."""
    for repo in repos:
        git("worktree", "remove", "--force", str(container / repo.name), cwd=repo)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE workspaces SET worktree_deleted = TRUE WHERE id = ?",
                 (uuid.UUID(wid).bytes,))
    conn.commit()
    conn.close()


# --- crystal -------------------------------------------------------------------

CRYSTAL_TABLES = """
CREATE TABLE projects (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL,
  path TEXT NOT NULL UNIQUE, system_prompt TEXT, run_script TEXT,
  active BOOLEAN NOT NULL DEFAULT 0, created_at DATETIME DEFAULT CURRENT_TIMESTAMP,
  updated_at DATETIME DEFAULT CURRENT_TIMESTAMP, main_branch TEXT, build_script TEXT,
  default_permission_mode TEXT DEFAULT 'ignore', open_ide_command TEXT,
  display_order INTEGER, worktree_folder TEXT, lastUsedModel TEXT DEFAULT 'sonnet',
  commit_mode TEXT DEFAULT 'checkpoint', commit_structured_prompt_template TEXT,
  commit_checkpoint_prefix TEXT DEFAULT 'checkpoint: ');
CREATE TABLE sessions (id TEXT PRIMARY KEY, name TEXT NOT NULL, initial_prompt TEXT NOT NULL,
  worktree_name TEXT NOT NULL, worktree_path TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'pending', created_at DATETIME DEFAULT CURRENT_TIMESTAMP,
  updated_at DATETIME DEFAULT CURRENT_TIMESTAMP, last_output TEXT, exit_code INTEGER,
  pid INTEGER, claude_session_id TEXT, archived BOOLEAN DEFAULT 0, last_viewed_at DATETIME,
  project_id INTEGER REFERENCES projects(id) ON DELETE CASCADE,
  permission_mode TEXT DEFAULT 'ignore', run_started_at DATETIME,
  is_main_repo BOOLEAN DEFAULT 0, display_order INTEGER, status_message TEXT,
  is_favorite BOOLEAN DEFAULT 0, auto_commit BOOLEAN DEFAULT 1,
  skip_continue_next BOOLEAN DEFAULT 0, folder_id TEXT, tool_type TEXT DEFAULT 'claude',
  base_commit TEXT, base_branch TEXT, commit_mode TEXT, commit_mode_settings TEXT,
  active_panel_id TEXT);
CREATE TABLE tool_panels (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, type TEXT NOT NULL,
  title TEXT NOT NULL, state TEXT, metadata TEXT,
  created_at DATETIME DEFAULT CURRENT_TIMESTAMP, updated_at DATETIME DEFAULT CURRENT_TIMESTAMP,
  settings TEXT DEFAULT '{}',
  FOREIGN KEY (session_id) REFERENCES sessions(id) ON DELETE CASCADE);
"""


# What crystal wrote before its panels (2025-09-11): no tool_panels table, and
# sessions without the columns added with them and after (active_panel_id,
# tool_type).
CRYSTAL_TABLES_BEFORE_PANELS = CRYSTAL_TABLES.split("CREATE TABLE tool_panels")[0].replace(
    " tool_type TEXT DEFAULT 'claude',", "").replace(
    ",\n  active_panel_id TEXT);", ");")


def crystal_db(tables: str = CRYSTAL_TABLES) -> Path:
    """crystal's database where crystal makes it: `$CRYSTAL_DIR` when set and not
    empty, else `~/.crystal`."""
    d = Path(os.environ.get("CRYSTAL_DIR") or Path(os.environ["HOME"]) / ".crystal")
    d.mkdir(parents=True, exist_ok=True)
    path = d / "sessions.db"
    conn = sqlite3.connect(path)
    conn.executescript(tables)
    conn.commit()
    conn.close()
    return path


def crystal_session(db: Path, repo: Path, name: str, *, status: str = "stopped",
                    archived: bool = False, tool_type: str | None = "claude",
                    panels: tuple[tuple[str, str | None], ...] = (), active: int | None = None,
                    make: bool = True) -> tuple[str, Path]:
    """A session as crystal creates one: `<repo>/worktrees/<name>` on branch `name`,
    its row, and one tool panel per (type, agentSessionId) in `panels`, the
    `active`-th of them the session's active panel. Returns (id, worktree)."""
    sid = str(uuid.uuid4())
    wt = repo / "worktrees" / name
    if make:
        git("worktree", "add", "-q", "-b", name, str(wt), cwd=repo)
    conn = sqlite3.connect(db)
    row = conn.execute("SELECT id FROM projects WHERE path = ?", (str(repo),)).fetchone()
    pid = row[0] if row else conn.execute(
        "INSERT INTO projects (name, path, active) VALUES (?, ?, 1)",
        (repo.name, str(repo))).lastrowid
    ids = [f"{sid[:8]}-panel-{n}" for n in range(len(panels))]
    row_values = {"id": sid, "name": name.title(), "initial_prompt": "fix the parser",
                  "worktree_name": name, "worktree_path": str(wt), "status": status,
                  "archived": int(archived), "project_id": pid, "tool_type": tool_type,
                  "base_branch": "main",
                  "active_panel_id": ids[active] if active is not None else None}
    cols = {r[1] for r in conn.execute("PRAGMA table_info(sessions)")}
    row_values = {k: v for k, v in row_values.items() if k in cols}  # an older crystal's
    conn.execute(f"INSERT INTO sessions ({', '.join(row_values)}) "
                 f"VALUES ({', '.join('?' * len(row_values))})", tuple(row_values.values()))
    for n, ((typ, agent), pid_) in enumerate(zip(panels, ids, strict=True)):
        custom = {"isInitialized": True, "panelStatus": "idle"}
        if agent:
            custom["agentSessionId"] = agent
        conn.execute(
            "INSERT INTO tool_panels (id, session_id, type, title, state, metadata, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (pid_, sid, typ, typ.title(), json.dumps({"isActive": n == active,
                                                      "customState": custom}),
             json.dumps({"createdAt": "2026-12-02T10:00:00.000Z", "lastActiveAt":
                         "2026-12-02T10:00:00.000Z", "position": n}),
             f"2026-12-02 10:00:0{n}"))
    conn.commit()
    conn.close()
    return sid, wt


def crystal_archive(db: Path, repo: Path, sid: str, wt: Path):
    """crystal's `sessions:delete`: archived = 1, then `git worktree remove --force`."""
    conn = sqlite3.connect(db)
    conn.execute("UPDATE sessions SET archived = 1 WHERE id = ?", (sid,))
    conn.commit()
    conn.close()
    git("worktree", "remove", "--force", str(wt), cwd=repo)


def files_of(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under `root` (or the file `root`) with its bytes and mtime: a
    tool's state untouched."""
    if root.is_file():
        return {str(root): (root.read_bytes(), root.stat().st_mtime_ns)}
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            out[str(p)] = (p.read_bytes(), p.stat().st_mtime_ns)
    return out


def crystal_row(db, **values):
    """Insert one row of `values` ({column: value}) into crystal's sessions table as
    given, whatever their types (a test's row crystal would not write)."""
    conn = sqlite3.connect(db)
    conn.execute(f"INSERT INTO sessions ({', '.join(values)}) VALUES "
                 f"({', '.join('?' * len(values))})", tuple(values.values()))
    conn.commit()
    conn.close()
