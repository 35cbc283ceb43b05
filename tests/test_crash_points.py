"""The crash matrix: SIGKILL at every named point of preserve and restore,
then (a) every byte of every session's work is in its live worktree or in its ref,
(b) the database passes `PRAGMA integrity_check`, (c) running the same command
again reaches the fully done state, the work neither lost nor applied twice.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from git_ao import crashpoint
from tests.support import (
    KILLED,
    REF,
    ao,
    assert_all_preserved,
    assert_all_restored,
    assert_work_safe,
    crash_env,
    git,
    integrity_ok,
    make_sessions,
    ref_of,
)
from tests.trash_helpers import SLOW_PATH_POINTS, checkout_path_only
from tests.worktree_state import same_but_ignored, state

# ---------------------------------------------------------------- the matrix

PRESERVE_POINTS = [p for p in crashpoint.POINTS if p.startswith("preserve:")]
RESTORE_POINTS = [p for p in crashpoint.POINTS if p.startswith("restore:")]


@pytest.fixture
def three(repo, worktrees):
    """Three sessions: full dirty mix, untracked only, clean (sorted in that order)."""
    sessions = make_sessions(repo, worktrees, 3, kinds=[0, 1, 3])
    before = {sid: state(wt) for sid, (_, wt) in sessions.items()}
    return sessions, before


def test_points_are_named_once_and_placed():
    assert len(set(crashpoint.POINTS)) == len(crashpoint.POINTS) == 20
    src = "".join(p.read_text() for p in (Path(crashpoint.__file__).parent).glob("**/*.py")
                  if p.name != "crashpoint.py")
    for point in crashpoint.POINTS:
        assert f'"{point}"' in src, point


# Every point on the first session; on the second (the kill in the middle of a run)
# for the points where what follows the killed session matters.
@pytest.mark.parametrize("point", [f"{p}:1" for p in PRESERVE_POINTS] + [
    f"{p}:2" for p in ("preserve:after-db", "preserve:after-rename",
                       "preserve:between-sessions")])
def test_crash_in_preserve(point, repo, three, tmp_path):
    sessions, before = three
    res = ao("ao-preserve", "--all", "-j", "1", cwd=repo, rc=None, env=crash_env(point))
    assert res.returncode == KILLED, (point, res.stderr)
    assert_work_safe(sessions, before, tmp_path)
    integrity_ok()
    ao("ao-preserve", "--all", "-j", "1", cwd=repo)
    assert_all_preserved(sessions, repo)
    assert_work_safe(sessions, before, tmp_path)
    ao("ao-restore", cwd=repo)
    assert_all_restored(sessions, before, repo)


@pytest.mark.parametrize("point", [f"{p}:{n}" for p in RESTORE_POINTS for n in (1, 2)
                                   if n == 1 or p in ("restore:between-sessions",
                                                      "restore:after-db")])
def test_crash_in_restore(point, repo, three, tmp_path):
    sessions, before = three
    ao("ao-preserve", "--all", cwd=repo)
    if point.rpartition(":")[0] in SLOW_PATH_POINTS:
        checkout_path_only()
    res = ao("ao-restore", "-j", "1", cwd=repo, rc=None, env=crash_env(point))
    assert res.returncode == KILLED, (point, res.stderr)
    assert_work_safe(sessions, before, tmp_path)
    integrity_ok()
    ao("ao-restore", cwd=repo)
    assert_all_restored(sessions, before, repo)


def test_restore_killed_before_apply_then_preserve_keeps_the_worktree(repo, three, tmp_path):
    """A restore killed after `git worktree add` leaves a clean worktree while the
    session is still pending: preserve --all must not take it away as if it held
    the work (only the ref does), and restore then finishes."""
    sessions, before = three
    ao("ao-preserve", "--all", cwd=repo)
    checkout_path_only()
    ao("ao-restore", "s00", cwd=repo, rc=None, env=crash_env("restore:during-apply"))
    wt = sessions["s00"][1]
    assert wt.is_dir()
    res = ao("ao-preserve", "--all", cwd=repo, rc=1)
    assert "changed since" in res.stdout
    assert wt.is_dir() and ref_of(repo, "s00")
    ao("ao-restore", cwd=repo)
    assert_all_restored(sessions, before, repo)


def test_restore_killed_after_ref_delete_then_preserve_keeps_the_worktree(repo, three, tmp_path):
    """The ref is gone and the row still says pending: the worktree is the work's only
    home, so preserve --all leaves it, and restore recognises it."""
    sessions, before = three
    ao("ao-preserve", "--all", cwd=repo)
    # -j 1: the first pass of the point is s00's, as the matrix assumes.
    ao("ao-restore", "-j", "1", cwd=repo, rc=None, env=crash_env("restore:after-ref-delete"))
    assert ref_of(repo, "s00") is None
    ao("ao-preserve", "--all", cwd=repo, rc=None)
    assert_work_safe(sessions, before, tmp_path)
    assert sessions["s00"][1].is_dir()
    ao("ao-restore", cwd=repo)
    assert_all_restored(sessions, before, repo)


def test_half_applied_worktree_is_set_aside_and_restored_again(repo, three, tmp_path):
    """A kill in the middle of `git stash apply` leaves some files written and others
    not. The row says this restore started and never finished, so no agent worked
    there: the rerun moves that worktree into the trash (nothing in it is lost) and
    restores again, exactly."""
    sessions, before = three
    ao("ao-preserve", "--all", cwd=repo)
    checkout_path_only()
    ao("ao-restore", "s00", cwd=repo, rc=None, env=crash_env("restore:during-apply"))
    wt = sessions["s00"][1]
    # What an interrupted apply leaves: one tracked file rewritten, nothing else.
    git("checkout", REF + "s00", "--", "src/app.py", cwd=wt)
    git("reset", "-q", cwd=wt)
    half = (wt / "src" / "app.py").read_bytes()
    res = ao("ao-restore", cwd=repo)
    assert "s00" in res.stdout
    assert same_but_ignored(before["s00"], state(wt))
    assert git("for-each-ref", REF + "s00", cwd=repo) == ""
    integrity_ok()
    trash = os.path.join(os.environ["AO_DATA_DIR"], "trash")
    # The preserve's removal, then the worktree the rerun set aside.
    kept = sorted((n for n in os.listdir(trash) if n.startswith("s00.")),
                  key=lambda n: int(n.split(".")[1]))
    assert len(kept) == 2
    with open(os.path.join(trash, kept[-1], "worktree", "src", "app.py"), "rb") as fh:
        assert fh.read() == half
