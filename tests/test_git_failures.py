"""git_ao/git/process.py: how git's failures reach the rest of git-ao."""

import os

import pytest

from git_ao import git
from git_ao.errors import Usage
from tests.support import ao


def test_git_killed_by_a_signal_is_a_failed_command_not_a_crash(repo):
    # An alias that signals its own git process: git dies of SIGTERM, as under
    # systemd's stop. call() reports it as exit 128 + 15 instead of raising.
    res = git.call(["-c", "alias.die=!kill -TERM $PPID", "die"], str(repo))
    assert res.status == 128 + 15


def test_paths_with_a_newline_are_refused_clearly(repo, tmp_path):
    odd = tmp_path / "nl\nreal"
    odd.mkdir()
    with pytest.raises(Usage):
        git.repo_dirs(str(odd))
    res = ao("ao", "add", str(odd), cwd=repo, rc=129)
    assert res.stderr.startswith("error: paths containing a newline")
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr


def test_unreachable_cwd_is_a_git_error(tmp_path):
    with pytest.raises(git.GitError):
        git.run(["status"], str(tmp_path / "missing"))
    assert os.path.isdir(tmp_path)
