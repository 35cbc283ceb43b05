"""The user's programs that git runs (merge drivers, clean and smudge filters,
fsmonitor hooks, signing programs) never hold a shutdown or a boot past
`--timeout`: a session in flight has its git stopped with what git ran, nothing
removed, the worktree as it was, the outcome naming what hung; the next run
converges once the program is fixed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.support import ao, commit_on, git, ref_of, states
from tests.worktree_state import exact_state

# A bound on the test itself, so a regression fails instead of hanging the suite.
NO_HANG = 120


def _hanging(tmp_path: Path, name: str) -> Path:
    """A script that records that it ran, then waits far past any --timeout."""
    script = tmp_path / f"{name}.sh"
    script.write_text(f"#!/bin/sh\necho ran >> '{tmp_path}/{name}.ran'\nsleep 300\n")
    script.chmod(0o755)
    return script


def _ran(tmp_path: Path, name: str) -> bool:
    return (tmp_path / f"{name}.ran").exists()


def _left_running(script: Path) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["cmdline"]):
        if str(script) in " ".join(p.info["cmdline"] or []):
            out.append(p)
    return out


def _run(*args, cwd) -> tuple[int, list[dict]]:
    proc = subprocess.run(["git", *args, "--json"], cwd=cwd, capture_output=True, text=True,
                          timeout=NO_HANG, check=False)
    return proc.returncode, json.loads(proc.stdout)["results"] if proc.stdout else []


def _no_stale_locks(wt: Path) -> None:
    git_dir = Path(git("rev-parse", "--absolute-git-dir", cwd=wt).strip())
    common = Path(git("rev-parse", "--path-format=absolute", "--git-common-dir", cwd=wt).strip())
    for d in (git_dir, common):
        assert not [p for p in d.rglob("*.lock") if "ao-trash" not in str(p)], d


@pytest.mark.parametrize("where", ["status", "add"])
def test_a_hanging_clean_filter_during_preserve(repo, worktrees, tmp_path, where):
    hang = _hanging(tmp_path, "clean")
    git("config", "filter.h.clean", "cat", cwd=repo)
    git("config", "filter.h.smudge", "cat", cwd=repo)
    wt = worktrees(repo, "fl")
    (wt / ".gitattributes").write_text("*.txt filter=h\n")
    git("add", ".gitattributes", cwd=wt)
    git("commit", "-q", "-m", "attributes", cwd=wt)
    if where == "status":
        # same size, new mtime: git status must read the file through the filter
        (wt / "a.txt").write_text("one\n")
        git("add", "a.txt", cwd=wt)
        git("commit", "-q", "-m", "a", cwd=wt)
        os.utime(wt / "a.txt", (1_000_000, 1_000_000))
    else:
        (wt / "a.txt").write_text("the agent's untracked notes\n")
    other = worktrees(repo, "ok")
    (other / "README.md").write_text("hello\nsaved\n")
    before = exact_state(wt)  # the test's own git status must not run the hanging one
    git("config", "filter.h.clean", str(hang), cwd=repo)
    rc, results = _run("ao-preserve", "--all", "-j", "2", "--timeout", "3", cwd=repo)
    git("config", "filter.h.clean", "cat", cwd=repo)
    by_id = {r["id"]: r for r in results}
    assert rc == 1, results
    assert by_id["fl"]["status"] == "failed"
    assert str(hang) in by_id["fl"]["message"]
    assert "nothing was removed" in by_id["fl"]["message"]
    assert by_id["fl"]["hung"] and _ran(tmp_path, "clean")
    assert exact_state(wt) == before
    _no_stale_locks(wt)
    assert not _left_running(hang)
    assert states(repo) == {"fl": "live", "ok": "pending"}
    assert ref_of(repo, "fl") is None
    # fixed, the next run saves it
    ao("ao-preserve", "--all", cwd=repo)
    assert states(repo) == {"fl": "pending", "ok": "pending"}


def test_a_hanging_fsmonitor_hook_or_signing_program_never_runs(repo, worktrees, tmp_path):
    """git-ao's git reads no fsmonitor (a stale answer would hide a change) and signs
    nothing, so neither program can hold it."""
    hook, gpg = _hanging(tmp_path, "fsmonitor"), _hanging(tmp_path, "gpg")
    wt = worktrees(repo, "fm")
    for k, v in (("core.fsmonitor", str(hook)), ("commit.gpgSign", "true"),
                 ("gpg.program", str(gpg)), ("diff.h.textconv", str(hook))):
        git("config", k, v, cwd=repo)
    (wt / ".gitattributes").write_text("*.md diff=h\n")
    (wt / "README.md").write_text("hello\nsaved\n")
    (wt / "new.txt").write_text("new\n")
    rc, results = _run("ao-preserve", "--all", "--timeout", "30", cwd=repo)
    assert rc == 0, results
    for k in ("core.fsmonitor", "commit.gpgSign"):  # not for the test's own git
        git("config", "--unset", k, cwd=repo)
    commit_on(repo, "fm", {"other.txt": "moved\n"})
    git("config", "core.fsmonitor", str(hook), cwd=repo)
    git("config", "commit.gpgSign", "true", cwd=repo)
    rc, results = _run("ao-restore", "--timeout", "30", cwd=repo)
    assert rc == 0, results
    assert (wt / "README.md").read_text() == "hello\nsaved\n"
    assert not _ran(tmp_path, "fsmonitor") and not _ran(tmp_path, "gpg")


LOCK = "".join(f"pkg-{n} 1.0.{n}\n" for n in range(12))


def test_a_hanging_merge_driver_during_restore(repo, worktrees, tmp_path):
    hang = _hanging(tmp_path, "driver")
    git("config", "merge.h.driver", f"{hang} %O %A %B", cwd=repo)
    wt = worktrees(repo, "md")
    (wt / "package.lock").write_text(LOCK)
    (wt / ".gitattributes").write_text("package.lock merge=h\n")
    git("add", "-A", cwd=wt)
    git("commit", "-q", "-m", "lockfile", cwd=wt)
    (wt / "package.lock").write_text(LOCK.replace("pkg-11 1.0.11", "pkg-11 2.0.0"))
    ao("ao-preserve", "md", cwd=repo)
    commit = ref_of(repo, "md")
    commit_on(repo, "md", {"package.lock": LOCK.replace("pkg-0 1.0.0", "pkg-0 1.0.1")})
    rc, results = _run("ao-restore", "--timeout", "3", cwd=repo)
    (r,) = results
    assert rc == 1, results
    assert r["status"] == "failed" and "git stash" in r["message"]
    assert str(hang) in r["message"] and "stays pending" in r["message"]
    assert not _left_running(hang)
    _no_stale_locks(wt)
    assert states(repo) == {"md": "pending"}
    assert ref_of(repo, "md") == commit
    # fixed (git's own text merge), the next run converges
    git("config", "--unset", "merge.h.driver", cwd=repo)
    rc, results = _run("ao-restore", cwd=repo)
    assert rc == 0, results
    assert states(repo) == {"md": "live"}
    text = (wt / "package.lock").read_text()
    assert "pkg-11 2.0.0" in text and "pkg-0 1.0.1" in text


@pytest.mark.parametrize("filt", ["smudge", "clean"])
def test_a_hanging_filter_during_restore(repo, worktrees, tmp_path, filt):
    hang = _hanging(tmp_path, filt)
    wt = worktrees(repo, "sm")
    (wt / ".gitattributes").write_text("*.txt filter=h\n")
    (wt / "notes.txt").write_text("first\n")
    git("-c", "filter.h.clean=cat", "add", "-A", cwd=wt)
    git("-c", "filter.h.clean=cat", "commit", "-q", "-m", "notes", cwd=wt)
    git("config", "filter.h.clean", "cat", cwd=repo)
    git("config", "filter.h.smudge", "cat", cwd=repo)
    (wt / "notes.txt").write_text("first\nthe agent's notes\n")
    ao("ao-preserve", "sm", cwd=repo)
    commit = ref_of(repo, "sm")
    commit_on(repo, "sm", {"other.md": "moved on\n"})  # the checkout path
    git("config", f"filter.h.{filt}", str(hang), cwd=repo)
    rc, results = _run("ao-restore", "--timeout", "3", cwd=repo)
    (r,) = results
    assert rc == 1, results
    assert r["status"] == "failed" and str(hang) in r["message"], r
    assert not _left_running(hang)
    assert states(repo) == {"sm": "pending"}
    assert ref_of(repo, "sm") == commit
    git("config", f"filter.h.{filt}", "cat", cwd=repo)
    rc, results = _run("ao-restore", cwd=repo)
    assert rc in (0, 3), results
    assert states(repo) == {"sm": "live"}
    assert (wt / "notes.txt").read_text() == "first\nthe agent's notes\n"
    _no_stale_locks(wt)


def test_a_stopped_gits_lock_another_program_still_has_open_is_left(tmp_path):
    """A lock the stopped group held is removed only while it is the same file and
    nobody has it open: a program that left the group (a filter's daemon) and
    still holds it, or another git that made a lock of the same inode since, keeps
    it."""
    from git_ao.git import process
    lock = tmp_path / "index.lock"
    pidfile = tmp_path / "escaped.pid"
    ready = tmp_path / "ready"
    # The leader opens the lock, as git does; a grandchild leaves the group with
    # the descriptor still open and lives on.
    script = (
        "import os, sys, time\n"
        f"fd = os.open({str(lock)!r}, os.O_CREAT | os.O_EXCL | os.O_WRONLY)\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    null = os.open(os.devnull, os.O_RDWR)\n"
        "    for k in (0, 1, 2): os.dup2(null, k)\n"
        "    if os.fork() == 0:\n"
        f"        open({str(pidfile)!r}, 'w').write(str(os.getpid()))\n"
        "        time.sleep(60)\n"
        "    os._exit(0)\n"
        f"while not os.path.exists({str(pidfile)!r}): time.sleep(0.01)\n"
        f"open({str(ready)!r}, 'w').close()\n"
        "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, process_group=0)
    escaped = None
    try:
        for _ in range(500):
            if ready.exists():
                break
            time.sleep(0.01)
        escaped = int(pidfile.read_text())
        _hung, removed = process._stop_group(proc)
        assert removed == [] and lock.exists()
    finally:
        if escaped is not None:
            os.kill(escaped, signal.SIGKILL)
        proc.kill()
        proc.wait()
    # With nobody holding it, the same file is the stopped git's and goes.
    again = (f"import os, time\nfd = os.open({str(lock)!r}, os.O_WRONLY)\n"
             f"open({str(ready)!r} + '2', 'w').close()\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", again], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, process_group=0)
    for _ in range(500):
        if os.path.exists(str(ready) + "2"):
            break
        time.sleep(0.01)
    _hung, removed = process._stop_group(proc)
    assert removed == [str(lock)] and not lock.exists()
