"""Shutdown and boot, end to end: several sessions in two repositories come back
byte for byte (the end-to-end acceptance)."""

import json

from tests.support import ao, ao_refs, dirty, git
from tests.worktree_state import same_but_ignored, state


def test_shutdown_then_boot_restores_everything(repo, make_repo, worktrees):
    other = make_repo()
    sessions = {
        "orch": worktrees(repo, "orch", kind="orchestrator", harness="claude-code"),
        "w1": worktrees(repo, "w1", harness="codex"),
        "w2": worktrees(other, "w2", harness="aider"),
        "w3": worktrees(other, "w3"),
    }
    dirty(sessions["orch"])
    dirty(sessions["w2"])
    (sessions["w1"] / "only-new.txt").write_text("new\n")
    before = {sid: state(p) for sid, p in sessions.items()}
    assert before["orch"]["ignored"], "the fixture must include ignored files"

    ao("ao-preserve", "--all", cwd=repo)
    for sid, p in sessions.items():
        assert not p.exists(), sid
    for sid in ("orch", "w1", "w2"):
        r = repo if sid in ("orch", "w1") else other
        assert git("rev-parse", "-q", "--verify", f"refs/ao/preserved/{sid}", cwd=r).strip()
    # a clean worktree gets no commit
    assert git("for-each-ref", "refs/ao/preserved/w3", cwd=other) == ""
    listed = json.loads(ao("ao", "list", "--all", "--json", cwd=repo).stdout)
    assert {s["id"]: s["state"] for s in listed["sessions"]} == dict.fromkeys(sessions, "pending")

    ao("ao-restore", cwd=repo)
    for sid, p in sessions.items():
        after = state(p)
        assert same_but_ignored(before[sid], after), sid
        # the ignored files came back with the directory, from the trash
        assert after["ignored"] == before[sid]["ignored"], sid
    for r in (repo, other):
        assert ao_refs(r, "refs/ao/") == ""
    listed = json.loads(ao("ao", "list", "--all", "--json", cwd=repo).stdout)
    assert {s["id"]: s["state"] for s in listed["sessions"]} == dict.fromkeys(sessions, "live")
    by_id = {s["id"]: s for s in listed["sessions"]}
    assert by_id["orch"]["workspace_path"] == str(sessions["orch"])
    assert by_id["orch"]["kind"] == "orchestrator"

    # running restore again is a no-op
    res = ao("ao-restore", cwd=repo)
    assert "nothing to restore" in res.stderr


def test_second_cycle_also_round_trips(repo, worktrees):
    wt = worktrees(repo, "cycle")
    dirty(wt)
    before = state(wt)
    for _ in range(2):
        ao("ao-preserve", "--all", cwd=repo)
        ao("ao-restore", cwd=repo)
        assert same_but_ignored(before, state(wt))
