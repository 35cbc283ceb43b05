"""SIGKILL inside a history append (git_ao/crashpoint.py): the chain is the old one
or the new one, never half an entry, no entry is lost, and the next run converges."""

from __future__ import annotations

import json
import os

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
