"""A value of another type than its tool writes, a relative path where the tool
records absolute ones: that row (session, instance, rollout) alone is refused with
one line naming the file, the row and the field; the others and the other tools
still import, and a preserve --all or a restore importing first is never stopped."""

import json
import sqlite3
import uuid

from tests import tool_state as ts
from tests import tool_state_b as tb
from tests.daemon_schema import daemon_db, daemon_session
from tests.support import ao, sessions_by_id

CX_ID = "019dbff7-c97d-7511-9af5-1cee07dd1ab2"


def _results(res) -> list[tuple[str, str, str]]:
    return [(r["id"], r["status"], r["message"]) for r in json.loads(res.stdout)["results"]]


def test_crystal_row_of_another_type_refused_alone(repo, ao_env):
    db = tb.crystal_db()
    _, wt = tb.crystal_session(db, repo, "good")
    tb.crystal_row(db, id="s1", name="n", initial_prompt="p", worktree_name="w",
                 worktree_path=b"/tmp", status="running", archived=0)
    tb.crystal_row(db, id="s2", name="n", initial_prompt="p", worktree_name="w",
                 worktree_path="/tmp/x", status="running", archived="no")
    res = ao("ao", "import", "--tool", "crystal", "--json", cwd=repo, rc=1)
    assert _results(res) == [
        ("crystal", "refused", (f"crystal: crystal database '{db}': session 's1' worktree_path "
         "is a BLOB of 4 bytes, not as crystal writes it (text); not imported")),
        ("crystal", "refused", (f"crystal: crystal database '{db}': session 's2' archived is "
         "the text 'no', not as crystal writes it (an integer); not imported")),
        ("good", "ok", f"registered worker from crystal at {wt}")]
    assert set(sessions_by_id(repo)) == {"good"}


def test_crystal_panel_of_another_type_refuses_its_session(repo, ao_env):
    db = tb.crystal_db()
    sid, _ = tb.crystal_session(db, repo, "good", panels=(("claude", "c-1"),), active=0)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE tool_panels SET state = ? WHERE session_id = ?", (b"{}", sid))
    conn.commit()
    conn.close()
    res = ao("ao", "import", "--tool", "crystal", "--json", cwd=repo, rc=1)
    [(_, status, message)] = _results(res)
    assert status == "refused" and f"session '{sid}' its tool panel '{sid[:8]}-panel-0' state " \
        "is a BLOB of 2 bytes, not as crystal writes it (text)" in message, message


def test_crystal_relative_worktree_path_refused_not_taken_from_the_cwd(repo, ao_env):
    db = tb.crystal_db()
    (repo / "5").mkdir()
    tb.crystal_row(db, id="s1", name="n", initial_prompt="p", worktree_name="w",
                 worktree_path="5", status="running", archived=0)
    res = ao("ao", "import", "--tool", "crystal", "--json", cwd=repo, rc=1)
    assert _results(res) == [
        ("crystal", "refused", (f"crystal: crystal database '{db}': session 's1' worktree_path "
         "is the relative path '5', not as crystal writes it (an absolute path); not "
         "imported"))]


def test_crystal_session_in_the_main_worktree_skipped_whatever_the_schema(repo, ao_env):
    """A database from before is_main_repo has no column saying so: the session run
    in the repository's own directory is skipped all the same, silently."""
    db = tb.crystal_db(tb.CRYSTAL_TABLES_BEFORE_PANELS.replace(
        " is_main_repo BOOLEAN DEFAULT 0,", ""))
    tb.crystal_session(db, repo, "good")
    tb.crystal_row(db, id="main", name="n", initial_prompt="p", worktree_name="main",
                 worktree_path=str(repo), status="running", archived=0)
    res = ao("ao", "import", "--tool", "crystal", "--json", cwd=repo)
    assert [(i, s) for i, s, _ in _results(res)] == [("good", "ok")]


def test_vibe_kanban_row_of_another_type_refused_alone(repo, make_repo, ao_env):
    db = tb.vk_db()
    other = make_repo()
    bad_name, _ = tb.vk_workspace(db, [other], label="blob", branch="vk/blob")
    bad_ref, _ = tb.vk_workspace(db, [repo], label="ref", branch="vk/ref", make=False)
    _, container = tb.vk_workspace(db, [repo], label="good", branch="vk/good")
    conn = sqlite3.connect(db)
    conn.execute("UPDATE repos SET name = X'7a' WHERE path = ?", (str(other),))
    conn.execute("UPDATE workspaces SET container_ref = X'2f746d70' WHERE id = ?",
                 (uuid.UUID(bad_ref).bytes,))
    conn.commit()
    conn.close()
    res = ao("ao", "import", "--tool", "vibe-kanban", "--json", cwd=repo, rc=1)
    got = _results(res)
    assert ("vibe-kanban", "refused", (f"vibe-kanban: vibe-kanban database '{db}': workspace "
            f"{bad_name} its repository at row 1 name is a BLOB of 1 bytes, not as vibe-kanban "
            "writes it (text); not imported")) in got, got
    assert ("vibe-kanban", "refused", (f"vibe-kanban: vibe-kanban database '{db}': workspace "
            f"{bad_ref} container_ref is a BLOB of 4 bytes, not as vibe-kanban writes it "
            "(text); not imported")) in got, got
    assert [i for i, s, _ in got if s == "ok"] == [container.name]


def test_vibe_kanban_relative_container_refused(repo, ao_env):
    db = tb.vk_db()
    wid, _ = tb.vk_workspace(db, [repo], label="rel", branch="vk/rel", make=False)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE workspaces SET container_ref = 'w' WHERE id = ?",
                 (uuid.UUID(wid).bytes,))
    conn.commit()
    conn.close()
    res = ao("ao", "import", "--tool", "vibe-kanban", "--json", cwd=repo, rc=1)
    assert [m for _, s, m in _results(res)] == [
        (f"vibe-kanban: vibe-kanban database '{db}': workspace {wid} container_ref is the "
        "relative path 'w', not as vibe-kanban writes it (an absolute path); not imported")]


def test_claude_squad_wrong_type_is_not_said_missing(repo, ao_env):
    wt, branch = tb.squad_worktree(repo, "good")
    good = tb.squad_instance(repo, wt, "good", branch)
    state = tb.squad_state([{**good, "title": 5}, good,
                            {**good, "title": "rel", "worktree": {**good["worktree"],
                                                                  "worktree_path": "x/y"}}])
    res = ao("ao", "import", "--tool", "claude-squad", "--json", cwd=repo, rc=1)
    assert _results(res) == [
        ("claude-squad", "refused", (f"claude-squad: claude-squad state '{state}': instance 0 "
         "title is the number 5, not as claude-squad writes it (text); not imported")),
        ("claude-squad", "refused", (f"claude-squad: claude-squad state '{state}': instance 2 "
         "('rel') worktree.worktree_path is the relative path 'x/y', not as claude-squad "
         "writes it (an absolute path); not imported")),
        ("good", "ok", f"registered worker from claude-squad at {wt}")]


def test_codex_rollout_of_another_type_or_relative_cwd_refused(repo, ao_env):
    a = ts.codex_rollout(repo, CX_ID)
    a.write_text(json.dumps({"type": "session_meta", "payload": {"id": 7, "cwd": "rel/x"}}) + "\n")
    res = ao("ao", "import", "--tool", "codex", "--json", cwd=repo, rc=1)
    assert _results(res) == [
        ("codex", "refused", (f"codex: '{a}' is not a Codex rollout git-ao can read (its "
         "session_meta's id is the number 7, not as Codex writes it (text); its "
         "session_meta's cwd is the relative path 'rel/x', not as Codex writes it (an "
         "absolute path))"))]


def test_codex_metadata_optional_field_of_another_type_refused(repo, ao_env):
    wt = ts.codex_worktree(repo, "4a21", thread=CX_ID, branch="codex-fix")
    admin = next(p for p in (repo / ".git" / "worktrees").iterdir()
             if (p / "codex-worktree.json").exists())
    meta = admin / "codex-worktree.json"
    obj = json.loads(meta.read_text())
    meta.write_text(json.dumps({**obj, "tmuxSession": 3}))
    res = ao("ao", "import", "--tool", "codex", "--json", cwd=repo, rc=1)
    assert _results(res) == [
        ("codex", "refused", (f"codex: '{meta}' tmuxSession is the number 3, not as Codex "
         f"writes it (text); Codex metadata git-ao cannot read; its worktree {wt} is not "
         "imported"))]


def test_claude_transcript_relative_cwd_is_no_session(repo, ao_env):
    for sid in ("5f1c2b9e-7a41-4a63-9d0e-2b7c8e1f4a10", "5f1c2b9e-7a41-4a63-9d0e-2b7c8e1f4a11"):
        path = ts.claude_transcript(repo / "x", sid, project_key="rel")
        path.write_text(path.read_text().replace(f'"{repo / "x"}"',
                                                 '"relative/.claude/worktrees/zz"'))
    res = ao("ao", "import", "--tool", "claude-code", "--json", cwd=repo)
    assert _results(res) == []


def test_daemon_row_of_another_type_refused_alone(repo, worktrees, ao_env):
    w1 = worktrees(repo, "ao-1", register=False)
    data = ao_env / "aodata"
    data.mkdir(mode=0o700)
    daemon_db(data / "ao.db", 103, projects=[("ao", str(repo))], sessions=[
        daemon_session("ao-1", "ao", w1),
        daemon_session("ao-2", "ao", "rel/ao-2"),
        daemon_session("ao-3", "ao", w1, harness=b"claude"),
    ])
    res = ao("ao", "import", "--json", cwd=repo, rc=1)
    assert [r for r in _results(res) if r[1] == "refused"] == [
        ("ao-2", "refused", ("daemon session ao-2: workspace_path is the relative path "
         "'rel/ao-2', not as the ao daemon writes it (an absolute path); not imported")),
        ("ao-3", "refused", ("daemon session ao-3: harness is a BLOB of 6 bytes, not as the ao "
         "daemon writes it (text); not imported"))], _results(res)
    assert set(sessions_by_id(repo)) == {"ao-1"}


def test_a_path_the_file_system_refuses_is_refused_alone(repo, ao_env):
    """A NUL inside a recorded path (text a tool's database can hold, no path a
    file system takes): that session is refused, the others still imported."""
    db = tb.crystal_db()
    tb.crystal_session(db, repo, "good")
    tb.crystal_row(db, id="s1", name="n", initial_prompt="p", worktree_name="w",
                   worktree_path="/tmp/a\0b", status="running", archived=0)
    res = ao("ao", "import", "--tool", "crystal", "--json", cwd=repo, rc=1)
    got = _results(res)
    assert [(i, st) for i, st, _ in got] == [("crystal", "refused"), ("good", "ok")], got
    assert set(sessions_by_id(repo)) == {"good"}
