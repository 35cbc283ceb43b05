"""Exit statuses exactly as git's conventions, errors on one line, a traceback only with GIT_AO_DEBUG."""

import json
import os

from tests.support import ao as run_ao
from tests.support import commit_on, git


def ao(*args, **kw):
    # Exit statuses as git's dispatch reports them: every command here is a process.
    return run_ao(*args, process=True, **kw)


def _one_line(stderr, prefix):
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith(prefix), stderr


def test_usage_errors_exit_129(repo):
    res = ao("ao-preserve", "--bogus", cwd=repo, rc=129)
    assert res.stderr.startswith("error: ")
    res = ao("ao-restore", "-h", cwd=repo, rc=129)
    assert res.stdout.startswith("usage: git ao-restore ")
    res = ao("ao", "show", "a/b", cwd=repo, rc=129)
    _one_line(res.stderr, "error: invalid session id")
    ao("ao-prune", "--expire", "garbage", cwd=repo, rc=129)
    ao("ao", "completion", "tcsh", cwd=repo, rc=129)
    assert ao("ao", "-h", cwd=repo, rc=129).stdout.startswith("usage: git ao ")
    res = ao("ao", cwd=repo, rc=129)
    assert res.stderr.startswith("usage: git ao ") and "import" in res.stderr
    ao("ao", "config", "-h", cwd=repo, rc=129)
    ao("ao", "bogus", cwd=repo, rc=129)


def test_unknown_session_exits_1_with_one_line(repo):
    res = ao("ao", "show", "nosuch", cwd=repo, rc=1)
    _one_line(res.stderr, "error: no session 'nosuch'")


def test_nothing_to_do_exits_0(repo):
    ao("ao-restore", cwd=repo, rc=0)
    ao("ao-prune", cwd=repo, rc=0)


def test_fatal_is_128_one_line_and_traceback_only_with_debug(repo, ao_env):
    data = ao_env / "aodata"
    data.mkdir(mode=0o700)
    (data / "git-ao.db").write_bytes(b"this is not a database" * 100)
    res = ao("ao", "list", cwd=repo, rc=128)
    _one_line(res.stderr, "fatal: ")
    assert "Traceback" not in res.stderr
    res = ao("ao", "list", cwd=repo, rc=None, env={"GIT_AO_DEBUG": "1"})
    assert res.returncode != 0 and "Traceback" in res.stderr
    res = ao("ao", "list", "-C", str(repo / "no-such-dir"), cwd=repo, rc=128)
    _one_line(res.stderr, "fatal: cannot change to")
    # a file is no directory to change to, as for git -C: fatal (128), not usage
    res = ao("ao", "list", "-C", str(repo / "README.md"), cwd=repo, rc=128)
    assert res.stderr == f"fatal: cannot change to '{repo / 'README.md'}': Not a directory\n"


def test_conflict_exits_3_and_worst_status_wins(repo, worktrees, tmp_path):
    conf = worktrees(repo, "conf")
    held = worktrees(repo, "held")
    (conf / "README.md").write_text("mine\n")
    (held / "README.md").write_text("held\n")
    ao("ao-preserve", "--all", cwd=repo)
    commit_on(repo, "conf", {"README.md": "theirs\n"}, "theirs")
    # held's branch checked out elsewhere: refused (1) beats attention (3).
    git("worktree", "add", "-q", str(tmp_path / "squatter"), "held", cwd=repo)
    res = ao("ao-restore", "--json", cwd=repo, rc=1)
    doc = json.loads(res.stdout)
    assert doc["exit_status"] == 1
    assert {r["id"]: r["status"] for r in doc["results"]} == {"conf": "attention",
                                                               "held": "refused"}
    git("worktree", "remove", str(tmp_path / "squatter"), cwd=repo)
    ao("ao-restore", "held", cwd=repo, rc=0)
    ao("ao-restore", cwd=repo, rc=0)  # nothing pending any more


def test_kill_and_forget_on_a_lost_database_are_fatal(repo, worktrees):
    # Every command that opens the database treats its loss as fatal (128), also
    # the ones that handle each named session on its own.
    worktrees(repo, "lost")
    os.unlink(os.path.join(os.environ["AO_DATA_DIR"], "git-ao.db"))
    for cmd in (("ao", "kill", "lost"), ("ao", "forget", "lost")):
        res = ao(*cmd, cwd=repo, rc=128)
        assert res.stderr.startswith("fatal: ")


def test_json_mode_gets_a_document_on_errors_too(repo):
    res = ao("ao", "show", "nope", "--json", cwd=repo, rc=1)
    doc = json.loads(res.stdout)
    assert doc["exit_status"] == 1 and doc["error"].startswith("error: no session")


def test_a_missing_dependency_is_named_not_an_internal_error(repo, worktrees, tmp_path):
    """A python3 without `psutil` (bin/ run from a checkout before installing): the
    message names the package and the interpreter, when a command needs it (a
    preserve looks for the agents in its worktrees)."""
    worktrees(repo, "w1")
    fake = tmp_path / "nopsutil"
    fake.mkdir()
    (fake / "psutil.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'psutil'\", name='psutil')\n")
    res = ao("ao-preserve", "--all", "-n", cwd=repo, rc=128,
             env={"PYTHONPATH": str(fake)})
    _one_line(res.stderr, "fatal: git-ao needs the Python package 'psutil'")
    assert "internal error" not in res.stderr


def _from_gone(tmp_path, *args, env=None):
    """`git <args>` started in a directory removed just before (the shell stands in
    it), as after `rm -rf` of the directory a terminal was in."""
    gone = tmp_path / "gone"
    gone.mkdir()
    import subprocess
    return subprocess.run(["sh", "-c", 'cd "$0" && rmdir "$0" && exec git "$@"', str(gone),
                           *args], capture_output=True, text=True, check=False,
                          env=dict(os.environ, **(env or {})))


def test_a_command_started_in_a_directory_that_is_gone_says_so_as_git_does(repo, tmp_path):
    """Every executable, on the light entry path and on click's: git's own line and
    128, never an internal error; -C with an absolute path still runs, as for git."""
    said = _from_gone(tmp_path, "status").stderr
    assert said == "fatal: Unable to read current working directory: No such file or " \
        "directory\n"
    for args in (("ao", "list"), ("ao", "list", "--color=never"), ("ao", "log"),
                 ("ao", "checkpoint", "-q"), ("ao", "checkpoint"), ("ao", "show", "x"),
                 ("ao-preserve", "--all", "-n"), ("ao-preserve",), ("ao-restore",),
                 ("ao-restore", "--at", "1"), ("ao-restore", "--json"),
                 ("ao-prune", "-n"), ("ao-prune",)):
        res = _from_gone(tmp_path, *args)
        assert (res.returncode, res.stderr) == (128, said), args
    # A relative data dir is resolved there first: the same line.
    res = _from_gone(tmp_path, "ao", "list", env={"AO_DATA_DIR": "data"})
    assert (res.returncode, res.stderr) == (128, said)
    res = _from_gone(tmp_path, "ao-restore", env={"AO_DATA_DIR": "data"})
    assert (res.returncode, res.stderr) == (128, said)
    res = _from_gone(tmp_path, "ao", "list", "-C", str(repo))
    assert (res.returncode, res.stderr) == (0, "")


def test_a_restore_that_removes_the_directory_it_runs_in_exits_with_its_status(
        repo, worktrees):
    """`--at 1` run from a new directory the restore rightly removes: the work is done,
    so its status (0); the notice that follows reads the repository from the nearest
    directory still there."""
    wt = worktrees(repo, "wt")
    (wt / "README.md").write_text("work\n")
    ao("ao", "checkpoint", "-q", cwd=wt)
    sub = wt / "newdir" / "sub"
    sub.mkdir(parents=True)
    (sub / "n").write_text("n\n")
    git("update-ref", "refs/ao/preserved/ghost", "HEAD", cwd=repo)
    res = ao("ao-restore", "--at", "1", cwd=sub, rc=0)
    assert not sub.parent.exists()
    assert "internal error" not in res.stderr
    assert "holds preserve refs no record knows (refs/ao/preserved/ghost)" in res.stderr


def test_a_reader_that_goes_away_stops_no_session_and_is_no_error(repo, worktrees):
    # `git ao-preserve --all | head -1` at a shutdown: the rest of the sessions are
    # preserved all the same, and the run's status is its own.
    import subprocess

    from tests.support import states
    for i in range(6):
        worktrees(repo, f"p{i}")
    line = "git ao-preserve --all -j 1 | true; echo ${PIPESTATUS[0]}"
    res = subprocess.run(["bash", "-c", line], cwd=repo, capture_output=True, text=True,
                         check=False)
    assert res.stdout.split()[-1] == "0", res
    assert set(states(repo).values()) == {"pending"}
    line = "git ao-restore -j 1 | head -c 1 >/dev/null; echo ${PIPESTATUS[0]}"
    res = subprocess.run(["bash", "-c", line], cwd=repo, capture_output=True, text=True,
                         check=False)
    assert res.stdout.split()[-1] == "0", res
    assert set(states(repo).values()) == {"live"}
