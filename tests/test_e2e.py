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


def test_shutdown_names_the_linked_worktrees_no_session_holds(repo, make_repo, worktrees,
                                                               tmp_path):
    """`--all` saves sessions only: a linked worktree of a known repository that
    no session holds is named at shutdown (also with -q, and in the log), and
    `git ao add --all` registers it for the next one."""
    other = make_repo()
    worktrees(repo, "held")
    loose = worktrees(repo, "loose", register=False)
    (loose / "work.txt").write_text("not saved\n")
    git("worktree", "add", "-q", "-b", "stranger", tmp_path / "stranger", cwd=other)
    warning = (f"warning: {repo / '.git'}: linked worktrees no session holds {{}}: {loose} "
               "('git ao add --all' in the repository registers them)\n")
    res = ao("ao-preserve", "--all", "-n", cwd=tmp_path)
    assert warning.format("would not be saved") in res.stderr
    res = ao("ao-preserve", "--all", "-q", cwd=tmp_path)
    assert res.stdout == "" and res.stderr == warning.format("were not saved")
    assert "preserve - unregistered repository=" in ao("ao", "log", cwd=tmp_path).stdout
    # `other` holds no session: git-ao does not know it, and says nothing of it
    assert str(other) not in res.stderr
    ao("ao-restore", "-q", cwd=tmp_path)
    ao("ao", "add", "--all", cwd=repo)
    res = ao("ao-preserve", "--all", cwd=tmp_path)
    assert "warning" not in res.stderr and not loose.exists()


def test_a_dry_run_counts_the_paths_index_flags_hide_as_the_real_run(repo, worktrees):
    """assume-unchanged and skip-worktree files are saved as they are on disk: the
    dry run of preserve, --keep-worktree and checkpoint counts them as the real run."""
    wt = worktrees(repo, "flags")
    (wt / "a.txt").write_text("a\n")
    (wt / "b.txt").write_text("b\n")
    git("add", "a.txt", "b.txt", cwd=wt)
    git("commit", "-qm", "two", cwd=wt)
    git("update-index", "--assume-unchanged", "a.txt", cwd=wt)
    git("update-index", "--skip-worktree", "b.txt", cwd=wt)
    (wt / "a.txt").write_text("a changed\n")
    (wt / "b.txt").write_text("b changed\n")
    (wt / "README.md").write_text("changed\n")
    flags = "1 changed, 0 untracked, 2 behind index flags (assume-unchanged, skip-worktree)"
    for args in (("ao-preserve", "-n"), ("ao-preserve", "-n", "--keep-worktree"),
                 ("ao", "checkpoint", "-n")):
        out = ao(*args, "flags", cwd=repo).stdout
        assert f": {flags}, 0 ignored" in out, (args, out)
    assert f"\t{flags} saved in " in ao("ao-preserve", "flags", cwd=repo).stdout
