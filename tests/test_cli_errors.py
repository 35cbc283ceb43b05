"""Errors a new user meets: git's message kept where it matters, a log that cannot
be written or read said once, numbers that are not numbers refused, one time
format everywhere."""

import json
import os
import re
import stat
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
    assert "option 'timeout' expects a number of seconds" in res.stderr


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
    bindir.mkdir(exist_ok=True)
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


def test_a_passed_check_is_remembered_in_the_data_dir_for_that_git_only(
        tmp_path, repo, monkeypatch):
    from git_ao.errors import Fatal
    from git_ao.git import version
    data = tmp_path / "data"
    env = dict(os.environ, AO_DATA_DIR=str(data), GIT_AO_DEBUG="")

    def listed(path_env):
        return subprocess.run([sys.executable, str(BIN / "git-ao"), "list", "-v"], cwd=repo,
                              env=dict(env, PATH=path_env), capture_output=True, text=True,
                              check=False)
    res = listed(os.environ["PATH"])
    assert res.returncode == 0 and "trace: git --version" in res.stderr
    assert not data.exists()  # a listing creates no data dir, so nothing is kept
    data.mkdir(mode=0o700)
    assert "trace: git --version" in listed(os.environ["PATH"]).stderr
    assert not (data / "git-checked").exists()  # nor writes into one: it changes nothing
    subprocess.run([sys.executable, str(BIN / "git-ao"), "checkpoint", "--all"], cwd=repo,
                   env=env, capture_output=True, check=True)  # a command that writes
    assert stat.S_IMODE((data / "git-checked").stat().st_mode) == 0o600
    res = listed(os.environ["PATH"])
    assert res.returncode == 0 and "trace: git --version" not in res.stderr  # remembered
    res = listed(f"{_old_git(tmp_path)}:{os.environ['PATH']}")  # another git: asked again
    assert res.returncode == 128 and "this is git 2.30.1" in res.stderr
    monkeypatch.chdir(repo)
    monkeypatch.setattr(version, "_new_enough", set())
    key = (data / "git-checked").read_text()
    assert version.check_version(key) == key  # the same git, no process
    monkeypatch.setenv("PATH", f"{_old_git(tmp_path)}:{os.environ['PATH']}")
    with pytest.raises(Fatal, match="this is git 2.30.1"):
        version.check_version(key)


def _fake_man(tmp_path):
    """A `man` that prints what git asked it for: git help runs man (man.viewer)."""
    bin_dir = tmp_path / "fakeman"
    bin_dir.mkdir(exist_ok=True)
    man = bin_dir / "man"
    man.write_text("#!/bin/sh\necho \"man $*\"\n")
    man.chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}"}


@pytest.mark.parametrize("argv, page", [
    (("ao", "list", "--help"), "git-ao"),
    (("ao", "config", "set", "--help"), "git-ao"),
    (("ao", "config", "--help"), "git-ao"),
    (("ao", "show", "--json", "--help"), "git-ao"),
    (("ao-prune", "--expire", "now", "--help"), "git-ao-prune"),
    (("ao-preserve", "-n", "--help"), "git-ao-preserve"),
    (("ao-restore", "--no-launch", "--help"), "git-ao-restore"),
])
def test_help_anywhere_opens_the_man_page_as_gits_own_commands_do(repo, tmp_path, argv, page):
    """git turns only a first --help into `git help`; after a subcommand or an
    option, git-ao does the same, and nothing else runs."""
    res = ao(*argv, cwd=repo, env=_fake_man(tmp_path), process=True)
    assert res.stdout == f"man {page}\n" and res.stderr == ""
    # the dashed command, run straight, too
    res = subprocess.run([str(BIN / f"git-{argv[0]}"), *argv[1:]], cwd=repo, text=True,
                         capture_output=True, env=dict(os.environ, **_fake_man(tmp_path)),
                         check=False)
    assert (res.returncode, res.stdout) == (0, f"man {page}\n"), res.stderr


def _every_command():
    from git_ao.cli import ao as ao_cli
    from git_ao.cli import preserve, prune, restore
    found = [(["ao"], ao_cli.group)]
    for top, cmd in ((["ao-preserve"], preserve.command), (["ao-restore"], restore.command),
                     (["ao-prune"], prune.command)):
        found.append((top, cmd))
    for name, sub in ao_cli.group.commands.items():
        found.append((["ao", name], sub))
        for inner in getattr(sub, "commands", {}):
            found.append((["ao", name, inner], sub.commands[inner]))
    return found


def test_short_usage_lines_are_whole_and_never_run_together(repo):
    """-h: no help cut mid-sentence (`...`), no option running into its help
    (`--kind <[worker|orchestrator]>worker`), metavars written `<name>`."""
    for argv, _cmd in _every_command():
        out = ao(*argv, "-h", cwd=repo, rc=129).stdout
        for ln in out.splitlines():
            if ln.startswith(("usage:", "   or:")):
                continue
            assert not ln.rstrip().endswith("..."), (argv, ln)
            assert not re.search(r">\w", ln) and "[" not in ln.split("  ")[0], (argv, ln)
            if ln.startswith("    -") and len(ln.split()) > 1:
                names_and_help = re.match(r"^    (\S.*?)( {2,}(\S.*))?$", ln)
                assert names_and_help, (argv, ln)


def test_prune_short_usage_offers_ids_only_with_force(repo):
    out = ao("ao-prune", "-h", cwd=repo, rc=129).stdout
    assert out.splitlines()[:2] == ["usage: git ao-prune [<options>]",
                                    "   or: git ao-prune --force [<options>] <id>..."]
    res = ao("ao-prune", "x", cwd=repo, rc=129)
    assert res.stderr.startswith("error: naming sessions needs --force")


def test_quiet_sends_the_records_it_still_prints_to_stderr(repo, worktrees):
    """-q prints errors only, on stderr as git does: a boot's quiet run keeps
    stdout empty, and its refusals reach the journal."""
    worktrees(repo, "fine")
    res = ao("ao-preserve", "-q", "fine", "nope", cwd=repo, rc=1)
    assert res.stdout == ""
    assert res.stderr == "preserve\trefused\tnope\tno session 'nope' (see 'git ao list')\n"
    res = ao("ao-restore", "-q", "nope", cwd=repo, rc=1)
    assert res.stdout == "" and res.stderr.startswith("restore\trefused\tnope\t")
    assert ao("ao-restore", "-q", cwd=repo).stdout == ""
