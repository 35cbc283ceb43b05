"""SIGKILL inside a history append (git_ao/crashpoint.py): the chain is the old one
or the new one, never half an entry, no entry is lost, and the next run converges."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support import KILLED, ao, crash_env, dirty, git
from tests.worktree_state import assert_restored, exact_state

HIST = "refs/ao/history/agent"


def _entries(repo):
    return json.loads(ao("ao", "history", "agent", "--json", cwd=repo).stdout)["entries"]


def _chain_whole(repo):
    """Every commit of the chain is an entry whose save git reads."""
    got = _entries(repo)
    for e in got:
        git("stash", "show", "--include-untracked", e["commit"], cwd=repo)
    git("fsck", "--no-dangling", "--connectivity-only", cwd=repo)  # fails on a missing object
    return got


@pytest.mark.parametrize("point", ["history:before-ref", "history:after-ref"])
def test_a_kill_inside_a_checkpoints_append(point, repo, worktrees):
    wt = worktrees(repo, "agent")
    dirty(wt)
    ao("ao", "checkpoint", "agent", cwd=repo)
    first = _entries(repo)
    (wt / "second.txt").write_text("second\n")
    res = ao("ao", "checkpoint", "agent", cwd=repo, rc=None, env=crash_env(point))
    assert res.returncode == KILLED, res.stderr
    got = _chain_whole(repo)
    if point == "history:before-ref":
        assert got == first  # the old chain, whole: the entry commit is only dangling
    else:
        assert len(got) == 2 and got[1] == {**first[0], "number": 2}
    ao("ao", "checkpoint", "agent", cwd=repo)
    again = _chain_whole(repo)
    assert len(again) == 2 and again[1]["commit"] == first[0]["commit"]
    assert "second.txt" in git("stash", "show", "--include-untracked", "--name-only",
                               again[0]["commit"], cwd=repo)


@pytest.mark.parametrize("point", ["history:before-ref", "history:after-ref"])
def test_a_kill_while_restore_at_records_the_state_it_replaces(point, repo, worktrees):
    wt = worktrees(repo, "agent")
    dirty(wt)
    wanted = exact_state(wt)
    ao("ao", "checkpoint", "agent", cwd=repo)
    git("reset", "-q", "--hard", cwd=wt)
    (wt / "agent-wrote.txt").write_text("after the checkpoint\n")
    wiped = exact_state(wt)
    res = ao("ao-restore", "agent", "--at", "1", cwd=repo, rc=None, env=crash_env(point))
    assert res.returncode == KILLED, res.stderr
    assert_restored(wiped, exact_state(wt))  # killed before the worktree changed
    _chain_whole(repo)
    ao("ao-restore", "agent", "--at", _entries(repo)[-1]["commit"], cwd=repo)
    assert_restored(wanted, exact_state(wt))
    got = _chain_whole(repo)
    assert [e["trigger"] for e in got] == ["restore", "checkpoint"]
    ao("ao-restore", "agent", "--at", "1", cwd=repo)
    assert_restored(wiped, exact_state(wt))


def test_a_rerun_after_a_kill_mid_restore_at_names_the_state_before_the_first_run(
        repo, worktrees):
    """Killed while removing the untracked files: the rerun does not record the
    half-done worktree as the user's state, and its undo hint names the entry the
    killed run appended (the state before it), which brings all of it back."""
    wt = worktrees(repo, "agent")
    dirty(wt)
    wanted = exact_state(wt)
    ao("ao", "checkpoint", "agent", cwd=repo)
    git("reset", "-q", "--hard", cwd=wt)
    git("clean", "-qfd", cwd=wt)
    for n in range(6):
        (wt / f"mine{n}.txt").write_text(f"the user's file {n}\n")
    before = exact_state(wt)
    target = _entries(repo)[0]["commit"]
    res = ao("ao-restore", "agent", "--at", target, cwd=repo, rc=None,
             env=crash_env("restore-at:clear:3"))
    assert res.returncode == KILLED, res.stderr
    assert len([p for p in os.listdir(wt) if p.startswith("mine")]) == 3  # half done
    replaced = _entries(repo)[0]
    assert replaced["trigger"] == "restore" and replaced["untracked"] == 6
    out = ao("ao-restore", "agent", "--at", target, cwd=repo).stdout
    assert_restored(wanted, exact_state(wt))
    assert f"git ao-restore agent --at {replaced['commit'][:12]} undoes it" in out, out
    got = _chain_whole(repo)
    assert [e["trigger"] for e in got] == ["restore", "checkpoint"]
    ao("ao-restore", "agent", "--at", replaced["commit"], cwd=repo)
    assert_restored(before, exact_state(wt))


def _killed_mid_reset(repo, wt):
    """A checkpoint of the dirty() work (the target), then the user's own state (a
    clean HEAD and two untracked files), then an --at to the target killed right
    after its hard reset. Returns (wanted, before, target commit, entry of before)."""
    dirty(wt)
    wanted = exact_state(wt)
    ao("ao", "checkpoint", "agent", cwd=repo)
    git("reset", "-q", "--hard", cwd=wt)
    git("clean", "-qfd", cwd=wt)
    (wt / "mine.txt").write_text("the user's file\n")
    (wt / "README.md").write_text("the user's edit\n")
    before = exact_state(wt)
    target = _entries(repo)[0]["commit"]
    res = ao("ao-restore", "agent", "--at", target, cwd=repo, rc=None,
             env=crash_env("restore-at:after-reset"))
    assert res.returncode == KILLED, res.stderr
    replaced = _entries(repo)[0]
    assert replaced["trigger"] == "restore"
    return wanted, before, target, replaced


def _edit_after_the_kill(wt):
    (wt / "new-after-kill.txt").write_text("written after the kill\n")
    (wt / "src" / "app.py").write_text("print('edited after the kill')\n")


def test_a_rerun_after_a_kill_records_what_was_written_since(repo, worktrees):
    """Killed mid-reset (a stale index.lock left, as a killed git leaves it), the
    lock removed, new edits made: the rerun appends the current state before it
    replaces it, names it as what undoes the run, with the state before the killed
    run, and each brings its state back exactly."""
    wt = worktrees(repo, "agent")
    wanted, before, target, replaced = _killed_mid_reset(repo, wt)
    lock = Path(git("rev-parse", "--absolute-git-dir", cwd=wt).strip()) / "index.lock"
    lock.write_text("")
    res = ao("ao-restore", "agent", "--at", target, cwd=repo, rc=None)
    assert res.returncode != 0 and "locked" in res.stderr + res.stdout
    lock.unlink()
    _edit_after_the_kill(wt)
    edited = exact_state(wt)
    dry = ao("ao-restore", "-n", "agent", "--at", target, cwd=repo).stdout
    assert "would record the current state (written since the --at that was interrupted" \
        in dry, dry
    assert f"entry 1 ({replaced['commit'][:12]})" in dry, dry
    out = ao("ao-restore", "agent", "--at", target, cwd=repo).stdout
    assert_restored(wanted, exact_state(wt))
    got = _chain_whole(repo)
    assert [e["trigger"] for e in got] == ["restore", "restore", "checkpoint"]
    recorded = got[0]
    assert recorded["commit"] != replaced["commit"]
    assert f"git ao-restore agent --at {recorded['commit'][:12]} undoes it" in out, out
    assert f"before the --at that was interrupted is entry 2 ({replaced['commit'][:12]})" \
        in out, out
    ao("ao-restore", "agent", "--at", recorded["commit"], cwd=repo)
    assert_restored(edited, exact_state(wt))
    ao("ao-restore", "agent", "--at", replaced["commit"], cwd=repo)
    assert_restored(before, exact_state(wt))


def test_a_rerun_after_a_kill_with_nothing_written_since_appends_nothing(repo, worktrees):
    wt = worktrees(repo, "agent")
    wanted, before, target, replaced = _killed_mid_reset(repo, wt)
    dry = ao("ao-restore", "-n", "agent", "--at", target, cwd=repo).stdout
    assert "would go on with the --at that was interrupted" in dry, dry
    out = ao("ao-restore", "agent", "--at", target, cwd=repo).stdout
    assert_restored(wanted, exact_state(wt))
    assert [e["trigger"] for e in _chain_whole(repo)] == ["restore", "checkpoint"]
    assert f"git ao-restore agent --at {replaced['commit'][:12]} undoes it" in out, out
    assert "interrupted" not in out, out
    ao("ao-restore", "agent", "--at", replaced["commit"], cwd=repo)
    assert_restored(before, exact_state(wt))


def test_a_half_done_state_that_an_entry_holds_adds_nothing(repo, worktrees):
    """The kill leaves exactly what an older entry holds (a clean HEAD): nothing is
    appended for it, and the run goes on."""
    wt = worktrees(repo, "agent")
    ao("ao", "checkpoint", "agent", cwd=repo)  # the clean HEAD
    dirty(wt)
    wanted = exact_state(wt)
    ao("ao", "checkpoint", "agent", cwd=repo)
    target = _entries(repo)[0]["commit"]
    git("reset", "-q", "--hard", cwd=wt)
    git("clean", "-qfd", cwd=wt)
    (wt / "README.md").write_text("the user's edit\n")
    before = exact_state(wt)
    res = ao("ao-restore", "agent", "--at", target, cwd=repo, rc=None,
             env=crash_env("restore-at:after-reset"))
    assert res.returncode == KILLED, res.stderr
    assert len(_entries(repo)) == 3
    ao("ao-restore", "agent", "--at", target, cwd=repo)
    assert_restored(wanted, exact_state(wt))
    got = _chain_whole(repo)
    assert [e["trigger"] for e in got] == ["restore", "checkpoint", "checkpoint"]
    ao("ao-restore", "agent", "--at", got[0]["commit"], cwd=repo)
    assert_restored(before, exact_state(wt))


def test_a_second_kill_during_the_rerun_loses_nothing(repo, worktrees):
    wt = worktrees(repo, "agent")
    wanted, before, target, replaced = _killed_mid_reset(repo, wt)
    _edit_after_the_kill(wt)
    edited = exact_state(wt)
    res = ao("ao-restore", "agent", "--at", target, cwd=repo, rc=None,
             env=crash_env("restore-at:after-reset"))
    assert res.returncode == KILLED, res.stderr
    recorded = _entries(repo)[0]
    assert recorded["commit"] != replaced["commit"] and recorded["trigger"] == "restore"
    out = ao("ao-restore", "agent", "--at", target, cwd=repo).stdout
    assert_restored(wanted, exact_state(wt))
    assert [e["trigger"] for e in _chain_whole(repo)] == ["restore", "restore", "checkpoint"]
    assert f"git ao-restore agent --at {recorded['commit'][:12]} undoes it" in out, out
    ao("ao-restore", "agent", "--at", recorded["commit"], cwd=repo)
    assert_restored(edited, exact_state(wt))
    ao("ao-restore", "agent", "--at", replaced["commit"], cwd=repo)
    assert_restored(before, exact_state(wt))


def test_show_list_and_doctor_name_an_interrupted_at(repo, worktrees):
    """After a kill mid --at the worktree is part way to the entry: show, list and
    doctor say so, with the entry of the state before the run and the commands
    that finish it or go back; once a rerun finishes, none of them does."""
    wt = worktrees(repo, "agent")
    wanted, _before, target, replaced = _killed_mid_reset(repo, wt)
    said = (f"an --at to entry 2 ({_entries(repo)[1]['commit'][:12]}) was interrupted, its "
            f"worktree part way there; the state before it is entry 1 "
            f"({replaced['commit'][:12]}): git ao-restore agent --at "
            f"{_entries(repo)[1]['commit'][:12]} again finishes it")
    show = ao("ao", "show", "agent", cwd=repo)
    assert said in show.stdout + show.stderr, show
    assert f"git ao-restore agent --at {replaced['commit'][:12]} goes back to it" \
        in show.stdout + show.stderr
    listing = ao("ao", "list", cwd=repo)
    assert f"agent: {said}" in listing.stdout + listing.stderr, listing
    doctor = ao("ao", "doctor", cwd=repo, rc=None)
    assert doctor.returncode == 1 and f"agent: {said}" in doctor.stdout + doctor.stderr, doctor
    ao("ao-restore", "agent", "--at", target, cwd=repo)
    assert_restored(wanted, exact_state(wt))
    for args in (("show", "agent"), ("list",), ("doctor",)):
        res = ao("ao", *args, cwd=repo)
        assert "interrupted" not in res.stdout + res.stderr, res


def test_going_back_after_a_kill_appends_nothing_for_the_half_done_state(repo, worktrees):
    """--at to the state before the killed run: what the kill left (here the
    target's HEAD, the reset having moved the branch back) is judged against the
    entry that run was bringing back, so nothing is appended for it."""
    wt = worktrees(repo, "agent")
    dirty(wt)
    ao("ao", "checkpoint", "agent", cwd=repo)
    target = _entries(repo)[0]["commit"]
    git("reset", "-q", "--hard", cwd=wt)
    git("clean", "-qfd", cwd=wt)
    (wt / "README.md").write_text("committed after the checkpoint\n")
    git("commit", "-qam", "after the checkpoint", cwd=wt)
    (wt / "mine.txt").write_text("the user's file\n")
    before = exact_state(wt)
    res = ao("ao-restore", "agent", "--at", target, cwd=repo, rc=None,
             env=crash_env("restore-at:after-reset"))
    assert res.returncode == KILLED, res.stderr
    replaced = _entries(repo)[0]
    ao("ao-restore", "agent", "--at", replaced["commit"], cwd=repo)
    assert_restored(before, exact_state(wt))
    assert [e["trigger"] for e in _chain_whole(repo)] == ["restore", "checkpoint"]
