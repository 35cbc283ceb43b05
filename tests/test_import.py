"""git ao import: the ao daemon's ao.db, read-only, its live sessions registered."""

import hashlib
import json
import sqlite3

from tests.conftest import ao, git

FULL = """
CREATE TABLE projects (id INTEGER PRIMARY KEY, path TEXT NOT NULL, name TEXT);
CREATE TABLE sessions (id TEXT PRIMARY KEY, project_id INTEGER, kind TEXT, harness TEXT,
    is_terminated INTEGER, branch TEXT, workspace_path TEXT, agent_session_id TEXT,
    prompt TEXT, pid INTEGER, extra_stuff BLOB);
"""
MINIMAL = "CREATE TABLE sessions (id TEXT PRIMARY KEY, workspace_path TEXT, colour TEXT);"


def _daemon_db(path, schema, projects=(), sessions=()):
    conn = sqlite3.connect(path)
    conn.executescript(schema)
    for p in projects:
        conn.execute("INSERT INTO projects (id, path) VALUES (?, ?)", p)
    for s in sessions:
        cols = ", ".join(s)
        conn.execute(f"INSERT INTO sessions ({cols}) VALUES ({', '.join('?' * len(s))})",
                     tuple(s.values()))
    conn.commit()
    conn.close()
    return path


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _sessions(repo):
    return {s["id"]: s for s in json.loads(ao("ao", "list", "--json", cwd=repo).stdout)["sessions"]}


def test_import_registers_live_sessions_read_only(repo, worktrees, ao_env):
    w1 = worktrees(repo, "w1", register=False)
    o1 = worktrees(repo, "o1", register=False)
    gone = worktrees(repo, "old", register=False)
    data = ao_env / "aodata"
    data.mkdir(mode=0o700)
    db = _daemon_db(data / "ao.db", FULL, projects=[(1, str(repo))], sessions=[
        {"id": "w1", "project_id": 1, "kind": "worker", "harness": "claude-code",
         "is_terminated": 0, "branch": "w1", "workspace_path": str(w1),
         "agent_session_id": "cc-1", "prompt": "SECRET-PROMPT fix the parser"},
        {"id": "o1", "project_id": 1, "kind": "orchestrator", "harness": "codex",
         "is_terminated": 0, "branch": "o1", "workspace_path": str(o1), "pid": 4},
        {"id": "old", "project_id": 1, "kind": "worker", "is_terminated": 1,
         "workspace_path": str(gone)},
        {"id": "lost", "project_id": 1, "kind": "worker", "is_terminated": 0,
         "workspace_path": str(ao_env / "nowhere")},
    ])
    before = _digest(db)
    res = ao("ao", "import", "-n", cwd=repo, rc=1)
    assert _sessions(repo) == {}
    res = ao("ao", "import", cwd=repo, rc=1)  # 'lost' is refused, the others go on
    lines = {ln.split("\t")[2]: ln.split("\t")[1] for ln in res.stdout.splitlines()}
    assert lines == {"lost": "refused", "o1": "ok", "w1": "ok"}
    got = _sessions(repo)
    assert set(got) == {"w1", "o1"}
    assert (got["w1"]["kind"], got["w1"]["harness"], got["w1"]["agent_session_id"],
            got["w1"]["branch"], got["w1"]["workspace_path"]) == (
        "worker", "claude-code", "cc-1", "w1", str(w1))
    assert (got["o1"]["kind"], got["o1"]["harness"]) == ("orchestrator", "codex")
    assert _digest(db) == before
    assert sorted(p.name for p in data.iterdir() if p.name.startswith("ao.db")) == ["ao.db"]
    # The prompt is kept in git-ao's database and never logged.
    conn = sqlite3.connect(data / "git-ao.db")
    assert conn.execute("SELECT prompt FROM sessions WHERE id='w1'").fetchone()[0] \
        == "SECRET-PROMPT fix the parser"
    conn.close()
    assert "SECRET-PROMPT" not in (data / "logs" / "git-ao.log").read_text()
    # Again: nothing new (the refused one stays refused).
    res = ao("ao", "import", "--json", cwd=repo, rc=1)
    assert {r["id"]: r["status"] for r in json.loads(res.stdout)["results"]} == {
        "lost": "refused", "o1": "nothing", "w1": "nothing"}
    # Imported sessions go through the lifecycle like any other.
    ao("ao-preserve", "--all", cwd=repo)
    assert not w1.exists() and not o1.exists()
    ao("ao-restore", cwd=repo)
    assert w1.is_dir() and o1.is_dir()


def test_minimal_layout_and_from_path(repo, worktrees, tmp_path):
    w = worktrees(repo, "mini", register=False)
    db = _daemon_db(tmp_path / "elsewhere.db", MINIMAL,
                    sessions=[{"id": "mini", "workspace_path": str(w), "colour": "red"}])
    db.chmod(0o400)  # a read-only file is fine: nothing is written
    before = _digest(db)
    ao("ao", "import", "--from", str(db), cwd=repo)
    got = _sessions(repo)["mini"]
    assert (got["kind"], got["harness"], got["branch"]) == ("worker", "", "mini")
    assert _digest(db) == before


def test_missing_or_foreign_database_is_fatal(repo, tmp_path):
    res = ao("ao", "import", cwd=repo, rc=128)
    assert res.stderr.startswith("fatal: no ao daemon database at ")
    other = _daemon_db(tmp_path / "x.db", "CREATE TABLE things (id TEXT);")
    res = ao("ao", "import", "--from", str(other), cwd=repo, rc=128)
    assert "is not an ao daemon database" in res.stderr
    (tmp_path / "junk.db").write_bytes(b"junk" * 500)
    ao("ao", "import", "--from", str(tmp_path / "junk.db"), cwd=repo, rc=128)
    assert git("for-each-ref", cwd=repo).count("refs/ao/") == 0
