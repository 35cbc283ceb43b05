"""Hostile environment: a data dir or database owned by another user is
refused; loose modes are tightened; modes stay 0700/0600 under umask 000; a
read-only data dir makes preserve refuse before any removal; a full disk while
writing the ref or the row aborts that session with its worktree intact.

Ownership tests need root (to chown); the read-only and full-disk tests mount a
small tmpfs and are skipped where mounting is not allowed."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import subprocess
import time
from pathlib import Path

import pytest

from tests import support
from tests.support import (
    ao,
    assert_all_restored,
    assert_work_safe,
    db_path,
    dirty,
    git,
    init_repo,
    make_sessions,
    states,
)
from tests.worktree_state import same_but_ignored, state

NOBODY = 65534
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")



@pytest.fixture(autouse=True)
def _real_processes(monkeypatch):
    """Every command runs as its own process here: these tests remount and fill the
    file system under the data dir, which a database left open in the test process
    would keep busy."""
    monkeypatch.setenv("GIT_AO_TEST_PROCESSES", "1")


def _mode(p):
    return stat.S_IMODE(os.lstat(p).st_mode)


def tmpfs(path: Path, size="2m"):
    """A small tmpfs at `path`, private to its owner."""
    return support.tmpfs(path, size, mode="0700")


def _fill(path: Path):
    """Write a filler file until the filesystem at `path` is full (to the last byte)."""
    fd = os.open(path / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 4096, 512, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)


@root_only
@pytest.mark.parametrize("what", ["dir", "db"])
def test_foreign_owner_is_refused(what, repo, worktrees):
    sessions = make_sessions(repo, worktrees, 1)
    target = db_path().parent if what == "dir" else db_path()
    os.chown(target, NOBODY, NOBODY)
    try:
        for args in (["ao", "list"], ["ao-preserve", "--all"]):
            res = ao(*args, cwd=repo, rc=128)
            assert f"is owned by uid {NOBODY}, not by you" in res.stderr, res.stderr
        assert sessions["s00"][1].is_dir()
    finally:
        os.chown(target, 0, 0)


def test_loose_modes_are_tightened(repo, worktrees):
    make_sessions(repo, worktrees, 1)
    data = db_path().parent
    os.chmod(data, 0o777)
    os.chmod(db_path(), 0o666)
    ao("ao", "list", cwd=repo)
    assert _mode(data) == 0o700 and _mode(db_path()) == 0o600


def test_modes_under_umask_000(repo, worktrees, tmp_path):
    old = os.umask(0)
    try:
        sessions = make_sessions(repo, worktrees, 2)
        before = {sid: state(wt) for sid, (_, wt) in sessions.items()}
        ao("ao-preserve", "--all", cwd=repo)
        ao("ao-restore", cwd=repo)
        ao("ao-prune", "--expire", "now", cwd=repo)
        assert_all_restored(sessions, before, repo)
        time.sleep(0.1)  # out of the racy window: the checkpoint writes its stat file
        ao("ao", "checkpoint", "--all", cwd=repo)
        assert ao("ao", "checkpoint", "--all", "--json", cwd=repo).stdout.count(
            '"unchanged": true') == 2
    finally:
        os.umask(old)
    data = db_path().parent
    seen = 0
    for entry in [data, *data.iterdir()]:
        children = list(entry.iterdir()) if entry.is_dir() and entry != data else []
        for p in [entry, *children]:
            want = 0o700 if p.is_dir() else 0o600
            assert _mode(p) == want, f"{p}: {_mode(p):o}"
            seen += 1
    assert seen >= 5  # the dir, the db, logs/ and its file, locks/ and its files


def test_read_only_data_dir_refuses_before_any_removal(repo, worktrees, tmp_path, monkeypatch):
    with tmpfs(tmp_path / "ro") as mnt:
        data = mnt / "aodata"
        monkeypatch.setenv("AO_DATA_DIR", str(data))
        sessions = make_sessions(repo, worktrees, 2)
        before = {sid: state(wt) for sid, (_, wt) in sessions.items()}
        ao("ao", "list", cwd=repo)
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        res = ao("ao-preserve", "--all", cwd=repo, rc=128)
        assert "is not writable (read-only?); nothing is changed" in res.stderr, res.stderr
        for sid, (_, wt) in sessions.items():
            assert same_but_ignored(before[sid], state(wt)), sid
        subprocess.run(["mount", "-o", "remount,rw", str(mnt)], check=True)
        assert set(states(repo).values()) == {"live"}
        ao("ao-preserve", "--all", cwd=repo)
        ao("ao-restore", cwd=repo)
        assert_all_restored(sessions, before, repo)


def test_full_disk_while_writing_the_row(repo, worktrees, tmp_path, monkeypatch):
    with tmpfs(tmp_path / "full", size="1m") as mnt:
        monkeypatch.setenv("AO_DATA_DIR", str(mnt / "aodata"))
        sessions = make_sessions(repo, worktrees, 2, detached=False)
        before = {sid: state(wt) for sid, (_, wt) in sessions.items()}
        # An open reader keeps the WAL and its index in place (as a running command
        # would), so the preserve opens the database and fails at its first write.
        held = sqlite3.connect(db_path())
        held.execute("SELECT count(*) FROM sessions").fetchone()
        try:
            _fill(mnt)
            res = ao("ao-preserve", "--all", "-j", "1", cwd=repo, rc=1)
        finally:
            held.close()
        assert res.stdout.count("database or disk is full") == 2, res.stdout + res.stderr
        for sid, (_, wt) in sessions.items():
            assert same_but_ignored(before[sid], state(wt)), sid
        (mnt / "filler").unlink()
        assert set(states(repo).values()) == {"live"}
        ao("ao-preserve", "--all", cwd=repo)
        ao("ao-restore", cwd=repo)
        assert_all_restored(sessions, before, repo)


def test_full_disk_at_open_refuses_everything(repo, worktrees, tmp_path, monkeypatch):
    with tmpfs(tmp_path / "full", size="1m") as mnt:
        monkeypatch.setenv("AO_DATA_DIR", str(mnt / "aodata"))
        sessions = make_sessions(repo, worktrees, 1, detached=False)
        _fill(mnt)
        res = ao("ao-preserve", "--all", cwd=repo, rc=128)
        assert "cannot be used" in res.stderr and "doctor --recover" not in res.stderr
        assert sessions["s00"][1].is_dir()
        # doctor --recover does not take a full disk for damage: nothing is moved aside.
        ao("ao", "doctor", "--recover", cwd=repo, rc=None)
        assert not [n for n in os.listdir(mnt / "aodata") if ".damaged." in n]


def _dirty_session_on(mnt: Path) -> tuple[Path, Path]:
    """A repository and a registered, dirty session "full" inside the file system at
    `mnt` (its objects and its worktree both on it)."""
    repo = mnt / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "main", repo, cwd=mnt)
    init_repo(repo)
    wt = mnt / "wt"
    git("worktree", "add", "-q", "-b", "full", wt, cwd=repo)
    ao("ao", "add", wt, "--id", "full", cwd=repo)
    dirty(wt)
    return repo, wt


def test_full_disk_while_writing_the_ref(tmp_path, worktrees):
    with tmpfs(tmp_path / "repofs", size="2m") as mnt:
        repo, wt = _dirty_session_on(mnt)
        (wt / "big.txt").write_bytes(os.urandom(200_000))  # new objects must be written
        before = state(wt)
        _fill(mnt)
        res = ao("ao-preserve", "--all", cwd=repo, rc=None)
        assert res.returncode in (1, 128), res.stdout + res.stderr
        assert "internal error" not in res.stderr, res.stderr
        assert same_but_ignored(before, state(wt))
        assert states(repo) == {"full": "live"}
        (mnt / "filler").unlink()
        ao("ao-preserve", "--all", cwd=repo)
        assert not wt.exists()
        assert_work_safe({"full": (repo, wt)}, {"full": before}, tmp_path)
        ao("ao-restore", cwd=repo)
        assert same_but_ignored(before, state(wt))


@pytest.mark.parametrize("room", [0, 60_000, 150_000, 400_000])
def test_full_disk_during_the_checkout_and_apply_restore(tmp_path, room):
    """The worktree's file system fills up while restore checks out and applies:
    the outcome says what state the session is in, the ref and the trash copy are
    kept, and once there is room again the rerun brings back all of it."""
    from tests.trash_helpers import checkout_path_only
    with tmpfs(tmp_path / "repofs", size="4m") as mnt:
        repo, wt = _dirty_session_on(mnt)
        (wt / "big.txt").write_bytes(os.urandom(300_000))
        (wt / "README.md").write_text("changed\n" * 30_000)
        before = state(wt)
        ao("ao-preserve", "full", cwd=repo)
        checkout_path_only()
        _fill(mnt)
        if room:
            with open(mnt / "filler", "r+b") as fh:
                fh.truncate(os.path.getsize(mnt / "filler") - room)
        res = ao("ao-restore", cwd=repo, rc=1)
        assert "nothing applied" not in res.stdout, res.stdout
        assert "the session is pending" in res.stdout or "stays pending" in res.stdout
        assert "internal error" not in res.stderr, res.stderr
        assert git("rev-parse", "-q", "--verify", "refs/ao/preserved/full", cwd=repo,
                   check=False).strip(), res.stdout
        assert states(repo)["full"] == "pending", res.stdout
        (mnt / "filler").unlink()
        again = ao("ao-restore", cwd=repo, rc=None)
        assert again.returncode == 0, again.stdout + again.stderr
        assert same_but_ignored(before, state(wt)), again.stdout
        assert states(repo)["full"] == "live"


def test_a_mount_at_a_pending_sessions_path_is_named_and_left_alone(repo, worktrees, tmp_path):
    wt = worktrees(repo, "mounted")
    (wt / "work.txt").write_text("saved\n")
    ao("ao-preserve", "mounted", cwd=repo)
    with tmpfs(wt) as mnt:
        (mnt / "theirs.txt").write_text("not git-ao's\n")
        res = ao("ao-restore", "mounted", cwd=repo, rc=1)
        assert f"'{wt}' is a mount point and not a worktree of this repository; nothing " \
            "there is touched (still pending)" in res.stdout, res.stdout
        assert os.listdir(mnt) == ["theirs.txt"]
        assert states(repo)["mounted"] == "pending"
    ao("ao-restore", "mounted", cwd=repo)
    assert (wt / "work.txt").read_text() == "saved\n"
