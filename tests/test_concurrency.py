"""Concurrency: two `git ao-preserve --all` and one `git ao-restore`
started at the same moment over 10 sessions. No work is lost, none is applied
twice, no database error, and each session is handled once per saving.

The per-session flock (store.lock) serialises commands on one session, and
each lifecycle step reads the session again under the lock, so the second
preserve finds a session the first one saved already preserved."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from tests.support import (
    BIN,
    ao,
    assert_all_preserved,
    assert_all_restored,
    assert_work_safe,
    integrity_ok,
    json_results,
    make_sessions,
)
from tests.worktree_state import state


def _start_together(argvs, cwd):
    """Start every argv at the same moment (a barrier); return their CompletedProcess."""
    barrier = threading.Barrier(len(argvs))
    results = [None] * len(argvs)

    def go(i):
        barrier.wait()
        results[i] = subprocess.run(argvs[i], cwd=cwd, capture_output=True, text=True, check=False)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(len(argvs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def _outcomes(res):
    return {(r["id"], r["action"], r["status"]) for r in json_results(res)}


@pytest.mark.slow
def test_two_preserves_and_a_restore_at_once(repo, make_repo, worktrees, tmp_path):
    other = make_repo()
    sessions = make_sessions(repo, worktrees, 10, other=other)
    before = {sid: state(wt) for sid, (_, wt) in sessions.items()}
    # Half of them are pending already, so the restore has work while both preserves run.
    ao("ao-preserve", *[s for s in sessions if int(s[1:]) % 2], cwd=repo)
    pre = str(BIN / "git-ao-preserve")
    p1, p2, r = _start_together([[pre, "--all", "--json", "-j", "2"],
                                 [pre, "--all", "--json", "-j", "2"],
                                 [str(BIN / "git-ao-restore"), "--json"]], repo)
    for res in (p1, p2, r):
        assert res.returncode == 0, res.stdout + res.stderr
        assert "database" not in res.stderr and "Traceback" not in res.stderr, res.stderr
    integrity_ok()
    assert_work_safe(sessions, before, tmp_path)
    saved = [o for res in (p1, p2) for o in _outcomes(res) if o[2] == "ok"]
    restored = [o for o in _outcomes(r) if o[2] == "ok"]
    for sid in sessions:
        n_saved = sum(1 for o in saved if o[0] == sid)
        n_restored = sum(1 for o in restored if o[0] == sid)
        # A session is saved at most once more than it was restored in between.
        assert n_saved <= 1 + n_restored, (sid, saved, restored)
        assert n_restored <= 1, sid
    # Whatever order they ran in, plain runs finish the job exactly once.
    ao("ao-preserve", "--all", cwd=repo)
    assert_all_preserved(sessions, repo)
    ao("ao-restore", cwd=repo)
    assert_all_restored(sessions, before, repo)


def test_two_restores_at_once_apply_once(repo, worktrees, tmp_path):
    sessions = make_sessions(repo, worktrees, 10)
    before = {sid: state(wt) for sid, (_, wt) in sessions.items()}
    ao("ao-preserve", "--all", cwd=repo)
    rest = str(BIN / "git-ao-restore")
    r1, r2 = _start_together([[rest, "--json"], [rest, "--json"]], repo)
    for res in (r1, r2):
        assert res.returncode == 0, res.stdout + res.stderr
    done = [o[0] for res in (r1, r2) for o in _outcomes(res) if o[2] == "ok"]
    assert sorted(done) == sorted(sessions)  # each session restored by exactly one of them
    integrity_ok()
    assert_all_restored(sessions, before, repo)


def test_a_preserve_of_all_started_while_a_restore_runs_saves_what_it_brings_back(
        repo, worktrees, tmp_path):
    """A restore stopped after its first session (SIGSTOP at a crash point) while a
    `preserve --all` starts: the preserve waits for the restore to end and then
    preserves every session it brought back, none left live, unsaved and unnamed."""
    import os
    import signal
    import time

    sessions = make_sessions(repo, worktrees, 4)
    before = {sid: state(wt) for sid, (_, wt) in sessions.items()}
    ao("ao-preserve", "--all", cwd=repo)
    env = {**os.environ, "GIT_AO_CRASH_AT": "restore:between-sessions:1",
           "GIT_AO_CRASH_SIGNAL": "STOP"}
    rest = subprocess.Popen([str(BIN / "git-ao-restore"), "-j", "1"], cwd=repo, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while "T" not in Path(f"/proc/{rest.pid}/stat").read_text().split()[2]:
            assert time.monotonic() < deadline, "the restore never stopped"
            time.sleep(0.05)
        pre = subprocess.Popen([str(BIN / "git-ao-preserve"), "--all", "--json"], cwd=repo,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(2)
    finally:
        os.kill(rest.pid, signal.SIGCONT)
    out, err = rest.communicate(timeout=120)
    assert rest.returncode == 0, out + err
    pout, perr = pre.communicate(timeout=120)
    assert pre.returncode == 0, pout + perr
    done = sorted(o[0] for o in _outcomes(subprocess.CompletedProcess([], 0, pout, perr))
                  if o[2] == "ok")
    assert done == sorted(sessions), pout + perr
    assert_all_preserved(sessions, repo)
    ao("ao-restore", cwd=repo)
    assert_all_restored(sessions, before, repo)
