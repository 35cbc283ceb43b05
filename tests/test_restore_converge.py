"""A restore that always converges: a directory an agent re-created after the save,
what a killed `git worktree add` leaves, an edit made in a half-restored worktree,
a submodule whose remote is gone, a clock that jumped. Each rerun converges with
nothing lost."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from git_ao.store import trash
from tests.conftest import ao, commit_on, dirty, git
from tests.trash_helpers import checkout_path_only
from tests.worktree_state import assert_restored, state

HOURS5_NS = 5 * 3600 * 10**9


def _db():
    return sqlite3.connect(os.path.join(os.environ["AO_DATA_DIR"], "git-ao.db"))


def _states(repo) -> dict:
    listed = json.loads(ao("ao", "list", "--json", cwd=repo).stdout)["sessions"]
    return {s["id"]: s["state"] for s in listed}


def _results(res) -> list[dict]:
    return json.loads(res.stdout)["results"]


def test_a_directory_an_agent_recreated_after_the_save_is_set_aside_when_asked(repo, worktrees):
    wt = worktrees(repo, "ag")
    (wt / "a.txt").write_text("saved\n")
    (wt / "notes.md").write_text("saved notes\n")
    before = state(wt)
    ao("ao-preserve", "ag", cwd=repo)
    # an agent still running writes by absolute path: mkdir -p, then a file
    (wt / "logs").mkdir(parents=True)
    (wt / "logs" / "agent.out").write_text("late output\n")
    (wt / "notes.md").write_text("the agent's newest notes\n")
    # unasked, nothing there is touched, even files all newer than the save
    res = ao("ao-restore", "--json", cwd=repo, rc=1)
    (r,) = _results(res)
    assert r["status"] == "refused"
    assert "git ao-restore --set-aside-stray ag" in r["message"]
    assert sorted(os.listdir(wt)) == ["logs", "notes.md"]
    assert _states(repo) == {"ag": "pending"}
    res = ao("ao-restore", "--set-aside-stray", "--json", cwd=repo, rc=3)
    (r,) = _results(res)
    assert r["status"] == "attention"
    aside = r["set_aside"]
    assert sorted(r["set_aside_files"]) == ["logs/agent.out", "notes.md"]
    assert r["stray_newer"] == ["notes.md"]
    assert Path(aside, "logs", "agent.out").read_text() == "late output\n"
    assert_restored(before, state(wt))
    assert _states(repo) == {"ag": "live"}
    # nothing left to do; the stray entry is kept by prune
    assert "nothing to restore" in ao("ao-restore", cwd=repo).stderr
    ao("ao-prune", cwd=repo)
    assert os.path.isdir(aside)


@pytest.mark.parametrize("how", ["older", "newer", "nested-dirs", "dry-run"])
def test_a_stray_directory_is_refused_logged_and_left_as_it_is(repo, worktrees, how):
    """A directory at the recorded path that is not the worktree (the user's, another
    tool's) is never moved unasked, however new its files are; the refusal names
    the option, the log records it, and the session stays pending."""
    wt = worktrees(repo, "st")
    (wt / "a.txt").write_text("saved\n")
    ao("ao-preserve", "st", cwd=repo)
    wt.mkdir()
    (wt / "new").write_text("new\n")
    if how == "older":
        (wt / "old").write_text("old\n")
        os.utime(wt / "old", (1_000_000, 1_000_000))
    if how == "nested-dirs":
        (wt / "build" / "out").mkdir(parents=True)
        (wt / "build" / "out" / "x.o").write_bytes(b"\0")
    snapshot = {p: p.read_bytes() for p in wt.rglob("*") if p.is_file()}
    args = ["ao-restore", "-n"] if how == "dry-run" else ["ao-restore"]
    res = ao(*args, cwd=repo, rc=1)
    assert f"{wt}' exists and is not a worktree" in res.stdout
    assert "git ao-restore --set-aside-stray st" in res.stdout
    assert {p: p.read_bytes() for p in wt.rglob("*") if p.is_file()} == snapshot
    assert _states(repo) == {"st": "pending"}
    if how != "dry-run":
        assert "set-aside-stray" in ao("ao", "log", cwd=repo).stdout
    assert not [e for e in trash.entries(os.environ["AO_DATA_DIR"]) if e.stray]
    if how == "dry-run":
        # attention, exit 3, as the real run below
        out = ao("ao-restore", "-n", "--set-aside-stray", cwd=repo, rc=3).stdout
        assert "restore\tattention\tst\twould set aside the directory" in out, out
        assert {p: p.read_bytes() for p in wt.rglob("*") if p.is_file()} == snapshot
        return
    # asked for: moved into the trash whole, then the session comes back
    ao("ao-restore", "--set-aside-stray", cwd=repo, rc=3)
    (aside,) = [e for e in trash.entries(os.environ["AO_DATA_DIR"]) if e.stray]
    assert {p.relative_to(aside.worktree): p.read_bytes()
            for p in Path(aside.worktree).rglob("*") if p.is_file()} == \
        {p.relative_to(wt): b for p, b in snapshot.items()}
    assert (wt / "a.txt").read_text() == "saved\n"
    assert _states(repo) == {"st": "live"}


def test_a_clock_fast_at_shutdown_does_not_keep_the_session_pending(repo, worktrees):
    wt = worktrees(repo, "clk")
    (wt / "a.txt").write_text("saved\n")
    ao("ao-preserve", "clk", cwd=repo)
    conn = _db()
    conn.execute("UPDATE session_worktrees SET saved_at = saved_at + ?", (HOURS5_NS,))
    conn.commit()
    conn.close()
    ao("ao-restore", cwd=repo)
    assert _states(repo) == {"clk": "live"}
    assert "nothing to restore" in ao("ao-restore", cwd=repo).stderr
    ao("ao-preserve", "clk", cwd=repo)
    assert _states(repo) == {"clk": "pending"}
    ao("ao-restore", cwd=repo)
    assert (wt / "a.txt").read_text() == "saved\n"


def test_a_version_3_database_gains_the_pending_state(repo, worktrees):
    from git_ao.store import database as store_mod
    for sid in ("p3", "l3", "c3"):
        (worktrees(repo, sid) / "f.txt").write_text(sid)
    ao("ao-preserve", "p3", "l3", cwd=repo)
    ao("ao-restore", "l3", cwd=repo)
    ao("ao-preserve", "--keep-worktree", "c3", cwd=repo)
    conn = _db()
    conn.executescript("ALTER TABLE sessions DROP COLUMN tool; ALTER TABLE sessions DROP COLUMN tool_id; "
                       "ALTER TABLE sessions DROP COLUMN tmux_session; "
                       "ALTER TABLE session_worktrees DROP COLUMN holds_less_than; "
                       "ALTER TABLE session_worktrees DROP COLUMN removed_by; "
                       "ALTER TABLE session_worktrees DROP COLUMN pending;"
                       "ALTER TABLE session_worktrees DROP COLUMN ref_held;"
                       "PRAGMA user_version = 3;")
    conn.close()
    got = json.loads(ao("ao", "list", "--json", cwd=repo).stdout)["sessions"]
    assert {s["id"]: (s["state"], bool(s["preserve_ref"])) for s in got} == {
        "p3": ("pending", True), "l3": ("live", False), "c3": ("live", True)}
    conn = _db()
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(store_mod.MIGRATIONS)
    conn.close()
    ao("ao-restore", cwd=repo)
    assert _states(repo) == {"p3": "live", "l3": "live", "c3": "live"}


def _started(sid):
    conn = _db()
    conn.execute("UPDATE session_worktrees SET restore_started_at = ? WHERE session_id = ?",
                 (int(os.path.getmtime(os.environ["AO_DATA_DIR"]) * 1e9), sid))
    conn.commit()
    conn.close()


def test_a_killed_add_that_left_only_a_git_file_and_a_zero_head(repo, worktrees):
    wt = worktrees(repo, "zh")
    dirty(wt)
    before = state(wt)
    ao("ao-preserve", "zh", cwd=repo)
    # what git leaves when killed early in `worktree add`: the registration, locked
    # "initializing", an all-zero HEAD, and a directory holding only .git
    git("worktree", "add", "-q", "--no-checkout", "--detach", wt, "HEAD", cwd=repo)
    admin = repo / ".git" / "worktrees" / "zh"
    (admin / "HEAD").write_text("0" * 40 + "\n")
    (admin / "locked").write_text("initializing\n")
    _started("zh")
    assert os.listdir(wt) == [".git"]
    ao("ao-restore", cwd=repo)
    assert_restored(before, state(wt))
    assert "locked" not in git("worktree", "list", "--porcelain", cwd=repo)


def test_a_killed_add_that_left_a_branch_lock(repo, worktrees):
    wt = worktrees(repo, "bl")
    (wt / "a.txt").write_text("saved\n")
    ao("ao-preserve", "bl", cwd=repo)
    git("branch", "-D", "bl", cwd=repo)  # restore re-creates it: `worktree add -b`
    _started("bl")
    (repo / ".git" / "refs" / "heads" / "bl.lock").write_text("")
    ao("ao-restore", cwd=repo)
    assert (wt / "a.txt").read_text() == "saved\n"
    assert not (repo / ".git" / "refs" / "heads" / "bl.lock").exists()


def test_a_killed_adds_branch_lock_a_process_has_open_is_not_removed(repo, worktrees):
    from tests.support import held_open
    wt = worktrees(repo, "bh")
    (wt / "a.txt").write_text("saved\n")
    ao("ao-preserve", "bh", cwd=repo)
    git("branch", "-D", "bh", cwd=repo)
    _started("bh")
    lock = repo / ".git" / "refs" / "heads" / "bh.lock"
    with held_open(lock) as pid:
        res = ao("ao-restore", cwd=repo, rc=None, process=True)
    assert res.returncode != 0 and lock.exists(), res.stdout
    assert f"bh.lock is held by pid {pid} (python" in res.stdout, res.stdout
    ao("ao-restore", cwd=repo)  # no process has it open now: removed, and restored
    assert (wt / "a.txt").read_text() == "saved\n" and not lock.exists()


def test_the_initializing_lock_does_not_survive_a_rerun(repo, worktrees):
    wt = worktrees(repo, "il2")
    dirty(wt)
    before = state(wt)
    ao("ao-preserve", "il2", cwd=repo)
    checkout_path_only()
    ao("ao-restore", cwd=repo, rc=None, env={"GIT_AO_CRASH_AT": "restore:after-apply"})
    git("worktree", "lock", "--reason", "initializing", str(wt), cwd=repo)
    ao("ao-restore", cwd=repo)
    assert_restored(before, state(wt))
    assert "locked" not in git("worktree", "list", "--porcelain", cwd=repo)
    res = ao("ao-preserve", "il2", cwd=repo)
    assert "worktree removed" in res.stdout and not wt.exists()


def test_an_edit_in_a_half_restored_worktree_is_named_and_kept(repo, worktrees):
    wt = worktrees(repo, "ed")
    dirty(wt)
    before = state(wt)
    ao("ao-preserve", "ed", cwd=repo)
    checkout_path_only()
    ao("ao-restore", cwd=repo, rc=None, env={"GIT_AO_CRASH_AT": "restore:after-worktree-add"})
    (wt / "README.md").write_text("my edit before the rerun\n")
    res = ao("ao-restore", "--json", cwd=repo, rc=3)
    (r,) = _results(res)
    assert r["unsaved_files"] == ["README.md"]
    kept = r["set_aside_unfinished"]
    assert Path(kept, "README.md").read_text() == "my edit before the rerun\n"
    assert_restored(before, state(wt))
    ao("ao-prune", cwd=repo)
    assert os.path.isdir(kept)


def test_a_checkout_of_a_moved_branch_killed_midway_converges(repo, worktrees):
    wt = worktrees(repo, "mb")
    dirty(wt)
    ao("ao-preserve", "mb", cwd=repo)
    commit_on(repo, "mb", {"aa.txt": "upstream\n"}, "upstream")
    # What a `git worktree add` killed during its checkout leaves: the registration
    # on the branch, some of the branch's files written (one the save never had,
    # from the commit the branch moved on to), no index yet, its lock.
    git("worktree", "add", "-q", "--no-checkout", wt, "mb", cwd=repo)
    (wt / "aa.txt").write_text("upstream\n")
    (wt / "README.md").write_text("hello\n")
    (repo / ".git" / "worktrees" / "mb" / "index.lock").write_text("")
    _started("mb")
    res = ao("ao-restore", cwd=repo)
    assert "mb" in res.stdout
    assert (wt / "aa.txt").read_text() == "upstream\n"
    assert (wt / "README.md").read_text() == "hello\nstaged line\nunstaged line\n"
    assert _states(repo) == {"mb": "live"}
    assert git("for-each-ref", "refs/ao/preserved/", cwd=repo) == ""


def _session_with_a_submodule(repo, make_repo, worktrees, name):
    """A submodule `lib` committed in `repo`, and a session `name` whose worktree has
    it initialised and an edit in the superproject. Returns (submodule repo, worktree)."""
    sub = make_repo()
    git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "lib",
        cwd=repo)
    git("commit", "-qm", "add submodule", cwd=repo)
    wt = worktrees(repo, name)
    git("-c", "protocol.file.allow=always", "submodule", "update", "--init", "-q", cwd=wt)
    (wt / "README.md").write_text("super edit\n")
    return sub, wt


def test_a_submodule_whose_remote_is_gone_does_not_hold_the_work(repo, make_repo, worktrees):
    sub, wt = _session_with_a_submodule(repo, make_repo, worktrees, "sm")
    ao("ao-preserve", "sm", cwd=repo)
    checkout_path_only()
    gone = sub.parent / (sub.name + "-away")
    os.rename(sub, gone)
    try:
        res = ao("ao-restore", "--json", cwd=repo, rc=3)
        (r,) = _results(res)
        assert "submodules not re-initialised" in r["message"], r
        assert (wt / "README.md").read_text() == "super edit\n"
        assert git("for-each-ref", "refs/ao/preserved", cwd=repo) == "", r
        # nothing waits on it: the next preserve takes the worktree away
        res = ao("ao-preserve", "sm", cwd=repo)
        assert "worktree removed" in res.stdout
    finally:
        os.rename(gone, sub)


def test_a_submodule_comes_back_whole_from_the_trash(repo, make_repo, worktrees):
    _, wt = _session_with_a_submodule(repo, make_repo, worktrees, "smt")
    before = state(wt)
    ao("ao-preserve", "smt", cwd=repo)
    ao("ao-restore", cwd=repo)
    assert_restored(before, state(wt))
    assert git("rev-parse", "HEAD", cwd=wt / "lib").strip()
    assert git("status", "--porcelain", cwd=wt / "lib") == ""
    assert [e for e in trash.entries(os.environ["AO_DATA_DIR"])] == []
    shutil.rmtree(wt / "lib" / "nothing", ignore_errors=True)
