"""git ao import: the ao daemon's ao.db, read-only, its live sessions registered."""

import hashlib
import json
import sqlite3

from tests.daemon_schema import daemon_db, daemon_session
from tests.support import ao, git, sessions_by_id


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()



def test_import_registers_live_sessions_read_only(repo, worktrees, ao_env):
    w1 = worktrees(repo, "ao-1", register=False)
    o1 = worktrees(repo, "ao-2", register=False)
    gone = worktrees(repo, "ao-3", register=False)
    data = ao_env / "aodata"
    data.mkdir(mode=0o700)
    db = daemon_db(data / "ao.db", 103, projects=[("ao", str(repo))], sessions=[
        daemon_session("ao-1", "ao", w1, harness="claude-code", agent_session_id="cc-1",
                        prompt="SECRET-PROMPT fix the parser"),
        daemon_session("ao-2", "ao", o1, kind="orchestrator", harness="codex"),
        daemon_session("ao-3", "ao", gone, is_terminated=True),
        daemon_session("ao-4", "ao", ao_env / "nowhere"),
    ])
    before = _digest(db)
    ao("ao", "import", "-n", cwd=repo, rc=1)
    assert sessions_by_id(repo) == {}
    res = ao("ao", "import", cwd=repo, rc=1)  # 'ao-4' is refused, the others go on
    lines = {ln.split("\t")[2]: ln.split("\t")[1] for ln in res.stdout.splitlines()}
    assert lines == {"ao-4": "refused", "ao-2": "ok", "ao-1": "ok"}
    got = sessions_by_id(repo)
    assert set(got) == {"ao-1", "ao-2"}
    assert (got["ao-1"]["kind"], got["ao-1"]["harness"], got["ao-1"]["agent_session_id"],
            got["ao-1"]["branch"], got["ao-1"]["workspace_path"]) == (
        "worker", "claude-code", "cc-1", "ao-1", str(w1))
    assert (got["ao-2"]["kind"], got["ao-2"]["harness"]) == ("orchestrator", "codex")
    assert _digest(db) == before
    assert sorted(p.name for p in data.iterdir() if p.name.startswith("ao.db")) == ["ao.db"]
    # The prompt is kept in git-ao's database and never logged.
    conn = sqlite3.connect(data / "git-ao.db")
    assert conn.execute("SELECT prompt FROM sessions WHERE id='ao-1'").fetchone()[0] \
        == "SECRET-PROMPT fix the parser"
    conn.close()
    assert "SECRET-PROMPT" not in (data / "logs" / "git-ao.log").read_text()
    # The refusal is a decision, logged with its reason.
    assert "import ao-4 refused detail='workspace path " in (data / "logs" / "git-ao.log").read_text()
    # Again: nothing new. The row that cannot be registered was reported once; it is
    # still mentioned, but it no longer makes the run fail.
    res = ao("ao", "import", "--json", cwd=repo)
    results = {r["id"]: r for r in json.loads(res.stdout)["results"]}
    assert {k: r["status"] for k, r in results.items()} == {
        "ao-4": "nothing", "ao-2": "nothing", "ao-1": "nothing"}
    assert results["ao-4"]["message"].startswith("still not importable (reported before): "
                                                 "workspace path ")
    # Imported sessions go through the lifecycle like any other.
    ao("ao-preserve", "--all", cwd=repo)
    assert not w1.exists() and not o1.exists()
    ao("ao-restore", cwd=repo)
    assert w1.is_dir() and o1.is_dir()


def test_a_new_refusal_fails_again_and_a_fixed_row_is_forgotten(repo, worktrees, tmp_path):
    w = worktrees(repo, "ao-1", register=False)
    spawning = tmp_path / "later"
    db = daemon_db(tmp_path / "ao.db", 103, projects=[("ao", str(repo))],
                   sessions=[daemon_session("ao-1", "ao", w, workspace_path="")])
    res = ao("ao", "import", "--from", db, cwd=repo, rc=1)
    assert "refused\tao-1\tworkspace path (none) does not exist" in res.stdout
    ao("ao", "import", "--from", db, cwd=repo)  # said once
    # The daemon's row changes: a new reason is new, and fails once more.
    conn = sqlite3.connect(db)
    conn.execute("UPDATE sessions SET workspace_path = ?", (str(spawning),))
    conn.commit()
    conn.close()
    ao("ao", "import", "--from", db, cwd=repo, rc=1)
    ao("ao", "import", "--from", db, cwd=repo)
    # Once the worktree is there, the row is registered and the note dropped.
    conn = sqlite3.connect(db)
    conn.execute("UPDATE sessions SET workspace_path = ?", (str(w),))
    conn.commit()
    conn.close()
    ao("ao", "import", "--from", db, cwd=repo)
    assert set(sessions_by_id(repo)) == {"ao-1"}
    conn = sqlite3.connect(tmp_path / "aodata" / "git-ao.db")
    assert conn.execute("SELECT COUNT(*) FROM import_notes").fetchone()[0] == 0
    conn.close()


def test_from_path_and_a_read_only_file(repo, worktrees, tmp_path):
    w = worktrees(repo, "mini-1", register=False)
    db = daemon_db(tmp_path / "elsewhere.db", 2, projects=[("mini", str(repo))],
                   sessions=[daemon_session("mini-1", "mini", w)])
    db.chmod(0o400)  # a read-only file is fine: nothing is written
    before = _digest(db)
    ao("ao", "import", "--from", str(db), cwd=repo)
    got = sessions_by_id(repo)["mini-1"]
    assert (got["kind"], got["harness"], got["branch"]) == ("worker", "", "mini-1")
    assert _digest(db) == before


def test_missing_or_foreign_database_is_fatal(repo, tmp_path):
    res = ao("ao", "import", cwd=repo, rc=128)
    assert res.stderr.startswith("fatal: no ao daemon database at ")
    other = tmp_path / "x.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE things (id TEXT)")
    conn.close()
    res = ao("ao", "import", "--from", str(other), cwd=repo, rc=128)
    assert "is not an ao daemon database" in res.stderr
    (tmp_path / "junk.db").write_bytes(b"junk" * 500)
    ao("ao", "import", "--from", str(tmp_path / "junk.db"), cwd=repo, rc=128)
    assert git("for-each-ref", cwd=repo).count("refs/ao/") == 0
