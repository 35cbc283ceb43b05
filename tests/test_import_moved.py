"""git ao import after a repository moved (`mv app app2`, `git worktree repair`,
`git ao add NEWPATH --id ID`): a tool that still records a session at its old path
(gone now) finds it known, live at its new path, in a dry run, a real run and
--json; never called ended, archived or missing, nothing refused or changed."""

import json
import sqlite3
import uuid
from pathlib import Path

import pytest

from tests import tool_state as ts
from tests import tool_state_b as tb
from tests.support import ao, git, init_repo, sessions_by_id

CC_ID = "5f1c2b9e-7a41-4a63-9d0e-2b7c8e1f4a10"
CX_ID = "019dbff7-c97d-7511-9af5-1cee07dd1ab2"
UNTRUE = ("not live", "ended", "gone", "does not exist", "archived", "paused")


def _app(tmp_path: Path) -> Path:
    app = tmp_path / "app"
    app.mkdir()
    git("init", "-q", "-b", "main", cwd=app)
    init_repo(app)
    (app / ".git" / "info" / "exclude").write_text(".claude/\nworktrees/\n")
    return app


def _crystal_archived(db: Path, sid: str):
    # crystal's delete: archived = 1, then `git worktree remove --force` of the
    # path it records, which is gone (so that fails and changes nothing).
    conn = sqlite3.connect(db)
    conn.execute("UPDATE sessions SET archived = 1 WHERE id = ?", (sid,))
    conn.commit()
    conn.close()


def _vk_archived(db: Path, wid: str):
    conn = sqlite3.connect(db)
    conn.execute("UPDATE workspaces SET archived = 1 WHERE id = ?", (uuid.UUID(wid).bytes,))
    conn.commit()
    conn.close()


def _state(tool: str, app: Path):
    """The tool's state for one session in `app`: (worktree, what to do once moved)."""
    if tool.startswith("claude-code"):
        wt = ts.claude_worktree(app, "feat")
        ts.claude_transcript(wt, CC_ID)
        return wt, None
    if tool.startswith("crystal"):
        db = tb.crystal_db()
        sid, wt = tb.crystal_session(db, app, "fix", panels=(("claude", CC_ID),), active=0)
        return wt, (lambda: _crystal_archived(db, sid)) if tool.endswith("archived") else None
    if tool == "codex":
        wt = ts.codex_worktree(app, "4a21", thread=CX_ID, branch="codex-fix")
        live = ts.codex_rollout(wt, CX_ID)

        def archive():  # Codex archives the thread: its rollout moves
            live.unlink()
            ts.codex_rollout(wt, CX_ID, archived=True)
        return wt, archive
    if tool.startswith("claude-squad"):
        wt, branch = tb.squad_worktree(app, "fix parser")
        instance = tb.squad_instance(app, wt, "fix parser", branch)
        tb.squad_state([instance])
        # claude-squad pauses it (status 3): its Pause commits and removes the
        # worktree at the path it records, which is gone.
        return wt, (lambda: tb.squad_state([{**instance, "status": 3}])) \
            if tool.endswith("paused") else None
    db = tb.vk_db()
    wid, container = tb.vk_workspace(db, [app], label="fix", branch="vk-fix",
                                     agent_session_id=CC_ID)
    return container / app.name, (lambda: _vk_archived(db, wid)) \
        if tool.endswith("archived") else None


@pytest.mark.parametrize("tool", [
    "claude-code", "claude-code-added", "crystal", "crystal-archived", "codex",
    "claude-squad", "claude-squad-paused", "vibe-kanban", "vibe-kanban-archived"])
def test_a_moved_session_is_known_live_where_it_is_now(tmp_path, tool):
    name = tool.removesuffix("-added").removesuffix("-archived").removesuffix("-paused")
    app = _app(tmp_path)
    wt, after = _state(tool, app)
    if tool.endswith("-added"):
        # Registered by hand: only the agent session id ties the tool's record to it.
        ao("ao", "add", wt, "--harness", "claude", "--agent-session-id", CC_ID, cwd=app)
    else:
        ao("ao", "import", "--tool", name, cwd=app)
    [(sid, before)] = sessions_by_id(app).items()
    # Move the repository, and the worktree with it when it lives elsewhere.
    app2 = tmp_path / "app2"
    app.rename(app2)
    inside = wt.is_relative_to(app)
    new = app2 / wt.relative_to(app) if inside else tmp_path / "moved" / wt.name
    if not inside:
        new.parent.mkdir()
        wt.rename(new)
    git("worktree", "repair", new, cwd=app2)
    ao("ao", "add", new, "--id", sid, cwd=app2)
    if after is not None:
        after()
    moved = sessions_by_id(app2)[sid]
    assert (moved["state"], moved["workspace_path"]) == ("live", str(new))
    for args in (("-n", "--json"), ("--json",), ("-n",), ()):
        res = ao("ao", "import", "--tool", name, *args, cwd=app2)
        if "--json" in args:
            [got] = json.loads(res.stdout)["results"]
            assert (got["id"], got["status"], got["state"], got["workspace_path"]) == (
                sid, "nothing", "live", str(new)), got
            said = got["message"]
        else:
            [said] = res.stdout.splitlines()
            assert said.startswith(f"import\tnothing\t{sid}\t"), said
        assert str(new) in said and not any(w in said for w in UNTRUE), (args, said)
        assert sessions_by_id(app2)[sid] == moved
    assert {k: v for k, v in moved.items() if k not in ("workspace_path", "repo")} == {
        k: v for k, v in before.items() if k not in ("workspace_path", "repo")}


def test_a_moved_session_pending_in_git_ao_is_known_as_pending(tmp_path):
    app = _app(tmp_path)
    wt, _ = _state("claude-code", app)
    ao("ao", "import", "--tool", "claude-code", cwd=app)
    app2 = tmp_path / "app2"
    app.rename(app2)
    new = app2 / wt.relative_to(app)
    git("worktree", "repair", new, cwd=app2)
    ao("ao", "add", new, "--id", "feat", cwd=app2)
    ao("ao-preserve", "--all", cwd=app2)
    assert not new.exists()
    for args in (("-n", "--json"), ("--json",)):
        [got] = json.loads(ao("ao", "import", "--tool", "claude-code", *args,
                              cwd=app2).stdout)["results"]
        assert (got["id"], got["status"], got["state"]) == ("feat", "nothing", "pending"), got
        assert f"pending in git-ao at {new}" in got["message"], got
        assert not any(w in got["message"] for w in UNTRUE), got
    ao("ao-restore", cwd=app2)
    assert new.is_dir()
