"""git ao import --tool claude-squad | vibe-kanban | crystal end to end: the live
session registered with the tool's facts, preserved and restored exactly, a second
import changing nothing, the tool's files untouched."""

import json

from tests import tool_state as ts
from tests import tool_state_b as tb
from tests.support import ao, dirty, sessions_by_id
from tests.worktree_state import assert_restored, state

CLAUDE_ID = "5f1c2b9e-7a41-4a63-9d0e-2b7c8e1f4a10"
CODEX_ID = "019dbff7-c97d-7511-9af5-1cee07dd1ab2"


def _results(res) -> dict:
    return {r["id"]: r for r in json.loads(res.stdout)["results"]}


def _round_trip(repo, tool: str, sid: str, wt, tool_dir, facts: dict):
    """Import `tool`, check session `sid`'s facts, import again (nothing), preserve
    --all, restore: the worktree exactly back, the tool's files as they were."""
    before_tool = tb.files_of(tool_dir)
    assert before_tool
    got = _results(ao("ao", "import", "--tool", tool, "--json", cwd=repo))
    assert got[sid]["status"] == "ok", got
    s = sessions_by_id(repo)[sid]
    assert {k: s[k] for k in facts} == facts
    again = _results(ao("ao", "import", "--tool", tool, "--json", cwd=repo))
    assert {r["status"] for r in again.values()} == {"nothing"}, again
    assert sessions_by_id(repo)[sid] == s
    ts.round_trip(repo, wt)
    assert tb.files_of(tool_dir) == before_tool
    if tool_dir.is_dir():
        assert not [p for p in tool_dir.rglob("*") if p.name.endswith(("-wal", "-shm"))]


def test_claude_squad_instance_imported_and_round_trips(repo):
    wt, branch = tb.squad_worktree(repo, "fix parser")
    paused, pbranch = tb.squad_worktree(repo, "later")
    dirty(wt)
    dirty(paused)
    tb.squad_pause(repo, paused, "later")
    state_json = tb.squad_state([
        tb.squad_instance(repo, wt, "fix parser", branch, program="aider --model x"),
        tb.squad_instance(repo, paused, "later", pbranch, status=3)])
    got = _results(ao("ao", "import", "--tool", "claude-squad", "--json", "-n", cwd=repo))
    assert got["later"]["status"] == "nothing" and "paused" in got["later"]["message"]
    _round_trip(repo, "claude-squad", "fix-parser", wt, state_json.parent / "state.json",
                {"harness": "aider", "tool": "claude-squad", "tool_id": "fix parser",
                 "tmux_session": "claudesquad_fixparser", "branch": branch,
                 "workspace_path": str(wt), "kind": "worker"})
    assert "later" not in sessions_by_id(repo)


def test_vibe_kanban_workspace_imported_and_round_trips(repo, make_repo):
    other = make_repo()
    db = tb.vk_db()
    wid, container = tb.vk_workspace(db, [repo], label="fix", branch="vk/fix",
                                     agent_session_id=CLAUDE_ID)
    tb.vk_workspace(db, [other], label="old", branch="vk/old", archived=True)
    wt = container / repo.name
    dirty(wt)
    _round_trip(repo, "vibe-kanban", container.name, wt, db.parent,
                {"harness": "claude", "agent_session_id": CLAUDE_ID, "tool": "vibe-kanban",
                 "tool_id": f"{wid}/{repo.name}", "branch": "vk/fix",
                 "workspace_path": str(wt)})
    assert len(sessions_by_id(repo)) == 1  # the archived workspace is not imported


def test_vibe_kanban_workspace_over_two_repositories_imported_as_one_group(repo, make_repo):
    other = make_repo()
    db = tb.vk_db()
    wid, container = tb.vk_workspace(db, [repo, other], label="both", branch="vk/both",
                                     executor="CODEX", agent_session_id=CODEX_ID)
    ao("ao", "import", "--tool", "vibe-kanban", cwd=repo)
    got = sessions_by_id(repo)
    assert sorted(s["workspace_path"] for s in got.values()) == sorted(
        [str(container / repo.name), str(container / other.name)])
    assert {s["group"] for s in got.values()} == {wid}
    assert {(s["harness"], s["agent_session_id"]) for s in got.values()} == {
        ("codex", CODEX_ID)}


def test_crystal_session_imported_and_round_trips(repo):
    db = tb.crystal_db()
    sid, wt = tb.crystal_session(db, repo, "fix-parser",
                                 panels=(("terminal", None), ("claude", CLAUDE_ID)))
    old, owt = tb.crystal_session(db, repo, "old-one", panels=(("claude", CODEX_ID),))
    tb.crystal_archive(db, repo, old, owt)
    dirty(wt)
    _round_trip(repo, "crystal", "fix-parser", wt, db.parent,
                {"harness": "claude", "agent_session_id": CLAUDE_ID, "tool": "crystal",
                 "tool_id": sid, "branch": "fix-parser", "workspace_path": str(wt)})
    assert "old-one" not in sessions_by_id(repo)


def test_three_tools_at_once_and_a_corrupt_one_refused_alone(repo, make_repo):
    other = make_repo()
    wt, branch = tb.squad_worktree(repo, "one")
    tb.squad_state([tb.squad_instance(repo, wt, "one", branch)])
    db = tb.crystal_db()
    tb.crystal_session(db, other, "two", panels=(("claude", CLAUDE_ID),))
    vk = tb.vk_db()
    vk.write_bytes(b"garbage" * 100)
    res = ao("ao", "import", "--json", cwd=repo, rc=1)
    got = json.loads(res.stdout)["results"]
    refused = [r for r in got if r["status"] == "refused"]
    assert len(refused) == 1 and str(vk) in refused[0]["message"]
    assert {"one", "two"} <= set(sessions_by_id(repo))
    # The refusal is said once; the next run mentions it and succeeds.
    res = ao("ao", "import", "--json", cwd=repo)
    assert {r["status"] for r in json.loads(res.stdout)["results"]} == {"nothing"}


def test_same_worktree_name_in_two_repositories_and_tools_gets_distinct_ids(repo, make_repo):
    other = make_repo()
    db = tb.crystal_db()
    _, a = tb.crystal_session(db, repo, "fix", panels=(("claude", CLAUDE_ID),))
    _, b = tb.crystal_session(db, other, "fix", panels=(("claude", CODEX_ID),))
    wt, branch = tb.squad_worktree(repo, "fix")
    tb.squad_state([tb.squad_instance(repo, wt, "fix", branch)])
    ao("ao", "import", "--tool", "crystal", "--tool", "claude-squad", cwd=repo)
    got = {s["workspace_path"]: sid for sid, s in sessions_by_id(repo).items()}
    assert set(got) == {str(a), str(b), str(wt)} and len(set(got.values())) == 3
    assert "fix" in got.values()


def test_import_tools_auto_saves_and_restores_all_three_with_the_resume_hint(repo, make_repo):
    """With import.tools = auto the shutdown preserve imports every tool's sessions
    first and the boot restore brings them back; a restored session with an agent
    session id gets the exact command that resumes it."""
    other, third = make_repo(), make_repo()
    ao("ao", "config", "set", "import.tools", "auto", cwd=repo)
    squad, branch = tb.squad_worktree(repo, "night")
    tb.squad_state([tb.squad_instance(repo, squad, "night", branch)])
    db = tb.crystal_db()
    _, cwt = tb.crystal_session(db, other, "crys", panels=(("claude", CLAUDE_ID),))
    vk = tb.vk_db()
    _, container = tb.vk_workspace(vk, [third], label="kan", branch="vk/kan",
                                   executor="CODEX", agent_session_id=CODEX_ID)
    vwt = container / third.name
    wts = (squad, cwt, vwt)
    for wt in wts:
        dirty(wt)
    before = [state(wt) for wt in wts]
    res = ao("ao-preserve", "--all", "--json", cwd=repo)
    acts = sorted((r["action"], r["status"]) for r in json.loads(res.stdout)["results"])
    assert acts == [("import", "ok")] * 3 + [("preserve", "ok")] * 3
    assert not any(wt.exists() for wt in wts)
    res = ao("ao-restore", cwd=repo)
    for b, wt in zip(before, wts, strict=True):
        assert_restored(b, state(wt))
    assert f"claude --resume {CLAUDE_ID}" in res.stderr
    assert f"codex resume {CODEX_ID}" in res.stderr


def test_crystal_database_moved_by_crystal_dir_is_read_too(repo, ao_env, monkeypatch):
    """crystal keeps sessions.db in `$CRYSTAL_DIR` when it is set: `git ao import`
    with no --from finds it there, and still reads `~/.crystal`."""
    home_db = tb.crystal_db()
    tb.crystal_session(home_db, repo, "at-home", panels=(("claude", CODEX_ID),))
    monkeypatch.setenv("CRYSTAL_DIR", str(ao_env / "crystal-dir"))
    db = tb.crystal_db()
    assert db.parent == ao_env / "crystal-dir"
    sid, wt = tb.crystal_session(db, repo, "moved", panels=(("claude", CLAUDE_ID),))
    got = _results(ao("ao", "import", "--json", cwd=repo))
    assert got["moved"]["status"] == "ok" and got["at-home"]["status"] == "ok", got
    s = sessions_by_id(repo)["moved"]
    assert (s["tool"], s["tool_id"], s["agent_session_id"], s["workspace_path"]) == (
        "crystal", sid, CLAUDE_ID, str(wt))
    assert sessions_by_id(repo)["at-home"]["agent_session_id"] == CODEX_ID
