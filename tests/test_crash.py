"""The crash matrix (issue 4): SIGKILL at every named point of preserve and restore,
then (a) every byte of every session's work is in its live worktree or in its ref,
(b) the database passes `PRAGMA integrity_check`, (c) running the same command
again reaches the fully done state, the work neither lost nor applied twice.

The helpers here are shared by the soak, concurrency and recovery tests."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from pathlib import Path

import pytest

from git_ao import crashpoint
from tests.trash_helpers import SLOW_PATH_POINTS, checkout_path_only
from tests.conftest import ao, dirty, git
from tests.worktree_state import same_but_ignored, state

REF = "refs/ao/preserved/"
KILLED = 128 + signal.SIGKILL  # what git reports for a dashed command killed by SIGKILL


# ---------------------------------------------------------------- shared helpers


def make_sessions(repo, worktrees, n, *, other=None, detached=True, kinds=None):
    """n registered sessions s00, s01, ... with varied work; returns {id: (repo, path)}.

    The mix, in turn: the full dirty() fixture (staged, unstaged, deleted,
    untracked, symlink, mode change, ignored), untracked only, staged only,
    clean, and (detached=True) a detached HEAD with a change. kinds: the list of
    mix numbers to use instead. Sessions alternate between `repo` and `other`."""
    out = {}
    for i in range(n):
        r = other if other is not None and i % 2 else repo
        sid = f"s{i:02d}"
        wt = worktrees(r, sid, register=False)
        kind = kinds[i] if kinds else i % 5
        if kind < 4:
            add_work(wt, kind, str(i))
        elif detached:
            git("checkout", "-q", "--detach", cwd=wt)
            (wt / "src" / "app.py").write_text(f"print({i})\n")
        ao("ao", "add", wt, "--id", sid, cwd=r)
        out[sid] = (Path(r), wt)
    return out


def add_work(wt, kind, tag):
    """Work of one kind in worktree `wt`: 0 the full dirty() fixture, 1 an untracked
    file only, 2 a staged change only, 3 none (clean). `tag` makes it distinct."""
    if kind == 0:
        dirty(wt)
    elif kind == 1:
        (wt / f"notes-{tag}.txt").write_text(f"untracked {tag}\n" * 50)
    elif kind == 2:
        (wt / "README.md").write_text(f"hello\nstaged {tag}\n")
        git("add", "README.md", cwd=wt)


def db_path() -> Path:
    return Path(os.environ["AO_DATA_DIR"]) / "git-ao.db"


def integrity_ok():
    """(b): PRAGMA integrity_check of the database is 'ok'."""
    conn = sqlite3.connect(db_path())
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


def ref_of(repo, sid):
    out = git("rev-parse", "-q", "--verify", REF + sid, cwd=repo, check=False).strip()
    return out or None


def _comparable(st):
    return {k: v for k, v in st.items() if k not in ("ignored", "branch")}


def work_in_ref(repo, sid, before, scratch) -> bool:
    """Does refs/ao/preserved/<sid> hold exactly `before` (HEAD, index, files)?
    Checked by `git stash apply --index` of the ref into a scratch worktree."""
    ref = ref_of(repo, sid)
    if ref is None:
        return False
    head = git("rev-parse", f"{ref}^1", cwd=repo).strip()
    git("worktree", "add", "-q", "--detach", scratch, head, cwd=repo)
    try:
        git("stash", "apply", "--index", ref, cwd=scratch)
        return _comparable(state(scratch)) == _comparable(before)
    finally:
        git("worktree", "remove", "--force", scratch, cwd=repo)


def assert_work_safe(sessions, before, tmp):
    """(a): every session's work is in its live worktree or in its ref. A clean
    session with no ref is safe when its branch (or, detached, nothing) still holds HEAD."""
    for sid, (repo, wt) in sessions.items():
        b = before[sid]
        if wt.is_dir():
            try:
                if same_but_ignored(b, state(wt)):
                    continue
            except Exception:  # noqa: BLE001 - a half-made worktree is judged by its ref
                pass
        if work_in_ref(repo, sid, b, tmp / f"scratch-{sid}"):
            continue
        clean = not b["status"]
        if clean and b["branch"]:
            tip = git("rev-parse", "-q", "--verify", b["branch"].decode(), cwd=repo,
                      check=False).strip()
            if tip == b["head"].decode():
                continue
        raise AssertionError(f"work of session {sid} is neither in {wt} nor in {REF}{sid}")


def states(repo) -> dict:
    listed = json.loads(ao("ao", "list", "--json", cwd=repo).stdout)
    return {s["id"]: s["state"] for s in listed["sessions"]}


def assert_all_restored(sessions, before, repo):
    """The fully restored state: every session live, its worktree exactly as before
    (so nothing was applied twice), no preserve ref left."""
    assert set(states(repo).values()) == {"live"}, states(repo)
    for sid, (r, wt) in sessions.items():
        assert same_but_ignored(before[sid], state(wt)), sid
        assert ref_of(r, sid) is None, sid


def assert_all_preserved(sessions, repo):
    """The fully preserved state: every session pending, its directory gone, its
    registration gone, a ref for each one that had work."""
    assert set(states(repo).values()) == {"pending"}, states(repo)
    for sid, (r, wt) in sessions.items():
        assert not wt.exists(), sid
        listing = git("worktree", "list", "--porcelain", cwd=r)
        assert f"worktree {wt}\n" not in listing, sid


def crash_env(point):
    return {"GIT_AO_CRASH_AT": point}


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
    assert len(set(crashpoint.POINTS)) == len(crashpoint.POINTS) == 14
    src = "".join(p.read_text() for p in (Path(crashpoint.__file__).parent).glob("*.py")
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
