"""Random-kill soak: `git ao-preserve --all` and `git ao-restore` over 8
sessions in two repositories, SIGKILLed at random moments many times in a row.
After every kill the work of every session is in its live worktree or in its
ref, and the database is sound; at the end, plain runs converge to every session
back exactly as it was.

Bounded by counts, not by time: a fixed seed, SOAK_KILLS kills in at most
SOAK_RUNS runs. The kill delays are drawn as fractions of how long a run takes
on this machine now (measured first, then following the runs that finish), so a
loaded machine kills as often as an idle one, also when the load changes.
The process killed is git-ao itself (the Python process, as a crash point
would); the git commands it started are left to finish, as they would after a
crash of their parent, before the next run starts.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time

import pytest

from tests.support import (
    BIN,
    ao,
    assert_all_restored,
    assert_work_safe,
    integrity_ok,
    make_sessions,
)
from tests.worktree_state import state

SEED = 20261129
SOAK_KILLS = 20
SOAK_RUNS = 80


def _wait_group_gone(pgid, limit=30.0):
    """Wait until every process of the group (git children of the killed run) has exited."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.01)
    raise AssertionError(f"process group {pgid} still alive")


def _run_and_kill(argv, cwd, delay) -> float | None:
    """Start argv (a bin/ script, so the pid is git-ao's own), SIGKILL it after `delay`
    seconds unless it finished. Returns None when it was killed, else how long
    it ran (seconds)."""
    start = time.monotonic()
    p = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        p.wait(timeout=delay)
        took: float | None = time.monotonic() - start
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGKILL)
        p.wait()
        took = None
    _wait_group_gone(p.pid)
    return took


@pytest.mark.slow
def test_random_kills_lose_nothing(repo, make_repo, worktrees, tmp_path):
    other = make_repo()
    sessions = make_sessions(repo, worktrees, 8, other=other)
    before = {sid: state(wt) for sid, (_, wt) in sessions.items()}
    rng = random.Random(SEED)
    commands = [[str(BIN / "git-ao-preserve"), "--all", "-q"], [str(BIN / "git-ao-restore"), "-q"]]
    # A dry run does the start-up and the reading a real run does first.
    t0 = time.monotonic()
    subprocess.run([str(BIN / "git-ao-preserve"), "--all", "-n", "-q"], cwd=repo, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run_time = time.monotonic() - t0
    kills = runs = 0
    start = time.monotonic()
    while kills < SOAK_KILLS and runs < SOAK_RUNS:
        argv = rng.choice(commands)
        # Start-up is a large part of a run; aim past it most of the time.
        delay = rng.uniform(0.2, 2.5) * run_time
        runs += 1
        took = _run_and_kill(argv, repo, delay)
        if took is None:
            kills += 1
            assert_work_safe(sessions, before, tmp_path)
            integrity_ok()
        else:
            # The load changes while the test runs: aim by the runs that finished
            # lately, not by the first measurement alone.
            run_time = (run_time + took) / 2
    print(f"soak: {kills} kills in {runs} runs, {time.monotonic() - start:.1f}s")
    assert kills >= 8, f"only {kills} kills in {runs} runs"
    # Convergence: restore what is pending, finish any interrupted preserve, restore again.
    ao("ao-restore", cwd=repo, rc=None)
    ao("ao-preserve", "--all", cwd=repo)
    ao("ao-restore", cwd=repo)
    assert_all_restored(sessions, before, repo)
    integrity_ok()
