"""Signals and --timeout during `git ao-preserve --all`: the sessions in
flight reach a safe point, no new one starts, the summary is printed and logged,
and the exit status is 143 (SIGTERM) or 130 (SIGINT). The signal is sent by the
process itself at a named point (GIT_AO_CRASH_SIGNAL), so the moment is exact."""

from __future__ import annotations

import json

import pytest

from tests.support import (
    ao,
    assert_all_preserved,
    assert_all_restored,
    assert_work_safe,
    integrity_ok,
    log_text,
    make_sessions,
    ref_of,
    states,
)
from tests.worktree_state import state


@pytest.mark.parametrize("sig,rc", [("TERM", 143), ("INT", 130)])
def test_signal_lets_the_session_in_flight_finish(sig, rc, repo, worktrees, tmp_path):
    sessions = make_sessions(repo, worktrees, 5, detached=False)
    before = {sid: state(wt) for sid, (_, wt) in sessions.items()}
    # The signal arrives in the middle of the second session, after its row is
    # committed and before its worktree is removed.
    res = ao("ao-preserve", "--all", "-j", "1", cwd=repo, rc=rc,
             env={"GIT_AO_CRASH_AT": "preserve:after-db:2", "GIT_AO_CRASH_SIGNAL": sig})
    got = states(repo)
    assert got == {"s00": "pending", "s01": "pending", "s02": "live", "s03": "live",
                   "s04": "live"}, got
    assert not sessions["s01"][1].exists()  # the one in flight ran to its end
    for sid in ("s02", "s03", "s04"):
        assert "not started: interrupted by a signal" in res.stdout, res.stdout
        assert sessions[sid][1].is_dir()
    assert f"interrupted by SIG{sig}" in res.stderr
    assert "preserve: 2 ok, 3 refused" in res.stderr
    assert f"interrupted signal=SIG{sig} not_started=3" in log_text()
    assert_work_safe(sessions, before, tmp_path)
    integrity_ok()
    ao("ao-preserve", "--all", cwd=repo)
    assert_all_preserved(sessions, repo)
    ao("ao-restore", cwd=repo)
    assert_all_restored(sessions, before, repo)


def test_signal_with_parallel_jobs_starts_nothing_new(repo, worktrees, tmp_path):
    sessions = make_sessions(repo, worktrees, 6, detached=False)
    before = {sid: state(wt) for sid, (_, wt) in sessions.items()}
    res = ao("ao-preserve", "--all", "-j", "2", "--json", cwd=repo, rc=143,
             env={"GIT_AO_CRASH_AT": "preserve:after-capture", "GIT_AO_CRASH_SIGNAL": "TERM"})
    results = json.loads(res.stdout)["results"]
    started = [r for r in results if not r["message"].startswith("not started")]
    assert 1 <= len(started) <= 2, results  # at most the two in flight
    for r in started:  # every session that started reached its end
        assert r["status"] == "ok", r
        assert not sessions[r["id"]][1].exists()
    assert_work_safe(sessions, before, tmp_path)
    ao("ao-preserve", "--all", cwd=repo)
    ao("ao-restore", cwd=repo)
    assert_all_restored(sessions, before, repo)


def test_timeout_spent_leaves_the_rest_live(repo, worktrees, tmp_path):
    sessions = make_sessions(repo, worktrees, 3, detached=False)
    before = {sid: state(wt) for sid, (_, wt) in sessions.items()}
    # A budget of a microsecond is spent long before the first session ends.
    res = ao("ao-preserve", "--all", "-j", "1", "--timeout", "0.000001", cwd=repo, rc=1)
    assert "not started: --timeout spent; the session stays live" in res.stdout
    assert states(repo)["s02"] == "live" and sessions["s02"][1].is_dir()
    assert ref_of(repo, "s02") is None
    assert_work_safe(sessions, before, tmp_path)


def test_timeout_zero_starts_nothing(repo, worktrees):
    # --timeout 0 is a spent budget, not "no timeout" (it once was read as falsy).
    sessions = make_sessions(repo, worktrees, 2, detached=False)
    res = ao("ao-preserve", "--all", "--timeout", "0", cwd=repo, rc=1)
    assert res.stdout.count("not started") == 2
    assert all(wt.is_dir() for _, wt in sessions.values())
    assert set(states(repo).values()) == {"live"}


@pytest.mark.parametrize("command", ["preserve", "restore"])
def test_a_timeout_reached_with_nothing_hanging_says_to_give_more_time(
        repo, worktrees, command):
    """The limit was short, no filter or driver hung: the failure says the limit
    was reached and how to raise it, not to wait until nothing hangs."""
    import time

    from tests.support import commit_on, dirty
    from tests.test_live_agents import _paused_at
    wt = worktrees(repo, "short")
    dirty(wt)
    if command == "restore":
        ao("ao-preserve", "short", cwd=repo)
        commit_on(repo, "short", {"other.txt": "upstream\n"})  # a checkout restore
    point = "preserve:after-capture" if command == "preserve" else \
        "restore:after-worktree-add"
    with _paused_at(point, [f"ao-{command}", "--timeout", "1", "--json", "short"],
                    repo) as result:
        time.sleep(1.2)  # past the deadline while stopped: the next git is not started
    out, err, rc = result[0]
    [r] = json.loads(out)["results"]
    assert rc == 1 and r["status"] == "failed" and r["timed_out"], (out, err)
    assert "nothing hangs" not in r["message"], r["message"]
    assert "--timeout of 1 s was reached" in r["message"], r["message"]
    assert "longer --timeout" in r["message"] and f"{command}.timeout" in r["message"], r
    assert states(repo)["short"] == ("live" if command == "preserve" else "pending")
