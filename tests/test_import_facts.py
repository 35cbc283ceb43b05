"""Facts an import carries: chat resume facts into the relaunch environment (stored
in git-ao's database, schema 3), and daemon ids longer than 64 characters."""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import sys

from tests.daemon_schema import daemon_db, daemon_session
from tests.support import PROBE, ao, git


def test_a_version_2_database_gains_the_daemon_facts(repo, worktrees):
    from git_ao.store import database as store_mod
    wt = worktrees(repo, "old")
    (wt / "new.txt").write_text("saved under schema 2\n")
    ao("ao-preserve", "old", cwd=repo)
    db = os.path.join(os.environ["AO_DATA_DIR"], "git-ao.db")
    conn = sqlite3.connect(db)
    conn.executescript("ALTER TABLE sessions DROP COLUMN tool; ALTER TABLE sessions DROP COLUMN tool_id; "
                       "ALTER TABLE sessions DROP COLUMN tmux_session; "
                       "ALTER TABLE session_worktrees DROP COLUMN holds_less_than; "
                       "ALTER TABLE session_worktrees DROP COLUMN removed_by; "
                       "ALTER TABLE sessions DROP COLUMN group_id;"
                       "ALTER TABLE sessions DROP COLUMN session_mode;"
                       "ALTER TABLE sessions DROP COLUMN provider_conversation_id;"
                       "DROP TABLE import_notes;"
                       "ALTER TABLE session_worktrees DROP COLUMN pending;"
                       "ALTER TABLE session_worktrees DROP COLUMN ref_held;"
                       "PRAGMA user_version = 2;")
    conn.close()
    got = json.loads(ao("ao", "list", "--json", cwd=repo).stdout)["sessions"]
    assert [(s["id"], s["state"], s["group"], s["session_mode"]) for s in got] == [
        ("old", "pending", None, None)]
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(store_mod.MIGRATIONS) >= 3
    assert {"group_id", "session_mode", "provider_conversation_id"} <= {
        r[1] for r in conn.execute("PRAGMA table_info(sessions)")}
    conn.close()
    ao("ao-restore", cwd=repo)
    assert (wt / "new.txt").read_text() == "saved under schema 2\n"


def test_chat_resume_facts_reach_the_relaunch(repo, worktrees, tmp_path):
    wt = worktrees(repo, "ao-5", register=False)
    db = daemon_db(tmp_path / "ao.db", 103, projects=[("ao", str(repo))], sessions=[
        daemon_session("ao-5", "ao", wt, harness="codex", session_mode="chat",
                        provider_conversation_id="thread-42")])
    ao("ao", "import", "--from", db, cwd=repo)
    shown = json.loads(ao("ao", "show", "ao-5", "--json", cwd=repo).stdout)["session"]
    assert (shown["session_mode"], shown["provider_conversation_id"]) == ("chat", "thread-42")
    ao("ao-preserve", "ao-5", cwd=repo)
    argv = [sys.executable, "-c", PROBE, "{provider_conversation_id}", "{session_mode}"]
    ao("ao", "config", "set", "relaunch.command", " ".join(shlex.quote(a) for a in argv), cwd=repo)
    out = tmp_path / "probe.json"
    ao("ao-restore", cwd=repo, env={"PROBE_OUT": str(out)})
    seen = json.loads(out.read_text())
    assert seen["argv"] == ["thread-42", "chat"]
    assert (seen["env"]["AO_SESSION_MODE"], seen["env"]["AO_PROVIDER_CONVERSATION_ID"]) \
        == ("chat", "thread-42")


def test_long_daemon_ids(repo, worktrees, tmp_path, ao_env):
    project = "p" * 198  # the id is 200 bytes, the most a ref component here may take
    long_id = f"{project}-1"
    wt = worktrees(repo, "long", register=False)
    too_long = f"{'q' * 199}-2"
    db = daemon_db(tmp_path / "ao.db", 103, projects=[(project, str(repo)), ("q" * 199, "/x")],
                   sessions=[daemon_session(long_id, project, wt, branch="long"),
                             daemon_session(too_long, "q" * 199, tmp_path)])
    res = ao("ao", "import", "--json", "--from", db, cwd=repo, rc=1)
    out = {r["id"]: r for r in json.loads(res.stdout)["results"]}
    assert out[long_id]["status"] == "ok"
    assert out[too_long]["status"] == "refused"
    assert "use 1 to 200 of" in out[too_long]["message"]
    (wt / "README.md").write_text("long work\n")
    ao("ao-preserve", "--all", cwd=repo)
    assert git("rev-parse", "--verify", f"refs/ao/preserved/{long_id}", cwd=repo).strip()
    # The file names built from the id (lock, trash entry) fit NAME_MAX.
    names = [n for d in ("locks", "trash") for n in os.listdir(ao_env / "aodata" / d)]
    assert any(n.startswith(long_id) for n in names)
    ao("ao-restore", cwd=repo)
    assert (wt / "README.md").read_text() == "long work\n"
