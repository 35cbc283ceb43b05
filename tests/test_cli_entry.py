"""The light entry (git_ao/cli/entry.py) against the click commands: the same
states, the same stdout, stderr and exit status, byte for byte; and the light
path imports no click."""

import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ao, git
from tests.support import BIN, make_sessions

# The click command of each executable, run as its main() is, without the entry.
CLICK = {"ao": "from git_ao.cli.ao import main; main()",
         "ao-restore": "from git_ao.cli.restore import main; main()",
         "ao-preserve": "from git_ao.cli.preserve import main; main()",
         "ao-prune": "from git_ao.cli.prune import main; main()"}


def _both(command, *args, cwd, between=None, env=None):
    """(light, click): the CompletedProcess of `git-<command> args` through the
    light entry (bin/, as the installed scripts run it) and through the click
    command alone, bytes as written; `between()` runs between the two."""
    env = dict(os.environ, **(env or {}))
    light = subprocess.run([sys.executable, str(BIN / f"git-{command}"), *args], cwd=cwd,
                           capture_output=True, stdin=subprocess.DEVNULL, check=False, env=env)
    if between is not None:
        between()
    clicked = subprocess.run([sys.executable, "-c", CLICK[command], *args], cwd=cwd,
                             capture_output=True, stdin=subprocess.DEVNULL, check=False,
                             env=dict(env, PYTHONPATH=str(BIN.parent)))
    return light, clicked


def _same(command, *args, cwd, env=None):
    light, clicked = _both(command, *args, cwd=cwd, env=env)
    assert (light.returncode, light.stdout, light.stderr) == \
        (clicked.returncode, clicked.stdout, clicked.stderr), args
    return light


LIST_FORMS = [(), ("--json",), ("-z",), ("-q",), ("--all",), ("--all", "-z", "-q"),
              ("--state", "live"), ("--state=pending", "--state", "attention"),
              ("--state", "terminated", "--json"), ("--all", "--json", "-q"),
              # handed to click by the entry: the same words either way
              ("--state", "bogus"), ("--bogus",), ("-qz",), ("--repo", "."), ("-h",),
              ("--all", "--repo", ".")]


@pytest.mark.parametrize("args", LIST_FORMS, ids=" ".join)
def test_list_prints_as_the_click_command(repo, make_repo, worktrees, args):
    other = make_repo()
    sessions = make_sessions(repo, worktrees, 4, other=other)
    ao("ao-preserve", "s00", cwd=repo)
    # A live session whose worktree is gone: the hint line.
    shutil.rmtree(sessions["s02"][1])
    git("worktree", "prune", cwd=repo)
    res = _same("ao", "list", *args, cwd=repo)
    if not args:
        assert b"s00" in res.stdout and b"s01" not in res.stdout  # s01 is other's
        assert b"hint: s02: live, but its worktree" in res.stderr
        assert b"of other repositories not listed" in res.stderr


@pytest.mark.parametrize("args", [(), ("--json",), ("-z",), ("--all",), ("-q",)],
                         ids=" ".join)
def test_list_of_an_empty_database_and_a_missing_data_dir(repo, tmp_path, args):
    data = tmp_path / "aodata"
    assert not data.exists()
    _same("ao", "list", *args, cwd=repo)  # no data dir at all
    _same("ao", "list", *args, cwd=tmp_path)  # outside any repository
    assert not data.exists()  # a listing creates nothing
    ao("ao-restore", "-q", cwd=repo)  # creates the (empty) database
    assert (data / "git-ao.db").exists()
    _same("ao", "list", *args, cwd=repo)


@pytest.mark.parametrize("args", [("-q",), (), ("--quiet",), ("-q", "--timeout", "60"),
                                  ("--timeout=5",)], ids=" ".join)
def test_the_boot_restore_with_nothing_pending_as_the_click_command(repo, worktrees,
                                                                    tmp_path, args):
    # A new database: the warning, and without -q "nothing to restore"; each
    # path meets a new one.
    data = tmp_path / "aodata"
    light, clicked = _both("ao-restore", *args, cwd=repo, between=lambda: shutil.rmtree(data))
    assert (light.returncode, light.stdout, light.stderr) == \
        (clicked.returncode, clicked.stdout, clicked.stderr)
    assert light.returncode == 0 and light.stdout == b""
    assert b"the database is new" in light.stderr
    _same("ao-restore", *args, cwd=repo)  # the database exists now
    wt = worktrees(repo, "w1")
    _same("ao-restore", *args, cwd=repo)
    # A live session whose worktree is gone: the attention record.
    shutil.rmtree(wt)
    res = _same("ao-restore", *args, cwd=repo)
    assert b"w1" in res.stderr + res.stdout


def test_a_restore_with_work_pending_goes_to_the_click_command(repo, worktrees):
    wt = worktrees(repo, "w1")
    (wt / "new.txt").write_text("x\n")
    ao("ao-preserve", "w1", cwd=repo)
    res = ao("ao-restore", "-q", cwd=repo, process=True)
    assert res.stdout == "" and (wt / "new.txt").read_text() == "x\n"


def _imports(command, *args, cwd):
    res = subprocess.run([sys.executable, "-X", "importtime", str(BIN / f"git-{command}"),
                          *args], cwd=cwd, capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, check=False)
    return {ln.rsplit("|", 1)[1].strip() for ln in res.stderr.splitlines()
            if ln.startswith("import time:") and "|" in ln}


@pytest.mark.parametrize("command,args", [("ao", ("list",)), ("ao", ("list", "--all", "-z")),
                                          ("ao-restore", ("-q",)),
                                          ("ao-restore", ("-q", "--timeout", "60"))])
def test_the_light_path_imports_no_click_no_rich_and_no_workflow(repo, worktrees, command,
                                                                 args):
    worktrees(repo, "w1")
    held = _imports(command, *args, cwd=repo)
    assert "git_ao.cli.bodies" in held
    heavy = {m for m in held if m.split(".")[0] in ("click", "rich", "tomlkit", "psutil")
             or m.startswith(("git_ao.save.capture", "git_ao.restore", "git_ao.preserve"))}
    assert not heavy, sorted(heavy)
    if command == "ao":  # nor what only --json, show or a lock uses
        assert not held & {"json", "hashlib", "tempfile", "git_ao.store.trash", "urllib.parse",
                           "git_ao.git.query"}, sorted(held)


def test_other_invocations_reach_click(repo):
    held = _imports("ao", "list", "--repo", ".", cwd=repo)
    assert "click" in held
    # a --timeout that is no number of seconds gets click's usage error
    for bad in (("--timeout", "soon"), ("--timeout=nan",), ("--timeout",)):
        assert "click" in _imports("ao-restore", "-q", *bad, cwd=repo)


COMPLETIONS = ["{prog} ", "{prog} s0", "{prog} s00 ", "{prog} s00 s0", "{prog}  s01  ",
               "{prog} nosuch", "{prog} -", "{prog} --j", "{prog} -j ", "{prog} -q ",
               "{prog} 's0", "{prog} s\\0"]


@pytest.mark.parametrize("shell", ["bash_complete", "zsh_complete", "fish_complete"])
@pytest.mark.parametrize("command,var", [("ao-preserve", "_GIT_AO_PRESERVE_COMPLETE"),
                                         ("ao-restore", "_GIT_AO_RESTORE_COMPLETE"),
                                         ("ao-prune", "_GIT_AO_PRUNE_COMPLETE")])
def test_id_completion_answers_as_click_does(repo, worktrees, command, var, shell):
    for sid in ("s00", "s01", "s10"):
        worktrees(repo, sid)
    ao("ao-preserve", "s01", cwd=repo)
    for words in COMPLETIONS:
        line = words.format(prog=f"git-{command}")
        cword = len(line.split()) - (0 if line.endswith(" ") else 1)
        env = {"COMP_WORDS": line, "COMP_CWORD": str(cword), var: shell}
        if shell == "fish_complete":
            env["COMP_CWORD"] = "" if line.endswith(" ") else line.split()[-1]
        _same(command, cwd=repo, env=env)


def test_id_completion_with_no_database_and_imports_no_click(repo):
    env = {"COMP_WORDS": "git-ao-preserve ", "COMP_CWORD": "1",
           "_GIT_AO_PRESERVE_COMPLETE": "bash_complete"}
    res = _same("ao-preserve", cwd=repo, env=env)
    assert res.stdout == b"\n"
    held = subprocess.run([sys.executable, "-X", "importtime", str(BIN / "git-ao-preserve")],
                          cwd=repo, capture_output=True, text=True, check=False,
                          env=dict(os.environ, **env)).stderr
    assert "| click" not in held and "git_ao.cli.completion" in held
