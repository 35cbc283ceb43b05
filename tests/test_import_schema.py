"""git ao import against databases shaped like the ao daemon's at its schema points
(built by tests/daemon_schema.py)."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.daemon_schema import POINTS, daemon_db, daemon_session
from tests.support import ao, ao_refs, sessions_by_id


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


def _newer(tmp_path, name, repo, sessions, version=110, alter=()):
    """An ao.db at the newest known point, then migrated past it: `version` applied
    in the ledger, and `alter` (SQL) run on its tables."""
    db = daemon_db(tmp_path / name, 103, projects=[("ao", str(repo))], sessions=sessions)
    conn = sqlite3.connect(db)
    for v in range(104, version + 1):
        conn.execute("INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, 1)",
                     (v,))
    conn.execute("ALTER TABLE sessions ADD COLUMN released_later TEXT NOT NULL DEFAULT ''")
    for sql in alter:
        conn.execute(sql)
    conn.commit()
    conn.close()
    return db


def test_a_newer_schema_is_judged_by_the_columns_read(repo, worktrees, tmp_path):
    """Past the newest version git-ao was tested at, the import goes on while every
    column it reads is there with its type; a dropped, renamed or retyped one is
    refused with one line, the number alone never."""
    w = worktrees(repo, "ao-1", register=False)
    rows = [daemon_session("ao-1", "ao", w, harness="codex", session_mode="chat")]
    res = ao("ao", "import", "--from", _newer(tmp_path, "new.db", repo, rows), cwd=repo)
    assert "registered worker" in res.stdout, res.stdout + res.stderr
    got = sessions_by_id(repo)["ao-1"]
    assert (got["harness"], got["session_mode"]) == ("codex", "chat")
    ao("ao", "forget", "ao-1", cwd=repo)
    for name, alter, words in (
            ("dropped.db", ["ALTER TABLE sessions DROP COLUMN session_mode"],
             "table sessions lacks session_mode, which git-ao reads (renamed or dropped)"),
            ("renamed.db", ["ALTER TABLE projects RENAME COLUMN path TO root"],
             "table projects lacks path"),
            ("retyped.db", ["ALTER TABLE sessions DROP COLUMN agent_session_id",
                            "ALTER TABLE sessions ADD COLUMN agent_session_id BLOB"],
             "column sessions.agent_session_id has type BLOB, not TEXT")):
        res = ao("ao", "import", "--from", _newer(tmp_path, name, repo, rows, alter=alter),
                 cwd=repo, rc=128)
        assert words in res.stderr, (name, res.stderr)
        assert "schema version 110" in res.stderr and len(res.stderr.splitlines()) == 1
        assert sessions_by_id(repo) == {}


@pytest.mark.parametrize("point", (2, 35, 103, 110))
def test_a_value_git_ao_does_not_know_refuses_that_session_only(point, repo, worktrees,
                                                               tmp_path):
    """A new kind, or a boolean that is neither 0/1 nor 'true'/'false': that session is
    refused (once; a rerun notes it), the others import; booleans stored as text
    read as booleans."""
    paths = {sid: worktrees(repo, sid, register=False) for sid in
             ("ao-1", "ao-2", "ao-3", "ao-4", "ao-5")}
    rows = [daemon_session("ao-1", "ao", paths["ao-1"], kind="reviewer"),
            daemon_session("ao-2", "ao", paths["ao-2"], is_terminated="false"),
            daemon_session("ao-3", "ao", paths["ao-3"], is_terminated="TRUE"),
            daemon_session("ao-4", "ao", paths["ao-4"], is_terminated="maybe"),
            daemon_session("ao-5", "ao", paths["ao-5"], kind="orchestrator",
                           is_terminated=0)]
    db = _newer(tmp_path, "ao.db", repo, rows) if point == 110 else \
        daemon_db(tmp_path / "ao.db", point, projects=[("ao", str(repo))], sessions=rows)
    res = ao("ao", "import", "--from", db, "--json", cwd=repo, rc=1)
    got = {r["id"]: (r["status"], r["message"]) for r in json.loads(res.stdout)["results"]}
    assert set(got) == {"ao-1", "ao-2", "ao-4", "ao-5"}, got  # ao-3 is terminated
    kind_said = ("daemon session ao-1: its kind is 'reviewer', which git-ao does not know "
                 "(worker, orchestrator); not imported")
    assert got["ao-1"] == ("refused", kind_said)
    assert got["ao-4"][0] == "refused" and "'maybe', not a boolean" in got["ao-4"][1]
    assert got["ao-2"][0] == got["ao-5"][0] == "ok"
    assert {s: v["kind"] for s, v in sessions_by_id(repo).items()} == {
        "ao-2": "worker", "ao-5": "orchestrator"}
    res = ao("ao", "import", "--from", db, cwd=repo)  # said once: a note now
    assert "still not importable (reported before)" in res.stdout


def test_unversioned_schema_is_refused_and_a_rolled_back_version_does_not_count(
        repo, worktrees, tmp_path):
    w = worktrees(repo, "ao-1", register=False)
    newer = daemon_db(tmp_path / "new.db", 103, projects=[("ao", str(repo))],
                      sessions=[daemon_session("ao-1", "ao", w)])
    conn = sqlite3.connect(newer)
    # A version rolled back (its newest row is not applied) does not count: at 103,
    # the columns of 66 are needed, and not those of a later version.
    conn.execute("ALTER TABLE sessions DROP COLUMN session_mode")
    conn.execute("INSERT INTO goose_db_version (version_id, is_applied) VALUES (60, 1)")
    for applied in (1, 0):
        conn.execute("INSERT INTO goose_db_version (version_id, is_applied) VALUES (104, ?)",
                     (applied,))
    conn.execute("DELETE FROM goose_db_version WHERE version_id BETWEEN 61 AND 103")
    conn.commit()
    conn.close()
    ao("ao", "import", "--from", newer, cwd=repo)
    flat = daemon_db(tmp_path / "flat.db", 35, goose=False, projects=[("ao", str(repo))],
                     sessions=[daemon_session("ao-9", "ao", w)])
    res = ao("ao", "import", "--from", flat, cwd=repo, rc=128)
    assert "no goose_db_version table, so its schema version is unknown" in res.stderr
    assert set(sessions_by_id(repo)) == {"ao-1"}
    assert ao_refs(repo, "refs/ao/") == ""
