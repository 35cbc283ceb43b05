"""Errors a new user meets: git's message kept where it matters, a log that cannot
be written or read said once, numbers that are not numbers refused, one time
format everywhere."""

import json
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import BIN, ao

LOCKED = ("fatal: Unable to create '/r/.git/worktrees/w/index.lock': File exists.\n\n"
          "Another git process seems to be running in this repository, e.g.\n"
          "an editor opened by 'git commit'. Please make sure all processes\n"
          "are terminated then try again. If it still fails, a git process\n"
          "may have crashed in this repository earlier:\n"
          "remove the file manually to continue.\n")


def test_git_error_keeps_the_fatal_line_not_the_last_one():
    from git_ao.errors import GitError
    exc = GitError(["read-tree", "HEAD"], 128, LOCKED)
    assert "index.lock': File exists." in str(exc)
    assert "remove the file manually" not in str(exc)
    assert "\n" not in str(exc)


def test_git_message_keeps_errors_and_drops_hints():
    from git_ao.errors import git_message
    err = ("hint: Waiting for your editor\nerror: 'dir/f' is in the way\n"
           "hint: use --force\nfatal: could not apply\n")
    assert git_message(err, 1) == "error: 'dir/f' is in the way; fatal: could not apply"
    assert git_message("hint: x\nsomething went wrong\nhint: y\n", 1) == "something went wrong"
    assert git_message("", 5) == "exit status 5"


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_preserve_timeout_refuses_what_is_not_a_finite_number(repo, value):
    res = ao("ao-preserve", "--all", "--timeout", value, "-n", cwd=repo, rc=129)
    assert "--timeout" in res.stderr


def test_a_log_that_is_a_directory_is_said_once(repo, worktrees, ao_env):
    wt = worktrees(repo, "s1")
    (wt / "new.txt").write_text("work\n")
    log_dir = ao_env / "aodata" / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    for f in log_dir.iterdir():
        f.unlink()
    (log_dir / "git-ao.log").mkdir()
    res = ao("ao", "log", cwd=repo, rc=128)
    assert res.stderr.startswith("fatal: cannot read the log ")
    assert "internal error" not in res.stderr
    res = ao("ao-preserve", "s1", cwd=repo)
    warnings = [ln for ln in res.stderr.splitlines() if "cannot write the log" in ln]
    assert len(warnings) == 1 and warnings[0].startswith("warning: "), res.stderr
    assert not wt.exists()


def test_one_time_format_everywhere(repo, worktrees):
    wt = worktrees(repo, "s1")
    (wt / "new.txt").write_text("work\n")
    ao("ao-preserve", "s1", cwd=repo)
    stamp = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
    entries = json.loads(ao("ao", "log", "--json", cwd=repo).stdout)["entries"]
    assert entries and all(stamp.match(e["time"]) for e in entries)
    (rec,) = json.loads(ao("ao", "list", "--json", cwd=repo).stdout)["sessions"]
    assert stamp.match(rec["saved_at"]) and stamp.match(rec["created_at"])
    show = ao("ao", "show", "s1", cwd=repo).stdout
    assert re.search(r"^saved_at: +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", show, re.MULTILINE)


def _old_git(tmp_path):
    bindir = tmp_path / "old-git"
    bindir.mkdir()
    (bindir / "git").write_text("#!/bin/sh\necho 'git version 2.30.1'\n")
    (bindir / "git").chmod(0o755)
    return bindir


def test_a_git_older_than_the_floor_is_named_and_nothing_runs(tmp_path, repo):
    env = dict(os.environ, PATH=f"{_old_git(tmp_path)}:{os.environ['PATH']}")
    res = subprocess.run([sys.executable, str(BIN / "git-ao"), "list"], cwd=repo, env=env,
                         capture_output=True, text=True, check=False)
    assert (res.returncode, res.stdout) == (128, "")
    assert res.stderr == "fatal: git 2.36 or newer is needed; this is git 2.30.1\n"


def test_the_version_is_asked_again_of_another_git(tmp_path, repo, monkeypatch):
    from git_ao.errors import Fatal
    from git_ao.git import version
    monkeypatch.chdir(repo)
    version.check_version()  # the real git, remembered
    monkeypatch.setenv("PATH", f"{_old_git(tmp_path)}:{os.environ['PATH']}")
    with pytest.raises(Fatal, match="this is git 2.30.1"):
        version.check_version()
