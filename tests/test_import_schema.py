"""git ao import against databases shaped like the ao daemon's at its schema points
(built by tests/daemon_schema.py)."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.daemon_schema import POINTS, daemon_db, daemon_session
from tests.support import ao, git, sessions_by_id


@pytest.mark.parametrize("point", POINTS)
def test_each_schema_point(point, repo, worktrees, ao_env):
    w = worktrees(repo, "ao-1", register=False)
    o = worktrees(repo, "ao-2", register=False)
    t = worktrees(repo, "ao-3", register=False)
    db = ao_env / "aodata" / "ao.db"
    db.parent.mkdir(mode=0o700)
    if point == "pre-flatten":
        daemon_db(db, point, projects=[("ao", str(repo))], sessions=[
            {"id": "ao-1", "project_id": "ao"}])
        res = ao("ao", "import", cwd=repo, rc=128)
        assert "before its first migration was flattened" in res.stderr
        assert len(res.stderr.splitlines()) == 1
        return
    extra = {"session_mode": "chat", "provider_conversation_id": "thread-9"} \
        if point >= 66 else {}
    daemon_db(db, point, projects=[("ao", str(repo))], sessions=[
        daemon_session("ao-1", "ao", w, harness="claude-code", agent_session_id="cc-1",
                        prompt="do it", **extra),
        daemon_session("ao-2", "ao", o, kind="orchestrator", harness="codex"),
        daemon_session("ao-3", "ao", t, is_terminated=True)])
    res = ao("ao", "import", "--json", cwd=repo)
    assert {r["id"]: r["status"] for r in json.loads(res.stdout)["results"]} == {
        "ao-1": "ok", "ao-2": "ok"}
    got = sessions_by_id(repo)
    assert set(got) == {"ao-1", "ao-2"}
    assert (got["ao-1"]["kind"], got["ao-1"]["harness"], got["ao-1"]["agent_session_id"]) \
        == ("worker", "claude-code", "cc-1")
    assert (got["ao-2"]["kind"], got["ao-2"]["harness"]) == ("orchestrator", "codex")
    want = ("chat", "thread-9") if point >= 66 else (None, None)
    assert (got["ao-1"]["session_mode"], got["ao-1"]["provider_conversation_id"]) == want


@pytest.mark.parametrize("renamed", [("is_terminated", "terminated"), ("kind", "session_kind"),
                                     ("harness", "agent"),
                                     ("agent_session_id", "native_session_id")])
@pytest.mark.parametrize("point", (2, 35, 103))
def test_a_renamed_column_is_refused(point, renamed, repo, worktrees, tmp_path):
    w = worktrees(repo, "ao-1", register=False)
    db = daemon_db(tmp_path / "ao.db", point, projects=[("ao", str(repo))],
                   sessions=[daemon_session("ao-1", "ao", w)])
    conn = sqlite3.connect(db)
    conn.execute(f"ALTER TABLE sessions RENAME COLUMN {renamed[0]} TO {renamed[1]}")
    conn.commit()
    conn.close()
    res = ao("ao", "import", "--from", db, cwd=repo, rc=128)
    assert f"table sessions lacks {renamed[0]}" in res.stderr
    assert len(res.stderr.splitlines()) == 1
    assert sessions_by_id(repo) == {}


def test_newer_unknown_or_unversioned_schema_is_refused(repo, worktrees, tmp_path):
    w = worktrees(repo, "ao-1", register=False)
    newer = daemon_db(tmp_path / "new.db", 103, projects=[("ao", str(repo))],
                      sessions=[daemon_session("ao-1", "ao", w)])
    conn = sqlite3.connect(newer)
    conn.execute("INSERT INTO goose_db_version (version_id, is_applied) VALUES (104, 1)")
    conn.commit()
    conn.close()
    res = ao("ao", "import", "--from", newer, cwd=repo, rc=128)
    assert "schema version 104, newer than the newest git-ao knows (103)" in res.stderr
    # A version rolled back (its newest row is not applied) does not count.
    conn = sqlite3.connect(newer)
    conn.execute("INSERT INTO goose_db_version (version_id, is_applied) VALUES (104, 0)")
    conn.commit()
    conn.close()
    ao("ao", "import", "--from", newer, cwd=repo)
    flat = daemon_db(tmp_path / "flat.db", 35, goose=False, projects=[("ao", str(repo))],
                     sessions=[daemon_session("ao-9", "ao", w)])
    res = ao("ao", "import", "--from", flat, cwd=repo, rc=128)
    assert "no goose_db_version table, so its schema version is unknown" in res.stderr
    assert set(sessions_by_id(repo)) == {"ao-1"}
    assert git("for-each-ref", "refs/ao/", cwd=repo) == ""
